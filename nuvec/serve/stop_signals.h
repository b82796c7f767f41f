#pragma once

// SIGTERM and SIGINT held for a scope: while a StopSignals lives, either one is recorded instead of ending the
// process, so a server can finish its running requests and `nuvec launch` can pass the signal on to its ranks.
// The previous handlers come back when the scope ends.

#include <csignal>

namespace nuvec::serve {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  StopSignals(StopSignals&&) = delete;
  StopSignals& operator=(StopSignals&&) = delete;

  /// The last stop signal received since the scope began or the last take(); 0 if none.
  [[nodiscard]] static int received();
  /// received(), then forgets it.
  static int take();

 private:
  struct sigaction previous_term_ {};
  struct sigaction previous_int_ {};
};

}  // namespace nuvec::serve
