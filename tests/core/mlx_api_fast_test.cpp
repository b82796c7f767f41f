// MLX's fast.h, called as MLX code calls it (optional weights, both rope offsets, sdpa's mask modes and sinks,
// trailing streams): a declaration that changes or goes missing fails to compile here. Each fused op is checked
// against its composition in plain ops.

#include <gtest/gtest.h>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

bool close(const array& a, const array& b) { return allclose(a, b, 1e-5, 1e-5).item<bool>(); }

TEST(MlxApiFast, Norms) {
  const Stream s = default_stream(Device::cpu);
  auto x = reshape(arange(12.0F), {3, 4});
  auto w = full({4}, 2.0F);
  auto b = ones({4});
  EXPECT_TRUE(close(fast::rms_norm(x, w, 1e-5F, s), fast::detail::rms_norm_composed(x, w, 1e-5F)));
  EXPECT_TRUE(close(fast::rms_norm(x, std::nullopt, 1e-5F), fast::detail::rms_norm_composed(x, std::nullopt, 1e-5F)));
  EXPECT_TRUE(close(fast::layer_norm(x, w, b, 1e-5F, s), fast::detail::layer_norm_composed(x, w, b, 1e-5F)));
  EXPECT_TRUE(close(fast::layer_norm(x, std::nullopt, std::nullopt, 1e-5F),
                    fast::detail::layer_norm_composed(x, std::nullopt, std::nullopt, 1e-5F)));
}

TEST(MlxApiFast, Rope) {
  const Stream s = default_stream(Device::cpu);
  auto x = reshape(arange(32.0F), {1, 2, 4, 4});
  auto by_int = fast::rope(x, 4, false, 10000.0F, 1.0F, 2, std::nullopt, s);
  EXPECT_TRUE(close(by_int, fast::detail::rope_composed(x, 4, false, 10000.0F, 1.0F, 2)));
  EXPECT_TRUE(close(fast::rope(x, 4, false, 10000.0F, 1.0F, array(2)), by_int));
  EXPECT_TRUE(
      close(fast::rope(x, 4, true, 10000.0F, 1.0F, 0), fast::detail::rope_composed(x, 4, true, 10000.0F, 1.0F, 0)));
  auto freqs = array({1.0F, 0.5F});
  EXPECT_TRUE(close(fast::rope(x, 4, false, std::nullopt, 1.0F, 1, freqs),
                    fast::detail::rope_composed(x, 4, false, std::nullopt, 1.0F, 1, freqs)));
  EXPECT_EQ(fast::rope(x, 4, false, std::nullopt, 1.0F, array(1), freqs, s).shape(), x.shape());
}

TEST(MlxApiFast, ScaledDotProductAttention) {
  const Stream s = default_stream(Device::cpu);
  auto q = random::normal({1, 2, 3, 8}, random::key(0));
  auto k = random::normal({1, 2, 5, 8}, random::key(1));
  auto v = random::normal({1, 2, 5, 8}, random::key(2));
  const float scale = 0.35F;
  EXPECT_TRUE(close(fast::scaled_dot_product_attention(q, k, v, scale),
                    fast::detail::scaled_dot_product_attention_composed(q, k, v, scale)));
  EXPECT_TRUE(close(fast::scaled_dot_product_attention(q, k, v, scale, "causal"),
                    fast::detail::scaled_dot_product_attention_composed(q, k, v, scale, "causal")));
  auto mask = ones({3, 5}, bool_);
  auto sinks = zeros({2});
  EXPECT_TRUE(close(fast::scaled_dot_product_attention(q, k, v, scale, "array", mask, sinks, false, s),
                    fast::detail::scaled_dot_product_attention_composed(q, k, v, scale, "array", mask, sinks)));
  // force_fused asks for the fused kernel, which nuvec always has.
  EXPECT_TRUE(close(fast::scaled_dot_product_attention(q, k, v, scale, "", {}, {}, true),
                    fast::detail::scaled_dot_product_attention_composed(q, k, v, scale)));
}

}  // namespace
}  // namespace nuvec
