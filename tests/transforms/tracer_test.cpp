// array::is_tracer() as MLX defines it: true inside vjp/grad/value_and_grad, jvp, vmap and compile tracing for the
// function's inputs and the arrays computed from them, false for anything else and everywhere outside. Evaluation
// is allowed on the tracers of vjp and jvp (the graph is kept for the transform) and throws on vmap's and compile's.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

using V = std::vector<array>;

/// What the traced function saw: its input, a value computed from it, and an unrelated array.
struct Seen {
  bool input = false;
  bool derived = false;
  bool constant = true;
};

Function spy(Seen& seen, const array& constant) {
  return [&seen, constant](const V& xs) {
    auto y = sin(xs[0]) * 2.0F;
    seen = {xs[0].is_tracer(), y.is_tracer(), (constant + 1.0F).is_tracer()};
    return V{sum(y)};
  };
}

void expect_traced(const Seen& seen) {
  EXPECT_TRUE(seen.input);
  EXPECT_TRUE(seen.derived);
  EXPECT_FALSE(seen.constant);
}

TEST(Tracers, MarkedInsideEachTransform) {
  auto x = array({0.5F, 1.0F});
  auto c = ones({2});
  Seen seen;
  {
    SCOPED_TRACE("vjp");
    auto [outs, grads] = vjp(spy(seen, c), {x}, {array(1.0F)});
    expect_traced(seen);
    EXPECT_FALSE(outs[0].is_tracer());
    EXPECT_FALSE(grads[0].is_tracer());
  }
  {
    SCOPED_TRACE("grad");
    seen = {};
    auto f = spy(seen, c);
    auto g = grad([&](const V& xs) { return f(xs)[0]; })({x});
    expect_traced(seen);
    EXPECT_FALSE(g[0].is_tracer());
  }
  {
    SCOPED_TRACE("value_and_grad");
    seen = {};
    (void)value_and_grad(spy(seen, c))({x});
    expect_traced(seen);
  }
  {
    SCOPED_TRACE("jvp");
    seen = {};
    auto [outs, tangents] = jvp(spy(seen, c), {x}, {ones({2})});
    expect_traced(seen);
    EXPECT_FALSE(tangents[0].is_tracer());
  }
  {
    SCOPED_TRACE("vmap");
    seen = {};
    (void)vmap(spy(seen, array(1.0F)))({reshape(arange(4.0F), {2, 2})});
    expect_traced(seen);
  }
  {
    SCOPED_TRACE("compile");
    seen = {};
    auto out = compile(spy(seen, c))({x});
    expect_traced(seen);
    EXPECT_FALSE(out[0].is_tracer());
  }
  EXPECT_FALSE(x.is_tracer());
}

TEST(Tracers, NestedTransformsKeepTheOuterTracers) {
  // grad of grad: the inner gradient is computed from the outer tracer, so it is a tracer of the outer transform.
  bool inner_grad_traced = false;
  auto x = array(0.7F);
  auto second = grad([&](const array& a) {
    auto first = grad([](const array& b) { return sin(b); })(a);
    inner_grad_traced = first.is_tracer();
    return first;
  })(x);
  EXPECT_TRUE(inner_grad_traced);
  EXPECT_NEAR(second.item<float>(), -std::sin(0.7F), 1e-6);  // d2/dx2 sin x = -sin x
}

TEST(Tracers, EvaluationInsideVjpAndJvpKeepsTheGraph) {
  // As MLX: the tracers of vjp and jvp can be evaluated, and the transform still sees the whole graph.
  auto x = array({0.5F, 1.5F});
  auto g = grad([](const V& xs) {
    auto y = xs[0] * xs[0];
    eval(y);
    EXPECT_TRUE(y.is_tracer());
    return sum(y * 3.0F);
  })({x});
  EXPECT_TRUE(allclose(g[0], array({3.0F, 9.0F})).item<bool>());  // d/dx 3 x^2 = 6 x
  auto [outs, tangents] = jvp(
      [](const V& xs) {
        auto y = exp(xs[0]);
        EXPECT_GT(y.item<float>(), 0.0F);
        return V{y};
      },
      {array(0.0F)}, {array(2.0F)});
  EXPECT_FLOAT_EQ(tangents[0].item<float>(), 2.0F);  // exp'(0) * 2
}

TEST(Tracers, EvaluationInsideVmapAndCompileThrows) {
  const std::string expected =
      "[eval] Attempting to eval an array during function transformations like compile or vmap is not allowed.";
  auto evaluates = [](const V& xs) {
    auto y = xs[0] + 1.0F;
    eval(y);
    return V{y};
  };
  try {
    (void)vmap(evaluates)({ones({3, 2})});
    ADD_FAILURE() << "vmap evaluated a tracer";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(e.what(), expected);
  }
  try {
    (void)compile(evaluates)({ones({2})});
    ADD_FAILURE() << "compile evaluated a tracer";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(e.what(), expected);
  }
  // An array that does not depend on the traced inputs evaluates as usual.
  auto outside = vmap([](const V& xs) {
    auto c = ones({2}) * 2.0F;
    eval(c);
    return V{xs[0] * c};
  })({ones({3, 2})});
  EXPECT_TRUE(array_equal(outside[0], full({3, 2}, 2.0F)).item<bool>());
}

}  // namespace
}  // namespace nuvec
