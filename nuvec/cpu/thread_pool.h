#pragma once

// The intra-op thread pool: CPU kernels split large loops across it with parallel_for. See thread_pool.cpp for the
// design (dispatch protocol, concurrent callers, shutdown at exit).

#include <concepts>
#include <cstddef>
#include <memory>
#include <type_traits>

namespace nuvec::cpu {

namespace detail {

/// A non-owning, type-erased reference to a callable taking (begin, end); it lives for one parallel_for call.
struct RangeFn {
  void* object;
  void (*call)(void* object, std::size_t begin, std::size_t end);
};

/// The type-erased core of parallel_for; n > grain here.
void parallel_for_impl(std::size_t n, std::size_t grain, RangeFn body);

}  // namespace detail

/// Runs body(begin, end) over [0, n) in contiguous chunks of at least `grain` items (a grain of 0 counts as 1), on the
/// pool's workers and the calling thread, and returns when all chunks are done. body must be safe to call concurrently
/// on disjoint ranges. Runs inline as one call body(0, n) when n <= grain, when one thread is configured, when called
/// from inside a parallel_for body (nesting never deadlocks), or when another thread is using the pool; n == 0 calls
/// nothing. The first exception thrown by body is rethrown here once all started chunks are finished; chunks not yet
/// started when it was thrown are skipped.
template <class F>
  requires std::invocable<F&, std::size_t, std::size_t>
void parallel_for(std::size_t n, std::size_t grain, F&& body) {
  if (n == 0) {
    return;
  }
  if (n <= grain) {  // small work never leaves the calling thread nor pays for the type erasure
    body(std::size_t{0}, n);
    return;
  }
  using Fn = std::remove_reference_t<F>;  // const-qualified when body is const: the cast below restores it
  detail::parallel_for_impl(
      n, grain,
      detail::RangeFn{const_cast<void*>(static_cast<const void*>(std::addressof(body))),
                      [](void* object, std::size_t begin, std::size_t end) { (*static_cast<Fn*>(object))(begin, end); }});
}

/// The cores the calling thread may run on (its affinity mask, as taskset or mpirun's binding leave it; OpenMP's
/// default count too), or std::thread::hardware_concurrency() where the mask cannot be read.
int available_cores();

/// The number of threads parallel_for uses, the caller included: available_cores() when the pool starts, or the
/// NUVEC_NUM_THREADS environment variable when it holds a whole number >= 1 (other values are ignored).
int num_threads();

/// Sets the number of threads parallel_for uses, the caller included (1 runs everything inline). Waits for a running
/// parallel_for to finish; throws when n < 1, when n > 65535, or when called from a body the pool is running (where
/// waiting for the running parallel_for would deadlock).
void set_num_threads(int n);

}  // namespace nuvec::cpu
