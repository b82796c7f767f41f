#pragma once

// What the CPU kernels ask of an element type: is it a half float or complex, which type it computes in, and the NaN
// test and order that hold for every element type (complex numbers in NumPy's lexicographic order).

#include <cmath>
#include <type_traits>

#include "nuvec/core/half.h"

namespace nuvec::cpu {

template <class T>
inline constexpr bool is_half_v = nuvec::detail::half_float<T>;
template <class T>
inline constexpr bool is_complex_v = std::is_same_v<T, complex64_t>;

/// The type elements of type T are computed in: float for float16 and bfloat16, T itself otherwise.
template <class T>
using compute_t = std::conditional_t<is_half_v<T>, float, T>;

/// True for NaN, and for a complex number with a NaN part; integers and bool are never NaN.
template <class T>
bool is_nan(T x) {
  if constexpr (is_complex_v<T>) {
    return std::isnan(x.real()) || std::isnan(x.imag());
  } else if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(x);
  } else if constexpr (is_half_v<T>) {
    return isnan(x);  // half.h's test of the bits
  } else {
    return false;
  }
}

/// a > b, complex numbers compared by real part and then imaginary part (NumPy's order for numbers without NaN).
template <class T>
bool greater(T a, T b) {
  if constexpr (is_complex_v<T>) {
    return a.real() > b.real() || (a.real() == b.real() && a.imag() > b.imag());
  } else {
    return a > b;
  }
}

}  // namespace nuvec::cpu
