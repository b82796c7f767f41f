// A compiled optimizer step: one compiled function of (parameters, gradients, optimizer state) returning the new
// parameters and state, called 100 times with a warm-up and cosine schedule, gives what 100 eager steps give. The
// rate and the bias corrections come from the step array inside the graph, so the trace made at the first call
// serves every later step.

#include <gtest/gtest.h>

#include <functional>

#include "nuvec/core/compile.h"
#include "tests/nn/torch_reference.h"

namespace nuvec {
namespace {

namespace O = optimizers;

constexpr int kSteps = 100;

O::Schedule warmup_cosine() {
  return O::join_schedules({O::linear_schedule(0.0, 0.05, 10), O::cosine_decay(0.05, kSteps - 10, 0.005)}, {10});
}

nn::Params named(const nn::Params& names, std::vector<array>::const_iterator values) {
  nn::Params out;
  for (const auto& [name, unused] : names) {
    out.emplace_back(name, *values++);
  }
  return out;
}

std::vector<array> values_of(const nn::Params& params) {
  std::vector<array> out;
  for (const auto& [name, value] : params) {
    out.push_back(value);
  }
  return out;
}

/// The largest difference between same-named arrays, relative to max(1, |value|): parameters are of size about 1,
/// and Adagrad's sum of squares grows to about 100.
float max_difference(const nn::Params& a, const nn::Params& b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0.0F;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    auto x = astype(a[i].second, float32);
    auto y = astype(b[i].second, float32);
    worst = std::max(worst, max(abs(x - y) / maximum(abs(x), array(1.0F))).item<float>());
  }
  return worst;
}

TEST(OptimizerCompile, ACompiledStepMatchesTheEagerStepOver100Steps) {
  struct Case {
    const char* name;
    std::function<std::unique_ptr<O::Optimizer>()> make;
  };
  std::vector<Case> cases{
      {"Adam",
       [] {
         return std::make_unique<O::Adam>(warmup_cosine(), std::pair{0.9, 0.999}, 1e-8, true, 0.01);
       }},
      {"AdamW", [] { return std::make_unique<O::AdamW>(warmup_cosine()); }},
      {"SGD with momentum and dampening", [] { return std::make_unique<O::SGD>(warmup_cosine(), 0.9, 1e-4, 0.1); }},
      {"SGD with Nesterov momentum", [] { return std::make_unique<O::SGD>(warmup_cosine(), 0.9, 0.0, 0.0, true); }},
      {"Adamax", [] { return std::make_unique<O::Adamax>(warmup_cosine()); }},
      {"Adagrad", [] { return std::make_unique<O::Adagrad>(warmup_cosine()); }},
      {"AdaDelta", [] { return std::make_unique<O::AdaDelta>(warmup_cosine()); }},
      {"RMSprop centered with momentum",
       [] { return std::make_unique<O::RMSprop>(warmup_cosine(), 0.99, 1e-8, 0.0, 0.5, true); }},
      {"Lion",
       [] {
         return std::make_unique<O::Lion>(warmup_cosine(), std::pair{0.9, 0.99}, 0.1);
       }},
      {"Adafactor", [] { return std::make_unique<O::Adafactor>(); }},
      {"Muon", [] { return std::make_unique<O::Muon>(warmup_cosine()); }},
  };
  const nn::Params start{{"w", random::normal({6, 4}, random::key(1))}, {"b", random::normal({4}, random::key(2))}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto eager = c.make();
    auto traced = c.make();
    // The state's entries must all exist before the compiled function takes them as inputs.
    traced->init(start);
    const nn::Params state_names = traced->state();
    int traces = 0;
    auto step = compile([&](const std::vector<array>& in) {
      ++traces;
      auto params = named(start, in.begin());
      auto grads = named(start, in.begin() + 2);
      traced->set_state(named(state_names, in.begin() + 4));
      auto out = values_of(traced->apply_gradients(grads, params));
      for (const auto& s : values_of(traced->state())) {
        out.push_back(s);
      }
      return out;
    });

    nn::Params eager_params = start;
    nn::Params compiled_params = start;
    float worst = 0.0F;
    for (int s = 0; s < kSteps; ++s) {
      const nn::Params grads{{"w", random::normal({6, 4}, random::key(100 + s))},
                             {"b", random::normal({4}, random::key(1000 + s))}};
      eager_params = eager->apply_gradients(grads, eager_params);
      std::vector<array> inputs = values_of(compiled_params);
      for (const auto& g : values_of(grads)) {
        inputs.push_back(g);
      }
      for (const auto& st : values_of(traced->state())) {
        inputs.push_back(st);
      }
      auto outs = step(inputs);
      compiled_params = named(start, outs.begin());
      traced->set_state(named(state_names, outs.begin() + 2));
      worst = std::max(worst, max_difference(eager_params, compiled_params));
    }
    EXPECT_EQ(traces, 1) << "the schedule and step must not retrace";
    EXPECT_EQ(traced->step(), kSteps);
    EXPECT_EQ(eager->step(), kSteps);
    EXPECT_DOUBLE_EQ(traced->learning_rate(), eager->learning_rate());
    EXPECT_LE(max_difference(eager->state(), traced->state()), 1e-5F);
    // The largest difference seen over the run, eager against compiled (about 1e-7 to 1e-6: the fused kernels
    // round in another order).
    EXPECT_LE(worst, 1e-5F);
    std::printf("%s: largest parameter difference over %d steps %.3g\n", c.name, kSteps, static_cast<double>(worst));
  }
}

TEST(OptimizerCompile, TheCompiledStepSeesTheScheduleChange) {
  // Plain SGD with a gradient of one moves the parameter by the rate, so the compiled function's outputs spell out
  // the schedule.
  O::SGD opt(O::step_decay(1.0, 0.5, 2));
  opt.init({{"x", zeros({1})}});
  const nn::Params names = opt.state();
  auto step = compile([&](const std::vector<array>& in) {
    opt.set_state(named(names, in.begin() + 1));
    auto out = values_of(opt.apply_gradients({{"x", ones({1})}}, {{"x", in[0]}}));
    for (const auto& s : values_of(opt.state())) {
      out.push_back(s);
    }
    return out;
  });
  array x = zeros({1});
  std::vector<float> moves;
  for (int s = 0; s < 6; ++s) {
    std::vector<array> inputs{x};
    for (const auto& st : values_of(opt.state())) {
      inputs.push_back(st);
    }
    auto outs = step(inputs);
    moves.push_back((x - outs[0]).item<float>());
    x = outs[0];
    opt.set_state(named(names, outs.begin() + 1));
  }
  EXPECT_EQ(moves, (std::vector<float>{1.0F, 1.0F, 0.5F, 0.5F, 0.25F, 0.25F}));
}

}  // namespace
}  // namespace nuvec
