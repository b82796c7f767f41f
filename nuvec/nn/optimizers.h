#pragma once

// Optimizers (mlx.optimizers' names, arguments, defaults and update rules, so MLX training code behaves the same;
// flags such as Adam's bias_correction give PyTorch's trajectories step for step). An optimizer maps gradients to new
// parameters by name, keeps per-parameter state created on first use (or by init), and exposes that state as a flat
// parameter list for saving and restoring. As in MLX, the step count and the learning rate are arrays of that state,
// and schedules and bias corrections are array ops on the step: a compiled training step takes the state as inputs and
// gives it back as outputs, and each call computes its own rate.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nuvec/nn/module.h"
#include "nuvec/nn/schedulers.h"

namespace nuvec::optimizers {

using nn::Params;

/// The base of the optimizers: the step count, the learning rate (fixed or scheduled) and the per-parameter state.
class Optimizer {
 public:
  /// A fixed rate (a number) or a schedule of the step count.
  explicit Optimizer(LearningRate learning_rate);
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  virtual ~Optimizer() = default;

  /// One step on the model's trainable parameters with `gradients` (names as trainable_parameters()); throws as
  /// apply_gradients.
  void update(nn::Module& model, const Params& gradients);
  /// One step: the new value of every parameter that has a gradient (functional form of update); gradients are
  /// cast to their parameter's dtype. A gradient whose name no parameter has, or whose shape differs, throws before
  /// anything changes: the step count, the rate and every parameter's state stay as they were. Nothing here reads a
  /// value back from the arrays, so the step traces whole under compile.
  Params apply_gradients(const Params& gradients, const Params& parameters);
  /// Creates the state of the parameters that have none yet (otherwise made on their first step), so that the
  /// state's entries are all there before a compiled step takes them as inputs.
  void init(const Params& parameters);

  /// Steps taken so far (evaluates the step array).
  [[nodiscard]] int64_t step() const;
  /// The learning rate the next step uses (evaluates).
  [[nodiscard]] double learning_rate() const;

  /// The state as a flat list: "step" (uint64 scalar), "learning_rate" (float32 scalar: the rate of the last step,
  /// or the first step's before any) and one "<parameter>.<slot>" entry per state array.
  [[nodiscard]] Params state() const;
  /// Restores a state saved by state(); throws on names it cannot place. With a schedule, the next step's rate
  /// comes from the restored step; a fixed rate is replaced by the saved one (as MLX does).
  void set_state(const Params& state);
  /// The state's arrays, in state()'s order, to read and replace in place: a compiled step's state (see compile).
  std::vector<array*> state_arrays();
  /// state() to, and set_state() from, a safetensors file.
  void save_state(const std::string& file) const;
  void load_state(const std::string& file);

  /// One parameter's state slots by name ("m", "v", ...).
  using State = std::map<std::string, array>;
  /// Creates the per-parameter slots (zeros in the parameter's dtype). Public, as MLX's, so that a caller keeping
  /// the state itself (the Python optimizers, whose state is a tree) runs this rule.
  virtual void init_single(const array& parameter, State& state) = 0;
  /// The new parameter value, updating `state`; `gradient` has the parameter's dtype, `lr` is this step's rate
  /// (float32 scalar), `step` the 1-based number of this step (uint64 scalar).
  virtual array apply_single(const array& gradient, const array& parameter, State& state, const array& lr,
                             const array& step) = 0;

 private:
  Schedule schedule_;
  array step_;
  array learning_rate_;
  std::map<std::string, State> state_;
};

/// p -= lr * (momentum buffer or gradient), MLX's SGD: weight decay adds wd * p to the gradient, the buffer starts at
/// zero and takes (1 - dampening) * g each step (PyTorch's starts at the first gradient undamped, the same without
/// dampening), Nesterov looks ahead. nesterov without momentum > 0 and zero dampening throws.
class SGD : public Optimizer {
 public:
  explicit SGD(LearningRate learning_rate, double momentum = 0.0, double weight_decay = 0.0, double dampening = 0.0,
               bool nesterov = false);

