#pragma once

// The element-wise reduction the backends apply to received blocks.

#include <cstddef>

#include "nuvec/core/communicator.h"

namespace nuvec::distributed::detail {

/// acc[i] = op(acc[i], x[i]) for `count` elements of `dtype`. On bool, sum and max are or, min is and; complex
/// values only sum (the ops layer rejects all_max and all_min on them).
void reduce_into(void* acc, const void* x, size_t count, Dtype dtype, nuvec::detail::ReduceOp op);

}  // namespace nuvec::distributed::detail
