// The fused vjp kernels of nuvec::fast (RMSNormVJP, LayerNormVJP, ScaledDotProductAttentionVJP) against the vjp of
// the same function written with plain ops, over dtypes, shapes that span several blocks, strided inputs, grouped
// heads, every mask kind and sinks. derivative_test.cpp checks them against finite differences in float64.

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "nuvec/core/profile.h"
#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using V = std::vector<array>;

/// Gradients of sum(f(xs) * weight) for a fixed random weight.
V gradients(const std::function<array(const V&)>& f, const V& xs, uint32_t seed = 3) {
  std::mt19937 rng(seed);
  auto weight = test::random_array(f(xs).shape(), float32, rng, -1.0, 1.0);
  auto [outs, grads] = vjp([&](const V& in) { return V{f(in)}; }, xs, {astype(weight, xs[0].dtype())});
  eval(grads);
  return grads;
}

double tolerance_for(Dtype dtype) { return dtype == float32 ? 2e-5 : (dtype == float16 ? 5e-3 : 3e-2); }

void expect_close(const array& actual, const array& expected, double tolerance, const std::string& what) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  auto a = test::as_doubles(test::to_host(astype(actual, float64)));
  auto e = test::as_doubles(test::to_host(astype(expected, float64)));
  double scale = 0;
  for (double v : e) {
    scale = std::max(scale, std::abs(v));
  }
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], e[i], tolerance * (1 + scale)) << what << " at " << i;
  }
}

/// Whether evaluating `arrays` runs a kernel of the primitive `name`.
bool runs_kernel(const V& arrays, const std::string& name) {
  profile::reset();
  profile::enable(false);
  eval(arrays);
  profile::disable();
  auto report = profile::report(1000);
  profile::reset();
  return report.find("  " + name + "\n") != std::string::npos;
}

class FusedNormVjp : public ::testing::TestWithParam<Dtype> {};

TEST_P(FusedNormVjp, MatchesTheComposition) {
  const Dtype dtype = GetParam();
  std::mt19937 rng(1);
  for (const Shape& shape : {Shape{3, 5, 37}, Shape{1, 1}, Shape{4, 256}, Shape{0, 8}, Shape{2, 1000}}) {
    const int n = shape.back();
    auto x = astype(test::random_array(shape, float32, rng, -3.0, 5.0), dtype);
    auto w = astype(test::random_array({n}, float32, rng, 0.5, 1.5), dtype);
    auto b = astype(test::random_array({n}, float32, rng), dtype);
    const std::string where = std::string(dtype_name(dtype)) + " " + std::to_string(x.size());
    auto fused_ln = gradients([](const V& v) { return fast::layer_norm(v[0], v[1], v[2], 1e-5F); }, {x, w, b});
    auto plain_ln =
        gradients([](const V& v) { return fast::detail::layer_norm_composed(v[0], v[1], v[2], 1e-5F); }, {x, w, b});
    for (size_t i = 0; i < 3; ++i) {
      expect_close(fused_ln[i], plain_ln[i], tolerance_for(dtype), "layer_norm grad " + std::to_string(i) + where);
    }
    auto fused_rms = gradients([](const V& v) { return fast::rms_norm(v[0], v[1], 1e-6F); }, {x, w});
    auto plain_rms = gradients([](const V& v) { return fast::detail::rms_norm_composed(v[0], v[1], 1e-6F); }, {x, w});
    for (size_t i = 0; i < 2; ++i) {
      expect_close(fused_rms[i], plain_rms[i], tolerance_for(dtype), "rms_norm grad " + std::to_string(i) + where);
    }
  }
}

