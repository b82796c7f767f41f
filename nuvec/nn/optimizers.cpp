#include "nuvec/nn/optimizers.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <vector>

#include "nuvec/core/ops.h"
#include "nuvec/nn/scalar.h"

namespace nuvec::optimizers {

using nn::detail::like;

namespace {

/// A float32 scalar (a rate, a bias correction) in the dtype of the array it scales.
array in_dtype_of(const array& x, const array& scalar) { return astype(scalar, x.dtype()); }

/// 1 - beta^step in float32, through expm1 so that the small corrections of betas near 1 (1 - 0.999^1) keep their
/// precision.
array bias_correction(double beta, const array& step) {
  return -expm1(astype(step, float32) * array(std::log(beta), float32));
}

/// 1 - lr * weight_decay, decoupled weight decay's factor.
array decay_factor(const array& parameter, const array& lr, double weight_decay) {
  return in_dtype_of(parameter, array(1.0F) - lr * array(weight_decay, float32));
}

}  // namespace

Optimizer::Optimizer(LearningRate learning_rate)
    : schedule_(std::move(learning_rate.schedule)),
      step_(array(uint64_t{0}, uint64)),
      learning_rate_(schedule_ ? schedule_(step_) : array(learning_rate.value, float32)) {}

void Optimizer::update(nn::Module& model, const Params& gradients) {
  model.update(apply_gradients(gradients, model.trainable_parameters()));
}

Params Optimizer::apply_gradients(const Params& gradients, const Params& parameters) {
  std::unordered_map<std::string, const array*> by_name;
  for (const auto& [name, value] : parameters) {
    by_name.emplace(name, &value);
  }
  // Every gradient is checked before anything changes, and the new states are kept aside until every update has
  // been built: a refused call leaves the step, the rate and each parameter's state as they were.
  std::vector<const array*> matched;
  matched.reserve(gradients.size());
  for (const auto& [name, gradient] : gradients) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      throw_invalid("[Optimizer] a gradient for '" + name + "' has no matching parameter.");
    }
    if (gradient.shape() != it->second->shape()) {
      throw_invalid("[Optimizer] the gradient for '" + name + "' has shape " + shape_string(gradient.shape()) +
                    "; the parameter has shape " + shape_string(it->second->shape()) + ".");
    }
    matched.push_back(it->second);
  }
  const array lr = schedule_ ? schedule_(step_) : learning_rate_;
  const array step = step_ + array(uint64_t{1}, uint64);
  Params updated;
  updated.reserve(gradients.size());
  std::vector<State> states;
  states.reserve(gradients.size());
  for (size_t i = 0; i < gradients.size(); ++i) {
    const auto& [name, gradient] = gradients[i];
    const array& parameter = *matched[i];
    auto slot = state_.find(name);
    State state = slot != state_.end() ? slot->second : State{};
    if (slot == state_.end()) {
      init_single(parameter, state);
    }
    // Gradients often arrive as transposed views (the vjp of x @ w.T); one copy to the parameter's layout keeps
    // every element-wise op of the update on the contiguous fast path.
    auto g = contiguous(astype(gradient, parameter.dtype()));
    updated.emplace_back(name, apply_single(g, parameter, state, lr, step));
    states.push_back(std::move(state));
  }
  // Entry by entry into the existing slots: a compiled step holds pointers to them (state_arrays()).
  for (size_t i = 0; i < gradients.size(); ++i) {
    auto& slots = state_[gradients[i].first];
    for (auto& [key, value] : states[i]) {
      slots.insert_or_assign(key, std::move(value));
    }
  }
  learning_rate_ = lr;
  step_ = step;
  return updated;
}

void Optimizer::init(const Params& parameters) {
  for (const auto& [name, parameter] : parameters) {
    auto [slot, inserted] = state_.try_emplace(name);
    if (inserted) {
      init_single(parameter, slot->second);
    }
  }
}

int64_t Optimizer::step() const { return static_cast<int64_t>(array(step_).item<uint64_t>()); }

double Optimizer::learning_rate() const { return array(schedule_ ? schedule_(step_) : learning_rate_).item<double>(); }

Params Optimizer::state() const {
  Params out;
  out.emplace_back("step", step_);
  out.emplace_back("learning_rate", learning_rate_);
  for (const auto& [name, slots] : state_) {
    for (const auto& [slot, value] : slots) {
      out.emplace_back(name + "." + slot, value);
    }
  }
  return out;
}

