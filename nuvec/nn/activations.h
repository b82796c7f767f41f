#pragma once

// Activation functions (mlx.nn's names) and their modules. Each function takes any floating-point array and keeps
// its dtype (constants are cast to it, so half precision stays half; prelu promotes with alpha); integer and bool
// inputs give float32 as in mlx.nn, except relu, which keeps their dtype, and step, which gives int32 for every input
// (mlx.nn's where(x > threshold, 1, 0)); the modules wrap them for Sequential. sigmoid, tanh and softmax are the
// core ops (nuvec::sigmoid, ...). PReLU holds a learned slope per channel (the last axis, channels-last).

#include <string>

#include "nuvec/core/array.h"
#include "nuvec/core/ops.h"
#include "nuvec/nn/module.h"

namespace nuvec::nn {

/// max(x, 0); NaN passes through.
array relu(const array& x);
/// x where x >= 0, negative_slope * x elsewhere.
array leaky_relu(const array& x, float negative_slope = 0.01F);
/// min(max(x, 0), 6).
array relu6(const array& x);
/// x where x > 0, alpha * (exp(x) - 1) elsewhere.
array elu(const array& x, float alpha = 1.0F);
/// The scaled ELU of Klambauer et al. (alpha 1.6732632, scale 1.0507010).
array selu(const array& x);
/// max(x, 0) + min(0, alpha * (exp(x / alpha) - 1)).
array celu(const array& x, float alpha = 1.0F);
/// x * Phi(x) with the exact normal CDF (one fused kernel each way for floating x).
array gelu(const array& x);
/// The tanh approximation of gelu (PyTorch's approximate="tanh").
array gelu_approx(const array& x);
/// x * sigmoid(1.702 x).
array gelu_fast_approx(const array& x);
/// x * sigmoid(x).
array silu(const array& x);
/// x * tanh(softplus(x)).
array mish(const array& x);
/// log(1 + exp(x)), computed without overflow.
array softplus(const array& x);
/// x / (1 + |x|).
array softsign(const array& x);
/// x * relu6(x + 3) / 6.
array hardswish(const array& x);
/// relu6(x + 3) / 6.
array hard_sigmoid(const array& x);
/// clip(x, min_val, max_val).
array hard_tanh(const array& x, float min_val = -1.0F, float max_val = 1.0F);
/// x - sign(x) * lambd where |x| > lambd, else 0.
array softshrink(const array& x, float lambd = 0.5F);
/// x where |x| > lambd, else 0.
array hard_shrink(const array& x, float lambd = 0.5F);
/// softmax(-x) over `axis` (default -1).
array softmin(const array& x, int axis = -1);
/// x where x >= 0, alpha * x elsewhere; alpha broadcasts against x (one value, or one per channel of the last axis).
array prelu(const array& x, const array& alpha);
/// a * sigmoid(b) for the two halves a, b of `axis` (default -1), which halves its size; an odd size or a 0-d x
/// throws.
array glu(const array& x, int axis = -1);
/// -softplus(-x).
array log_sigmoid(const array& x);
/// x - logsumexp(x, axis), axis -1 by default.
array log_softmax(const array& x, int axis = -1);
/// 1 where x > threshold, else 0, int32 whatever x's dtype (as mlx.nn.step).
array step(const array& x, float threshold = 0.0F);

namespace detail {
// Function-pointer forms of the core ops the modules below wrap (the core ops take a trailing stream).
inline array sigmoid_op(const array& x) { return nuvec::sigmoid(x); }
inline array tanh_op(const array& x) { return nuvec::tanh(x); }
}  // namespace detail

/// A parameterless activation module: one alias per function; Name is its type_name().
template <FixedName Name, array (*Fn)(const array&)>
class Activation : public UnaryModule {
 public:
  [[nodiscard]] std::string type_name() const override { return Name.chars; }
  array forward(const array& x) override { return Fn(x); }
};

using ReLU = Activation<"ReLU", relu>;
using ReLU6 = Activation<"ReLU6", relu6>;
using SELU = Activation<"SELU", selu>;
using SiLU = Activation<"SiLU", silu>;
using Mish = Activation<"Mish", mish>;
using Softplus = Activation<"Softplus", softplus>;
using Softsign = Activation<"Softsign", softsign>;
using Hardswish = Activation<"Hardswish", hardswish>;
using HardSigmoid = Activation<"HardSigmoid", hard_sigmoid>;
using Sigmoid = Activation<"Sigmoid", detail::sigmoid_op>;
using Tanh = Activation<"Tanh", detail::tanh_op>;
using LogSigmoid = Activation<"LogSigmoid", log_sigmoid>;

/// leaky_relu with a fixed negative_slope (default 0.01).
class LeakyReLU : public UnaryModule {
 public:
  explicit LeakyReLU(float negative_slope = 0.01F) : negative_slope_(negative_slope) {}
  [[nodiscard]] std::string type_name() const override { return "LeakyReLU"; }
  array forward(const array& x) override { return leaky_relu(x, negative_slope_); }

