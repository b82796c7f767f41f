// The transform API: signatures, compositions, custom rules, checkpoint, errors.

#include <gtest/gtest.h>

#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using V = std::vector<array>;

TEST(Transforms, GradOfPolynomialAndHigherDerivatives) {
  auto f = [](const array& x) { return sum(x * x * x); };  // f' = 3x^2, f'' = 6x, f''' = 6
  auto x = array({1.0F, -2.0F, 0.5F});
  auto g = grad(f)(x);
  EXPECT_TRUE(allclose(g, array({3.0F, 12.0F, 0.75F})).item<bool>());
  auto second = grad([&](const array& y) { return sum(grad(f)(y)); })(x);
  EXPECT_TRUE(allclose(second, array({6.0F, -12.0F, 3.0F})).item<bool>());
  auto third = grad([&](const array& y) { return sum(grad([&](const array& z) { return sum(grad(f)(z)); })(y)); })(x);
  EXPECT_TRUE(allclose(third, full({3}, 6.0F)).item<bool>());
}

TEST(Transforms, ValueAndGradWithArgnumsAndAuxiliaryOutputs) {
  auto f = [](const V& in) { return V{sum(in[0] * in[1]), in[0] + 1.0F}; };
  auto a = array({1.0F, 2.0F});
  auto b = array({3.0F, 4.0F});
  auto [values, grads] = value_and_grad(f, std::vector<int>{1})({a, b});
  ASSERT_EQ(values.size(), 2U);
  ASSERT_EQ(grads.size(), 1U);
  EXPECT_EQ(values[0].item<float>(), 11.0F);
  EXPECT_TRUE(array_equal(values[1], array({2.0F, 3.0F})).item<bool>());
  EXPECT_TRUE(array_equal(grads[0], a).item<bool>());
  auto both = grad([](const V& in) { return sum(in[0] * in[1]); }, std::vector<int>{0, 1})({a, b});
  EXPECT_TRUE(array_equal(both[0], b).item<bool>());
  EXPECT_TRUE(array_equal(both[1], a).item<bool>());
}

TEST(Transforms, ArgnumsComeInInputOrderAndCountFromTheEnd) {
  // As MLX: gradients in increasing input order whatever argnums' order, negative numbers from the end. For
  // sum(2 x0 + 3 x1 + 5 x2) the gradients are 2, 3 and 5.
  auto f = [](const V& in) { return sum(in[0] * 2.0F + in[1] * 3.0F + in[2] * 5.0F); };
  V inputs{ones({2}), ones({2}), ones({2})};
  auto grads = grad(f, std::vector<int>{2, 0})(inputs);
  ASSERT_EQ(grads.size(), 2U);
  EXPECT_TRUE(array_equal(grads[0], full({2}, 2.0F)).item<bool>());
  EXPECT_TRUE(array_equal(grads[1], full({2}, 5.0F)).item<bool>());
  auto last = grad(f, -1)(inputs);
  EXPECT_TRUE(array_equal(last[0], full({2}, 5.0F)).item<bool>());
  EXPECT_EQ(test::error_of([&] { grad(f, std::vector<int>{1, -2})(inputs); }),
            "[value_and_grad] argnums name input 1 twice.");
  EXPECT_EQ(test::error_of([&] { grad(f, -4)(inputs); }), "[value_and_grad] argnum -4 is out of range for 3 inputs.");
}

TEST(Transforms, VjpAndJvpOfSeveralOutputs) {
  auto f = [](const V& in) { return V{in[0] * in[1], sin(in[0])}; };
  auto x = array({0.5F, 1.0F});
  auto y = array({2.0F, 3.0F});
  auto [outs, cts] = vjp(f, {x, y}, {ones({2}), full({2}, 2.0F)});
  EXPECT_TRUE(allclose(cts[0], y + cos(x) * 2.0F).item<bool>());
  EXPECT_TRUE(allclose(cts[1], x).item<bool>());
  auto [outs2, tans] = jvp(f, {x, y}, {ones({2}), zeros({2})});
  EXPECT_TRUE(allclose(tans[0], y).item<bool>());
  EXPECT_TRUE(allclose(tans[1], cos(x)).item<bool>());
}

