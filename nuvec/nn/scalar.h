#pragma once

// Scalars in the dtype of the array they combine with, so half-precision models stay in half precision (a C++
// float scalar would promote them to float32).

#include "nuvec/core/array.h"

namespace nuvec::nn::detail {

/// A 0-d array of `value` in x's dtype (converted as astype would: truncated for integer dtypes).
inline array like(const array& x, double value) { return array(value, x.dtype()); }

}  // namespace nuvec::nn::detail
