#include "nuvec/nn/optimizers.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "nuvec/core/ops.h"
#include "nuvec/nn/scalar.h"

namespace nuvec::optimizers {

using nn::detail::like;

void Optimizer::update(nn::Module& model, const Params& gradients) {
  model.update(apply_gradients(gradients, model.trainable_parameters()));
}

Params Optimizer::apply_gradients(const Params& gradients, const Params& parameters) {
  std::unordered_map<std::string, const array*> by_name;
  for (const auto& [name, value] : parameters) {
    by_name.emplace(name, &value);
  }
  const double lr = schedule_(step_);
  const int64_t t = step_ + 1;
  Params updated;
  updated.reserve(gradients.size());
  for (const auto& [name, gradient] : gradients) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      throw_invalid("[Optimizer] a gradient for '" + name + "' has no matching parameter.");
    }
    const array& parameter = *it->second;
    if (gradient.shape() != parameter.shape()) {
      throw_invalid("[Optimizer] the gradient for '" + name + "' has shape " + shape_string(gradient.shape()) +
                    "; the parameter has shape " + shape_string(parameter.shape()) + ".");
    }
    auto [slot, inserted] = state_.try_emplace(name);
    if (inserted) {
      init_single(parameter, slot->second);
    }
    // Gradients often arrive as transposed views (the vjp of x @ w.T); one copy to the parameter's layout keeps
    // every element-wise op of the update on the contiguous fast path.
    auto g = contiguous(astype(gradient, parameter.dtype()));
    updated.emplace_back(name, apply_single(g, parameter, slot->second, lr, t));
  }
  step_ = t;
  return updated;
}

Params Optimizer::state() const {
  Params out;
  out.emplace_back("step", array(static_cast<int64_t>(step_)));
  for (const auto& [name, slots] : state_) {
    for (const auto& [slot, value] : slots) {
      out.emplace_back(name + "." + slot, value);
    }
  }
  return out;
}

