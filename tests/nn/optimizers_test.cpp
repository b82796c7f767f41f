// Optimizer trajectories over three steps of given gradients: against torch.optim where the rules agree (SGD with
// momentum, Nesterov and weight decay; Adam and AdamW with bias_correction, Adagrad, Adadelta, RMSprop with centering
// and momentum), against NumPy transcriptions of MLX's documented rules for MLX's defaults (Adam and AdamW without
// bias correction, SGD's damped buffer from zero, Adamax, Adagrad's eps) and of the papers' update rules for Lion,
// Adafactor and Muon (not in PyTorch 1.13).
// Also: saving and restoring optimizer state mid-run, gradient clipping against torch.nn.utils.clip_grad_norm_,
// gradient accumulation, and Optimizer::update on a model. Schedules: schedules_test.cpp; compiled steps:
// optimizer_compile_test.cpp.

#include <gtest/gtest.h>

#include <functional>

#include "tests/nn/torch_reference.h"

namespace nuvec {
namespace {

namespace O = optimizers;
using test::close;
using test::error_of;
using test::torch_run;

constexpr int kSteps = 3;

struct Trajectory {
  nn::Params params;
  std::vector<nn::Params> grads;
  std::vector<array> inputs() const {
    std::vector<array> out;
    for (const auto& [n, p] : params) {
      out.push_back(p);
    }
    for (const auto& step : grads) {
      for (const auto& [n, g] : step) {
        out.push_back(g);
      }
    }
    return out;
  }
};

Trajectory make_trajectory() {
  Trajectory t;
  t.params = {{"w", random::normal({5, 3})}, {"b", random::normal({3})}};
  for (int s = 0; s < kSteps; ++s) {
    t.grads.push_back({{"w", random::normal({5, 3})}, {"b", random::normal({3})}});
  }
  return t;
}

/// Runs the optimizer and compares each step's parameters with outs[2 * step + i].
void check(O::Optimizer& opt, const Trajectory& t, const std::vector<test::HostArray>& expected, double tol) {
  ASSERT_EQ(expected.size(), static_cast<size_t>(2 * kSteps));
  auto params = t.params;
  for (int s = 0; s < kSteps; ++s) {
    params = opt.apply_gradients(t.grads[s], params);
    for (int i = 0; i < 2; ++i) {
      EXPECT_TRUE(close(params[i].second, expected[2 * s + i], tol)) << "step " << s + 1 << " " << params[i].first;
    }
  }
  EXPECT_EQ(opt.step(), kSteps);
}

/// torch.optim.<ctor> over the trajectory: inputs a, b are the parameters, then two gradients per step.
std::vector<test::HostArray> torch_trajectory(const std::string& ctor, const Trajectory& t) {
  std::string code =
      "ps = [torch.nn.Parameter(T(a)), torch.nn.Parameter(T(b))]\n"
      "rest = [c, d, e, f, g, h]\n"
      "opt = torch.optim." +
      ctor +
      "\n"
      "outs = []\n"
      "for s in range(3):\n"
      "    for i, p in enumerate(ps): p.grad = T(rest[2 * s + i])\n"
      "    opt.step()\n"
      "    outs += [N(p) for p in ps]\n"
      "out = tuple(outs)";
  return torch_run(code, t.inputs());
}

TEST(Optimizers, MatchTorch) {
  struct Case {
    std::string torch;
    std::function<std::unique_ptr<O::Optimizer>()> make;
  };
  std::vector<Case> cases{
      {"SGD(ps, lr=0.1)", [] { return std::make_unique<O::SGD>(0.1); }},
      {"SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01)", [] { return std::make_unique<O::SGD>(0.1, 0.9, 0.01); }},
      {"SGD(ps, lr=0.05, momentum=0.8, nesterov=True)",
       [] { return std::make_unique<O::SGD>(0.05, 0.8, 0.0, 0.0, true); }},
      {"Adam(ps, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)",
       [] {
         return std::make_unique<O::Adam>(0.01, std::pair{0.8, 0.99}, 1e-6, true, 0.1);
       }},
      {"AdamW(ps, lr=0.01)",
       [] {
         return std::make_unique<O::AdamW>(0.01, std::pair{0.9, 0.999}, 1e-8, 0.01, true);
       }},
      {"Adagrad(ps, lr=0.1, weight_decay=0.01)", [] { return std::make_unique<O::Adagrad>(0.1, 1e-10, 0.01); }},
      {"Adadelta(ps, lr=1.0, rho=0.8)", [] { return std::make_unique<O::AdaDelta>(1.0, 0.8); }},
      {"RMSprop(ps, lr=0.01)", [] { return std::make_unique<O::RMSprop>(0.01); }},
      {"RMSprop(ps, lr=0.01, alpha=0.9, momentum=0.5, centered=True, weight_decay=0.1)",
       [] { return std::make_unique<O::RMSprop>(0.01, 0.9, 1e-8, 0.1, 0.5, true); }},
  };
  auto t = make_trajectory();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.torch);
    auto opt = c.make();
    check(*opt, t, torch_trajectory(c.torch, t), 1e-5);
  }
}

