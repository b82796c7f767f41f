// Each element-wise primitive's expression in generated C++. Values are compute values (float for the 16-bit
// floats); the functions called as nv::name are core/scalar_math.h's, which the CPU kernels use as well, and the
// math calls (expf, log1p, ...) go to glibc's vector math library through the prelude's `declare simd`.

#include "nuvec/core/compile/expressions.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "nuvec/core/error.h"
#include "nuvec/core/power_form.h"

namespace nuvec::detail {

std::string compute_type(Dtype d) {
  switch (d.val) {
    case Dtype::Val::bool_:
      return "bool";
    case Dtype::Val::float16:
    case Dtype::Val::float32:
    case Dtype::Val::bfloat16:
      return "float";
    case Dtype::Val::float64:
      return "double";
    case Dtype::Val::uint8:
      return "uint8_t";
    case Dtype::Val::uint16:
      return "uint16_t";
    case Dtype::Val::uint32:
      return "uint32_t";
    case Dtype::Val::uint64:
      return "uint64_t";
    case Dtype::Val::int8:
      return "int8_t";
    case Dtype::Val::int16:
      return "int16_t";
    case Dtype::Val::int32:
      return "int32_t";
    case Dtype::Val::int64:
      return "int64_t";
    case Dtype::Val::complex64:
      break;
  }
  throw_internal("[compile] no generated type for " + std::string(dtype_name(d)) + ".");
}

std::string storage_type(Dtype d) {
  if (d == float16) {
    return "_Float16";
  }
  if (d == bfloat16) {
    return "uint16_t";
  }
  return compute_type(d);
}

std::string load(Dtype d, const std::string& expr) {
  if (d == float16) {
    return "(float)(" + expr + ")";
  }
  if (d == bfloat16) {
    return "nv::bfloat16_value(" + expr + ")";
  }
  return expr;
}

std::string store(Dtype d, const std::string& expr) {
  if (d == float16) {
    return "(_Float16)(" + expr + ")";
  }
  if (d == bfloat16) {
    return "nv::bfloat16_bits(" + expr + ")";
  }
  return expr;
}

std::string rounded(Dtype d, const std::string& expr) {
  if (d == float16 || d == bfloat16) {
    return load(d, store(d, expr));
  }
  return expr;
}

namespace {

using Expr = std::optional<std::string>;

bool is_float(Dtype d) { return d == float32 || d == float64 || d == float16 || d == bfloat16; }

/// The libm function of a float or double value.
std::string libm(std::string_view name, Dtype d) { return std::string(name) + (d == float64 ? "" : "f"); }

/// A unary step: its operand's dtype (the step's own unless the primitive changes it) and name.
struct Unary {
  Dtype d;
  const std::string& x;
  [[nodiscard]] bool flt() const { return is_float(d); }
  [[nodiscard]] bool integer() const { return is_integer(d); }
  [[nodiscard]] std::string call(std::string_view f) const { return std::string(f) + "(" + x + ")"; }
  /// libm's function of x, for floats only.
  [[nodiscard]] Expr math(std::string_view name) const { return flt() ? Expr(call(libm(name, d))) : std::nullopt; }
};

/// A binary step: both operands' dtype and their names.
struct Binary {
  Dtype d;
  const std::string& a;
  const std::string& b;
  [[nodiscard]] bool flt() const { return is_float(d); }
  [[nodiscard]] bool integer() const { return is_integer(d); }
  [[nodiscard]] bool boolean() const { return d == bool_; }
  [[nodiscard]] std::string infix(std::string_view op) const { return "(" + a + " " + std::string(op) + " " + b + ")"; }
  [[nodiscard]] std::string call(std::string_view f) const { return std::string(f) + "(" + a + ", " + b + ")"; }
  /// The bitwise operator on integers and bools, in the operands' type (C++ promotes to int).
  [[nodiscard]] Expr bitwise(std::string_view op) const {
    const std::string c = compute_type(d);
    return boolean() || integer() ? Expr("(" + c + ")" + infix(op)) : std::nullopt;
  }
  /// The larger (`greater`) or smaller operand; a NaN operand wins, as the kernels propagate NaN.
  [[nodiscard]] std::string extreme(std::string_view beats) const {
    const std::string wins = "(" + a + " " + std::string(beats) + " " + b;
    return flt() ? "(" + wins + " || " + a + " != " + a + ") ? " + a + " : " + b + ")"
                 : "(" + wins + ") ? " + a + " : " + b + ")";
  }
};

// ---- unary: the operand's dtype is the step's, except where noted

Expr expr(const Abs&, const Unary& u) {
  return u.flt() ? Expr(u.call("__builtin_" + libm("fabs", u.d))) : u.integer() ? Expr(u.call("nv::wrap_abs")) : Expr();
}
Expr expr(const Negative&, const Unary& u) {
  return u.flt() ? Expr("(-" + u.x + ")") : u.integer() ? Expr(u.call("nv::wrap_neg")) : Expr();
}
Expr expr(const Sign&, const Unary& u) {
  const std::string c = compute_type(u.d);
  const std::string& x = u.x;
  if (u.flt()) {
    return "(" + x + " > 0 ? " + c + "(1) : (" + x + " < 0 ? " + c + "(-1) : " + x + "))";
  }
  return u.integer() ? Expr("(" + c + ")((" + x + " > 0) - (" + x + " < 0))") : Expr();
}
Expr expr(const Floor&, const Unary& u) { return u.flt() ? Expr(u.call("__builtin_" + libm("floor", u.d))) : Expr(); }
Expr expr(const Ceil&, const Unary& u) { return u.flt() ? Expr(u.call("__builtin_" + libm("ceil", u.d))) : Expr(); }
/// rint rounds half to even in the default rounding mode, as numpy's round.
Expr expr(const Round&, const Unary& u) { return u.flt() ? Expr(u.call("__builtin_" + libm("rint", u.d))) : Expr(); }
Expr expr(const Square&, const Unary& u) {
  if (u.d == bool_) {
    return u.x;
  }
  return u.integer() ? "nv::wrap_mul(" + u.x + ", " + u.x + ")" : "(" + u.x + " * " + u.x + ")";
}
Expr expr(const Sqrt&, const Unary& u) { return u.flt() ? Expr(u.call("__builtin_" + libm("sqrt", u.d))) : Expr(); }
Expr expr(const Rsqrt&, const Unary& u) {
  const std::string one = compute_type(u.d) + "(1)";
  return u.flt() ? Expr("(" + one + " / " + u.call("__builtin_" + libm("sqrt", u.d)) + ")") : Expr();
}
Expr expr(const Reciprocal&, const Unary& u) {
  const std::string one = compute_type(u.d) + "(1)";
  return u.flt() ? Expr("(" + one + " / " + u.x + ")") : Expr();
}
Expr expr(const Exp&, const Unary& u) { return u.math("exp"); }
Expr expr(const Expm1&, const Unary& u) { return u.math("expm1"); }
Expr expr(const Log&, const Unary& u) { return u.math("log"); }
Expr expr(const Log2&, const Unary& u) { return u.math("log2"); }
Expr expr(const Log10&, const Unary& u) { return u.math("log10"); }
Expr expr(const Log1p&, const Unary& u) { return u.math("log1p"); }
Expr expr(const Sin&, const Unary& u) { return u.math("sin"); }
Expr expr(const Cos&, const Unary& u) { return u.math("cos"); }
Expr expr(const Tan&, const Unary& u) { return u.math("tan"); }
Expr expr(const ArcSin&, const Unary& u) { return u.math("asin"); }
Expr expr(const ArcCos&, const Unary& u) { return u.math("acos"); }
Expr expr(const ArcTan&, const Unary& u) { return u.math("atan"); }
Expr expr(const Sinh&, const Unary& u) { return u.math("sinh"); }
Expr expr(const Cosh&, const Unary& u) { return u.math("cosh"); }
/// float: a rational form without calls, which vectorizes (scalar_math.h).
Expr expr(const Tanh&, const Unary& u) {
  return u.flt() && u.d != float64 ? Expr(u.call("nv::tanh_rational")) : u.math("tanh");
}
Expr expr(const ArcSinh&, const Unary& u) { return u.math("asinh"); }
Expr expr(const ArcCosh&, const Unary& u) { return u.math("acosh"); }
Expr expr(const ArcTanh&, const Unary& u) { return u.math("atanh"); }
Expr expr(const Sigmoid&, const Unary& u) { return u.flt() ? Expr(u.call("nv::sigmoid")) : Expr(); }
Expr expr(const Erf&, const Unary& u) { return u.math("erf"); }
Expr expr(const ErfInv&, const Unary& u) { return u.flt() ? Expr(u.call("nv::erfinv")) : Expr(); }
// complex64 in or out: the generator has no complex type, so these never fuse.
Expr expr(const Conjugate&, const Unary&) { return std::nullopt; }
Expr expr(const Real&, const Unary&) { return std::nullopt; }
Expr expr(const Imag&, const Unary&) { return std::nullopt; }
/// Float operand, bool result.
Expr expr(const IsNaN&, const Unary& u) { return u.flt() ? Expr("(" + u.x + " != " + u.x + ")") : Expr(); }
/// Float operand, bool result.
Expr expr(const IsInf&, const Unary& u) { return u.flt() ? Expr("(bool)" + u.call("__builtin_isinf")) : Expr(); }
Expr expr(const LogicalNot&, const Unary& u) { return u.d == bool_ ? Expr("(!" + u.x + ")") : Expr(); }
Expr expr(const BitwiseInvert&, const Unary& u) {
  const std::string c = compute_type(u.d);
  return u.integer() ? Expr("(" + c + ")(~" + u.x + ")") : Expr();
}

/// Unary primitives whose result has another dtype than their operand.
template <class P>
constexpr bool changes_dtype = std::same_as<P, IsNaN> || std::same_as<P, IsInf>;

// ---- binary: bools add as "or", multiply as "and"; integers wrap

Expr expr(const Add&, const Binary& o) {
  return o.boolean() ? o.infix("||") : o.integer() ? o.call("nv::wrap_add") : o.infix("+");
}
Expr expr(const Subtract&, const Binary& o) {
  return o.boolean() ? o.infix("!=") : o.integer() ? o.call("nv::wrap_sub") : o.infix("-");
}
Expr expr(const Multiply&, const Binary& o) {
  return o.boolean() ? o.infix("&&") : o.integer() ? o.call("nv::wrap_mul") : o.infix("*");
}
/// Integers: numpy's floor division.
Expr expr(const Divide&, const Binary& o) {
  return o.boolean() ? o.infix("&&") : o.integer() ? o.call("nv::floor_divide") : o.infix("/");
}
Expr expr(const Remainder&, const Binary& o) { return o.boolean() ? "false" : o.call("nv::remainder"); }
Expr expr(const Power&, const Binary& o) {
  if (o.boolean()) {
    return "(" + o.a + " || !" + o.b + ")";
  }
  return o.integer() ? o.call("nv::power") : o.call(libm("pow", o.d));
}
Expr expr(const Maximum&, const Binary& o) { return o.boolean() ? o.infix("||") : o.extreme(">"); }
Expr expr(const Minimum&, const Binary& o) { return o.boolean() ? o.infix("&&") : o.extreme("<"); }
Expr expr(const LogAddExp&, const Binary& o) { return o.flt() ? Expr(o.call("nv::logaddexp")) : Expr(); }
Expr expr(const ArcTan2&, const Binary& o) { return o.flt() ? Expr(o.call(libm("atan2", o.d))) : Expr(); }
Expr expr(const Equal& p, const Binary& o) {
  if (o.flt() && p.equal_nan) {
    return "(" + o.a + " == " + o.b + " || (" + o.a + " != " + o.a + " && " + o.b + " != " + o.b + "))";
  }
  return o.infix("==");
}
Expr expr(const NotEqual&, const Binary& o) { return o.infix("!="); }
Expr expr(const Greater&, const Binary& o) { return o.infix(">"); }
Expr expr(const GreaterEqual&, const Binary& o) { return o.infix(">="); }
Expr expr(const Less&, const Binary& o) { return o.infix("<"); }
Expr expr(const LessEqual&, const Binary& o) { return o.infix("<="); }
Expr expr(const LogicalAnd&, const Binary& o) { return o.boolean() ? Expr(o.infix("&&")) : Expr(); }
Expr expr(const LogicalOr&, const Binary& o) { return o.boolean() ? Expr(o.infix("||")) : Expr(); }
Expr expr(const BitwiseAnd&, const Binary& o) { return o.bitwise("&"); }
Expr expr(const BitwiseOr&, const Binary& o) { return o.bitwise("|"); }
Expr expr(const BitwiseXor&, const Binary& o) { return o.bitwise("^"); }
Expr expr(const LeftShift&, const Binary& o) { return o.integer() ? Expr(o.call("nv::shift_left")) : Expr(); }
Expr expr(const RightShift&, const Binary& o) { return o.integer() ? Expr(o.call("nv::shift_right")) : Expr(); }

/// numpy's conversion of a compute value of `from` to `to` (as the AsType kernel does), as a compute value.
std::string converted(Dtype from, Dtype to, const std::string& x) {
  if (from == to) {
    return x;
  }
  const std::string t = compute_type(to);
  if (to == bool_) {
    return "(" + x + " != 0)";
  }
  if (to == float16) {
    return from == float64 || !is_float(from) ? "(float)(_Float16)(double)(" + x + ")" : "(float)(_Float16)(" + x + ")";
  }
  if (to == bfloat16) {
    return "nv::bfloat16_value(nv::bfloat16_bits((float)(" + x + ")))";
  }
  if (is_integer(to) && is_float(from)) {
    return "nv::float_to_int<" + t + ">((double)(" + x + "))";
  }
  return "(" + t + ")(" + x + ")";
}

bool generable(Dtype d) { return d != complex64; }

}  // namespace

std::string literal(Dtype d, double value) {
  const std::string c = compute_type(d);
  if (d == bool_) {
    return value != 0 ? "true" : "false";
  }
  if (!is_float(d)) {
    return "(" + c + ")(" + std::to_string(static_cast<int64_t>(value)) + "LL)";
  }
  const std::string suffix = c == "float" ? "f" : "";
  if (std::isnan(value)) {
    return "__builtin_nan" + suffix + "(\"\")";
  }
  if (std::isinf(value)) {
    return std::string(value < 0 ? "(-" : "(") + "__builtin_inf" + suffix + "())";
  }
  std::array<char, 64> text{};
  std::snprintf(text.data(), text.size(), "%a", value);
  return std::string("(").append(text.data()).append(suffix).append(")");
}

std::optional<std::string> constant_power(Dtype d, const std::string& x, double e) {
  const PowerForm form = power_form(e);
  const std::string c = compute_type(d);
  const bool integer = is_integer(d);
  if (d == bool_ || (!integer && !is_float(d))) {
    return std::nullopt;
  }
  if (form.kind == PowerForm::Kind::product && (form.n >= 0 || !integer)) {
    // Multiplied in the CPU kernel's order (power_by_squaring); the compiler merges the repeated factors.
    auto times = [&](const std::string& a, const std::string& b) {
      return integer ? "nv::wrap_mul(" + a + ", " + b + ")" : "(" + a + " * " + b + ")";
    };
    const int m = std::abs(form.n);
    if (m == 0) {
      return c + "(1)";
    }
    const std::string result = power_by_squaring(x, m, times);
    return form.n < 0 ? "(" + c + "(1) / " + result + ")" : result;
  }
  if (integer) {
    return std::nullopt;
  }
  // pow's edges: sqrt(-0) is -0 where pow gives +0, sqrt(-inf) NaN where pow gives +inf.
  const std::string inf = literal(d, INFINITY);
  const std::string root = "__builtin_" + libm("fabs", d) + "(__builtin_" + libm("sqrt", d) + "(" + x + "))";
  switch (form.kind) {
    case PowerForm::Kind::sqrt:
      return "(" + x + " == -" + inf + " ? " + inf + " : " + root + ")";
    case PowerForm::Kind::rsqrt:
      return "(" + x + " == -" + inf + " ? " + c + "(0) : " + c + "(1) / " + root + ")";
    case PowerForm::Kind::product:
    case PowerForm::Kind::pow:
      break;
  }
  return libm("pow", d) + "(" + x + ", " + literal(d, e) + ")";
}

std::optional<std::string> expression(const Primitive& p, const std::vector<Dtype>& arg_dtypes,
                                      const std::vector<std::string>& args, Dtype out) {
  for (Dtype d : arg_dtypes) {
    if (!generable(d)) {
      return std::nullopt;
    }
  }
  if (!generable(out)) {
    return std::nullopt;
  }
  return std::visit(
      [&]<class P>(const P& prim) -> Expr {
        if constexpr (UnaryPrimitive<P>) {
          if (!changes_dtype<P> && arg_dtypes[0] != out) {
            return std::nullopt;
          }
          return expr(prim, Unary{arg_dtypes[0], args[0]});
        } else if constexpr (BinaryPrimitive<P>) {
          if (arg_dtypes[0] != arg_dtypes[1]) {
            return std::nullopt;
          }
          return expr(prim, Binary{arg_dtypes[0], args[0], args[1]});
        } else if constexpr (std::same_as<P, Select>) {
          if (arg_dtypes[0] != bool_ || arg_dtypes[1] != out || arg_dtypes[2] != out) {
            return std::nullopt;
          }
          return "(" + args[0] + " ? " + args[1] + " : " + args[2] + ")";
        } else if constexpr (std::same_as<P, AsType>) {
          return converted(arg_dtypes[0], prim.dtype, args[0]);
        } else if constexpr (std::same_as<P, Broadcast>) {
          return args[0];
        } else {
          static_assert(!Elementwise<P>);
          return std::nullopt;
        }
      },
      p);
}

}  // namespace nuvec::detail