void Optimizer::set_state(const Params& state) {
  std::map<std::string, State> restored;
  std::optional<int64_t> step;
  for (const auto& [key, value] : state) {
    if (key == "step") {
      step = array(value).item<int64_t>();
      continue;
    }
    auto dot = key.rfind('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == key.size()) {
      throw_invalid("[Optimizer] cannot place the state entry '" + key + "' (expected \"<parameter>.<slot>\").");
    }
    restored[key.substr(0, dot)].insert_or_assign(key.substr(dot + 1), value);
  }
  if (!step) {
    throw_invalid("[Optimizer] the state has no \"step\" entry.");
  }
  step_ = *step;
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

void SGD::init_single(const array&, State&) {}

array SGD::apply_single(const array& gradient, const array& parameter, State& state, double lr, int64_t) {
  array g = weight_decay_ != 0.0 ? gradient + like(parameter, weight_decay_) * parameter : gradient;
  if (momentum_ != 0.0) {
    auto it = state.find("momentum_buffer");
    array buf = it == state.end() ? g : like(g, momentum_) * it->second + like(g, 1.0 - dampening_) * g;
    state.insert_or_assign("momentum_buffer", buf);
    g = nesterov_ ? g + like(g, momentum_) * buf : buf;
  }
  return parameter - like(parameter, lr) * g;
}

// ---------------------------------------------------------------- Adam family

Adam::Adam(LearningRate learning_rate, std::pair<double, double> betas, double eps, double weight_decay)
    : Optimizer(std::move(learning_rate)), betas_(betas), eps_(eps), weight_decay_(weight_decay) {}

void Adam::init_single(const array& parameter, State& state) {
  state.insert_or_assign("m", zeros_like(parameter));
  state.insert_or_assign("v", zeros_like(parameter));
}

array Adam::adam_step(const array& gradient, const array& parameter, State& state, double lr, int64_t t) const {
  auto [b1, b2] = betas_;
  auto m = like(gradient, b1) * state.at("m") + like(gradient, 1.0 - b1) * gradient;
  auto v = like(gradient, b2) * state.at("v") + like(gradient, 1.0 - b2) * square(gradient);
  state.insert_or_assign("m", m);
  state.insert_or_assign("v", v);
  const double bc1 = 1.0 - std::pow(b1, static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(b2, static_cast<double>(t));
  auto denom = sqrt(v) * like(v, 1.0 / std::sqrt(bc2)) + like(v, eps_);
  return parameter - like(parameter, lr / bc1) * m / denom;
}

array Adam::apply_single(const array& gradient, const array& parameter, State& state, double lr, int64_t t) {
  array g = weight_decay_ != 0.0 ? gradient + like(parameter, weight_decay_) * parameter : gradient;
  return adam_step(g, parameter, state, lr, t);
}

AdamW::AdamW(LearningRate learning_rate, std::pair<double, double> betas, double eps, double weight_decay)
    : Adam(std::move(learning_rate), betas, eps, weight_decay) {}

array AdamW::apply_single(const array& gradient, const array& parameter, State& state, double lr, int64_t t) {
  array decayed = weight_decay_ != 0.0 ? parameter * like(parameter, 1.0 - lr * weight_decay_) : parameter;
  return adam_step(gradient, decayed, state, lr, t);
}

Adamax::Adamax(LearningRate learning_rate, std::pair<double, double> betas, double eps, double weight_decay)
    : Optimizer(std::move(learning_rate)), betas_(betas), eps_(eps), weight_decay_(weight_decay) {}

void Adamax::init_single(const array& parameter, State& state) {
  state.insert_or_assign("m", zeros_like(parameter));
  state.insert_or_assign("u", zeros_like(parameter));
}

array Adamax::apply_single(const array& gradient, const array& parameter, State& state, double lr, int64_t t) {
  auto [b1, b2] = betas_;
  array g = weight_decay_ != 0.0 ? gradient + like(parameter, weight_decay_) * parameter : gradient;
  auto m = like(g, b1) * state.at("m") + like(g, 1.0 - b1) * g;
  auto u = maximum(like(g, b2) * state.at("u"), abs(g) + like(g, eps_));
  state.insert_or_assign("m", m);
  state.insert_or_assign("u", u);
  return parameter - like(parameter, lr / (1.0 - std::pow(b1, static_cast<double>(t)))) * m / u;
}

// ---------------------------------------------------------------- adaptive rates

Adagrad::Adagrad(LearningRate learning_rate, double eps, double weight_decay)
    : Optimizer(std::move(learning_rate)), eps_(eps), weight_decay_(weight_decay) {}

void Adagrad::init_single(const array& parameter, State& state) {
  state.insert_or_assign("sum", zeros_like(parameter));
}

array Adagrad::apply_single(const array& gradient, const array& parameter, State& state, double lr, int64_t) {
  array g = weight_decay_ != 0.0 ? gradient + like(parameter, weight_decay_) * parameter : gradient;
  auto s = state.at("sum") + square(g);
  state.insert_or_assign("sum", s);
  return parameter - like(parameter, lr) * g / (sqrt(s) + like(s, eps_));
}

AdaDelta::AdaDelta(LearningRate learning_rate, double rho, double eps, double weight_decay)
    : Optimizer(std::move(learning_rate)), rho_(rho), eps_(eps), weight_decay_(weight_decay) {}

void AdaDelta::init_single(const array& parameter, State& state) {
  state.insert_or_assign("v", zeros_like(parameter));
  state.insert_or_assign("u", zeros_like(parameter));
}

array AdaDelta::apply_single(const array& gradient, const array& parameter, State& state, double lr, int64_t) {
  array g = weight_decay_ != 0.0 ? gradient + like(parameter, weight_decay_) * parameter : gradient;
  auto v = like(g, rho_) * state.at("v") + like(g, 1.0 - rho_) * square(g);
  auto delta = sqrt(state.at("u") + like(g, eps_)) / sqrt(v + like(g, eps_)) * g;
  auto u = like(g, rho_) * state.at("u") + like(g, 1.0 - rho_) * square(delta);
  state.insert_or_assign("v", v);
  state.insert_or_assign("u", u);
  return parameter - like(parameter, lr) * delta;
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

array RMSprop::apply_single(const array& gradient, const array& parameter, State& state, double lr, int64_t) {
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
    return parameter - like(parameter, lr) * buf;
  }
  return parameter - like(parameter, lr) * g / denom;
}

// ---------------------------------------------------------------- Lion, Adafactor, Muon

Lion::Lion(LearningRate learning_rate, std::pair<double, double> betas, double weight_decay)
    : Optimizer(std::move(learning_rate)), betas_(betas), weight_decay_(weight_decay) {}

void Lion::init_single(const array& parameter, State& state) { state.insert_or_assign("m", zeros_like(parameter)); }

array Lion::apply_single(const array& gradient, const array& parameter, State& state, double lr, int64_t) {
  auto [b1, b2] = betas_;
  const array& m = state.at("m");
  auto direction = sign(like(m, b1) * m + like(m, 1.0 - b1) * gradient);
  state.insert_or_assign("m", like(m, b2) * m + like(m, 1.0 - b2) * gradient);
  array p = weight_decay_ != 0.0 ? parameter * like(parameter, 1.0 - lr * weight_decay_) : parameter;
  return p - like(p, lr) * direction;
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

array Adafactor::apply_single(const array& gradient, const array& parameter, State& state, double lr, int64_t t) {
  auto rms = [](const array& a) { return sqrt(mean(square(a))); };
  const double td = static_cast<double>(t);
  double step_size = lr;
  if (relative_step_) {
    const double min_step = warmup_init_ ? 1e-6 * td : 1e-2;
    step_size = std::min(min_step, 1.0 / std::sqrt(td));
  }
  array rate = like(parameter, step_size);
  if (scale_parameter_) {
    rate = maximum(rms(parameter), like(parameter, eps_.second)) * rate;
  }
  const double beta2 = 1.0 - std::pow(td, decay_rate_);
  auto update = square(gradient) + like(gradient, eps_.first);
  if (parameter.ndim() >= 2) {
    auto row = like(update, beta2) * state.at("exp_avg_sq_row") + like(update, 1.0 - beta2) * mean(update, -1);
    auto col = like(update, beta2) * state.at("exp_avg_sq_col") + like(update, 1.0 - beta2) * mean(update, -2);
    state.insert_or_assign("exp_avg_sq_row", row);
    state.insert_or_assign("exp_avg_sq_col", col);
    auto row_factor = expand_dims(rsqrt(row / mean(row, -1, true)), -1);
    auto col_factor = expand_dims(rsqrt(col), -2);
    update = row_factor * col_factor * gradient;
  } else {
    auto v = like(update, beta2) * state.at("exp_avg_sq") + like(update, 1.0 - beta2) * update;
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

array Muon::apply_single(const array& gradient, const array& parameter, State& state, double lr, int64_t) {
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
  array p = weight_decay_ != 0.0 ? parameter * like(parameter, 1.0 - lr * weight_decay_) : parameter;
  return p - like(p, lr * scale) * update;
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