std::vector<array*> Optimizer::state_arrays() {
  std::vector<array*> out{&step_, &learning_rate_};
  for (auto& [name, slots] : state_) {
    for (auto& [slot, value] : slots) {
      out.push_back(&value);
    }
  }
  return out;
}

void Optimizer::set_state(const Params& state) {
  std::map<std::string, State> restored;
  std::optional<array> step;
  std::optional<array> learning_rate;
  for (const auto& [key, value] : state) {
    if (key == "step" || key == "learning_rate") {
      if (value.ndim() != 0) {
        throw_invalid("[Optimizer] the state entry '" + key + "' must be a scalar; given shape " +
                      shape_string(value.shape()) + ".");
      }
      // Kept in the dtypes the step computes in, whichever integer or float type the saved entry has.
      (key == "step" ? step : learning_rate) = astype(value, key == "step" ? uint64 : float32);
      continue;
    }
    auto dot = key.rfind('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == key.size()) {
      throw_invalid("[Optimizer] cannot place the state entry '" + key + "' (expected \"<parameter>.<slot>\").");
    }
    restored[key.substr(0, dot)].insert_or_assign(key.substr(dot + 1), value);
  }
  if (!step || !learning_rate) {
    throw_invalid(
        std::string("[Optimizer] the state has no \"").append(step ? "learning_rate" : "step").append("\" entry."));
  }
  step_ = *step;
  learning_rate_ = *learning_rate;
  state_ = std::move(restored);
}

// ---------------------------------------------------------------- SGD

SGD::SGD(LearningRate learning_rate, double momentum, double weight_decay, double dampening, bool nesterov)
    : Optimizer(std::move(learning_rate)),
      momentum_(momentum),
      weight_decay_(weight_decay),
      dampening_(dampening),
      nesterov_(nesterov) {
  if (nesterov && (momentum <= 0.0 || dampening != 0.0)) {
    throw_invalid("[SGD] Nesterov momentum needs momentum > 0 and no dampening.");
  }
}

void SGD::init_single(const array& parameter, State& state) {
  if (momentum_ != 0.0) {
    state.insert_or_assign("v", zeros_like(parameter));
  }
}

array SGD::apply_single(const array& gradient, const array& parameter, State& state, const array& lr, const array&) {
  array g = weight_decay_ != 0.0 ? gradient + like(parameter, weight_decay_) * parameter : gradient;
  if (momentum_ != 0.0) {
    array buf = like(g, momentum_) * state.at("v") + like(g, 1.0 - dampening_) * g;
    state.insert_or_assign("v", buf);
    g = nesterov_ ? g + like(g, momentum_) * buf : buf;
  }
  return parameter - in_dtype_of(parameter, lr) * g;
}

// ---------------------------------------------------------------- Adam family

Adam::Adam(LearningRate learning_rate, std::pair<double, double> betas, double eps, bool bias_correction,
           double weight_decay)
    : Optimizer(std::move(learning_rate)),
      betas_(betas),
      eps_(eps),
      bias_correction_(bias_correction),
      weight_decay_(weight_decay) {}

void Adam::init_single(const array& parameter, State& state) {
  state.insert_or_assign("m", zeros_like(parameter));
  state.insert_or_assign("v", zeros_like(parameter));
}

array Adam::adam_step(const array& gradient, const array& parameter, State& state, const array& lr,
                      const array& step) const {
  auto [b1, b2] = betas_;
  auto m = like(gradient, b1) * state.at("m") + like(gradient, 1.0 - b1) * gradient;
  auto v = like(gradient, b2) * state.at("v") + like(gradient, 1.0 - b2) * square(gradient);
  state.insert_or_assign("m", m);
  state.insert_or_assign("v", v);
  if (!bias_correction_) {
    return parameter - in_dtype_of(parameter, lr) * m / (sqrt(v) + like(v, eps_));
  }
  auto denom = sqrt(v) * in_dtype_of(v, rsqrt(bias_correction(b2, step))) + like(v, eps_);
  return parameter - in_dtype_of(parameter, lr / bias_correction(b1, step)) * m / denom;
}

array Adam::apply_single(const array& gradient, const array& parameter, State& state, const array& lr,
                         const array& step) {
  array g = weight_decay_ != 0.0 ? gradient + like(parameter, weight_decay_) * parameter : gradient;
  return adam_step(g, parameter, state, lr, step);
}