/// A NumPy update rule `upd(p, g, st, t)` (st: a dict per parameter) over the trajectory.
std::vector<test::HostArray> numpy_trajectory(const std::string& rule, const Trajectory& t) {
  std::string code =
      rule +
      "ps = [np.asarray(a, np.float64), np.asarray(b, np.float64)]\n"
      "rest = [c, d, e, f, g, h]\n"
      "sts = [{}, {}]\n"
      "outs = []\n"
      "for s in range(3):\n"
      "    ps = [upd(p, np.asarray(rest[2 * s + i], np.float64), sts[i], s + 1) for i, p in enumerate(ps)]\n"
      "    outs += ps\n"
      "out = tuple(outs)";
  std::vector<test::HostArray> hosts;
  for (const auto& in : t.inputs()) {
    hosts.push_back(test::to_host(in));
  }
  return test::numpy(code, hosts);
}

TEST(Optimizers, MlxDefaultsFollowMlxRules) {
  // Transcribed from mlx.optimizers' documented update rules (m, v from zero; t is the 1-based step).
  struct Case {
    const char* name;
    std::function<std::unique_ptr<O::Optimizer>()> make;
    std::string rule;
  };
  std::vector<Case> cases{
      {"SGD: the damped buffer starts at zero", [] { return std::make_unique<O::SGD>(0.1, 0.9, 0.01, 0.3); },
       "def upd(p, g, st, t):\n"
       "    g = g + 0.01 * p\n"
       "    st['v'] = v = 0.9 * st.get('v', 0) + 0.7 * g\n"
       "    return p - 0.1 * v\n"},
      {"Adam: no bias correction",
       [] {
         return std::make_unique<O::Adam>(0.01, std::pair{0.8, 0.99}, 1e-6);
       },
       "def upd(p, g, st, t):\n"
       "    st['m'] = m = 0.8 * st.get('m', 0) + 0.2 * g\n"
       "    st['v'] = v = 0.99 * st.get('v', 0) + 0.01 * g * g\n"
       "    return p - 0.01 * m / (np.sqrt(v) + 1e-6)\n"},
      {"AdamW: decay, then Adam without bias correction", [] { return std::make_unique<O::AdamW>(0.01); },
       "def upd(p, g, st, t):\n"
       "    p = p * (1 - 0.01 * 0.01)\n"
       "    st['m'] = m = 0.9 * st.get('m', 0) + 0.1 * g\n"
       "    st['v'] = v = 0.999 * st.get('v', 0) + 0.001 * g * g\n"
       "    return p - 0.01 * m / (np.sqrt(v) + 1e-8)\n"},
      {"Adamax: v = max(b2 v, |g|), eps outside, no bias correction",
       [] {
         return std::make_unique<O::Adamax>(0.02, std::pair{0.9, 0.99}, 1e-3);
       },
       "def upd(p, g, st, t):\n"
       "    st['m'] = m = 0.9 * st.get('m', 0) + 0.1 * g\n"
       "    st['v'] = v = np.maximum(0.99 * st.get('v', 0), np.abs(g))\n"
       "    return p - 0.02 * m / (v + 1e-3)\n"},
      {"Adagrad: eps 1e-8", [] { return std::make_unique<O::Adagrad>(0.1); },
       "def upd(p, g, st, t):\n"
       "    st['v'] = v = st.get('v', 0) + g * g\n"
       "    return p - 0.1 * g / (np.sqrt(v) + 1e-8)\n"},
  };
  auto t = make_trajectory();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto opt = c.make();
    check(*opt, t, numpy_trajectory(c.rule, t), 1e-5);
  }
}

