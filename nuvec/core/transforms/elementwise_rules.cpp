// Rules of the element-wise primitives. Each unary op states v * f'(x) and each
// binary op v * (df / d operand); vjp and jvp are both built from that product
// (vjp conjugates around it for complex inputs), vmap moves mapped axes to the
// front and broadcasts.

#include <numbers>

#include "nuvec/core/ops.h"
#include "nuvec/core/transforms/rules.h"

namespace nuvec::detail {

namespace {

// ---- unary: v * f'(x), with y = f(x)

array zero(const array& v) { return zeros_like(v); }

array scaled(const Abs&, const array& v, const array& x, const array&) { return v * sign(x); }
array scaled(const Negative&, const array& v, const array&, const array&) { return negative(v); }
array scaled(const Sign&, const array& v, const array&, const array&) { return zero(v); }
array scaled(const Floor&, const array& v, const array&, const array&) { return zero(v); }
array scaled(const Ceil&, const array& v, const array&, const array&) { return zero(v); }
array scaled(const Round&, const array& v, const array&, const array&) { return zero(v); }
array scaled(const Square&, const array& v, const array& x, const array&) { return v * (x * 2.0F); }
array scaled(const Sqrt&, const array& v, const array&, const array& y) { return v * 0.5F / y; }
array scaled(const Rsqrt&, const array& v, const array& x, const array& y) { return v * (-0.5F) * y / x; }
array scaled(const Reciprocal&, const array& v, const array&, const array& y) { return negative(v) * y * y; }
array scaled(const Exp&, const array& v, const array&, const array& y) { return v * y; }
array scaled(const Expm1&, const array& v, const array&, const array& y) { return v * (y + 1.0F); }
array scaled(const Log&, const array& v, const array& x, const array&) { return v / x; }
array scaled(const Log2&, const array& v, const array& x, const array&) {
  return v / (x * static_cast<float>(std::numbers::ln2));
}
array scaled(const Log10&, const array& v, const array& x, const array&) {
  return v / (x * static_cast<float>(std::numbers::ln10));
}
array scaled(const Log1p&, const array& v, const array& x, const array&) { return v / (x + 1.0F); }
array scaled(const Sin&, const array& v, const array& x, const array&) { return v * cos(x); }
array scaled(const Cos&, const array& v, const array& x, const array&) { return negative(v) * sin(x); }
array scaled(const Tan&, const array& v, const array&, const array& y) { return v * (square(y) + 1.0F); }
array scaled(const ArcSin&, const array& v, const array& x, const array&) { return v * rsqrt(1.0F - square(x)); }
array scaled(const ArcCos&, const array& v, const array& x, const array&) {
  return negative(v) * rsqrt(1.0F - square(x));
}
array scaled(const ArcTan&, const array& v, const array& x, const array&) { return v / (square(x) + 1.0F); }
array scaled(const Sinh&, const array& v, const array& x, const array&) { return v * cosh(x); }
array scaled(const Cosh&, const array& v, const array& x, const array&) { return v * sinh(x); }
array scaled(const Tanh&, const array& v, const array&, const array& y) { return v * (1.0F - square(y)); }
array scaled(const ArcSinh&, const array& v, const array& x, const array&) { return v * rsqrt(square(x) + 1.0F); }
array scaled(const ArcCosh&, const array& v, const array& x, const array&) { return v * rsqrt(square(x) - 1.0F); }
array scaled(const ArcTanh&, const array& v, const array& x, const array&) { return v / (1.0F - square(x)); }
array scaled(const Sigmoid&, const array& v, const array&, const array& y) { return v * y * (1.0F - y); }
array scaled(const Erf&, const array& v, const array& x, const array&) {
  return v * (static_cast<float>(2.0 * std::numbers::inv_sqrtpi) * exp(negative(square(x))));
}
array scaled(const ErfInv&, const array& v, const array&, const array& y) {
  return v * (static_cast<float>(0.5 / std::numbers::inv_sqrtpi) * exp(square(y)));
}
array scaled(const Conjugate&, const array& v, const array&, const array&) { return conjugate(v); }
array scaled(const Real&, const array& v, const array&, const array&) { return real(v); }
array scaled(const Imag&, const array& v, const array&, const array&) { return imag(v); }
array scaled(const IsNaN&, const array& v, const array&, const array&) { return zero(v); }
array scaled(const IsInf&, const array& v, const array&, const array&) { return zero(v); }
array scaled(const LogicalNot&, const array& v, const array&, const array&) { return zero(v); }
array scaled(const BitwiseInvert&, const array& v, const array&, const array&) { return zero(v); }

// ---- binary: v * (dy / d operand `which`), with y = f(a, b)

struct Operands {
  const array& a;
  const array& b;
  const array& y;
  int which;
};

/// v where `mine` is the one selected, half of v on ties (PyTorch's split), 0 elsewhere.
array selected_part(const array& v, const array& wins, const array& ties) {
  return where(wins, v, where(ties, v * 0.5F, zeros_like(v)));
}

array scaled(const Add&, const array& v, const Operands&) { return v; }
array scaled(const Subtract&, const array& v, const Operands& o) { return o.which == 0 ? v : negative(v); }
array scaled(const Multiply&, const array& v, const Operands& o) { return v * (o.which == 0 ? o.b : o.a); }
array scaled(const Divide&, const array& v, const Operands& o) {
  return o.which == 0 ? v / o.b : negative(v) * o.y / o.b;
}
array scaled(const Remainder&, const array& v, const Operands& o) {
  return o.which == 0 ? v : negative(v) * floor(o.a / o.b);
}
array scaled(const Power&, const array& v, const Operands& o) {
  if (o.which == 0) {
    return v * o.b * power(o.a, o.b - 1.0F);
  }
  // d/db a^b = a^b log a; 0 where a == 0 (the limit for b > 0, as PyTorch).
  return v * where(equal(o.a, zeros_like(o.a)), zeros_like(o.y), o.y * log(o.a));
}
array scaled(const Maximum&, const array& v, const Operands& o) {
  const auto& mine = o.which == 0 ? o.a : o.b;
  const auto& other = o.which == 0 ? o.b : o.a;
  return selected_part(v, greater(mine, other), equal(mine, other));
}
array scaled(const Minimum&, const array& v, const Operands& o) {
  const auto& mine = o.which == 0 ? o.a : o.b;
  const auto& other = o.which == 0 ? o.b : o.a;
  return selected_part(v, less(mine, other), equal(mine, other));
}
array scaled(const LogAddExp&, const array& v, const Operands& o) {
  return v * (o.which == 0 ? sigmoid(o.a - o.b) : sigmoid(o.b - o.a));
}
array scaled(const ArcTan2&, const array& v, const Operands& o) {
  auto r2 = square(o.a) + square(o.b);
  return o.which == 0 ? v * o.b / r2 : negative(v) * o.a / r2;
}
// Comparisons, logical and bitwise ops are piecewise constant: their derivative is zero wherever it exists.
array scaled(const Equal&, const array& v, const Operands&) { return zero(v); }
array scaled(const NotEqual&, const array& v, const Operands&) { return zero(v); }
array scaled(const Greater&, const array& v, const Operands&) { return zero(v); }
array scaled(const GreaterEqual&, const array& v, const Operands&) { return zero(v); }
array scaled(const Less&, const array& v, const Operands&) { return zero(v); }
array scaled(const LessEqual&, const array& v, const Operands&) { return zero(v); }
array scaled(const LogicalAnd&, const array& v, const Operands&) { return zero(v); }
array scaled(const LogicalOr&, const array& v, const Operands&) { return zero(v); }
array scaled(const BitwiseAnd&, const array& v, const Operands&) { return zero(v); }
array scaled(const BitwiseOr&, const array& v, const Operands&) { return zero(v); }
array scaled(const BitwiseXor&, const array& v, const Operands&) { return zero(v); }
array scaled(const LeftShift&, const array& v, const Operands&) { return zero(v); }
array scaled(const RightShift&, const array& v, const Operands&) { return zero(v); }

bool is_complex(const array& a) { return a.dtype() == complex64; }

/// v * (dy / d input `which`) for any element-wise primitive.
array scale(const Primitive& p, const array& v, const std::vector<array>& in, const array& y, int which) {
  return std::visit(
      [&]<class P>(const P& alt) -> array {
        if constexpr (UnaryPrimitive<P>) {
          return scaled(alt, v, in[0], y);
        } else if constexpr (BinaryPrimitive<P>) {
          return scaled(alt, v, Operands{in[0], in[1], y, which});
        } else {
          throw_no_rule("transforms", alt.name, "is not element-wise.");
        }
      },
      p);
}

}  // namespace

std::vector<array> vjp_elementwise(const Primitive& p, const VjpArgs& args) {
  const auto& ct = args.cotangents[0];
  std::vector<array> grads;
  for (int which : args.argnums) {
    const auto& input = args.primals[static_cast<size_t>(which)];
    array g = [&] {
      if (std::holds_alternative<Real>(p)) {
        return astype(ct, complex64);
      }
      if (std::holds_alternative<Imag>(p)) {
        return astype(ct, complex64) * array(complex64_t{0.0F, 1.0F});
      }
      if (is_complex(input) || is_complex(ct)) {
        return conjugate(scale(p, conjugate(ct), args.primals, args.outputs[0], which));
      }
      return scale(p, ct, args.primals, args.outputs[0], which);
    }();
    grads.push_back(sum_to_shape(g, input.shape()));
  }
  return grads;
}

std::vector<array> jvp_elementwise(const Primitive& p, const JvpArgs& args) {
  const auto& y = args.outputs[0];
  std::optional<array> total;
  for (size_t k = 0; k < args.argnums.size(); ++k) {
    auto term = scale(p, args.tangents[k], args.primals, y, args.argnums[k]);
    total = total ? add(*total, term) : term;
  }
  return {total->shape() == y.shape() ? *total : broadcast_to(*total, y.shape())};
}

Batched vmap_elementwise(const Primitive& p, const VmapArgs& args) {
  const auto& out = args.outputs[0];
  Shape shape = out.shape();
  shape.insert(shape.begin(), args.size);
  std::vector<array> inputs;
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    const auto& x = args.inputs[i];
    if (args.axes[i] < 0) {
      // A size-1 operand may stay as it is (kernels read it as a broadcast value).
      inputs.push_back(x.size() == 1 ? x : broadcast_to(x, shape));
      continue;
    }
    auto front = moveaxis(x, args.axes[i], 0);
    Shape aligned = front.shape();
    aligned.insert(aligned.begin() + 1, static_cast<size_t>(out.ndim() - (front.ndim() - 1)), 1);
    inputs.push_back(broadcast_to(reshape(front, aligned), shape));
  }
  return {{reapply(p, std::move(inputs), std::move(shape), out.dtype())}, {0}};
}