AdamW::AdamW(LearningRate learning_rate, std::pair<double, double> betas, double eps, double weight_decay,
             bool bias_correction)
    : Adam(std::move(learning_rate), betas, eps, bias_correction, weight_decay) {}

array AdamW::apply_single(const array& gradient, const array& parameter, State& state, const array& lr,
                          const array& step) {
  array decayed = weight_decay_ != 0.0 ? parameter * decay_factor(parameter, lr, weight_decay_) : parameter;
  return adam_step(gradient, decayed, state, lr, step);
}

Adamax::Adamax(LearningRate learning_rate, std::pair<double, double> betas, double eps, double weight_decay)
    : Optimizer(std::move(learning_rate)), betas_(betas), eps_(eps), weight_decay_(weight_decay) {}

void Adamax::init_single(const array& parameter, State& state) {
  state.insert_or_assign("m", zeros_like(parameter));
  state.insert_or_assign("v", zeros_like(parameter));
}

array Adamax::apply_single(const array& gradient, const array& parameter, State& state, const array& lr, const array&) {
  auto [b1, b2] = betas_;
  array g = weight_decay_ != 0.0 ? gradient + like(parameter, weight_decay_) * parameter : gradient;
  auto m = like(g, b1) * state.at("m") + like(g, 1.0 - b1) * g;
  auto v = maximum(like(g, b2) * state.at("v"), abs(g));
  state.insert_or_assign("m", m);
  state.insert_or_assign("v", v);
  return parameter - in_dtype_of(parameter, lr) * m / (v + like(v, eps_));
}

// ---------------------------------------------------------------- adaptive rates

Adagrad::Adagrad(LearningRate learning_rate, double eps, double weight_decay)
    : Optimizer(std::move(learning_rate)), eps_(eps), weight_decay_(weight_decay) {}

void Adagrad::init_single(const array& parameter, State& state) {
  state.insert_or_assign("v", zeros_like(parameter));
}

array Adagrad::apply_single(const array& gradient, const array& parameter, State& state, const array& lr,
                            const array&) {
  array g = weight_decay_ != 0.0 ? gradient + like(parameter, weight_decay_) * parameter : gradient;
  auto s = state.at("v") + square(g);
  state.insert_or_assign("v", s);
  return parameter - in_dtype_of(parameter, lr) * g / (sqrt(s) + like(s, eps_));
}

AdaDelta::AdaDelta(LearningRate learning_rate, double rho, double eps, double weight_decay)
    : Optimizer(std::move(learning_rate)), rho_(rho), eps_(eps), weight_decay_(weight_decay) {}

void AdaDelta::init_single(const array& parameter, State& state) {
  state.insert_or_assign("v", zeros_like(parameter));
  state.insert_or_assign("u", zeros_like(parameter));
}

array AdaDelta::apply_single(const array& gradient, const array& parameter, State& state, const array& lr,
                             const array&) {
  array g = weight_decay_ != 0.0 ? gradient + like(parameter, weight_decay_) * parameter : gradient;
  auto v = like(g, rho_) * state.at("v") + like(g, 1.0 - rho_) * square(g);
  auto delta = sqrt(state.at("u") + like(g, eps_)) / sqrt(v + like(g, eps_)) * g;
  auto u = like(g, rho_) * state.at("u") + like(g, 1.0 - rho_) * square(delta);
  state.insert_or_assign("v", v);
  state.insert_or_assign("u", u);
  return parameter - in_dtype_of(parameter, lr) * delta;
}

RMSprop::RMSprop(LearningRate learning_rate, double alpha, double eps, double weight_decay, double momentum,
                 bool centered)
    : Optimizer(std::move(learning_rate)),
      alpha_(alpha),
      eps_(eps),
      weight_decay_(weight_decay),
      momentum_(momentum),
      centered_(centered) {}

void RMSprop::init_single(const array& parameter, State& state) {
  state.insert_or_assign("v", zeros_like(parameter));
  if (centered_) {
    state.insert_or_assign("grad_avg", zeros_like(parameter));
  }
  if (momentum_ > 0.0) {
    state.insert_or_assign("momentum_buffer", zeros_like(parameter));
  }
}

