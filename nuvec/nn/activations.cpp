#include "nuvec/nn/activations.h"

#include <cmath>

#include "nuvec/core/ops.h"
#include "nuvec/nn/scalar.h"

namespace nuvec::nn {

using detail::like;

// The piecewise activations select with `where` rather than maximum/minimum: the same values (NaN passes through),
// and a backward pass that is one select instead of maximum's comparisons and tie handling.
array relu(const array& x) { return where(less(x, like(x, 0.0)), like(x, 0.0), x); }

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

array gelu(const array& x) { return x * like(x, 0.5) * (like(x, 1.0) + erf(x * like(x, 1.0 / std::sqrt(2.0)))); }

array gelu_approx(const array& x) {
  const double c = std::sqrt(2.0 / M_PI);
  auto inner = like(x, c) * (x + like(x, 0.044715) * x * x * x);
  return like(x, 0.5) * x * (like(x, 1.0) + nuvec::tanh(inner));
}

array gelu_fast_approx(const array& x) { return x * nuvec::sigmoid(like(x, 1.702) * x); }

array silu(const array& x) { return x * nuvec::sigmoid(x); }

array mish(const array& x) { return x * nuvec::tanh(softplus(x)); }

array softplus(const array& x) { return logaddexp(x, like(x, 0.0)); }

array softsign(const array& x) { return x / (like(x, 1.0) + abs(x)); }

array hardswish(const array& x) { return x * hard_sigmoid(x); }

array hard_sigmoid(const array& x) { return relu6(x + like(x, 3.0)) / like(x, 6.0); }

array hard_tanh(const array& x, float min_val, float max_val) {
  return where(less(x, like(x, min_val)), like(x, min_val), where(greater(x, like(x, max_val)), like(x, max_val), x));
}

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

array step(const array& x, float threshold) { return astype(greater(x, like(x, threshold)), x.dtype()); }

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
