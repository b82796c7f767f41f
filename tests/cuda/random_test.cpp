// RandomBits on the GPU against the CPU backend: the same key gives the same bits (Threefry is integer arithmetic,
// so they must be identical) for every width, for sizes that end mid-word and odd word counts, for keys that are
// views, and through the distributions built on the bits.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nuvec/nuvec.h"
#include "tests/cuda/gpu_test_util.h"

namespace nuvec {
namespace {

using test::same_values;

const Device gpu = Device::gpu;
const Device cpu = Device::cpu;

TEST(CudaRandom, BitsAreTheCpusForEveryWidthAndSize) {
  NUVEC_REQUIRE_GPU();
  const auto key = random::key(1234);
  for (int width : {1, 2, 4, 8}) {
    for (const Shape& shape : std::vector<Shape>{{0}, {1}, {3}, {5}, {5, 7}, {1001}, {64, 1024}}) {
      auto expected = random::bits(shape, width, key, cpu);
      auto actual = random::bits(shape, width, key, gpu);
      EXPECT_TRUE(same_values(actual, expected)) << "width " << width << " shape " << shape_string(shape);
      EXPECT_EQ(actual.data_device(), gpu);
    }
  }
}

TEST(CudaRandom, KeysThatAreViewsGiveTheCpusBits) {
  NUVEC_REQUIRE_GPU();
  // Keys stored word-major, (2, 3): column 1 is a key whose two words are 3 elements apart.
  auto words = contiguous(transpose(random::split(random::key(99), 3, cpu), cpu), false, cpu);
  auto key = reshape(slice(words, {0, 1}, {2, 2}, cpu), {2}, cpu);
  auto split_key = random::split(random::key(5), cpu).second;
  for (const auto& k : {key, split_key}) {
    EXPECT_TRUE(same_values(random::bits({257}, 4, k, gpu), random::bits({257}, 4, k, cpu)));
    EXPECT_TRUE(same_values(random::bits({3, 3}, 1, k, gpu), random::bits({3, 3}, 1, k, cpu)));
  }
}

TEST(CudaRandom, DistributionsMatchTheCpu) {
  NUVEC_REQUIRE_GPU();
  const auto key = random::key(42);
  for (Dtype d : {float32, float16, bfloat16}) {
    EXPECT_TRUE(same_values(random::uniform({300, 7}, d, key, gpu), random::uniform({300, 7}, d, key, cpu)))
        << "uniform " << dtype_name(d);
    EXPECT_TRUE(same_values(random::normal({300, 7}, d, key, gpu), random::normal({300, 7}, d, key, cpu)))
        << "normal " << dtype_name(d);
  }
}

}  // namespace
}  // namespace nuvec
