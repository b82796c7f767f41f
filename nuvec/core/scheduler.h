#pragma once

// MLX's scheduler:: functions as far as they mean something here: nuvec runs each stream's work in order on the
// calling thread (or async_eval's worker), so a task handed to a stream runs at once, and the task counts are kept
// for code that reads them.

#include <atomic>
#include <utility>

#include "nuvec/core/device.h"

namespace nuvec::scheduler {

namespace detail {
inline std::atomic<int>& active_tasks() {
  static std::atomic<int> count{0};
  return count;
}
}  // namespace detail

/// Runs `f` as the next piece of work on `s` (now: the stream's earlier work is done when it is called).
template <class F>
void enqueue(Stream /*s*/, F&& f) {
  std::forward<F>(f)();
}

inline int n_active_tasks() { return detail::active_tasks().load(); }
inline void notify_new_task(const Stream& /*stream*/) { ++detail::active_tasks(); }
inline void notify_task_completion(const Stream& /*stream*/) { --detail::active_tasks(); }
/// Waits until one of the active tasks completes: the work of all streams has finished when it is called.
inline void wait_for_one() { synchronize(); }

}  // namespace nuvec::scheduler
