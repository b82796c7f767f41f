// The Arange kernel: out[i] = start + i * step in the output dtype.

#include <cstdint>
#include <type_traits>

#include "nuvec/core/dispatch.h"
#include "nuvec/core/scalar_math.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/strided.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

void run(const Arange& p, const Inputs&, Outputs& out) {
  auto& o = out[0];
  o.set_data(allocator::malloc(o.nbytes()));
  const size_t n = o.size();
  dispatch(o.dtype(), [&]<class T>(type_tag<T>) {
    T* dst = o.data<T>();
    if constexpr (std::is_integral_v<T>) {
      // numpy's integer arange: the first two values are cast, then their
      // difference is the step, in the dtype's (wrapping) arithmetic. So
      // arange(0.5, 5, 0.7, int32) counts 0, 1, 2, ... as numpy and MLX do.
      const auto first = static_cast<uint64_t>(static_cast<int64_t>(scalar::float_to_int<T>(p.start)));
      const auto delta = static_cast<uint64_t>(static_cast<int64_t>(scalar::float_to_int<T>(p.start + p.step))) - first;
      parallel_for(n, elementwise_grain, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) {
          dst[i] = static_cast<T>(first + static_cast<uint64_t>(i) * delta);
        }
      });
    } else {
      // Floating dtypes compute in double and round once, as numpy does.
      parallel_for(n, elementwise_grain, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) {
          const double value = p.start + static_cast<double>(i) * p.step;
          if constexpr (std::is_same_v<T, complex64_t>) {
            dst[i] = complex64_t(static_cast<float>(value), 0.0F);
          } else {
            dst[i] = static_cast<T>(value);
          }
        }
      });
    }
  });
}

}  // namespace nuvec::cpu
