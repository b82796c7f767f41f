// MLX's random.h, called as MLX code calls it (optional keys, scalar or array bounds, defaults, trailing streams):
// a declaration that changes or goes missing fails to compile here. Draws are checked for shape, dtype and range.

#include <gtest/gtest.h>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

bool all_of(const array& a) { return all(a).item<bool>(); }

TEST(MlxApiRandom, KeysAndSequences) {
  const Stream s = default_stream(Device::cpu);
  auto k = random::key(7);
  EXPECT_EQ(k.dtype(), uint32);
  EXPECT_EQ(k.shape(), Shape{2});
  random::seed(3);
  random::KeySequence keys(3);
  // The default sequence reseeded with 3 hands out the keys of a fresh sequence seeded with 3.
  EXPECT_TRUE(array_equal(random::KeySequence::default_().next(), keys.next()).item<bool>());
  keys.seed(3);
  random::seed(3);
  EXPECT_TRUE(array_equal(keys.next(), random::KeySequence::default_().next()).item<bool>());
  auto [a, b] = random::split(k, s);
  EXPECT_EQ(a.shape(), Shape{2});
  EXPECT_FALSE(array_equal(a, b).item<bool>());
  EXPECT_EQ(random::split(k, 3, s).shape(), (Shape{3, 2}));
  EXPECT_EQ(random::split(k, 3).shape(), (Shape{3, 2}));
  EXPECT_EQ(random::bits({4}, 2, k, s).dtype(), uint16);
  EXPECT_EQ(random::bits({4}, 1).dtype(), uint8);
  EXPECT_EQ(random::bits({4}, k).dtype(), uint32);
  EXPECT_EQ(random::bits({4}).dtype(), uint32);
}

TEST(MlxApiRandom, Distributions) {
  const Stream s = default_stream(Device::cpu);
  auto k = random::key(1);
  auto u = random::uniform(array(2.0F), array(3.0F), {64}, float32, k, s);
  EXPECT_TRUE(all_of(u >= 2.0F && u < 3.0F));
  EXPECT_EQ(random::uniform(-1, 1, {4}).shape(), Shape{4});
  EXPECT_EQ(random::uniform(0.0, 1.0, {4}, float16, k, s).dtype(), float16);
  EXPECT_EQ(random::uniform({2, 3}, bfloat16, k, s).dtype(), bfloat16);
  EXPECT_EQ(random::uniform({2, 3}, k).shape(), (Shape{2, 3}));
  EXPECT_EQ(random::uniform({2, 3}).dtype(), float32);
  EXPECT_EQ(random::normal({3}, float32, array(1.0F), array(2.0F), k, s).shape(), Shape{3});
  EXPECT_EQ(random::normal({3}, float16, 1.0F, 2.0F, k, s).dtype(), float16);
  EXPECT_EQ(random::normal({3}, 1.0F, 2.0F).shape(), Shape{3});
  EXPECT_EQ(random::normal({3}, float16, k).dtype(), float16);
  EXPECT_EQ(random::normal({3}, k, s).shape(), Shape{3});
  EXPECT_EQ(random::normal({3}).shape(), Shape{3});
  EXPECT_EQ(random::multivariate_normal(zeros({2}), eye(2), {5}, float32, k, s).shape(), (Shape{5, 2}));
  EXPECT_EQ(random::multivariate_normal(zeros({2}), eye(2), {5}, float32).shape(), (Shape{5, 2}));
  auto r = random::randint(array(3), array(7), {64}, int32, k, s);
  EXPECT_TRUE(all_of(r >= 3 && r < 7));
  EXPECT_EQ(random::randint(0, 10, {4}).dtype(), int32);
  EXPECT_EQ(random::randint(0, 10, {4}, int16, k).dtype(), int16);
  EXPECT_EQ(random::bernoulli(array(0.5F), {4}, k, s).dtype(), bool_);
  EXPECT_EQ(random::bernoulli(array({0.1F, 0.9F}), k).shape(), Shape{2});
  EXPECT_TRUE(all_of(random::bernoulli(1.0F, {8})));
  EXPECT_EQ(random::bernoulli(0.5F, k, s).ndim(), 0);
  EXPECT_EQ(random::bernoulli(std::optional<array>(k), s).ndim(), 0);
  EXPECT_EQ(random::bernoulli().dtype(), bool_);
  auto t = random::truncated_normal(array(-1.0F), array(1.0F), {64}, float32, k, s);
  EXPECT_TRUE(all_of(t >= -1.0F && t <= 1.0F));
  EXPECT_EQ(random::truncated_normal(zeros({3}), ones({3})).shape(), Shape{3});
  EXPECT_EQ(random::truncated_normal(zeros({3}), ones({3}), float16, k, s).dtype(), float16);
  EXPECT_EQ(random::gumbel({3}, float32, k, s).shape(), Shape{3});
  EXPECT_EQ(random::gumbel({3}).dtype(), float32);
  auto logits = log(array({0.0F, 1.0F, 0.0F}, {1, 3}));
  EXPECT_TRUE(all_of(random::categorical(logits, 1, {1, 8}, k, s) == 1));
  EXPECT_EQ(random::categorical(logits, -1, 5, k, s).shape(), (Shape{1, 5}));
  EXPECT_EQ(random::categorical(logits, 1).shape(), Shape{1});
  EXPECT_EQ(random::categorical(logits).item<uint32_t>(), 1U);
  EXPECT_EQ(random::laplace({3}, float32, 0.0F, 1.0F, k, s).shape(), Shape{3});
  EXPECT_EQ(random::laplace({3}, 1.0F, 2.0F).shape(), Shape{3});
  EXPECT_EQ(random::laplace({3}, float16, k).dtype(), float16);
  EXPECT_EQ(random::laplace({3}).dtype(), float32);
  auto p = random::permutation(arange(5), 0, k, s);
  EXPECT_TRUE(array_equal(sort(p), arange(5)).item<bool>());
  EXPECT_EQ(random::permutation(ones({2, 3}), 1).shape(), (Shape{2, 3}));
  EXPECT_TRUE(array_equal(sort(random::permutation(6, k, s)), arange(6)).item<bool>());
  EXPECT_EQ(random::permutation(6).shape(), Shape{6});
}

}  // namespace
}  // namespace nuvec
