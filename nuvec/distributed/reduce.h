#pragma once

// The element-wise reduction the backends apply to received blocks.

#include <cstddef>

#include "nuvec/core/communicator.h"

namespace nuvec::distributed::detail {

/// out[i] = op(a[i], b[i]) for `count` elements of `dtype`; `out` may be `a` or `b`. On bool, sum and max are or,
/// min is and; complex values only sum (the ops layer rejects all_max and all_min on them). The operands' order
/// matters for bits only: which NaN a max keeps, the sign of a zero.
void reduce(void* out, const void* a, const void* b, size_t count, Dtype dtype, nuvec::detail::ReduceOp op);

/// acc[i] = op(acc[i], x[i]).
inline void reduce_into(void* acc, const void* x, size_t count, Dtype dtype, nuvec::detail::ReduceOp op) {
  reduce(acc, acc, x, count, dtype, op);
}

}  // namespace nuvec::distributed::detail