TEST_P(FusedNormVjp, StridedRowsAndNoParameters) {
  const Dtype dtype = GetParam();
  std::mt19937 rng(2);
  auto base = astype(test::random_array({24, 6}, float32, rng), dtype);
  auto x = transpose(base);  // (6, 24) whose rows have stride 6
  auto fused = gradients([](const V& v) { return fast::layer_norm(v[0], std::nullopt, std::nullopt, 1e-5F); }, {x});
  auto plain = gradients(
      [](const V& v) { return fast::detail::layer_norm_composed(v[0], std::nullopt, std::nullopt, 1e-5F); }, {x});
  expect_close(fused[0], plain[0], tolerance_for(dtype), "layer_norm without parameters");
  fused = gradients([](const V& v) { return fast::rms_norm(v[0], std::nullopt, 1e-5F); }, {x});
  plain = gradients([](const V& v) { return fast::detail::rms_norm_composed(v[0], std::nullopt, 1e-5F); }, {x});
  expect_close(fused[0], plain[0], tolerance_for(dtype), "rms_norm without weight");
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FusedNormVjp, ::testing::Values(float32, float16, bfloat16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

struct AttentionCase {
  std::string name;
  int batch, q_heads, kv_heads, q_len, kv_len, dim, value_dim;
  std::string mode;  // "", "causal", "bool", "additive"
  bool sinks = false;
  bool strided = false;  // q, k and v as transposed views of (B, L, N, D) arrays
};

class FusedAttentionVjp : public ::testing::TestWithParam<std::tuple<AttentionCase, Dtype>> {};

TEST_P(FusedAttentionVjp, MatchesTheComposition) {
  const auto& [c, dtype] = GetParam();
  std::mt19937 rng(5);
  auto make = [&](int heads, int len, int dim) {
    if (c.strided) {
      auto blhd = test::random_array({c.batch, len, heads, dim}, float32, rng);
      return astype(transpose(blhd, {0, 2, 1, 3}), dtype);
    }
    return astype(test::random_array({c.batch, heads, len, dim}, float32, rng), dtype);
  };
  auto q = make(c.q_heads, c.q_len, c.dim);
  auto k = make(c.kv_heads, c.kv_len, c.dim);
  auto v = make(c.kv_heads, c.kv_len, c.value_dim);
  std::optional<array> mask;
  std::string mode = c.mode;
  if (c.mode == "bool") {
    mask = test::random_array({c.q_len, c.kv_len}, float32, rng, 0.0, 1.0) < array(0.7F);
    mode = "array";
  } else if (c.mode == "additive") {
    mask = astype(test::random_array({c.q_heads, c.q_len, c.kv_len}, float32, rng, -3.0, 0.0), dtype);
    mode = "array";
  }
  V inputs{q, k, v};
  if (c.sinks) {
    inputs.push_back(astype(test::random_array({c.q_heads}, float32, rng), dtype));
  }
  const float scale = 1.0F / std::sqrt(static_cast<float>(c.dim));
  auto sinks_of = [&](const V& x) { return c.sinks ? std::optional<array>(x[3]) : std::nullopt; };
  auto fused = gradients(
      [&](const V& x) { return fast::scaled_dot_product_attention(x[0], x[1], x[2], scale, mode, mask, sinks_of(x)); },
      inputs);
  auto plain = gradients(
      [&](const V& x) {
        return fast::detail::scaled_dot_product_attention_composed(x[0], x[1], x[2], scale, mode, mask, sinks_of(x));
      },
      inputs);
  const char* names[] = {"dq", "dk", "dv", "dsinks"};
  for (size_t i = 0; i < inputs.size(); ++i) {
    expect_close(fused[i], plain[i], tolerance_for(dtype), c.name + " " + names[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FusedAttentionVjp,
    ::testing::Combine(
        ::testing::Values(AttentionCase{"plain", 2, 2, 2, 5, 7, 8, 8, ""},
                          AttentionCase{"causal_blocks", 1, 4, 2, 150, 150, 16, 16, "causal"},
                          AttentionCase{"causal_longer_keys", 1, 2, 1, 70, 100, 8, 12, "causal"},
                          AttentionCase{"causal_fewer_keys", 1, 2, 2, 9, 4, 8, 8, "causal"},
                          AttentionCase{"bool_mask_gqa", 2, 6, 2, 20, 33, 16, 8, "bool"},
                          AttentionCase{"additive_mask_sinks", 1, 3, 1, 66, 40, 8, 8, "additive", true},
                          AttentionCase{"sinks_strided", 2, 4, 4, 17, 17, 32, 32, "causal", true, true},
                          AttentionCase{"decode", 3, 8, 2, 1, 50, 64, 64, ""},
                          AttentionCase{"no_queries", 1, 2, 2, 0, 5, 4, 4, ""}),
        ::testing::Values(float32, bfloat16)),
    [](const auto& info) {
      return std::get<0>(info.param).name + "_" + std::string(dtype_name(std::get<1>(info.param)));
    });

TEST(FusedVjp, GradientsRunTheFusedKernels) {
  std::mt19937 rng(9);
  auto x = test::random_array({4, 16}, float32, rng);
  auto w = test::random_array({16}, float32, rng);
  auto g = grad([](const V& v) { return sum(fast::layer_norm(v[0], v[1], std::nullopt, 1e-5F)); })({x, w});
  EXPECT_TRUE(runs_kernel(g, "LayerNormVJP"));
  g = grad([](const V& v) { return sum(fast::rms_norm(v[0], v[1], 1e-5F)); })({x, w});
  EXPECT_TRUE(runs_kernel(g, "RMSNormVJP"));
  auto q = test::random_array({1, 2, 8, 4}, float32, rng);
  g = grad([](const V& v) { return sum(fast::scaled_dot_product_attention(v[0], v[0], v[0], 0.5F, "causal")); })({q});
  EXPECT_TRUE(runs_kernel(g, "ScaledDotProductAttentionVJP"));
  EXPECT_FALSE(runs_kernel(g, "Softmax"));
}

TEST(FusedVjp, AnAdditiveMaskBeingDifferentiatedTakesTheComposition) {
  std::mt19937 rng(4);
  auto q = test::random_array({1, 1, 3, 4}, float32, rng);
  auto mask = test::random_array({3, 3}, float32, rng);
  auto f = [&](const V& v) { return sum(square(fast::scaled_dot_product_attention(q, q, q, 0.5F, "array", v[0]))); };
  auto fused = grad(f)({mask});
  auto plain = grad([&](const V& v) {
    return sum(square(fast::detail::scaled_dot_product_attention_composed(q, q, q, 0.5F, "array", v[0])));
  })({mask});
  expect_close(fused[0], plain[0], 1e-5, "mask gradient");
}

}  // namespace
}  // namespace nuvec
