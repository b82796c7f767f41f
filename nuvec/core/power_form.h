#pragma once

// How x ** e is computed for a floating x when the exponent e is one known value (a scalar operand of the eager
// kernel, a literal of a generated one): integral exponents of at most 8 in size as products (a negative one as the
// reciprocal of the product), 0.5 and -0.5 as square roots, anything else by pow. The CPU kernel and the code
// generator share it, so that compiled and eager results agree bit for bit.

#include <cmath>

namespace nuvec::detail {

struct PowerForm {
  enum class Kind { product, sqrt, rsqrt, pow };
  Kind kind = Kind::pow;
  /// For products: the exponent (0 gives ones, 1 the base itself).
  int n = 0;
};

/// The form of x ** e; exponents up to 8 keep the products within three multiplications and their rounding close
/// to pow's.
inline PowerForm power_form(double e) {
  if (e == 0.5) {
    return {PowerForm::Kind::sqrt, 0};
  }
  if (e == -0.5) {
    return {PowerForm::Kind::rsqrt, 0};
  }
  if (std::fabs(e) <= 8 && e == std::trunc(e)) {
    return {PowerForm::Kind::product, static_cast<int>(e)};
  }
  return {};
}

/// x ** m for m > 0 by squaring from the lowest bit. The CPU kernel multiplies vectors and the code generator
/// strings of source, so both multiply in this one order and agree bit for bit.
template <class T, class Times>
T power_by_squaring(const T& x, int m, Times times) {
  T base = x;
  T result = x;
  bool started = false;
  for (; m != 0; m >>= 1) {
    if ((m & 1) != 0) {
      result = started ? times(result, base) : base;
      started = true;
    }
    if (m > 1) {
      base = times(base, base);
    }
  }
  return result;
}

}  // namespace nuvec::detail