 protected:
  void init_single(const array& parameter, State& state) override;
  array apply_single(const array& gradient, const array& parameter, State& state, const array& lr,
                     const array& step) override;

 private:
  double momentum_;
  double weight_decay_;
  double dampening_;
  bool nesterov_;
};

/// MLX's Adam: p -= lr * m / (sqrt(v) + eps), or with bias_correction (PyTorch's Adam) lr / (1 - b1^t) * m /
/// (sqrt(v) / sqrt(1 - b2^t) + eps). weight_decay (nuvec's addition, PyTorch's form) adds wd * p to the gradient.
class Adam : public Optimizer {
 public:
  explicit Adam(LearningRate learning_rate, std::pair<double, double> betas = {0.9, 0.999}, double eps = 1e-8,
                bool bias_correction = false, double weight_decay = 0.0);

 protected:
  void init_single(const array& parameter, State& state) override;
  array apply_single(const array& gradient, const array& parameter, State& state, const array& lr,
                     const array& step) override;
  /// The Adam step itself, without weight decay.
  array adam_step(const array& gradient, const array& parameter, State& state, const array& lr,
                  const array& step) const;

  std::pair<double, double> betas_;
  double eps_;
  bool bias_correction_;
  double weight_decay_;
};

/// Adam with decoupled weight decay: p *= 1 - lr * wd before the Adam step (MLX's argument order).
class AdamW : public Adam {
 public:
  explicit AdamW(LearningRate learning_rate, std::pair<double, double> betas = {0.9, 0.999}, double eps = 1e-8,
                 double weight_decay = 0.01, bool bias_correction = false);

 protected:
  array apply_single(const array& gradient, const array& parameter, State& state, const array& lr,
                     const array& step) override;
};

/// MLX's Adamax, Adam with the infinity norm: v = max(b2 v, |g|), p -= lr * m / (v + eps), without bias correction
/// (PyTorch's corrects m and adds eps inside the max); weight decay (nuvec's addition) adds wd * p to the gradient.
class Adamax : public Optimizer {
 public:
  explicit Adamax(LearningRate learning_rate, std::pair<double, double> betas = {0.9, 0.999}, double eps = 1e-8,
                  double weight_decay = 0.0);

 protected:
  void init_single(const array& parameter, State& state) override;
  array apply_single(const array& gradient, const array& parameter, State& state, const array& lr,
                     const array& step) override;

 private:
  std::pair<double, double> betas_;
  double eps_;
  double weight_decay_;
};

/// s += g^2, p -= lr * g / (sqrt(s) + eps), eps 1e-8 as MLX (PyTorch's is 1e-10); weight decay (nuvec's addition)
/// adds wd * p to the gradient.
class Adagrad : public Optimizer {
 public:
  explicit Adagrad(LearningRate learning_rate, double eps = 1e-8, double weight_decay = 0.0);

 protected:
  void init_single(const array& parameter, State& state) override;
  array apply_single(const array& gradient, const array& parameter, State& state, const array& lr,
                     const array& step) override;

 private:
  double eps_;
  double weight_decay_;
};

/// Zeiler's AdaDelta: p -= lr * sqrt(u + eps) / sqrt(v + eps) * g with running averages (factor rho) v of g^2 and
/// u of the squared updates; weight decay adds wd * p to the gradient.
class AdaDelta : public Optimizer {
 public:
  explicit AdaDelta(LearningRate learning_rate, double rho = 0.9, double eps = 1e-6, double weight_decay = 0.0);

 protected:
  void init_single(const array& parameter, State& state) override;
  array apply_single(const array& gradient, const array& parameter, State& state, const array& lr,
                     const array& step) override;

 private:
  double rho_;
  double eps_;
  double weight_decay_;
};

/// RMSprop (PyTorch's): v = a v + (1 - a) g^2, p -= lr * g / (sqrt(v) + eps), optionally centered (v minus the
/// squared running mean of g) and with momentum; weight decay adds wd * p to the gradient.
class RMSprop : public Optimizer {
 public:
  explicit RMSprop(LearningRate learning_rate, double alpha = 0.99, double eps = 1e-8, double weight_decay = 0.0,
                   double momentum = 0.0, bool centered = false);