TEST(Optimizers, LionAdafactorMuonMatchTheirPapers) {
  auto t = make_trajectory();
  {
    SCOPED_TRACE("Lion");
    O::Lion opt(0.01, {0.9, 0.99}, 0.1);
    std::string rule =
        "def upd(p, g, st, t):\n"
        "    m = st.get('m', np.zeros_like(p))\n"
        "    c = np.sign(0.9 * m + 0.1 * g)\n"
        "    st['m'] = 0.99 * m + 0.01 * g\n"
        "    return p * (1 - 0.01 * 0.1) - 0.01 * c\n";
    check(opt, t, numpy_trajectory(rule, t), 1e-5);
  }
  {
    SCOPED_TRACE("Adafactor");
    O::Adafactor opt;
    std::string rule =
        "rms = lambda x: np.sqrt(np.mean(x * x))\n"
        "def upd(p, g, st, t):\n"
        "    lr = max(1e-3, rms(p)) * min(1e-2, 1 / np.sqrt(t))\n"
        "    b2 = 1 - t ** -0.8\n"
        "    u = g * g + 1e-30\n"
        "    if p.ndim == 2:\n"
        "        st['r'] = b2 * st.get('r', 0) + (1 - b2) * u.mean(1)\n"
        "        st['c'] = b2 * st.get('c', 0) + (1 - b2) * u.mean(0)\n"
        "        v = np.outer(st['r'] / st['r'].mean(), st['c'])\n"
        "    else:\n"
        "        st['v'] = v = b2 * st.get('v', 0) + (1 - b2) * u\n"
        "    x = g / np.sqrt(v)\n"
        "    x = x / max(1.0, rms(x))\n"
        "    return p - lr * x\n";
    check(opt, t, numpy_trajectory(rule, t), 1e-5);
  }
  {
    SCOPED_TRACE("Muon");
    O::Muon opt(0.02);
    std::string rule =
        "def ns(G):\n"
        "    X = G / (np.linalg.norm(G) + 1e-7)\n"
        "    tall = X.shape[0] > X.shape[1]\n"
        "    X = X.T if tall else X\n"
        "    for _ in range(5):\n"
        "        A = X @ X.T\n"
        "        X = 3.4445 * X + (-4.7750 * A + 2.0315 * A @ A) @ X\n"
        "    return X.T if tall else X\n"
        "def upd(p, g, st, t):\n"
        "    st['v'] = v = 0.95 * st.get('v', 0) + 0.05 * g\n"
        "    u = 0.05 * g + 0.95 * v\n"
        "    scale = 1.0\n"
        "    if p.ndim == 2:\n"
        "        u = ns(u); scale = max(1.0, p.shape[0] / p.shape[1]) ** 0.5\n"
        "    return p * (1 - 0.02 * 0.01) - 0.02 * scale * u\n";
    check(opt, t, numpy_trajectory(rule, t), 1e-4);
  }
}

TEST(Optimizers, StateSavesAndRestores) {
  auto t = make_trajectory();
  O::Adam a(0.01);
  auto pa = a.apply_gradients(t.grads[0], t.params);
  pa = a.apply_gradients(t.grads[1], pa);
  auto saved = a.state();
  ASSERT_NE(nn::find_param(saved, "w.m"), nullptr);
  ASSERT_NE(nn::find_param(saved, "b.v"), nullptr);
  EXPECT_EQ(array(*nn::find_param(saved, "step")).dtype(), uint64);
  EXPECT_EQ(array(*nn::find_param(saved, "step")).item<uint64_t>(), 2U);
  EXPECT_FLOAT_EQ(array(*nn::find_param(saved, "learning_rate")).item<float>(), 0.01F);
  O::Adam b(0.01);
  b.set_state(saved);
  EXPECT_EQ(b.step(), 2);
  // A fixed rate comes back with the state (MLX's behaviour); a schedule would recompute it from the step.
  O::Adam c(0.5);
  c.set_state(saved);
  EXPECT_NEAR(c.learning_rate(), 0.01, 1e-9);
  auto next_a = a.apply_gradients(t.grads[2], pa);
  auto next_b = b.apply_gradients(t.grads[2], pa);
  for (size_t i = 0; i < next_a.size(); ++i) {
    EXPECT_TRUE(array_equal(next_a[i].second, next_b[i].second).item<bool>()) << next_a[i].first;
  }
  EXPECT_EQ(error_of([&] {
              b.set_state({{"w", zeros({2})}});
            }),
            "[Optimizer] cannot place the state entry 'w' (expected \"<parameter>.<slot>\").");
  EXPECT_EQ(error_of([&] {
              b.set_state({{"step", array(uint64_t{1}, uint64)}});
            }),
            "[Optimizer] the state has no \"learning_rate\" entry.");
  EXPECT_EQ(error_of([&] {
              b.set_state({{"step", zeros({2})}, {"learning_rate", array(0.1F)}});
            }),
            "[Optimizer] the state entry 'step' must be a scalar; given shape (2).");
  EXPECT_EQ(error_of([&] {
              b.apply_gradients({{"nope", zeros({3})}}, pa);
            }),
            "[Optimizer] a gradient for 'nope' has no matching parameter.");
}

