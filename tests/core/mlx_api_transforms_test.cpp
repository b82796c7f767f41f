// MLX's transforms.h and compile.h, called as MLX code calls them: a declaration that changes or goes missing fails
// to compile here.

#include <gtest/gtest.h>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

using V = std::vector<array>;

V twice(const V& xs) { return V{xs[0] * 2.0F}; }

TEST(MlxApiTransforms, EvalForms) {
  auto a = ones({2});
  auto b = a + 1.0F;
  eval(b);
  eval(a, b);
  eval(V{a, b});
  auto c = b * 2.0F;
  async_eval(c);
  async_eval(V{c});
  eval(c);
  EXPECT_TRUE(c.is_available());
}

TEST(MlxApiTransforms, DerivativesAndVmap) {
  auto x = array({1.0F, 2.0F});
  auto [outs, cts] = vjp(twice, {x}, {ones({2})});
  EXPECT_EQ(cts[0].shape(), x.shape());
  auto [out, ct] = vjp([](const array& a) { return a * a; }, x, ones({2}));
  EXPECT_EQ(ct.shape(), x.shape());
  auto [jouts, tans] = jvp(twice, {x}, {ones({2})});
  EXPECT_EQ(tans.size(), 1U);
  auto [jout, tan] = jvp([](const array& a) { return exp(a); }, x, ones({2}));
  EXPECT_EQ(tan.shape(), x.shape());
  Function loss = [](const V& xs) { return V{sum(xs[0] * xs[1])}; };
  EXPECT_EQ(value_and_grad(loss, {0, 1})({x, x}).second.size(), 2U);
  EXPECT_EQ(value_and_grad(loss)({x, x}).second.size(), 1U);
  EXPECT_EQ(value_and_grad(loss, 1)({x, x}).second.size(), 1U);
  EXPECT_EQ(value_and_grad([](const array& a) { return sum(a); })(x).second.shape(), x.shape());
  std::function<array(const V&)> simple = [](const V& xs) { return sum(xs[0]); };
  EXPECT_EQ(value_and_grad(simple, {0})({x}).second.size(), 1U);
  EXPECT_EQ(value_and_grad(simple)({x}).second.size(), 1U);
  EXPECT_EQ(grad(simple, {0})({x}).size(), 1U);
  EXPECT_EQ(grad(simple)({x}).size(), 1U);
  EXPECT_EQ(grad([](const array& a) { return sum(a * a); })(x).shape(), x.shape());
  EXPECT_EQ(vmap([](const array& a) { return a * 2.0F; })(ones({3, 2})).shape(), (Shape{3, 2}));
  EXPECT_EQ(vmap([](const array& a) { return sum(a); }, 1, 0)(ones({3, 2})).shape(), Shape{2});
  EXPECT_EQ(vmap([](const array& a, const array& b) { return a + b; })(ones({3}), ones({3})).shape(), Shape{3});
  EXPECT_EQ(vmap([](const array& a, const array& b) { return a + b; }, 0, -1, 0)(ones({3}), ones({})).shape(),
            Shape{3});
  EXPECT_EQ(vmap(twice)({ones({3, 2})})[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(vmap(twice, {1}, {0})({ones({3, 2})})[0].shape(), (Shape{2, 3}));
}

TEST(MlxApiTransforms, CustomFunctions) {
  auto f = custom_function(twice, [](const V&, const V& cts, const V&) { return V{cts[0] * 2.0F}; });
  EXPECT_EQ(f({ones({2})})[0].shape(), Shape{2});
  auto g = custom_function(
      twice, std::nullopt, [](const V&, const V& tangents, const std::vector<int>&) { return V{tangents[0] * 2.0F}; },
      [](const V& inputs, const std::vector<int>& axes) {
        return std::pair{twice(inputs), axes};
      });
  EXPECT_EQ(g({ones({2})})[0].shape(), Shape{2});
  auto h = custom_vjp(twice, [](const V&, const V& cts, const V&) { return V{cts[0] * 2.0F}; });
  EXPECT_EQ(grad([&](const V& xs) { return sum(h(xs)[0]); })({ones({2})})[0].shape(), Shape{2});
  EXPECT_EQ(checkpoint(twice)({ones({2})})[0].shape(), Shape{2});
}

TEST(MlxApiTransforms, CompileForms) {
  // A plain function, a function pointer, a lambda without captures and one with captures all compile, and nullptr
  // picks the pointer overload instead of an ambiguous conversion.
  auto by_name = compile(twice);
  auto by_pointer = compile(&twice, false);
  auto by_lambda = compile([](const V& xs) { return V{xs[0] + 1.0F}; });
  float offset = 2.0F;
  auto by_capture = compile([offset](const V& xs) { return V{xs[0] + offset}; }, true);
  auto from_null = compile(nullptr);
  (void)from_null;
  auto x = ones({2});
  EXPECT_TRUE(array_equal(by_name({x})[0], by_pointer({x})[0]).item<bool>());
  EXPECT_TRUE(array_equal(by_lambda({x})[0], full({2}, 2.0F)).item<bool>());
  EXPECT_TRUE(array_equal(by_capture({x})[0], full({2}, 3.0F)).item<bool>());
  disable_compile();
  enable_compile();
  set_compile_mode(CompileMode::enabled);
}

}  // namespace
}  // namespace nuvec
