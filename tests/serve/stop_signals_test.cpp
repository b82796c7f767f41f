// StopSignals records SIGTERM and SIGINT while it lives instead of ending the process, and gives the previous
// handlers back when it ends.

#include "nuvec/serve/stop_signals.h"

#include <gtest/gtest.h>

#include <csignal>

namespace nuvec::serve {
namespace {

volatile std::sig_atomic_t previous_handler_saw = 0;

void previous_handler(int signal) { previous_handler_saw = signal; }

TEST(StopSignals, RecordsTheSignalAndRestoresThePreviousHandler) {
  struct sigaction mine {};
  mine.sa_handler = previous_handler;
  sigemptyset(&mine.sa_mask);
  struct sigaction before_term {};
  struct sigaction before_int {};
  sigaction(SIGTERM, &mine, &before_term);
  sigaction(SIGINT, &mine, &before_int);
  {
    const StopSignals signals;
    EXPECT_EQ(StopSignals::received(), 0);
    std::raise(SIGTERM);
    EXPECT_EQ(StopSignals::received(), SIGTERM);
    EXPECT_EQ(StopSignals::take(), SIGTERM);
    EXPECT_EQ(StopSignals::received(), 0);
    std::raise(SIGINT);
    EXPECT_EQ(StopSignals::take(), SIGINT);
    EXPECT_EQ(previous_handler_saw, 0);
  }
  std::raise(SIGTERM);
  EXPECT_EQ(previous_handler_saw, SIGTERM);
  EXPECT_EQ(StopSignals::received(), 0);
  sigaction(SIGTERM, &before_term, nullptr);
  sigaction(SIGINT, &before_int, nullptr);
}

TEST(StopSignals, ANewScopeStartsWithNoSignal) {
  {
    const StopSignals signals;
    std::raise(SIGINT);
  }
  const StopSignals signals;
  EXPECT_EQ(StopSignals::received(), 0);
}

}  // namespace
}  // namespace nuvec::serve