TEST(Optimizers, ARefusedStepChangesNothing) {
  // Every gradient is checked before any state moves: before, the gradients ahead of the refused one had already
  // updated Adam's moments (and created the state of a parameter stepped for the first time).
  nn::Params params{{"a", ones({2})}, {"b", ones({3})}};
  O::Adam opt(0.1);
  opt.apply_gradients({{"a", full({2}, 0.5F)}, {"b", full({3}, 0.5F)}}, params);
  const auto before = opt.state();
  auto more = params;
  more.emplace_back("c", ones({4}));
  EXPECT_EQ(error_of([&] {
              opt.apply_gradients({{"a", full({2}, 3.0F)}, {"b", zeros({4})}}, params);
            }),
            "[Optimizer] the gradient for 'b' has shape (4); the parameter has shape (3).");
  EXPECT_EQ(error_of([&] {
              opt.apply_gradients({{"c", ones({4})}, {"nope", zeros({1})}}, more);
            }),
            "[Optimizer] a gradient for 'nope' has no matching parameter.");
  const auto after = opt.state();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].first, before[i].first);
    EXPECT_TRUE(array_equal(after[i].second, before[i].second).item<bool>()) << after[i].first;
  }
  EXPECT_EQ(opt.step(), 1);
  // A step updates the state arrays in place: a compiled step holds pointers to them.
  const auto slots = opt.state_arrays();
  opt.apply_gradients({{"a", full({2}, 3.0F)}, {"b", full({3}, 3.0F)}}, params);
  EXPECT_EQ(opt.state_arrays(), slots);
}

TEST(Optimizers, PerParameterRuleEqualsApplyGradients) {
  // init_single and apply_single, driven by a caller that keeps the state itself (the Python optimizers), give
  // apply_gradients' parameters and state step for step.
  const auto t = make_trajectory();
  O::Adam whole(0.01, {0.9, 0.999}, 1e-8, true);
  O::Adam adam(0.5, {0.9, 0.999}, 1e-8, true);  // its own rate is unused: the caller passes lr
  O::Optimizer& rule = adam;
  auto params = t.params;
  auto single = t.params;
  std::map<std::string, O::Optimizer::State> states;
  for (int s = 0; s < kSteps; ++s) {
    params = whole.apply_gradients(t.grads[s], params);
    const array lr(0.01F);
    const array step(static_cast<uint64_t>(s + 1), uint64);
    for (size_t i = 0; i < single.size(); ++i) {
      auto& state = states[single[i].first];
      if (s == 0) {
        rule.init_single(single[i].second, state);
      }
      single[i].second = rule.apply_single(t.grads[s][i].second, single[i].second, state, lr, step);
      EXPECT_TRUE(allclose(single[i].second, params[i].second, 0.0, 0.0).item<bool>()) << single[i].first;
    }
  }
  for (const auto& [name, value] : whole.state()) {
    if (name != "step" && name != "learning_rate") {
      const auto dot = name.find('.');
      EXPECT_TRUE(array_equal(states[name.substr(0, dot)].at(name.substr(dot + 1)), value).item<bool>()) << name;
    }
  }
}

TEST(Optimizers, UpdateAModel) {
  nn::Linear model(3, 2);
  model.freeze(false, {"bias"});
  auto before_w = model.weight;
  auto before_b = *model.bias;
  O::SGD opt(0.5);
  opt.update(model, {{"weight", ones({2, 3})}});
  EXPECT_TRUE(allclose(model.weight, before_w - array(0.5F)).item<bool>());
  EXPECT_TRUE(array_equal(*model.bias, before_b).item<bool>());
}

TEST(GradientUtilities, ClipAndAccumulate) {
  nn::Params grads{{"a", random::normal({4, 3}) * array(3.0F)}, {"b", random::normal({5})}};
  for (double max_norm : {0.5, 100.0}) {
    auto [clipped, norm] = O::clip_grad_norm(grads, max_norm);
    auto ref = torch_run(
        "ps = [torch.nn.Parameter(torch.zeros(x.shape, dtype=torch.float64)) for x in (a, b)]\n"
        "ps[0].grad = T(a); ps[1].grad = T(b)\n"
        "n = torch.nn.utils.clip_grad_norm_(ps, " +
            std::to_string(max_norm) +
            ")\n"
            "out = (N(ps[0].grad), N(ps[1].grad), N(n))",
        {grads[0].second, grads[1].second});
    EXPECT_TRUE(close(norm, ref[2], 1e-5));
    EXPECT_TRUE(close(clipped[0].second, ref[0], 1e-5));
    EXPECT_TRUE(close(clipped[1].second, ref[1], 1e-5));
  }
  O::GradientAccumulator acc;
  auto g1 = random::normal({3});
  auto g2 = random::normal({3});
  auto g3 = random::normal({3});
  for (const auto& g : {g1, g2, g3}) {
    acc.add({{"x", g}});
  }
  EXPECT_EQ(acc.count(), 3);
  EXPECT_TRUE(allclose(acc.average()[0].second, (g1 + g2 + g3) / array(3.0F)).item<bool>());
  EXPECT_EQ(error_of([&] { acc.add({{"y", g1}}); }), "[GradientAccumulator] expected a gradient for 'x'; given 'y'.");
  acc.reset();
  EXPECT_EQ(acc.count(), 0);
}

}  // namespace
}  // namespace nuvec
