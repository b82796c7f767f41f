#include "nuvec/distributed/reduce.h"

#include <algorithm>
#include <type_traits>

#include "nuvec/core/dispatch.h"

namespace nuvec::distributed::detail {

using nuvec::detail::ReduceOp;

void reduce_into(void* acc, const void* x, size_t count, Dtype dtype, ReduceOp op) {
  dispatch(dtype, [&]<class T>(type_tag<T>) {
    T* a = static_cast<T*>(acc);
    const T* b = static_cast<const T*>(x);
    if constexpr (std::is_same_v<T, bool>) {
      for (size_t i = 0; i < count; ++i) {
        a[i] = op == ReduceOp::min ? (a[i] && b[i]) : (a[i] || b[i]);
      }
    } else if constexpr (std::is_same_v<T, complex64_t>) {
      for (size_t i = 0; i < count; ++i) {
        a[i] = a[i] + b[i];
      }
    } else {
      switch (op) {
        case ReduceOp::sum:
          for (size_t i = 0; i < count; ++i) {
            a[i] = static_cast<T>(a[i] + b[i]);
          }
          return;
        case ReduceOp::max:
          for (size_t i = 0; i < count; ++i) {
            a[i] = b[i] > a[i] || b[i] != b[i] ? b[i] : a[i];  // NaN wins, as maximum
          }
          return;
        case ReduceOp::min:
          for (size_t i = 0; i < count; ++i) {
            a[i] = b[i] < a[i] || b[i] != b[i] ? b[i] : a[i];
          }
          return;
      }
    }
  });
}

}  // namespace nuvec::distributed::detail