TEST(Transforms, Compositions) {
  auto f = [](const array& x) { return sum(exp(x) * x); };  // f' = e^x (1 + x)
  auto x = array({0.1F, -0.3F, 0.7F});
  // vmap of grad: per-example gradients.
  auto batch = reshape(arange(6, float32), {2, 3}) * 0.1F;
  auto per_example = vmap(grad(f))(batch);
  auto expected = exp(batch) * (batch + 1.0F);
  EXPECT_TRUE(allclose(per_example, expected, 1e-5).item<bool>());
  // grad of vmap.
  auto g = grad([&](const array& b) { return sum(vmap([&](const array& r) { return sum(exp(r) * r); })(b)); })(batch);
  EXPECT_TRUE(allclose(g, expected, 1e-5).item<bool>());
  // jvp of vjp: the Hessian-vector product of f is e^x (2 + x) * v.
  auto v = array({1.0F, 2.0F, -1.0F});
  auto hvp = jvp([&](const V& in) { return V{vjp(f, in[0], array(1.0F)).second}; }, {x}, {v}).second[0];
  EXPECT_TRUE(allclose(hvp, exp(x) * (x + 2.0F) * v, 1e-5).item<bool>());
  // vmap of vmap.
  auto outer = vmap(vmap([](const array& a) { return a * 2.0F + 1.0F; }));
  auto grid = reshape(arange(12, float32), {3, 4});
  EXPECT_TRUE(array_equal(outer(grid), grid * 2.0F + 1.0F).item<bool>());
}

TEST(Transforms, VmapAxesAndUnmappedInputs) {
  auto f = [](const V& in) { return V{matmul(in[0], in[1]), sum(in[0], 0)}; };
  auto a = reshape(arange(24, float32), {3, 2, 4});  // mapped over axis 1: two (3, 4) matrices
  auto b = reshape(arange(8, float32), {4, 2});      // shared
  auto out = vmap(f, {1, -1}, {2, 0})({a, b});
  ASSERT_EQ(out[0].shape(), (Shape{3, 2, 2}));
  ASSERT_EQ(out[1].shape(), (Shape{2, 4}));
  for (int i = 0; i < 2; ++i) {
    auto ai = take(a, i, 1);
    EXPECT_TRUE(array_equal(take(out[0], i, 2), matmul(ai, b)).item<bool>());
    EXPECT_TRUE(array_equal(take(out[1], i, 0), sum(ai, 0)).item<bool>());
  }
  // An output that does not depend on the mapped input is broadcast.
  auto constant = vmap([](const array&) { return array({1.0F, 2.0F}); })(zeros({3}));
  EXPECT_TRUE(array_equal(constant, broadcast_to(array({1.0F, 2.0F}), {3, 2})).item<bool>());
}

TEST(Transforms, StopGradientAndIntegerInputs) {
  auto f = [](const V& in) { return sum(stop_gradient(in[0]) * in[0] + astype(in[1], float32)); };
  auto g = grad(f, std::vector<int>{0, 1})({array({2.0F, 3.0F}), array({1, 2})});
  EXPECT_TRUE(array_equal(g[0], array({2.0F, 3.0F})).item<bool>());
  // As MLX, the cotangent reaches an integer input through the cast, cast back to its dtype.
  EXPECT_TRUE(array_equal(g[1], ones({2}, int32)).item<bool>());
}

TEST(Transforms, CapturedArraysAndViews) {
  auto w = array({1.0F, 2.0F, 3.0F, 4.0F}, {2, 2});
  auto f = [&](const array& x) { return sum(take(matmul(transpose(x), w), 0, 0) * 2.0F); };
  auto x = array({1.0F, 0.0F, 0.0F, 1.0F}, {2, 2});
  // d/dx sum(2 (x^T w)[0, :]) = 2 * outer(w rows summed..., e0)
  auto g = grad(f)(x);
  auto expected = array({3.0F * 2, 0.0F, 7.0F * 2, 0.0F}, {2, 2});
  EXPECT_TRUE(allclose(g, expected).item<bool>()) << g;
}

TEST(Transforms, EvaluatingValuesFirstLeavesGradientsIntact) {
  // The forward pass runs (and may donate buffers) before the backward pass reads its intermediates.
  auto f = [](const array& x) { return sum(exp(x * 2.0F) * sin(x)); };
  auto x = random::normal({1000});
  auto expected = grad(f)(x);
  eval(expected);
  auto [value, g] = value_and_grad(f)(x);
  eval(value);
  auto x_view = reshape(x, {10, 100});
  auto g_view = grad([&](const array& v) { return f(flatten(transpose(v))); })(transpose(x_view));
  EXPECT_TRUE(allclose(g, expected).item<bool>());
  EXPECT_TRUE(allclose(flatten(transpose(g_view)), expected).item<bool>());
}

TEST(Transforms, CustomVjpReplacesTheDerivative) {
  auto f = custom_vjp([](const V& in) { return V{sin(in[0])}; },
                      [](const V&, const V& cts, const V&) { return V{cts[0] * 10.0F}; });
  auto g = grad([&](const array& x) { return sum(f({x})[0]); })(array({0.1F, 0.2F}));
  EXPECT_TRUE(array_equal(g, full({2}, 10.0F)).item<bool>());
  // The forward value is the function's.
  EXPECT_TRUE(allclose(f({array(0.5F)})[0], sin(array(0.5F))).item<bool>());
}