array RMSprop::apply_single(const array& gradient, const array& parameter, State& state, const array& lr,
                            const array&) {
  array g = weight_decay_ != 0.0 ? gradient + like(parameter, weight_decay_) * parameter : gradient;
  auto v = like(g, alpha_) * state.at("v") + like(g, 1.0 - alpha_) * square(g);
  state.insert_or_assign("v", v);
  array avg = v;
  if (centered_) {
    auto mean_g = like(g, alpha_) * state.at("grad_avg") + like(g, 1.0 - alpha_) * g;
    state.insert_or_assign("grad_avg", mean_g);
    avg = v - square(mean_g);
  }
  auto denom = sqrt(avg) + like(g, eps_);
  if (momentum_ > 0.0) {
    auto buf = like(g, momentum_) * state.at("momentum_buffer") + g / denom;
    state.insert_or_assign("momentum_buffer", buf);
    return parameter - in_dtype_of(parameter, lr) * buf;
  }
  return parameter - in_dtype_of(parameter, lr) * g / denom;
}

// ---------------------------------------------------------------- Lion, Adafactor, Muon

Lion::Lion(LearningRate learning_rate, std::pair<double, double> betas, double weight_decay)
    : Optimizer(std::move(learning_rate)), betas_(betas), weight_decay_(weight_decay) {}

void Lion::init_single(const array& parameter, State& state) { state.insert_or_assign("m", zeros_like(parameter)); }

array Lion::apply_single(const array& gradient, const array& parameter, State& state, const array& lr, const array&) {
  auto [b1, b2] = betas_;
  const array& m = state.at("m");
  auto direction = sign(like(m, b1) * m + like(m, 1.0 - b1) * gradient);
  state.insert_or_assign("m", like(m, b2) * m + like(m, 1.0 - b2) * gradient);
  array p = weight_decay_ != 0.0 ? parameter * decay_factor(parameter, lr, weight_decay_) : parameter;
  return p - in_dtype_of(p, lr) * direction;
}

Adafactor::Adafactor(LearningRate learning_rate, std::pair<double, double> eps, double clip_threshold,
                     double decay_rate, std::optional<double> beta1, double weight_decay, bool scale_parameter,
                     bool relative_step, bool warmup_init)
    : Optimizer(std::move(learning_rate)),
      eps_(eps),
      clip_threshold_(clip_threshold),
      decay_rate_(decay_rate),
      beta1_(beta1),
      weight_decay_(weight_decay),
      scale_parameter_(scale_parameter),
      relative_step_(relative_step),
      warmup_init_(warmup_init) {}

void Adafactor::init_single(const array& parameter, State& state) {
  if (parameter.ndim() >= 2) {
    Shape row(parameter.shape().begin(), parameter.shape().end() - 1);
    Shape col(parameter.shape().begin(), parameter.shape().end() - 2);
    col.push_back(parameter.shape(-1));
    state.insert_or_assign("exp_avg_sq_row", zeros(row, parameter.dtype()));
    state.insert_or_assign("exp_avg_sq_col", zeros(col, parameter.dtype()));
  } else {
    state.insert_or_assign("exp_avg_sq", zeros_like(parameter));
  }
  if (beta1_) {
    state.insert_or_assign("exp_avg", zeros_like(parameter));
  }
}

array Adafactor::apply_single(const array& gradient, const array& parameter, State& state, const array& lr,
                              const array& step) {
  auto rms = [](const array& a) { return sqrt(mean(square(a))); };
  const array t = astype(step, float32);
  array step_size = lr;
  if (relative_step_) {
    const array min_step = warmup_init_ ? array(1e-6F) * t : array(1e-2F);
    step_size = minimum(min_step, rsqrt(t));
  }
  array rate = in_dtype_of(parameter, step_size);
  if (scale_parameter_) {
    rate = maximum(rms(parameter), like(parameter, eps_.second)) * rate;
  }
  const array beta2 = in_dtype_of(gradient, array(1.0F) - power(t, array(decay_rate_, float32)));
  const array one_minus_beta2 = like(gradient, 1.0) - beta2;
  auto update = square(gradient) + like(gradient, eps_.first);
  if (parameter.ndim() >= 2) {
    auto row = beta2 * state.at("exp_avg_sq_row") + one_minus_beta2 * mean(update, -1);
    auto col = beta2 * state.at("exp_avg_sq_col") + one_minus_beta2 * mean(update, -2);
    state.insert_or_assign("exp_avg_sq_row", row);
    state.insert_or_assign("exp_avg_sq_col", col);
    auto row_factor = expand_dims(rsqrt(row / mean(row, -1, true)), -1);
    auto col_factor = expand_dims(rsqrt(col), -2);
    update = row_factor * col_factor * gradient;
  } else {
    auto v = beta2 * state.at("exp_avg_sq") + one_minus_beta2 * update;
    state.insert_or_assign("exp_avg_sq", v);
    update = rsqrt(v) * gradient;
  }
  update = update / maximum(like(update, 1.0), rms(update) / like(update, clip_threshold_));
  update = rate * update;
  if (beta1_) {
    update = like(update, *beta1_) * state.at("exp_avg") + like(update, 1.0 - *beta1_) * update;
    state.insert_or_assign("exp_avg", update);
  }
  array p = weight_decay_ != 0.0 ? parameter - parameter * like(parameter, weight_decay_) * rate : parameter;
  return p - update;
}

