// qqmm and gather_qqmm against a float64 reference: both operands are quantized and read back with nuvec's own
// quantize/dequantize (tested bit for bit against NumPy in quantized_test.cpp), converted to double and multiplied
// by the loops below. Gradients follow MLX's definition (QQMatmul::vjp): the cotangent is quantized too and
// multiplied by qqmm, so they are checked against the same reference; MLX's errors where it has no rule.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "nuvec/nuvec.h"

namespace nuvec::test {
namespace {

using V = std::vector<array>;

array random_matrix(Shape shape, uint64_t seed) { return random::normal(std::move(shape), random::key(seed)); }

/// a (rows, K) quantized along K in groups and read back, as doubles.
std::vector<double> quantized_doubles(const array& a, int group_size, int bits) {
  auto q = quantize(a, group_size, bits);
  auto values = astype(dequantize(q[0], q[1], q[2], group_size, bits, "affine", std::nullopt, a.dtype()), float64);
  eval(values);
  return {values.data<double>(), values.data<double>() + values.size()};
}

/// a (rows, K) quantized along K in a microscaled mode (with its global scale, if any) and read back, as doubles.
std::vector<double> scaled_doubles(const array& a, const std::string& mode, const std::optional<array>& global) {
  auto q = quantize(a, std::nullopt, std::nullopt, mode, global);
  auto values =
      astype(dequantize(q[0], q[1], std::nullopt, std::nullopt, std::nullopt, mode, global, a.dtype()), float64);
  eval(values);
  return {values.data<double>(), values.data<double>() + values.size()};
}

/// (M, K) @ (N, K).T of two operands' values, in float64.
std::vector<double> product(const std::vector<double>& xq, const std::vector<double>& wq, const array& x,
                            const array& w) {
  const int m = x.shape(0);
  const int n = w.shape(0);
  const int k = x.shape(1);
  std::vector<double> out(static_cast<size_t>(m) * n);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int l = 0; l < k; ++l) {
        acc += xq[static_cast<size_t>(i) * k + l] * wq[static_cast<size_t>(j) * k + l];
      }
      out[static_cast<size_t>(i) * n + j] = acc;
    }
  }
  return out;
}

/// x (M, K) @ w (N, K).T with both quantized, in float64.
std::vector<double> reference(const array& x, const array& w, int group_size, int bits) {
  return product(quantized_doubles(x, group_size, bits), quantized_doubles(w, group_size, bits), x, w);
}

void expect_matches(const array& got, const std::vector<double>& expected) {
  auto g = astype(got, float64);
  eval(g);
  ASSERT_EQ(static_cast<size_t>(g.size()), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(g.data<double>()[i], expected[i], 1e-4 * (1.0 + std::abs(expected[i]))) << "at " << i;
  }
}

TEST(Qqmm, MatchesTheProductOfBothQuantizedOperands) {
  for (auto [group_size, bits] : {std::pair{64, 4}, std::pair{32, 8}, std::pair{128, 2}}) {
    auto x = random_matrix({5, 128}, 1);
    auto w = random_matrix({6, 128}, 2);
    auto out = qqmm(x, w, std::nullopt, group_size, bits, "affine");
    EXPECT_EQ(out.shape(), (Shape{5, 6}));
    EXPECT_EQ(out.dtype(), float32);
    expect_matches(out, reference(x, w, group_size, bits));
  }
}

TEST(Qqmm, MicroscaledModes) {
  auto x = random_matrix({5, 64}, 20);
  auto w = random_matrix({6, 64}, 21);
  for (std::string mode : {"mxfp4", "mxfp8", "nvfp4"}) {
    SCOPED_TRACE(mode);
    auto expected =
        product(scaled_doubles(x, mode, std::nullopt), scaled_doubles(w, mode, std::nullopt), x, w);
    expect_matches(qqmm(x, w, {}, std::nullopt, std::nullopt, mode), expected);
    // A weight quantized beforehand gives the same product.
    auto q = quantize(w, std::nullopt, std::nullopt, mode);
    expect_matches(qqmm(x, q[0], q[1], std::nullopt, std::nullopt, mode), expected);
  }
  // MLX's default mode is nvfp4; with global scales (each operand's largest magnitude, as MLX's callers pass them).
  expect_matches(qqmm(x, w),
                 product(scaled_doubles(x, "nvfp4", std::nullopt), scaled_doubles(w, "nvfp4", std::nullopt), x, w));
  auto gx = max(abs(x));
  auto gw = max(abs(w));
  expect_matches(qqmm(x, w, {}, std::nullopt, std::nullopt, "nvfp4", gx, gw),
                 product(scaled_doubles(x, "nvfp4", gx), scaled_doubles(w, "nvfp4", gw), x, w));
  // x's gradient is qqmm(ct, w.T), the cotangent quantized with its own largest magnitude as global scale.
  auto sq = random_matrix({16, 16}, 22);
  auto ct = random_matrix({16, 16}, 23);
  auto [outs, grads] = vjp(
      [&](const V& in) { return V{qqmm(in[0], in[1], {}, std::nullopt, std::nullopt, "nvfp4", gx, gw)}; }, {sq, sq},
      {ct});
  expect_matches(grads[0], product(scaled_doubles(ct, "nvfp4", max(abs(ct))),
                                   scaled_doubles(transpose(sq), "nvfp4", gw), ct, transpose(sq)));
}

