// Attention on the GPU against the CPU's fused kernel: decode (one query) and prefill shapes, grouped heads,
// causal, boolean and additive masks, sinks, transposed (B, L, N, D) inputs, rows that see no key.

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "nuvec/nuvec.h"
#include "tests/cuda/gpu_test_util.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using test::same_values;

const Device gpu = Device::gpu;
const Device cpu = Device::cpu;

struct Case {
  int batch, heads, kv_heads, lq, lk, dims;
};

TEST(CudaAttention, MatchesTheCpuOverShapesMasksAndDtypes) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(31);
  for (Dtype dt : {float32, float16, bfloat16}) {
    for (Case c : {Case{1, 8, 2, 1, 300, 64}, Case{2, 4, 4, 37, 37, 128}, Case{1, 6, 3, 16, 200, 80},
                   Case{1, 2, 1, 130, 129, 256}}) {
      auto q = test::random_array({c.batch, c.heads, c.lq, c.dims}, dt, rng);
      auto k = test::random_array({c.batch, c.kv_heads, c.lk, c.dims}, dt, rng);
      auto v = test::random_array({c.batch, c.kv_heads, c.lk, c.dims}, dt, rng);
      const float scale = 1.0F / std::sqrt(static_cast<float>(c.dims));
      const std::string what = std::string(dtype_name(dt)) + " lq " + std::to_string(c.lq) + " lk " +
                               std::to_string(c.lk) + " d " + std::to_string(c.dims);
      auto attend = [&](Device d, const std::string& mode, std::optional<array> mask,
                        const std::optional<array>& sinks) {
        return fast::scaled_dot_product_attention(q, k, v, scale, mode, std::move(mask), sinks, false, d);
      };
      EXPECT_TRUE(same_values(attend(gpu, "", {}, {}), attend(cpu, "", {}, {}), 3 * test::gpu_rtol(dt), 1e-3))
          << what;
      EXPECT_TRUE(same_values(attend(gpu, "causal", {}, {}), attend(cpu, "causal", {}, {}),
                              3 * test::gpu_rtol(dt), 1e-3))
          << what << " causal";
      auto boolean = test::random_array({1, 1, c.lq, c.lk}, bool_, rng);
      EXPECT_TRUE(same_values(attend(gpu, "array", boolean, {}), attend(cpu, "array", boolean, {}),
                              3 * test::gpu_rtol(dt), 1e-3))
          << what << " boolean mask";
      auto additive = test::random_array({c.batch, c.heads, c.lq, c.lk}, dt, rng);
      auto sinks = test::random_array({c.heads}, dt, rng);
      EXPECT_TRUE(same_values(attend(gpu, "array", additive, sinks), attend(cpu, "array", additive, sinks),
                              3 * test::gpu_rtol(dt), 1e-3))
          << what << " additive mask and sinks";
    }
  }
}

TEST(CudaAttention, TransposedInputsAndRowsThatSeeNoKey) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(32);
  // (B, L, N, D) as models hold them, attended as (B, N, L, D) views.
  auto q = transpose(test::random_array({2, 9, 4, 32}, float32, rng), {0, 2, 1, 3}, cpu);
  auto k = transpose(test::random_array({2, 9, 2, 32}, float32, rng), {0, 2, 1, 3}, cpu);
  auto v = transpose(test::random_array({2, 9, 2, 32}, float32, rng), {0, 2, 1, 3}, cpu);
  auto none = zeros({1, 1, 9, 9}, bool_, cpu);
  for (const auto& mask : {std::optional<array>{}, std::optional<array>{none}}) {
    auto gpu_out = fast::scaled_dot_product_attention(q, k, v, 0.2F, mask ? "array" : "", mask, {}, false, gpu);
    auto cpu_out = fast::scaled_dot_product_attention(q, k, v, 0.2F, mask ? "array" : "", mask, {}, false, cpu);
    EXPECT_TRUE(same_values(gpu_out, cpu_out, 1e-5, 1e-5));
  }
}

}  // namespace
}  // namespace nuvec