Muon::Muon(LearningRate learning_rate, double momentum, double weight_decay, bool nesterov, int ns_steps)
    : Optimizer(std::move(learning_rate)),
      momentum_(momentum),
      weight_decay_(weight_decay),
      nesterov_(nesterov),
      ns_steps_(ns_steps) {}

void Muon::init_single(const array& parameter, State& state) { state.insert_or_assign("v", zeros_like(parameter)); }

array Muon::apply_single(const array& gradient, const array& parameter, State& state, const array& lr, const array&) {
  auto v = like(gradient, momentum_) * state.at("v") + like(gradient, 1.0 - momentum_) * gradient;
  state.insert_or_assign("v", v);
  array update = nesterov_ ? like(gradient, 1.0 - momentum_) * gradient + like(gradient, momentum_) * v : v;
  double scale = 1.0;
  if (parameter.ndim() >= 2) {
    // Quintic Newton-Schulz iteration towards the nearest semi-orthogonal matrix (coefficients of Jordan et al.).
    constexpr double a = 3.4445;
    constexpr double b = -4.7750;
    constexpr double c = 2.0315;
    auto x = reshape(update, {parameter.shape(0), -1});
    const int rows = x.shape(0);
    const int cols = x.shape(1);
    const bool tall = rows > cols;
    if (tall) {
      x = transpose(x);
    }
    x = x / (sqrt(sum(square(x))) + like(x, 1e-7));
    for (int i = 0; i < ns_steps_; ++i) {
      auto gram = matmul(x, transpose(x));
      auto poly = like(gram, b) * gram + like(gram, c) * matmul(gram, gram);
      x = like(x, a) * x + matmul(poly, x);
    }
    update = reshape(tall ? transpose(x) : x, parameter.shape());
    scale = std::sqrt(std::max(1.0, static_cast<double>(rows) / cols));
  }
  array p = weight_decay_ != 0.0 ? parameter * decay_factor(parameter, lr, weight_decay_) : parameter;
  return p - in_dtype_of(p, lr * array(scale, float32)) * update;
}

// ---------------------------------------------------------------- gradient utilities

std::pair<Params, array> clip_grad_norm(const Params& gradients, double max_norm) {
  array total = array(0.0F);
  for (const auto& [name, g] : gradients) {
    total = total + sum(square(astype(g, float32)));
  }
  auto norm = sqrt(total);
  auto factor = minimum(array(static_cast<float>(max_norm)) / (norm + array(1e-6F)), array(1.0F));
  Params clipped;
  clipped.reserve(gradients.size());
  for (const auto& [name, g] : gradients) {
    clipped.emplace_back(name, g * astype(factor, g.dtype()));
  }
  return {clipped, norm};
}

void GradientAccumulator::add(const Params& gradients) {
  if (count_ == 0) {
    sum_ = gradients;
  } else {
    if (gradients.size() != sum_.size()) {
      throw_invalid("[GradientAccumulator] expected " + std::to_string(sum_.size()) + " gradients; given " +
                    std::to_string(gradients.size()) + ".");
    }
    for (size_t i = 0; i < gradients.size(); ++i) {
      if (gradients[i].first != sum_[i].first) {
        throw_invalid("[GradientAccumulator] expected a gradient for '" + sum_[i].first + "'; given '" +
                      gradients[i].first + "'.");
      }
      sum_[i].second = sum_[i].second + gradients[i].second;
    }
  }
  ++count_;
}

Params GradientAccumulator::average() const {
  Params out;
  out.reserve(sum_.size());
  for (const auto& [name, g] : sum_) {
    out.emplace_back(name, g / like(g, count_));
  }
  return out;
}

void GradientAccumulator::reset() {
  sum_.clear();
  count_ = 0;
}

}  // namespace nuvec::optimizers
