#include "nuvec/serve/stop_signals.h"

#include <atomic>

namespace nuvec::serve {

namespace {

// Lock-free, so the handler may write it.
std::atomic<int> last_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

void record_stop_signal(int signal) { last_stop_signal = signal; }

}  // namespace

StopSignals::StopSignals() {
  last_stop_signal = 0;
  struct sigaction action {};
  action.sa_handler = record_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, &previous_term_);
  sigaction(SIGINT, &action, &previous_int_);
}

StopSignals::~StopSignals() {
  sigaction(SIGTERM, &previous_term_, nullptr);
  sigaction(SIGINT, &previous_int_, nullptr);
}

int StopSignals::received() { return last_stop_signal; }

int StopSignals::take() { return last_stop_signal.exchange(0); }

}  // namespace nuvec::serve