// ---- Select, AsType, Arange, RandomBits

std::vector<array> vjp_of(const Select&, const VjpArgs& args) {
  const auto& c = args.primals[0];
  const auto& ct = args.cotangents[0];
  auto none = zeros_like(ct);
  std::vector<array> grads;
  for (int which : args.argnums) {
    auto g = which == 1 ? where(c, ct, none) : where(c, none, ct);
    grads.push_back(sum_to_shape(g, args.primals[static_cast<size_t>(which)].shape()));
  }
  return grads;
}
std::vector<array> jvp_of(const Select&, const JvpArgs& args) {
  const auto& y = args.outputs[0];
  const array* tx = tangent_of(args, 1);
  const array* ty = tangent_of(args, 2);
  return {broadcast_to(where(args.primals[0], tx ? *tx : zeros_like(y), ty ? *ty : zeros_like(y)), y.shape())};
}
Batched vmap_of(const Select& p, const VmapArgs& args) { return vmap_elementwise(p, args); }

std::vector<array> vjp_of(const AsType&, const VjpArgs& args) {
  const auto& input = args.primals[0];
  auto ct = args.cotangents[0];
  if (is_complex(ct) && !is_complex(input)) {
    ct = real(ct);
  }
  return {astype(ct, input.dtype())};
}
std::vector<array> jvp_of(const AsType& p, const JvpArgs& args) { return {astype(args.tangents[0], p.dtype)}; }
Batched vmap_of(const AsType& p, const VmapArgs& args) { return vmap_elementwise(p, args); }

std::vector<array> vjp_of(const Arange& p, const VjpArgs&) { throw_no_rule("vjp", p.name, "has no inputs."); }
std::vector<array> jvp_of(const Arange& p, const JvpArgs&) { throw_no_rule("jvp", p.name, "has no inputs."); }
Batched vmap_of(const Arange& p, const VmapArgs&) { throw_no_rule("vmap", p.name, "has no inputs."); }

std::vector<array> vjp_of(const RandomBits& p, const VjpArgs&) {
  throw_no_rule("vjp", p.name, "is not differentiable (its input is an integer key).");
}
std::vector<array> jvp_of(const RandomBits& p, const JvpArgs&) {
  throw_no_rule("jvp", p.name, "is not differentiable (its input is an integer key).");
}
Batched vmap_of(const RandomBits& p, const VmapArgs& args) {
  // The kernel takes keys (..., 2), one run of bits per key in key order: mapped keys in front give mapped runs.
  return reapply_front(p, {moved_front(args, 0)}, args);
}

}  // namespace nuvec::detail
