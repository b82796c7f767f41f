// Unary, binary and selection ops: dtype rules and broadcasting. Primitives
// receive operands of one dtype whose shapes equal the output's, except that
// a size-1 operand of no more axes than the output (a scalar, typically) is
// passed as it is: kernels read it as a broadcast value, and the graph saves
// a Broadcast node on every `x * 0.5`.

#include <cmath>
#include <numbers>

#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/output_shapes.h"

namespace nuvec {

using nuvec::detail::op_prefix;

namespace {

/// The dtype transcendental functions compute in: integers and bool become float32.
Dtype at_least_float(Dtype t) { return is_inexact(t) ? t : float32; }

array unary(Primitive&& p, const array& a, StreamOrDevice s) {
  return detail::make_node(std::move(p), {a}, to_stream(s));
}

/// Casts to at least float, then applies a same-dtype primitive.
array float_unary(Primitive&& p, const array& a, StreamOrDevice s) {
  auto x = astype(a, at_least_float(a.dtype()), s);
  return unary(std::move(p), x, s);
}

void reject_complex(const array& a, const char* op) {
  if (is_complex(a.dtype())) {
    throw_invalid(op_prefix(op) + "Not supported for complex64 inputs.");
  }
}

/// An operand converted to `dtype` and broadcast to `shape`; a scalar operand
/// (see the top of this file) keeps its own shape.
array operand(const array& a, const Shape& shape, Dtype dtype, StreamOrDevice s) {
  auto x = astype(a, dtype, s);
  if ((x.size() == 1 && x.ndim() <= static_cast<int>(shape.size())) || x.shape() == shape) {
    return x;
  }
  return broadcast_to(x, shape, s);
}

/// The operands converted to `compute` and broadcast together; the primitive's rules give the output.
array binary(Primitive&& p, const array& a, const array& b, Dtype compute, StreamOrDevice s) {
  // Operands of one shape (the common case) need no broadcast shape of their own.
  const bool same_shape = a.shape() == b.shape();
  const Shape broadcast = same_shape ? Shape{} : broadcast_shapes(a.shape(), b.shape());
  const Shape& shape = same_shape ? a.shape() : broadcast;
  // The operands are moved into the node's inputs (an initializer list would copy each handle once more).
  std::vector<array> inputs;
  inputs.reserve(2);
  inputs.push_back(operand(a, shape, compute, s));
  inputs.push_back(operand(b, shape, compute, s));
  return detail::make_node(std::move(p), std::move(inputs), to_stream(s));
}

array same_dtype_binary(Primitive&& p, const array& a, const array& b, StreamOrDevice s) {
  auto dtype = promote_types(a.dtype(), b.dtype());
  return binary(std::move(p), a, b, dtype, s);
}

array comparison(Primitive&& p, const array& a, const array& b, StreamOrDevice s) {
  return binary(std::move(p), a, b, promote_types(a.dtype(), b.dtype()), s);
}

array bitwise(Primitive&& p, const array& a, const array& b, const char* op, bool allow_bool, StreamOrDevice s) {
  auto dtype = promote_types(a.dtype(), b.dtype());
  if (!is_integer(dtype) && !(allow_bool && dtype == bool_)) {
    throw_invalid(op_prefix(op) + "Only integer" + (allow_bool ? " and boolean" : "") + " inputs are supported; got " +
                  std::string(dtype_name(a.dtype())) + " and " + std::string(dtype_name(b.dtype())) + ".");
  }
  return binary(std::move(p), a, b, dtype, s);
}

/// A shift: as MLX, bool operands shift as uint8 (true << 1 is 2).
array shift(Primitive&& p, const array& a, const array& b, const char* op, StreamOrDevice s) {
  if (promote_types(a.dtype(), b.dtype()) == bool_) {
    return bitwise(std::move(p), astype(a, uint8, s), astype(b, uint8, s), op, false, s);
  }
  return bitwise(std::move(p), a, b, op, false, s);
}

}  // namespace

// ---------------------------------------------------------------- unary

array abs(const array& a, StreamOrDevice s) {
  if (is_unsigned(a.dtype()) || a.dtype() == bool_) {
    return a;
  }
  return unary(Abs{}, a, s);
}

array negative(const array& a, StreamOrDevice s) {
  if (a.dtype() == bool_) {
    throw_invalid("[negative] Not supported for bool, use logical_not instead.");
  }
  return unary(Negative{}, a, s);
}

array positive(const array& a, StreamOrDevice) { return a; }

array sign(const array& a, StreamOrDevice s) {
  if (a.dtype() == bool_) {
    return a;
  }
  return unary(Sign{}, a, s);
}

array floor(const array& a, StreamOrDevice s) {
  reject_complex(a, "floor");
  return is_floating(a.dtype()) ? unary(Floor{}, a, s) : a;
}

array ceil(const array& a, StreamOrDevice s) {
  reject_complex(a, "ceil");
  return is_floating(a.dtype()) ? unary(Ceil{}, a, s) : a;
}

array trunc(const array& a, StreamOrDevice s) {
  reject_complex(a, "trunc");
  if (!is_floating(a.dtype())) {
    return a;
  }
  return where(less(a, zeros_like(a, s), s), ceil(a, s), floor(a, s), s);
}

array round(const array& a, int decimals, StreamOrDevice s) {
  reject_complex(a, "round");
  if (!is_floating(a.dtype())) {
    if (decimals >= 0) {
      return a;
    }
    auto x = astype(a, float32, s);
    auto scale = array(std::pow(10.0F, static_cast<float>(-decimals)));
    return astype(multiply(unary(Round{}, divide(x, scale, s), s), scale, s), a.dtype(), s);
  }
  if (decimals == 0) {
    return unary(Round{}, a, s);
  }
  auto scale = astype(array(std::pow(10.0, decimals)), a.dtype(), s);
  return divide(unary(Round{}, multiply(a, scale, s), s), scale, s);
}

array square(const array& a, StreamOrDevice s) { return unary(Square{}, a, s); }
array sqrt(const array& a, StreamOrDevice s) { return float_unary(Sqrt{}, a, s); }
array rsqrt(const array& a, StreamOrDevice s) { return float_unary(Rsqrt{}, a, s); }
array reciprocal(const array& a, StreamOrDevice s) { return float_unary(Reciprocal{}, a, s); }
array exp(const array& a, StreamOrDevice s) { return float_unary(Exp{}, a, s); }
array expm1(const array& a, StreamOrDevice s) { return float_unary(Expm1{}, a, s); }
array log(const array& a, StreamOrDevice s) { return float_unary(Log{}, a, s); }
array log2(const array& a, StreamOrDevice s) { return float_unary(Log2{}, a, s); }
array log10(const array& a, StreamOrDevice s) { return float_unary(Log10{}, a, s); }
array log1p(const array& a, StreamOrDevice s) { return float_unary(Log1p{}, a, s); }
array sin(const array& a, StreamOrDevice s) { return float_unary(Sin{}, a, s); }
array cos(const array& a, StreamOrDevice s) { return float_unary(Cos{}, a, s); }
array tan(const array& a, StreamOrDevice s) { return float_unary(Tan{}, a, s); }
array arcsin(const array& a, StreamOrDevice s) { return float_unary(ArcSin{}, a, s); }
array arccos(const array& a, StreamOrDevice s) { return float_unary(ArcCos{}, a, s); }
array arctan(const array& a, StreamOrDevice s) { return float_unary(ArcTan{}, a, s); }
array sinh(const array& a, StreamOrDevice s) { return float_unary(Sinh{}, a, s); }
array cosh(const array& a, StreamOrDevice s) { return float_unary(Cosh{}, a, s); }
array tanh(const array& a, StreamOrDevice s) { return float_unary(Tanh{}, a, s); }
array arcsinh(const array& a, StreamOrDevice s) { return float_unary(ArcSinh{}, a, s); }
array arccosh(const array& a, StreamOrDevice s) { return float_unary(ArcCosh{}, a, s); }
array arctanh(const array& a, StreamOrDevice s) { return float_unary(ArcTanh{}, a, s); }
array sigmoid(const array& a, StreamOrDevice s) { return float_unary(Sigmoid{}, a, s); }

array erf(const array& a, StreamOrDevice s) {
  reject_complex(a, "erf");
  return float_unary(Erf{}, a, s);
}

array erfinv(const array& a, StreamOrDevice s) {
  reject_complex(a, "erfinv");
  return float_unary(ErfInv{}, a, s);
}

array degrees(const array& a, StreamOrDevice s) {
  auto x = astype(a, at_least_float(a.dtype()), s);
  return multiply(x, array(180.0 / std::numbers::pi, x.dtype()), s);
}

array radians(const array& a, StreamOrDevice s) {
  auto x = astype(a, at_least_float(a.dtype()), s);
  return multiply(x, array(std::numbers::pi / 180.0, x.dtype()), s);
}

array conjugate(const array& a, StreamOrDevice s) { return is_complex(a.dtype()) ? unary(Conjugate{}, a, s) : a; }

array real(const array& a, StreamOrDevice s) { return is_complex(a.dtype()) ? unary(Real{}, a, s) : a; }

array imag(const array& a, StreamOrDevice s) { return is_complex(a.dtype()) ? unary(Imag{}, a, s) : zeros_like(a, s); }

array isnan(const array& a, StreamOrDevice s) {
  return is_inexact(a.dtype()) ? unary(IsNaN{}, a, s) : full(a.shape(), false, s);
}

array isinf(const array& a, StreamOrDevice s) {
  return is_inexact(a.dtype()) ? unary(IsInf{}, a, s) : full(a.shape(), false, s);
}

array isfinite(const array& a, StreamOrDevice s) { return logical_not(logical_or(isinf(a, s), isnan(a, s), s), s); }

array isposinf(const array& a, StreamOrDevice s) {
  reject_complex(a, "isposinf");
  return logical_and(isinf(a, s), greater(a, zeros_like(a, s), s), s);
}

array isneginf(const array& a, StreamOrDevice s) {
  reject_complex(a, "isneginf");
  return logical_and(isinf(a, s), less(a, zeros_like(a, s), s), s);
}

array nan_to_num(const array& a, float nan, std::optional<float> posinf, std::optional<float> neginf,
                 StreamOrDevice s) {
  if (!is_floating(a.dtype())) {
    return a;
  }
  auto dtype = a.dtype();
  auto limits = finfo(dtype);
  auto big = array(posinf ? static_cast<double>(*posinf) : limits.max, dtype);
  auto small = array(neginf ? static_cast<double>(*neginf) : limits.min, dtype);
  auto out = where(isnan(a, s), array(static_cast<double>(nan), dtype), a, s);
  out = where(isposinf(a, s), big, out, s);
  return where(isneginf(a, s), small, out, s);
}

array logical_not(const array& a, StreamOrDevice s) { return unary(LogicalNot{}, astype(a, bool_, s), s); }

array bitwise_invert(const array& a, StreamOrDevice s) {
  if (!is_integer(a.dtype()) && a.dtype() != bool_) {
    throw_invalid("[bitwise_invert] Only integer and boolean inputs are supported; got " +
                  std::string(dtype_name(a.dtype())) + ".");
  }
  return a.dtype() == bool_ ? logical_not(a, s) : unary(BitwiseInvert{}, a, s);
}

array clip(const array& a, const std::optional<array>& a_min, const std::optional<array>& a_max, StreamOrDevice s) {
  if (!a_min && !a_max) {
    throw_invalid("[clip] At most one of a_min and a_max may be None.");
  }
  auto out = a;
  if (a_min) {
    out = maximum(out, *a_min, s);
  }
  if (a_max) {
    out = minimum(out, *a_max, s);
  }
  return out;
}

// ---------------------------------------------------------------- binary

array add(const array& a, const array& b, StreamOrDevice s) { return same_dtype_binary(Add{}, a, b, s); }
array subtract(const array& a, const array& b, StreamOrDevice s) { return same_dtype_binary(Subtract{}, a, b, s); }
array multiply(const array& a, const array& b, StreamOrDevice s) { return same_dtype_binary(Multiply{}, a, b, s); }

array divide(const array& a, const array& b, StreamOrDevice s) {
  auto dtype = at_least_float(promote_types(a.dtype(), b.dtype()));
  return binary(Divide{}, a, b, dtype, s);
}

array floor_divide(const array& a, const array& b, StreamOrDevice s) {
  auto dtype = promote_types(a.dtype(), b.dtype());
  if (is_inexact(dtype)) {
    reject_complex(array(0.0F, dtype), "floor_divide");
    return floor(divide(a, b, s), s);
  }
  return binary(Divide{}, a, b, dtype, s);
}

array remainder(const array& a, const array& b, StreamOrDevice s) {
  auto dtype = promote_types(a.dtype(), b.dtype());
  if (is_complex(dtype)) {
    throw_invalid("[remainder] Not supported for complex64 inputs.");
  }
  return binary(Remainder{}, a, b, dtype, s);
}

std::vector<array> divmod(const array& a, const array& b, StreamOrDevice s) {
  return {floor_divide(a, b, s), remainder(a, b, s)};
}

array power(const array& a, const array& b, StreamOrDevice s) { return same_dtype_binary(Power{}, a, b, s); }

array maximum(const array& a, const array& b, StreamOrDevice s) { return same_dtype_binary(Maximum{}, a, b, s); }
array minimum(const array& a, const array& b, StreamOrDevice s) { return same_dtype_binary(Minimum{}, a, b, s); }

array logaddexp(const array& a, const array& b, StreamOrDevice s) {
  auto dtype = at_least_float(promote_types(a.dtype(), b.dtype()));
  return binary(LogAddExp{}, a, b, dtype, s);
}

array arctan2(const array& a, const array& b, StreamOrDevice s) {
  auto dtype = at_least_float(promote_types(a.dtype(), b.dtype()));
  if (is_complex(dtype)) {
    throw_invalid("[arctan2] Not supported for complex64 inputs.");
  }
  return binary(ArcTan2{}, a, b, dtype, s);
}

array equal(const array& a, const array& b, StreamOrDevice s) { return comparison(Equal{}, a, b, s); }
array not_equal(const array& a, const array& b, StreamOrDevice s) { return comparison(NotEqual{}, a, b, s); }
array greater(const array& a, const array& b, StreamOrDevice s) { return comparison(Greater{}, a, b, s); }
array greater_equal(const array& a, const array& b, StreamOrDevice s) { return comparison(GreaterEqual{}, a, b, s); }
array less(const array& a, const array& b, StreamOrDevice s) { return comparison(Less{}, a, b, s); }
array less_equal(const array& a, const array& b, StreamOrDevice s) { return comparison(LessEqual{}, a, b, s); }

array isclose(const array& a, const array& b, double rtol, double atol, bool equal_nan, StreamOrDevice s) {
  // |a - b| <= atol + rtol * |b|, with equal infinities close and NaNs close only when asked.
  auto dtype = at_least_float(promote_types(a.dtype(), b.dtype()));
  auto x = astype(a, dtype, s);
  auto y = astype(b, dtype, s);
  auto diff = abs(subtract(x, y, s), s);
  auto tolerance = add(array(atol, float32), multiply(array(rtol, float32), abs(y, s), s), s);
  // An infinite b makes the tolerance infinite: only equality counts there (numpy's rule).
  auto close = logical_and(less_equal(diff, tolerance, s), isfinite(y, s), s);
  close = logical_or(close, equal(x, y, s), s);
  if (equal_nan) {
    close = logical_or(close, logical_and(isnan(x, s), isnan(y, s), s), s);
  }
  return close;
}

array allclose(const array& a, const array& b, double rtol, double atol, bool equal_nan, StreamOrDevice s) {
  return all(isclose(a, b, rtol, atol, equal_nan, s), s);
}

array array_equal(const array& a, const array& b, bool equal_nan, StreamOrDevice s) {
  if (a.shape() != b.shape()) {
    return array(false);
  }
  auto dtype = promote_types(a.dtype(), b.dtype());
  auto eq = binary(Equal{equal_nan && is_inexact(dtype)}, a, b, dtype, s);
  return all(eq, false, s);
}

array logical_and(const array& a, const array& b, StreamOrDevice s) { return binary(LogicalAnd{}, a, b, bool_, s); }
array logical_or(const array& a, const array& b, StreamOrDevice s) { return binary(LogicalOr{}, a, b, bool_, s); }
array logical_xor(const array& a, const array& b, StreamOrDevice s) { return binary(NotEqual{}, a, b, bool_, s); }

array bitwise_and(const array& a, const array& b, StreamOrDevice s) {
  return bitwise(BitwiseAnd{}, a, b, "bitwise_and", true, s);
}
array bitwise_or(const array& a, const array& b, StreamOrDevice s) {
  return bitwise(BitwiseOr{}, a, b, "bitwise_or", true, s);
}
array bitwise_xor(const array& a, const array& b, StreamOrDevice s) {
  return bitwise(BitwiseXor{}, a, b, "bitwise_xor", true, s);
}
array left_shift(const array& a, const array& b, StreamOrDevice s) { return shift(LeftShift{}, a, b, "left_shift", s); }
array right_shift(const array& a, const array& b, StreamOrDevice s) {
  return shift(RightShift{}, a, b, "right_shift", s);
}

array where(const array& condition, const array& x, const array& y, StreamOrDevice s) {
  auto shape = broadcast_shapes(condition.shape(), broadcast_shapes(x.shape(), y.shape()));
  auto dtype = promote_types(x.dtype(), y.dtype());
  return detail::make_node(
      Select{}, {operand(condition, shape, bool_, s), operand(x, shape, dtype, s), operand(y, shape, dtype, s)},
      to_stream(s));
}

// ---------------------------------------------------------------- operators

array operator-(const array& a) { return negative(a); }
array operator!(const array& a) { return logical_not(a); }
array operator~(const array& a) { return bitwise_invert(a); }
array operator+(const array& a, const array& b) { return add(a, b); }
array operator-(const array& a, const array& b) { return subtract(a, b); }
array operator*(const array& a, const array& b) { return multiply(a, b); }
array operator/(const array& a, const array& b) { return divide(a, b); }
array operator%(const array& a, const array& b) { return remainder(a, b); }
array operator==(const array& a, const array& b) { return equal(a, b); }
array operator!=(const array& a, const array& b) { return not_equal(a, b); }
array operator<(const array& a, const array& b) { return less(a, b); }
array operator<=(const array& a, const array& b) { return less_equal(a, b); }
array operator>(const array& a, const array& b) { return greater(a, b); }
array operator>=(const array& a, const array& b) { return greater_equal(a, b); }
array operator&&(const array& a, const array& b) { return logical_and(a, b); }
array operator||(const array& a, const array& b) { return logical_or(a, b); }
array operator&(const array& a, const array& b) { return bitwise_and(a, b); }
array operator|(const array& a, const array& b) { return bitwise_or(a, b); }
array operator^(const array& a, const array& b) { return bitwise_xor(a, b); }
array operator<<(const array& a, const array& b) { return left_shift(a, b); }
array operator>>(const array& a, const array& b) { return right_shift(a, b); }

}  // namespace nuvec