TEST(Transforms, CustomFunctionJvpAndVmap) {
  int vmap_calls = 0;
  auto f = custom_function(
      [](const V& in) { return V{in[0] * 2.0F}; }, std::nullopt,
      [](const V&, const V& tangents, const std::vector<int>&) { return V{tangents[0] * 5.0F}; },
      [&](const V& in, const std::vector<int>& axes) {
        ++vmap_calls;
        return std::make_pair(V{moveaxis(in[0], axes[0], 0) * 2.0F}, std::vector<int>{0});
      });
  auto t = jvp(f, {array({1.0F})}, {array({1.0F})}).second[0];
  EXPECT_EQ(t.item<float>(), 5.0F);
  // Without a custom vjp the function itself is differentiated.
  EXPECT_EQ(grad([&](const array& x) { return sum(f({x})[0]); })(array({1.0F})).item<float>(), 2.0F);
  auto mapped = vmap(f, {1})({reshape(arange(6, float32), {2, 3})});
  EXPECT_EQ(vmap_calls, 1);
  EXPECT_TRUE(array_equal(mapped[0], transpose(reshape(arange(6, float32), {2, 3})) * 2.0F).item<bool>());
}

TEST(Transforms, CheckpointGivesTheSameGradientWithLessMemory) {
  constexpr int depth = 24;
  auto block = [](const V& in) {
    auto h = in[0];
    for (int i = 0; i < 4; ++i) {
      h = tanh(h * 1.01F + 0.1F);
    }
    return V{h};
  };
  auto loss = [&](bool use_checkpoint) {
    auto step = use_checkpoint ? checkpoint(block) : Function(block);
    return [step](const array& x) {
      V h{x};
      for (int i = 0; i < depth; ++i) {
        h = step(h);
      }
      return sum(h[0]);
    };
  };
  auto x = random::normal({256, 1024});
  eval(x);
  auto peak_of = [&](bool use_checkpoint) {
    clear_cache();
    reset_peak_memory();
    auto g = grad(loss(use_checkpoint))(x);
    eval(g);
    return std::make_pair(get_peak_memory(), g);
  };
  auto [plain_peak, plain_grad] = peak_of(false);
  auto [ckpt_peak, ckpt_grad] = peak_of(true);
  EXPECT_TRUE(allclose(plain_grad, ckpt_grad, 1e-5, 1e-6).item<bool>());
  EXPECT_LT(static_cast<double>(ckpt_peak), 0.75 * static_cast<double>(plain_peak))
      << "checkpoint peak " << ckpt_peak << " vs plain " << plain_peak;
}

TEST(Transforms, ErrorsNameTheProblem) {
  auto sq = [](const array& x) { return x * x; };
  EXPECT_NE(test::error_of([&] { grad(sq)(array({1.0F, 2.0F})); }).find("must be a scalar"), std::string::npos);
  EXPECT_NE(test::error_of([&] { vjp(sq, array({1.0F, 2.0F}), array({1.0F})); }).find("cotangent 0 has shape (1,)"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { jvp(sq, array({1.0F, 2.0F}), array({1.0F})); }).find("tangent 0 has shape"),
            std::string::npos);
  auto add2 = [](const array& a, const array& b) { return a + b; };
  EXPECT_NE(test::error_of([&] { vmap(add2)(zeros({2, 3}), zeros({4, 3})); }).find("different sizes"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { vmap(sq, 2)(zeros({2, 3})); }).find("out of range"), std::string::npos);
  EXPECT_NE(test::error_of([&] { grad([](const V& in) { return sum(in[0]); }, 3)({zeros({2})}); })
                .find("argnum 3 is out of range"),
            std::string::npos);
  auto quantize_loss = [](const array& a) { return sum(quantize(a, 64, 4)[1]); };
  EXPECT_NE(test::error_of([&] { grad(quantize_loss)(ones({2, 64})); }).find("[vjp] Quantize"), std::string::npos);
  auto complex_matrix = astype(eye(3), complex64);
  auto singular_values = [](const array& a) { return linalg::svd(a, false)[0]; };
  EXPECT_NE(test::error_of([&] { vjp(singular_values, complex_matrix, ones({3})); }).find("[vjp] SVD"),
            std::string::npos);
  auto eigen_values = [](const array& a) { return linalg::eigvalsh(a); };
  EXPECT_NE(test::error_of([&] { vjp(eigen_values, complex_matrix, ones({3})); }).find("complex matrix"),
            std::string::npos);
}

