// MLX's memory.h and einsum.h, called as MLX code calls them: a declaration that changes or goes missing fails to
// compile here.

#include <gtest/gtest.h>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

TEST(MlxApiMemory, StatisticsAndLimits) {
  auto a = ones({1024});
  eval(a);
  EXPECT_GE(get_active_memory(), 4096U);
  EXPECT_GE(get_peak_memory(), get_active_memory());
  reset_peak_memory();
  EXPECT_EQ(get_peak_memory(), get_active_memory());
  (void)get_cache_memory();
  const size_t memory_limit = get_memory_limit();
  EXPECT_EQ(set_memory_limit(memory_limit / 2), memory_limit);
  EXPECT_EQ(set_memory_limit(memory_limit), memory_limit / 2);
  const size_t cache_limit = set_cache_limit(0);
  clear_cache();
  EXPECT_EQ(get_cache_memory(), 0U);
  EXPECT_EQ(set_cache_limit(cache_limit), 0U);
}

TEST(MlxApiEinsum, PathAndContraction) {
  const Stream s = default_stream(Device::cpu);
  auto a = reshape(arange(6.0F), {2, 3});
  auto b = reshape(arange(12.0F), {3, 4});
  auto c = ones({4});
  auto [path, description] = einsum_path("ij,jk,k->i", {a, b, c});
  EXPECT_EQ(path.size(), 2U);
  EXPECT_FALSE(description.empty());
  EXPECT_TRUE(allclose(einsum("ij,jk,k->i", {a, b, c}, s), matmul(matmul(a, b), c)).item<bool>());
  EXPECT_TRUE(allclose(einsum("ij->ji", {a}), transpose(a)).item<bool>());
}

}  // namespace
}  // namespace nuvec