TEST(Qqmm, FlattensLeadingAxesAndTakesVectors) {
  auto x = random_matrix({2, 3, 64}, 3);
  auto w = random_matrix({4, 64}, 4);
  auto out = qqmm(x, w, {}, 64, 4, "affine", std::nullopt, std::nullopt, Device::cpu);
  EXPECT_EQ(out.shape(), (Shape{2, 3, 4}));
  expect_matches(out, reference(reshape(x, {6, 64}), w, 64, 4));
  auto v = random_matrix({64}, 5);
  auto row = qqmm(v, w, {}, 64, 4, "affine");
  EXPECT_EQ(row.shape(), Shape{4});
  expect_matches(row, reference(reshape(v, {1, 64}), w, 64, 4));
}

TEST(Qqmm, KeepsTheActivationsDtype) {
  auto x = astype(random_matrix({2, 64}, 6), bfloat16);
  auto w = random_matrix({3, 64}, 7);
  auto out = qqmm(x, w, {}, 64, 4, "affine");
  EXPECT_EQ(out.dtype(), bfloat16);
  auto expected = reference(x, w, 64, 4);
  auto got = astype(out, float64);
  eval(got);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(got.data<double>()[i], expected[i], 1e-2 * (1.0 + std::abs(expected[i])));
  }
}

TEST(Qqmm, GradientsAreQqmmsOfTheCotangent) {
  // MLX: d/dx = qqmm(ct, w.T) and d/dw = qqmm(ct.T, x.T), every operand quantized along the contracted axis.
  auto x = random_matrix({64, 64}, 8);
  auto w = random_matrix({64, 64}, 9);
  auto ct = random_matrix({64, 64}, 10);
  auto [outs, grads] = vjp([](const V& in) { return V{qqmm(in[0], in[1], {}, 64, 4, "affine")}; }, {x, w}, {ct});
  expect_matches(grads[0], reference(ct, transpose(w), 64, 4));
  expect_matches(grads[1], reference(transpose(ct), transpose(x), 64, 4));
  auto dx = grad([&](const V& in) { return sum(qqmm(in[0], w, {}, 32, 8, "affine") * ct); })({x})[0];
  expect_matches(dx, reference(ct, transpose(w), 32, 8));
}

TEST(Qqmm, RefusesWhatMlxRefuses) {
  auto x = random_matrix({2, 64}, 11);
  auto w = random_matrix({3, 64}, 12);
  auto message = [](auto&& call) {
    try {
      call();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { (void)qqmm(x, w, {}, 64, 4, "int4"); }),
            "[qqmm] Invalid quantization mode 'int4'; expected one of 'affine', 'mxfp4', 'mxfp8', 'nvfp4'.");
  EXPECT_EQ(message([&] { (void)qqmm(x, w, {}, 64, 4, "affine", array(1.0F), array(1.0F)); }),
            "[qqmm] Global scale is only supported for 'nvfp4' quantization mode.");
  EXPECT_EQ(message([&] { (void)qqmm(astype(x, float64), w, {}, 64, 4, "affine"); }),
            "[qqmm] Only real floating types except float64 are supported but first argument dtype == float64.");
  EXPECT_EQ(message([&] {
              (void)qqmm(x, random_matrix({3, 32}, 13), {}, 64, 4, "affine");
            }),
            "[qqmm] Last dimension of first input with shape (2,64) must match last dimension of second input with "
            "shape (3,32).");
  auto q = quantize(w);
  EXPECT_NE(message([&] { (void)qqmm(x, q[0], q[1], 64, 4, "affine"); }).find("needs biases"), std::string::npos);
  EXPECT_EQ(message([&] { (void)qqmm(x, w, {}, std::nullopt, std::nullopt, "nvfp4", array(1.0F)); }),
            "[qqmm] For nvfp4 mode, either both global_scale_x and global_scale_w must be provided, or neither.");
  auto mx = quantize(w, std::nullopt, std::nullopt, "mxfp4");
  EXPECT_EQ(message([&] { (void)qqmm(x, mx[0], std::nullopt, std::nullopt, std::nullopt, "mxfp4"); }),
            "[qqmm] Scales must be provided if second argument is quantized.");
  EXPECT_NE(message([&] {
              (void)jvp([](const V& in) { return V{qqmm(in[0], in[1], {}, 64, 4, "affine")}; }, {x, w}, {x, w});
            }).find("[qqmm] The jvp is not implemented"),
            std::string::npos);
}

TEST(GatherQqmm, PicksBatchesByIndex) {
  auto x = random_matrix({2, 3, 64}, 14);
  auto w = random_matrix({4, 5, 64}, 15);
  auto lhs = array({1, 0, 1});
  auto rhs = array({3, 3, 0});
  auto out = gather_qqmm(x, w, std::nullopt, lhs, rhs, 64, 4, "affine", std::nullopt, std::nullopt, false, Device::cpu);
  EXPECT_EQ(out.shape(), (Shape{3, 3, 5}));
  const std::vector<int> lv{1, 0, 1};
  const std::vector<int> rv{3, 3, 0};
  for (int b = 0; b < 3; ++b) {
    expect_matches(take(out, b, 0), reference(take(x, lv[b], 0), take(w, rv[b], 0), 64, 4));
  }
  // Without indices every x batch meets the w batch of the same position.
  auto paired = gather_qqmm(x, slice(w, {0, 0, 0}, {2, 5, 64}), {}, {}, {}, 64, 4, "affine");
  EXPECT_EQ(paired.shape(), (Shape{2, 3, 5}));
  expect_matches(take(paired, 1, 0), reference(take(x, 1, 0), take(w, 1, 0), 64, 4));
  EXPECT_THROW((void)grad([&](const V& in) { return sum(gather_qqmm(in[0], w, {}, lhs, rhs, 64, 4, "affine")); })({x}),
               std::invalid_argument);
}

}  // namespace
}  // namespace nuvec::test
