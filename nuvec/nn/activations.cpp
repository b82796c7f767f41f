#include "nuvec/nn/activations.h"

#include <cmath>

#include "nuvec/core/compile.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/transforms.h"
#include "nuvec/nn/scalar.h"

namespace nuvec::nn {

using detail::like;

namespace {

/// An element-wise activation as one compiled kernel (shapeless: traced once per dtype and rank), with a compiled
/// kernel for its vjp: the forward and the backward pass each read the input once, where the plain compositions run
/// a kernel per operation both ways (MLX compiles its activations the same way). `derivative(x)` is f'(x); the
/// backward kernel computes cotangent * f'(x). Transforms of these kernels (second derivatives, jvp, vmap) go through
/// the plain compositions the compiled functions trace.
Function fused_activation(array (*f)(const array&), array (*derivative)(const array&)) {
  auto forward = compile([f](const std::vector<array>& in) { return std::vector<array>{f(in[0])}; }, true);
  auto backward = compile(
      [derivative](const std::vector<array>& in) { return std::vector<array>{in[1] * derivative(in[0])}; }, true);
  return custom_vjp(forward, [backward](const std::vector<array>& primals, const std::vector<array>& cotangents,
                                        const std::vector<array>&) { return backward({primals[0], cotangents[0]}); });
}

array gelu_plain(const array& x) { return x * like(x, 0.5) * (like(x, 1.0) + erf(x * like(x, M_SQRT1_2))); }
array gelu_derivative(const array& x) {
  // Φ(x) + x φ(x)
  const double inv_sqrt_2pi = 0.5 * M_2_SQRTPI * M_SQRT1_2;
  return like(x, 0.5) * (like(x, 1.0) + erf(x * like(x, M_SQRT1_2))) +
         x * like(x, inv_sqrt_2pi) * exp(like(x, -0.5) * x * x);
}

constexpr double gelu_c = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double gelu_a = 0.044715;
array gelu_approx_plain(const array& x) {
  auto inner = like(x, gelu_c) * (x + like(x, gelu_a) * x * x * x);
  return like(x, 0.5) * x * (like(x, 1.0) + nuvec::tanh(inner));
}
array gelu_approx_derivative(const array& x) {
  auto x2 = x * x;
  auto t = nuvec::tanh(like(x, gelu_c) * x * (like(x, 1.0) + like(x, gelu_a) * x2));
  auto dinner = like(x, gelu_c) * (like(x, 1.0) + like(x, 3 * gelu_a) * x2);
  return like(x, 0.5) * (like(x, 1.0) + t) + like(x, 0.5) * x * (like(x, 1.0) - t * t) * dinner;
}

array silu_plain(const array& x) { return x * nuvec::sigmoid(x); }
array silu_derivative(const array& x) {
  auto s = nuvec::sigmoid(x);
  return s * (like(x, 1.0) + x * (like(x, 1.0) - s));
}

/// Applies a fused activation to a floating array; other dtypes take the plain composition (which promotes).
array apply(const Function& fused, array (*plain)(const array&), const array& x) {
  return issubdtype(x.dtype(), floating) ? fused({x})[0] : plain(x);
}

}  // namespace

// The piecewise activations select with `where` rather than maximum/minimum: the same values (NaN passes through),
// and a backward pass that is one select instead of maximum's comparisons and tie handling.
array relu(const array& x) { return where(less(x, like(x, 0)), like(x, 0), x); }

array leaky_relu(const array& x, float negative_slope) {
  return where(greater_equal(x, like(x, 0.0)), x, x * like(x, negative_slope));
}

array relu6(const array& x) { return hard_tanh(x, 0.0F, 6.0F); }

array elu(const array& x, float alpha) { return where(greater(x, like(x, 0.0)), x, like(x, alpha) * expm1(x)); }

array selu(const array& x) {
  constexpr double alpha = 1.6732632423543772848170429916717;
  constexpr double scale = 1.0507009873554804934193349852946;
  return like(x, scale) * elu(x, static_cast<float>(alpha));
}

array celu(const array& x, float alpha) {
  return where(greater(x, like(x, 0.0)), x, like(x, alpha) * expm1(x / like(x, alpha)));
}

array gelu(const array& x) {
  static const Function fused = fused_activation(gelu_plain, gelu_derivative);
  return apply(fused, gelu_plain, x);
}

array gelu_approx(const array& x) {
  static const Function fused = fused_activation(gelu_approx_plain, gelu_approx_derivative);
  return apply(fused, gelu_approx_plain, x);
}

array gelu_fast_approx(const array& x) { return x * nuvec::sigmoid(like(x, 1.702) * x); }

array silu(const array& x) {
  static const Function fused = fused_activation(silu_plain, silu_derivative);
  return apply(fused, silu_plain, x);
}

array mish(const array& x) { return x * nuvec::tanh(softplus(x)); }

array softplus(const array& x) { return logaddexp(x, like(x, 0.0)); }

array softsign(const array& x) { return x / (like(x, 1.0) + abs(x)); }

array hardswish(const array& x) { return x * hard_sigmoid(x); }

array hard_sigmoid(const array& x) { return relu6(x + like(x, 3.0)) / like(x, 6.0); }

array hard_tanh(const array& x, float min_val, float max_val) {
  return where(less(x, like(x, min_val)), like(x, min_val), where(greater(x, like(x, max_val)), like(x, max_val), x));
}

array softshrink(const array& x, float lambd) {
  return where(greater(abs(x), like(x, lambd)), x - sign(x) * like(x, lambd), like(x, 0.0));
}

array hard_shrink(const array& x, float lambd) { return where(greater(abs(x), like(x, lambd)), x, like(x, 0)); }

array softmin(const array& x, int axis) { return nuvec::softmax(-x, axis, true); }

array prelu(const array& x, const array& alpha) { return where(less(x, like(x, 0.0)), alpha * x, x); }

array glu(const array& x, int axis) {
  if (x.ndim() == 0 || x.shape(axis) % 2 != 0) {
    throw_invalid("[glu] expected an even size on axis " + std::to_string(axis) + "; given shape " +
                  shape_string(x.shape()) + ".");
  }
  auto halves = split(x, 2, axis);
  return halves[0] * nuvec::sigmoid(halves[1]);
}

array log_sigmoid(const array& x) { return -softplus(-x); }

array log_softmax(const array& x, int axis) { return x - logsumexp(x, axis, true); }

array step(const array& x, float threshold) { return astype(greater(x, like(x, threshold)), int32); }

GELU::GELU(std::string approx) : approx_(std::move(approx)) {
  if (approx_ != "none" && approx_ != "precise" && approx_ != "tanh" && approx_ != "fast") {
    throw_invalid("[GELU] approx must be \"none\", \"precise\", \"tanh\" or \"fast\"; given \"" + approx_ + "\".");
  }
}

array GELU::forward(const array& x) {
  if (approx_ == "none") {
    return gelu(x);
  }
  if (approx_ == "fast") {
    return gelu_fast_approx(x);
  }
  return gelu_approx(x);
}

PReLU::PReLU(int num_parameters, float init) : weight(full({num_parameters}, init)) {
  register_parameter("weight", weight);
}

array PReLU::forward(const array& x) {
  if (weight.size() != 1 && (x.ndim() == 0 || x.shape(-1) != weight.shape(0))) {
    fail("expected input of shape (..., " + std::to_string(weight.shape(0)) + "); given shape " +
         shape_string(x.shape()) + ".");
  }
  return prelu(x, weight);
}

array GLU::forward(const array& x) {
  if (x.ndim() == 0 || x.shape(axis_) % 2 != 0) {
    fail("expected an even size on axis " + std::to_string(axis_) + "; given shape " + shape_string(x.shape()) + ".");
  }
  return glu(x, axis_);
}

}  // namespace nuvec::nn