 private:
  float negative_slope_;
};

/// elu with a fixed alpha (default 1).
class ELU : public UnaryModule {
 public:
  explicit ELU(float alpha = 1.0F) : alpha_(alpha) {}
  [[nodiscard]] std::string type_name() const override { return "ELU"; }
  array forward(const array& x) override { return elu(x, alpha_); }

 private:
  float alpha_;
};

/// celu with a fixed alpha (default 1).
class CELU : public UnaryModule {
 public:
  explicit CELU(float alpha = 1.0F) : alpha_(alpha) {}
  [[nodiscard]] std::string type_name() const override { return "CELU"; }
  array forward(const array& x) override { return celu(x, alpha_); }

 private:
  float alpha_;
};

/// GELU: approx "none" (exact, the default), "precise" or "tanh" (both the tanh approximation), or "fast"
/// (x * sigmoid(1.702 x)); another approx throws.
class GELU : public UnaryModule {
 public:
  explicit GELU(std::string approx = "none");
  [[nodiscard]] std::string type_name() const override { return "GELU"; }
  array forward(const array& x) override;

 private:
  std::string approx_;
};

/// hard_tanh with fixed bounds (default [-1, 1]).
class Hardtanh : public UnaryModule {
 public:
  explicit Hardtanh(float min_val = -1.0F, float max_val = 1.0F) : min_val_(min_val), max_val_(max_val) {}
  [[nodiscard]] std::string type_name() const override { return "Hardtanh"; }
  array forward(const array& x) override { return hard_tanh(x, min_val_, max_val_); }

 private:
  float min_val_;
  float max_val_;
};

/// PReLU with `num_parameters` learned slopes (parameter "weight": 1, or the number of channels on the last axis),
/// each starting at `init`. With more than one slope, an input whose last axis has another size throws.
class PReLU : public UnaryModule {
 public:
  explicit PReLU(int num_parameters = 1, float init = 0.25F);
  [[nodiscard]] std::string type_name() const override { return "PReLU"; }
  array forward(const array& x) override;
  array weight;
};

/// glu over a fixed axis (default -1).
class GLU : public UnaryModule {
 public:
  explicit GLU(int axis = -1) : axis_(axis) {}
  [[nodiscard]] std::string type_name() const override { return "GLU"; }
  array forward(const array& x) override;

 private:
  int axis_;
};

/// log_softmax over a fixed axis (default -1).
class LogSoftmax : public UnaryModule {
 public:
  explicit LogSoftmax(int axis = -1) : axis_(axis) {}
  [[nodiscard]] std::string type_name() const override { return "LogSoftmax"; }
  array forward(const array& x) override { return log_softmax(x, axis_); }

 private:
  int axis_;
};

/// softmax over a fixed axis (default -1), computed in float32 at least (precise).
class Softmax : public UnaryModule {
 public:
  explicit Softmax(int axis = -1) : axis_(axis) {}
  [[nodiscard]] std::string type_name() const override { return "Softmax"; }
  array forward(const array& x) override { return nuvec::softmax(x, axis_, true); }

 private:
  int axis_;
};

/// softmin over a fixed axis (default -1).
class Softmin : public UnaryModule {
 public:
  explicit Softmin(int axis = -1) : axis_(axis) {}
  [[nodiscard]] std::string type_name() const override { return "Softmin"; }
  array forward(const array& x) override { return softmin(x, axis_); }

 private:
  int axis_;
};

/// softshrink with a fixed lambd (default 0.5).
class Softshrink : public UnaryModule {
 public:
  explicit Softshrink(float lambd = 0.5F) : lambd_(lambd) {}
  [[nodiscard]] std::string type_name() const override { return "Softshrink"; }
  array forward(const array& x) override { return softshrink(x, lambd_); }

 private:
  float lambd_;
};

/// hard_shrink with a fixed lambd (default 0.5).
class HardShrink : public UnaryModule {
 public:
  explicit HardShrink(float lambd = 0.5F) : lambd_(lambd) {}
  [[nodiscard]] std::string type_name() const override { return "HardShrink"; }
  array forward(const array& x) override { return hard_shrink(x, lambd_); }

 private:
  float lambd_;
};

/// step with a fixed threshold (default 0).
class Step : public UnaryModule {
 public:
  explicit Step(float threshold = 0.0F) : threshold_(threshold) {}
  [[nodiscard]] std::string type_name() const override { return "Step"; }
  array forward(const array& x) override { return step(x, threshold_); }

 private:
  float threshold_;
};

}  // namespace nuvec::nn
