#include "nuvec/distributed/reduce.h"

#include <algorithm>
#include <type_traits>

#include "nuvec/core/dispatch.h"

namespace nuvec::distributed::detail {

using nuvec::detail::ReduceOp;

void reduce(void* out, const void* a, const void* b, size_t count, Dtype dtype, ReduceOp op) {
  dispatch(dtype, [&]<class T>(type_tag<T>) {
    T* o = static_cast<T*>(out);
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    if constexpr (std::is_same_v<T, bool>) {
      for (size_t i = 0; i < count; ++i) {
        o[i] = op == ReduceOp::min ? (x[i] && y[i]) : (x[i] || y[i]);
      }
    } else if constexpr (std::is_same_v<T, complex64_t>) {
      for (size_t i = 0; i < count; ++i) {
        o[i] = x[i] + y[i];
      }
    } else {
      switch (op) {
        case ReduceOp::sum:
          for (size_t i = 0; i < count; ++i) {
            o[i] = static_cast<T>(x[i] + y[i]);
          }
          return;
        case ReduceOp::max:
          for (size_t i = 0; i < count; ++i) {
            o[i] = y[i] > x[i] || y[i] != y[i] ? y[i] : x[i];  // NaN wins, as maximum
          }
          return;
        case ReduceOp::min:
          for (size_t i = 0; i < count; ++i) {
            o[i] = y[i] < x[i] || y[i] != y[i] ? y[i] : x[i];
          }
          return;
      }
    }
  });
}

}  // namespace nuvec::distributed::detail