 protected:
  void init_single(const array& parameter, State& state) override;
  array apply_single(const array& gradient, const array& parameter, State& state, const array& lr,
                     const array& step) override;

 private:
  double alpha_;
  double eps_;
  double weight_decay_;
  double momentum_;
  bool centered_;
};

/// Lion (Chen et al. 2023): p = p (1 - lr wd) - lr sign(b1 m + (1 - b1) g), then m = b2 m + (1 - b2) g.
class Lion : public Optimizer {
 public:
  explicit Lion(LearningRate learning_rate, std::pair<double, double> betas = {0.9, 0.99}, double weight_decay = 0.0);

 protected:
  void init_single(const array& parameter, State& state) override;
  array apply_single(const array& gradient, const array& parameter, State& state, const array& lr,
                     const array& step) override;

 private:
  std::pair<double, double> betas_;
  double weight_decay_;
};

/// Adafactor (Shazeer and Stern 2018): factored second moments for matrices (row and column averages), update
/// clipping by RMS (clip_threshold), beta2 = 1 - t^decay_rate, first moments only when beta1 is given. The step size
/// is min(1e-2, 1/sqrt(t)) (1e-6 t with warmup_init) when relative_step, else the learning rate, and is scaled by
/// max(eps.second, RMS(p)) when scale_parameter; weight decay subtracts wd * step size * p.
class Adafactor : public Optimizer {
 public:
  explicit Adafactor(LearningRate learning_rate = 0.0, std::pair<double, double> eps = {1e-30, 1e-3},
                     double clip_threshold = 1.0, double decay_rate = -0.8, std::optional<double> beta1 = std::nullopt,
                     double weight_decay = 0.0, bool scale_parameter = true, bool relative_step = true,
                     bool warmup_init = false);

 protected:
  void init_single(const array& parameter, State& state) override;
  array apply_single(const array& gradient, const array& parameter, State& state, const array& lr,
                     const array& step) override;

 private:
  std::pair<double, double> eps_;
  double clip_threshold_;
  double decay_rate_;
  std::optional<double> beta1_;
  double weight_decay_;
  bool scale_parameter_;
  bool relative_step_;
  bool warmup_init_;
};

/// Muon (Jordan et al. 2024): SGD momentum whose update, for parameters with 2 or more axes (flattened to
/// (shape[0], rest)), is orthogonalized by `ns_steps` quintic Newton-Schulz iterations and scaled by
/// sqrt(max(1, rows / cols)); decoupled weight decay p *= 1 - lr * wd (MLX adds wd * p to the gradient instead).
/// Vectors take the plain momentum update.
class Muon : public Optimizer {
 public:
  explicit Muon(LearningRate learning_rate, double momentum = 0.95, double weight_decay = 0.01, bool nesterov = true,
                int ns_steps = 5);

 protected:
  void init_single(const array& parameter, State& state) override;
  array apply_single(const array& gradient, const array& parameter, State& state, const array& lr,
                     const array& step) override;

 private:
  double momentum_;
  double weight_decay_;
  bool nesterov_;
  int ns_steps_;
};

/// Scales the gradients so their global L2 norm is at most max_norm (by max_norm / (norm + 1e-6) when above, as
/// PyTorch's clip_grad_norm_); returns the clipped gradients (in their dtypes) and the norm before clipping (a
/// float32 scalar, computed in float32).
std::pair<Params, array> clip_grad_norm(const Params& gradients, double max_norm);

/// Sums gradients over several micro-batches and gives their mean, for steps larger than memory allows.
class GradientAccumulator {
 public:
  /// Adds one micro-batch's gradients; after the first, names and order must match it, else it throws.
  void add(const Params& gradients);
  /// The mean of the gradients added since the last reset.
  [[nodiscard]] Params average() const;
  /// How many micro-batches were added since the last reset.
  [[nodiscard]] int count() const { return count_; }
  /// Forgets the sum and the count.
  void reset();

 private:
  Params sum_;
  int count_ = 0;
};

}  // namespace nuvec::optimizers
