#pragma once

// Scalars in the dtype of the array they combine with, so half-precision models stay in half precision (a C++
// float scalar would promote them to float32). They follow MLX's Python scalars: a float constant takes a floating
// array's dtype and promotes an integer or bool array to float32 (mlx.nn's gelu of int32 is float32); an integer
// constant takes the array's dtype (relu of int32 stays int32).

#include "nuvec/core/array.h"

namespace nuvec::nn::detail {

/// A 0-d array of `value` in x's dtype when x is floating or complex, float32 otherwise.
inline array like(const array& x, double value) { return array(value, is_inexact(x.dtype()) ? x.dtype() : float32); }
/// A 0-d array of the integer `value` in x's dtype.
inline array like(const array& x, int value) { return array(value, x.dtype()); }

}  // namespace nuvec::nn::detail