TEST(Transforms, QuantizedMatmulIsDifferentiableInX) {
  auto w = random::normal({64, 128});
  auto q = quantize(w, 64, 4);
  auto dq = dequantize(q[0], q[1], q[2], 64, 4);
  auto x = random::normal({3, 128});
  auto loss_q = [&](const array& a) { return sum(square(quantized_matmul(a, q[0], q[1], q[2], true, 64, 4))); };
  auto loss_d = [&](const array& a) { return sum(square(matmul(a, transpose(dq)))); };
  EXPECT_TRUE(allclose(grad(loss_q)(x), grad(loss_d)(x), 1e-3, 1e-3).item<bool>());
  auto t = random::normal({3, 128});
  auto jq = jvp([&](const array& a) { return quantized_matmul(a, q[0], q[1], q[2], true, 64, 4); }, x, t).second;
  EXPECT_TRUE(allclose(jq, matmul(t, transpose(dq)), 1e-3, 1e-3).item<bool>());

  // gather_qmm: each product's cotangent returns to the row of x it read.
  auto experts = random::normal({2, 64, 128});
  auto eq = quantize(experts, 64, 4);
  auto deq = dequantize(eq[0], eq[1], eq[2], 64, 4);
  auto xs = random::normal({2, 1, 128});
  auto lhs = array({0, 1, 1}, uint32);
  auto rhs = array({1, 0, 1}, uint32);
  auto gq = [&](const array& a) {
    return sum(square(gather_qmm(a, eq[0], eq[1], eq[2], lhs, rhs, true, 64, 4)));
  };
  auto gd = [&](const array& a) { return sum(square(gather_mm(a, swapaxes(deq, -1, -2), lhs, rhs))); };
  EXPECT_TRUE(allclose(grad(gq)(xs), grad(gd)(xs), 1e-3, 1e-3).item<bool>());
}

TEST(Transforms, QuantizedProductsAreDifferentiableInScalesAndBiases) {
  // Against the same products through an explicit dequantize (whose rule the finite-difference cases check).
  auto w = random::normal({16, 64});
  auto q = quantize(w, 32, 4);
  auto x = random::normal({2, 3, 64});
  for (bool transposed : {true, false}) {
    auto xt = transposed ? x : random::normal({2, 3, 16});
    auto loss_q = [&](const std::vector<array>& p) {
      return sum(square(quantized_matmul(xt, q[0], p[0], p[1], transposed, 32, 4)));
    };
    auto loss_d = [&](const std::vector<array>& p) {
      auto dense = dequantize(q[0], p[0], p[1], 32, 4);
      return sum(square(matmul(xt, transposed ? transpose(dense) : dense)));
    };
    auto gq = grad(loss_q, {0, 1})({q[1], q[2]});
    auto gd = grad(loss_d, {0, 1})({q[1], q[2]});
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_TRUE(allclose(gq[k], gd[k], 1e-3, 1e-2).item<bool>()) << "transpose " << transposed << " input " << k;
    }
    auto ts = random::normal(q[1].shape());
    auto tb = random::normal(q[2].shape());
    auto tx = random::normal(xt.shape());
    auto fq = [&](const std::vector<array>& p) {
      return std::vector<array>{quantized_matmul(p[0], q[0], p[1], p[2], transposed, 32, 4)};
    };
    auto fd = [&](const std::vector<array>& p) {
      auto dense = dequantize(q[0], p[1], p[2], 32, 4);
      return std::vector<array>{matmul(p[0], transposed ? transpose(dense) : dense)};
    };
    auto jq = jvp(fq, {xt, q[1], q[2]}, {tx, ts, tb}).second[0];
    auto jd = jvp(fd, {xt, q[1], q[2]}, {tx, ts, tb}).second[0];
    EXPECT_TRUE(allclose(jq, jd, 1e-3, 1e-3).item<bool>()) << "transpose " << transposed;
  }

  // gather_qmm: each weight matrix's scales and biases collect the products that read it.
  auto experts = random::normal({3, 16, 64});
  auto eq = quantize(experts, 32, 4);
  auto xs = random::normal({2, 2, 64});
  auto lhs = array({0, 1, 1, 0}, uint32);
  auto rhs = array({2, 0, 2, 2}, uint32);
  auto gq = [&](const std::vector<array>& p) {
    return sum(square(gather_qmm(xs, eq[0], p[0], p[1], lhs, rhs, true, 32, 4)));
  };
  auto gd = [&](const std::vector<array>& p) {
    return sum(square(gather_mm(xs, swapaxes(dequantize(eq[0], p[0], p[1], 32, 4), -1, -2), lhs, rhs)));
  };
  auto grads_q = grad(gq, {0, 1})({eq[1], eq[2]});
  auto grads_d = grad(gd, {0, 1})({eq[1], eq[2]});
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_TRUE(allclose(grads_q[k], grads_d[k], 1e-3, 1e-2).item<bool>()) << "gather_qmm input " << k;
  }
}

}  // namespace
}  // namespace nuvec
