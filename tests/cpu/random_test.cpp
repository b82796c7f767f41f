// nuvec::random: MLX 0.32's test vectors (CONFORMANCE.md), the RandomBits layout against a scalar Threefry written
// here from the paper's definition, and statistical checks of every distribution with generous bounds.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numbers>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "nuvec/core/dispatch.h"
#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

/// Evaluates `a` and copies its elements in row-major order, converted to T.
template <class T>
std::vector<T> values(const array& a) {
  auto c = contiguous(a);
  c.eval();
  std::vector<T> out(c.size());
  dispatch(c.dtype(), [&]<class U>(type_tag<U>) {
    if constexpr (std::is_same_v<U, complex64_t>) {
      ADD_FAILURE() << "complex not expected";
    } else {
      const U* p = c.data<U>();
      for (size_t i = 0; i < out.size(); ++i) {
        if constexpr (std::is_integral_v<U>) {
          out[i] = static_cast<T>(p[i]);
        } else {
          out[i] = static_cast<T>(static_cast<double>(p[i]));
        }
      }
    }
  });
  return out;
}

/// The raw bytes of an evaluated contiguous array.
std::vector<uint8_t> bytes_of(const array& a) {
  auto c = contiguous(a);
  c.eval();
  std::vector<uint8_t> out(c.nbytes());
  if (!out.empty()) {
    std::memcpy(out.data(), c.raw_data(), out.size());
  }
  return out;
}

struct Moments {
  double mean;
  double var;
  double min;
  double max;
};

Moments moments(const std::vector<double>& v) {
  double sum = 0.0;
  for (double x : v) {
    sum += x;
  }
  double mean = sum / static_cast<double>(v.size());
  double sq = 0.0;
  for (double x : v) {
    sq += (x - mean) * (x - mean);
  }
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return {mean, sq / static_cast<double>(v.size()), *lo, *hi};
}

// ---- a scalar reference: Threefry-2x32, 20 rounds, and JAX's counter layout (pairs (i, i + half), a zero
// ---- counter padding an odd count), written independently of nuvec/core/threefry.h.

std::pair<uint32_t, uint32_t> ref_threefry(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1) {
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAU};
  const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  uint32_t x0 = c0 + ks[0];
  uint32_t x1 = c1 + ks[1];
  for (int i = 0; i < 5; ++i) {
    for (int r : rot[i % 2]) {
      x0 += x1;
      x1 = (x1 << r) | (x1 >> (32 - r));
      x1 ^= x0;
    }
    x0 += ks[(i + 1) % 3];
    x1 += ks[(i + 2) % 3] + static_cast<uint32_t>(i + 1);
  }
  return {x0, x1};
}

std::vector<uint8_t> ref_bits(uint32_t k0, uint32_t k1, size_t nbytes) {
  size_t words = (nbytes + 3) / 4;
  size_t half = (words + 1) / 2;
  std::vector<uint32_t> counts(2 * half, 0);
  std::iota(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(words), 0U);
  std::vector<uint32_t> out(2 * half);
  for (size_t i = 0; i < half; ++i) {
    auto [a, b] = ref_threefry(k0, k1, counts[i], counts[i + half]);
    out[i] = a;
    out[i + half] = b;
  }
  std::vector<uint8_t> bytes(nbytes);
  if (nbytes > 0) {
    std::memcpy(bytes.data(), out.data(), nbytes);
  }
  return bytes;
}

template <class F>
void expect_throws_with(F&& f, const std::string& text) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing: " << text;
  } catch (const nuvec::error& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- keys, bits, split

TEST(RandomKey, SeedLayout) {
  // CONFORMANCE.md: key(0) = [0, 0], key(42) = [0, 42].
  auto k0 = random::key(0);
  EXPECT_EQ(k0.dtype(), uint32);
  EXPECT_EQ(k0.shape(), Shape{2});
  EXPECT_EQ(values<uint64_t>(k0), (std::vector<uint64_t>{0, 0}));
  EXPECT_EQ(values<uint64_t>(random::key(42)), (std::vector<uint64_t>{0, 42}));
  EXPECT_EQ(values<uint64_t>(random::key((uint64_t{7} << 32) | 5U)), (std::vector<uint64_t>{7, 5}));
}

TEST(RandomBits, ConformanceWidth4) {
  // CONFORMANCE.md (MLX 0.32): bits({4}, 4, key(0)).
  auto b = random::bits({4}, 4, random::key(0));
  EXPECT_EQ(b.dtype(), uint32);
  EXPECT_EQ(values<uint64_t>(b), (std::vector<uint64_t>{4146024105U, 967050713U, 2718843009U, 1272950319U}));
  // The default width is 4.
  EXPECT_EQ(values<uint64_t>(random::bits({4}, random::key(0))), values<uint64_t>(b));
}

TEST(RandomBits, ConformanceWidth1) {
  // CONFORMANCE.md (MLX 0.32): bits({5}, 1, key(1)) as uint8; 5 bytes end in a partial word.
  auto b = random::bits({5}, 1, random::key(1));
  EXPECT_EQ(b.dtype(), uint8);
  EXPECT_EQ(values<int>(b), (std::vector<int>{118, 136, 41, 116, 72}));
}

TEST(RandomBits, DtypesAndShapes) {
  EXPECT_EQ(random::bits({2, 3}, 2, random::key(0)).dtype(), uint16);
  EXPECT_EQ(random::bits({2, 3}, 8, random::key(0)).dtype(), uint64);
  EXPECT_EQ(random::bits({2, 3}, 4, random::key(0)).shape(), (Shape{2, 3}));
  EXPECT_EQ(random::bits({0}, 4, random::key(0)).size(), 0U);
  // One word: the counter pair (0, 0), the second counter being the zero padding of an odd count.
  auto one = random::bits({}, 4, random::key(0));
  EXPECT_EQ(one.shape(), Shape{});
  EXPECT_EQ(bytes_of(one), ref_bits(0, 0, 4));
}

TEST(RandomBits, MatchesReferenceLayout) {
  // Even and odd word counts, partial last words, one block, several blocks and a parallel run.
  for (int width : {1, 2, 4, 8}) {
    for (int n : {1, 2, 3, 5, 7, 63, 127, 128, 129, 257, 1000, 100003, 1 << 20}) {
      auto key = random::key(static_cast<uint64_t>(n) * 31 + static_cast<uint64_t>(width));
      auto k = values<uint64_t>(key);
      auto got = bytes_of(random::bits({n}, width, key));
      auto expected = ref_bits(static_cast<uint32_t>(k[0]), static_cast<uint32_t>(k[1]),
                               static_cast<size_t>(n) * static_cast<size_t>(width));
      ASSERT_EQ(got, expected) << "width " << width << " n " << n;
    }
  }
}

TEST(RandomBits, LayoutDependsOnlyOnByteCount) {
  auto key = random::key(5);
  EXPECT_EQ(bytes_of(random::bits({6}, 2, key)), bytes_of(random::bits({3}, 4, key)));
  EXPECT_EQ(bytes_of(random::bits({3}, 8, key)), bytes_of(random::bits({6}, 4, key)));
  EXPECT_EQ(bytes_of(random::bits({12}, 1, key)), bytes_of(random::bits({2, 3}, 2, key)));
}

TEST(RandomBits, BatchedKeysThroughStrides) {
  // The kernel takes keys of shape (..., 2): each key fills its own run. Keys read through strides (a transpose).
  auto keys_t = array({1U, 2U, 3U, 10U, 20U, 30U}, {2, 3});  // column j is key j
  auto keys = transpose(keys_t);
  Shape shape{5};
  for (int width : {1, 4}) {
    auto dtype = width == 1 ? uint8 : uint32;
    auto out = array(Shape{3, 5}, dtype, RandomBits{shape, width}, {keys}, to_stream({}));
    auto got = bytes_of(out);
    std::vector<uint8_t> expected;
    for (uint32_t j = 0; j < 3; ++j) {
      auto run = ref_bits(j + 1, 10 * (j + 1), static_cast<size_t>(5 * width));
      expected.insert(expected.end(), run.begin(), run.end());
    }
    EXPECT_EQ(got, expected) << "width " << width;
  }
}

TEST(RandomBits, Errors) {
  expect_throws_with([] { random::bits({3}, 3, random::key(0)); },
                     "[bits] Bit width must be in {1, 2, 4, 8} but got 3.");
  expect_throws_with([] { random::bits({3}, 4, array({1, 2})); },
                     "[bits] Expected key type uint32 but received int32.");
  expect_throws_with([] { random::bits({3}, 4, array({1U, 2U, 3U})); }, "[bits] Expected key shape (2) but received");
  expect_throws_with([] { random::bits({-1}, 4, random::key(0)); }, "[bits] Negative dimensions");
  expect_throws_with([] { random::split(array({1, 2})); }, "[split] Expected key type uint32 but received int32.");
}

TEST(RandomSplit, Conformance) {
  // CONFORMANCE.md (MLX 0.32): split(key(0)).
  auto [a, b] = random::split(random::key(0));
  EXPECT_EQ(a.shape(), Shape{2});
  EXPECT_EQ(a.dtype(), uint32);
  EXPECT_EQ(values<uint64_t>(a), (std::vector<uint64_t>{4146024105U, 967050713U}));
  EXPECT_EQ(values<uint64_t>(b), (std::vector<uint64_t>{2718843009U, 1272950319U}));
}

TEST(RandomSplit, ManyKeys) {
  auto keys = random::split(random::key(0), 3);
  EXPECT_EQ(keys.shape(), (Shape{3, 2}));
  EXPECT_EQ(keys.dtype(), uint32);
  EXPECT_EQ(values<uint64_t>(keys), values<uint64_t>(random::bits({3, 2}, 4, random::key(0))));
  // Keys that come out of split are views; using them as keys must read the right words.
  auto [a, b] = random::split(random::key(9));
  auto ka = values<uint64_t>(b);
  EXPECT_EQ(bytes_of(random::bits({7}, 4, b)),
            ref_bits(static_cast<uint32_t>(ka[0]), static_cast<uint32_t>(ka[1]), 28));
  EXPECT_EQ(random::split(random::key(0), 0).shape(), (Shape{0, 2}));
  expect_throws_with([] { random::split(random::key(0), -1); }, "[split]");
}

TEST(RandomSeed, GlobalSequenceMatchesSplit) {
  // Without a key, each call splits the global key: keep the first half, use the second.
  random::seed(0);
  auto first = values<uint64_t>(random::bits({4}));
  auto second = values<uint64_t>(random::bits({4}));
  auto [k1, rest] = random::split(random::key(0));
  auto [k2, next] = random::split(k1);
  EXPECT_EQ(first, values<uint64_t>(random::bits({4}, rest)));
  EXPECT_EQ(second, values<uint64_t>(random::bits({4}, next)));
  EXPECT_NE(first, second);
}

TEST(RandomSeed, Reproducible) {
  random::seed(1234);
  auto a = values<uint64_t>(random::bits({16}));
  auto b = values<uint64_t>(random::bits({16}));
  random::seed(1234);
  EXPECT_EQ(values<uint64_t>(random::bits({16})), a);
  EXPECT_EQ(values<uint64_t>(random::bits({16})), b);
  random::seed(1235);
  EXPECT_NE(values<uint64_t>(random::bits({16})), a);
}

TEST(RandomSeed, EachThreadHasItsOwnSequence) {
  // MLX keeps one key sequence per thread (random.h: thread_local), each starting from one clock seed per process:
  // seeding reseeds the calling thread only, and threads drawing at once never share or skip keys.
  random::seed(77);
  auto main_first = values<uint64_t>(random::bits({4}));
  constexpr int threads = 4;
  constexpr int draws = 50;
  std::vector<std::vector<uint64_t>> seen(threads);
  std::vector<uint64_t> fresh_first(2);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&seen, t] {
      random::seed(5);
      for (int i = 0; i < draws; ++i) {
        auto v = values<uint64_t>(random::bits({1}));
        seen[t].push_back(v[0]);
      }
    });
  }
  for (int t = 0; t < 2; ++t) {
    pool.emplace_back([&fresh_first, t] { fresh_first[t] = values<uint64_t>(random::bits({1}))[0]; });
  }
  for (auto& th : pool) {
    th.join();
  }
  // Every seeded thread drew seed 5's sequence, whole and in order.
  random::KeySequence reference(5);
  std::vector<uint64_t> expected;
  for (int i = 0; i < draws; ++i) {
    expected.push_back(values<uint64_t>(random::bits({1}, reference.next()))[0]);
  }
  for (const auto& v : seen) {
    EXPECT_EQ(v, expected);
  }
  // Threads that never seeded start from the process's clock seed, untouched by the seeds of other threads.
  EXPECT_EQ(fresh_first[0], fresh_first[1]);
  EXPECT_NE(fresh_first[0], expected[0]);
  // The main thread's sequence went on from seed 77, whatever the others did.
  random::KeySequence main_reference(77);
  EXPECT_EQ(main_first, values<uint64_t>(random::bits({4}, main_reference.next())));
  EXPECT_EQ(values<uint64_t>(random::bits({4})), values<uint64_t>(random::bits({4}, main_reference.next())));
}

TEST(RandomKey, SequenceStateIsTheKeyItSplitsNext) {
  random::KeySequence keys(9);
  const auto key = keys.state();
  ASSERT_EQ(key.dtype(), uint32);
  EXPECT_EQ(values<uint64_t>(key), (std::vector<uint64_t>{0, 9}));
  auto [kept, drawn] = random::split(key);
  EXPECT_EQ(values<uint64_t>(keys.next()), values<uint64_t>(drawn));
  EXPECT_EQ(values<uint64_t>(keys.state()), values<uint64_t>(kept));
}

TEST(RandomKey, SequenceContinuesFromAGivenKeyComputedOrLazy) {
  // A computed key is read in: the sequence goes on as one seeded there.
  random::KeySequence reference(0);
  reference.set_state(random::key(41));
  random::KeySequence computed(41);
  std::vector<std::vector<uint64_t>> expected;
  for (int i = 0; i < 3; ++i) {
    expected.push_back(values<uint64_t>(computed.next()));
    EXPECT_EQ(values<uint64_t>(reference.next()), expected.back());
  }
  // A lazy key (not computed yet) is split lazily, giving the same keys, and the sequence returns to the host once
  // its key is computed; a strided view of a key reads as the key.
  random::KeySequence lazy(0);
  lazy.set_state(add(random::key(41), array({0U, 0U})));
  auto first = lazy.next();
  EXPECT_FALSE(first.is_available());
  EXPECT_EQ(values<uint64_t>(first), expected[0]);
  EXPECT_EQ(values<uint64_t>(lazy.next()), expected[1]);
  eval(lazy.state());
  EXPECT_EQ(values<uint64_t>(lazy.next()), expected[2]);
  auto rows = reshape(array({0U, 7U, 41U, 7U}), {2, 2});
  eval(rows);
  auto column = squeeze(slice(rows, {0, 0}, {2, 1}), 1);  // (0, 41), two words apart
  eval(column);
  random::KeySequence strided(0);
  strided.set_state(column);
  EXPECT_EQ(values<uint64_t>(strided.next()), expected[0]);
  // seed leaves a lazy key behind; a key of another type or shape throws.
  lazy.set_state(add(random::key(5), array({0U, 0U})));
  lazy.seed(41);
  EXPECT_EQ(values<uint64_t>(lazy.next()), expected[0]);
  EXPECT_THROW(lazy.set_state(array({1, 2})), std::invalid_argument);
  EXPECT_THROW(lazy.set_state(array({1U, 2U, 3U})), std::invalid_argument);
}

TEST(RandomKey, DeterministicWithKey) {
  auto key = random::key(2024);
  EXPECT_EQ(values<double>(random::uniform({100}, float32, key)), values<double>(random::uniform({100}, float32, key)));
  EXPECT_EQ(values<double>(random::normal({100}, float32, key)), values<double>(random::normal({100}, float32, key)));
  EXPECT_NE(values<double>(random::uniform({100}, float32, key)),
            values<double>(random::uniform({100}, float32, random::key(2025))));
}

// ---------------------------------------------------------------- uniform and normal

TEST(RandomUniform, Conformance) {
  // CONFORMANCE.md (MLX 0.32): uniform({5}, float32, key(3)); bit-exact (each literal names one float32).
  auto u = random::uniform({5}, float32, random::key(3));
  EXPECT_EQ(u.dtype(), float32);
  u.eval();
  const float* p = u.data<float>();
  const float expected[5] = {0.204237401F, 0.375907332F, 0.964096904F, 0.802897155F, 0.657403946F};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(p[i], expected[i]) << i;
  }
}

TEST(RandomUniform, Moments) {
  auto v = values<double>(random::uniform({1000000}, random::key(11)));
  auto m = moments(v);
  EXPECT_GE(m.min, 0.0);
  EXPECT_LT(m.max, 1.0);
  EXPECT_NEAR(m.mean, 0.5, 2e-3);
  EXPECT_NEAR(m.var, 1.0 / 12.0, 1e-3);
}

TEST(RandomUniform, LowHigh) {
  auto v = values<double>(random::uniform(-3.0, 5.0, {200000}, float32, random::key(12)));
  auto m = moments(v);
  EXPECT_GE(m.min, -3.0);
  EXPECT_LT(m.max, 5.0);
  EXPECT_NEAR(m.mean, 1.0, 0.03);
  EXPECT_NEAR(m.var, 64.0 / 12.0, 0.1);
  // A number and an array mix as bounds.
  auto mixed = values<double>(random::uniform(array(2.0F), 3, {1000}, float32, random::key(12)));
  EXPECT_TRUE(std::all_of(mixed.begin(), mixed.end(), [](double x) { return x >= 2.0 && x < 3.0; }));
  // Array bounds broadcast against the shape: column j lies in [j, j + 1).
  auto low = array({0.0F, 1.0F, 2.0F});
  auto cols = values<double>(random::uniform(low, low + 1.0F, {1000, 3}, float32, random::key(13)));
  for (size_t i = 0; i < cols.size(); ++i) {
    double j = static_cast<double>(i % 3);
    ASSERT_GE(cols[i], j);
    ASSERT_LT(cols[i], j + 1.0);
  }
}

TEST(RandomUniform, Dtypes) {
  for (auto dtype : {float16, bfloat16, float64}) {
    auto u = random::uniform({200000}, dtype, random::key(14));
    EXPECT_EQ(u.dtype(), dtype);
    auto m = moments(values<double>(u));
    EXPECT_GE(m.min, 0.0) << dtype;
    EXPECT_LT(m.max, 1.0) << dtype;
    EXPECT_NEAR(m.mean, 0.5, 5e-3) << dtype;
    EXPECT_NEAR(m.var, 1.0 / 12.0, 2e-3) << dtype;
  }
  // float64 uses 64 random bits: its samples are not all float32 values.
  auto d = values<double>(random::uniform({100}, float64, random::key(15)));
  EXPECT_TRUE(
      std::any_of(d.begin(), d.end(), [](double x) { return static_cast<double>(static_cast<float>(x)) != x; }));
}

TEST(RandomUniform, Errors) {
  expect_throws_with([] { random::uniform({3}, int32, random::key(0)); },
                     "[uniform] Can only generate uniform numbers with real floating point type");
  expect_throws_with([] { random::uniform(array({0.0F, 1.0F}), array(2.0F), {3}, float32, random::key(0)); },
                     "[uniform] Cannot generate random values of shape (3)");
  expect_throws_with([] { random::uniform(array({0.0F, 1.0F}), array(2.0F), {1}, float32, random::key(0)); },
                     "[uniform] Cannot generate random values of shape (1) from low and high of broadcast shape (2).");
}

TEST(RandomNormal, Conformance) {
  // CONFORMANCE.md (MLX 0.32): normal({5}, float32, 0, 1, key(3)), to float32 precision (erfinv's rounding).
  auto n = random::normal({5}, float32, 0, 1, random::key(3));
  EXPECT_EQ(n.dtype(), float32);
  auto v = values<double>(n);
  const double expected[5] = {-0.826580465, -0.316247404, 1.80034506, 0.852015197, 0.405388415};
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(v[i], expected[i], 4e-7 * std::abs(expected[i])) << i;
  }
  // The overloads without loc/scale give the same samples.
  EXPECT_EQ(values<double>(random::normal({5}, random::key(3))), v);
  EXPECT_EQ(values<double>(random::normal({5}, float32, random::key(3))), v);
}

TEST(RandomNormal, Moments) {
  auto v = values<double>(random::normal({1000000}, random::key(21)));
  auto m = moments(v);
  EXPECT_NEAR(m.mean, 0.0, 4e-3);
  EXPECT_NEAR(m.var, 1.0, 6e-3);
  EXPECT_TRUE(std::isfinite(m.min) && std::isfinite(m.max));
  size_t within = std::count_if(v.begin(), v.end(), [](double x) { return std::abs(x) < 1.0; });
  EXPECT_NEAR(static_cast<double>(within) / 1e6, 0.682689, 3e-3);
}

TEST(RandomNormal, LocScale) {
  auto v = values<double>(random::normal({200000}, 3.0F, 2.0F, random::key(22)));
  auto m = moments(v);
  EXPECT_NEAR(m.mean, 3.0, 0.02);
  EXPECT_NEAR(m.var, 4.0, 0.05);
  auto loc = array({-10.0F, 10.0F});
  auto cols = values<double>(random::normal({50000, 2}, float32, loc, array(0.5F), random::key(23)));
  double sum[2] = {0, 0};
  for (size_t i = 0; i < cols.size(); ++i) {
    sum[i % 2] += cols[i];
  }
  EXPECT_NEAR(sum[0] / 50000, -10.0, 0.02);
  EXPECT_NEAR(sum[1] / 50000, 10.0, 0.02);
}

TEST(RandomNormal, Dtypes) {
  for (auto dtype : {float16, bfloat16, float64}) {
    auto n = random::normal({200000}, dtype, random::key(24));
    EXPECT_EQ(n.dtype(), dtype);
    auto m = moments(values<double>(n));
    EXPECT_TRUE(std::isfinite(m.min) && std::isfinite(m.max)) << dtype;
    EXPECT_NEAR(m.mean, 0.0, 0.02) << dtype;
    EXPECT_NEAR(m.var, 1.0, 0.03) << dtype;
  }
  expect_throws_with([] { random::normal({3}, int32, random::key(0)); }, "[normal]");
  expect_throws_with([] { random::normal({3}, float32, array({1.0F, 2.0F}), std::nullopt, random::key(0)); },
                     "[normal] loc of shape (2) does not broadcast to the requested shape (3).");
}

// ---------------------------------------------------------------- other distributions

TEST(RandomRandint, RangeAndCoverage) {
  auto r = random::randint(-3, 7, {100000}, int32, random::key(31));
  EXPECT_EQ(r.dtype(), int32);
  auto v = values<int64_t>(r);
  std::vector<int> counts(10, 0);
  for (auto x : v) {
    ASSERT_GE(x, -3);
    ASSERT_LT(x, 7);
    ++counts[static_cast<size_t>(x + 3)];
  }
  for (int c : counts) {  // each value about 10000 times
    EXPECT_NEAR(c, 10000, 500);
  }
  EXPECT_EQ(random::randint(0, 5, {4}, uint8, random::key(0)).dtype(), uint8);
  auto same = values<int64_t>(random::randint(4, 4, {8}, int32, random::key(32)));
  EXPECT_TRUE(std::all_of(same.begin(), same.end(), [](int64_t x) { return x == 4; }));
}

TEST(RandomRandint, Errors) {
  expect_throws_with([] { random::randint(0, 5, {3}, float32, random::key(0)); },
                     "[randint] randint only accepts integer dtypes and bool");
}

TEST(RandomBernoulli, Rate) {
  auto b = random::bernoulli(0.3, {1000000}, random::key(41));
  EXPECT_EQ(b.dtype(), bool_);
  auto v = values<double>(b);
  EXPECT_NEAR(std::accumulate(v.begin(), v.end(), 0.0) / 1e6, 0.3, 2e-3);
  auto half = values<double>(random::bernoulli(std::make_optional(random::key(42))));
  EXPECT_EQ(half.size(), 1U);
  // p of shape (3,) broadcast over rows; p = 0 and p = 1 are exact.
  auto p = array({0.0F, 1.0F, 0.5F});
  auto rows = values<double>(random::bernoulli(p, {10000, 3}, random::key(43)));
  double ones[3] = {0, 0, 0};
  for (size_t i = 0; i < rows.size(); ++i) {
    ones[i % 3] += rows[i];
  }
  EXPECT_EQ(ones[0], 0.0);
  EXPECT_EQ(ones[1], 10000.0);
  EXPECT_NEAR(ones[2] / 10000, 0.5, 0.02);
  EXPECT_EQ(random::bernoulli(p, random::key(44)).shape(), Shape{3});
  expect_throws_with([] { random::bernoulli(array(1), {3}, random::key(0)); }, "[bernoulli]");
  expect_throws_with([&] { random::bernoulli(p, {2}, random::key(0)); }, "[bernoulli] Shape of p (3)");
}

TEST(RandomTruncatedNormal, InBounds) {
  auto t = random::truncated_normal(array(-1.0F), array(2.0F), {200000}, float32, random::key(51));
  EXPECT_EQ(t.dtype(), float32);
  auto m = moments(values<double>(t));
  EXPECT_GE(m.min, -1.0);
  EXPECT_LE(m.max, 2.0);
  // Mean of N(0, 1) truncated to [a, b]: (phi(a) - phi(b)) / (Phi(b) - Phi(a)).
  auto phi = [](double x) { return std::exp(-x * x / 2) / std::sqrt(2 * std::numbers::pi); };
  auto Phi = [](double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); };
  EXPECT_NEAR(m.mean, (phi(-1) - phi(2)) / (Phi(2) - Phi(-1)), 0.01);
  auto shaped = random::truncated_normal(array({-0.5F, 0.0F}), array(0.5F), float64, random::key(52));
  EXPECT_EQ(shaped.shape(), Shape{2});
  EXPECT_EQ(shaped.dtype(), float64);
  expect_throws_with([] { random::truncated_normal(array(1.0F), array(0.0F), {3}, float32, random::key(0)); },
                     "[truncated_normal] lower must not exceed upper");
}

TEST(RandomGumbel, Moments) {
  auto v = values<double>(random::gumbel({1000000}, float32, random::key(61)));
  auto m = moments(v);
  EXPECT_TRUE(std::isfinite(m.min) && std::isfinite(m.max));
  EXPECT_NEAR(m.mean, std::numbers::egamma, 6e-3);
  EXPECT_NEAR(m.var, std::numbers::pi * std::numbers::pi / 6, 0.02);
}

TEST(RandomLaplace, Moments) {
  auto v = values<double>(random::laplace({1000000}, random::key(71)));
  auto m = moments(v);
  EXPECT_NEAR(m.mean, 0.0, 6e-3);
  EXPECT_NEAR(m.var, 2.0, 0.03);
  auto s = moments(values<double>(random::laplace({200000}, 1.5F, 0.5F, random::key(72))));
  EXPECT_NEAR(s.mean, 1.5, 0.01);
  EXPECT_NEAR(s.var, 0.5, 0.02);
  for (auto dtype : {float16, bfloat16, float64}) {
    auto d = random::laplace({100000}, dtype, random::key(73));
    EXPECT_EQ(d.dtype(), dtype);
    EXPECT_NEAR(moments(values<double>(d)).var, 2.0, 0.06) << dtype;
  }
  expect_throws_with([] { random::laplace({3}, int32, random::key(0)); }, "[laplace]");
}

TEST(RandomCategorical, FrequenciesMatchSoftmax) {
  std::vector<float> logits_v = {0.5F, -1.0F, 2.0F, 0.0F};
  auto logits = array(logits_v.begin(), Shape{4});
  constexpr int n = 200000;
  auto c = random::categorical(logits, 0, n, random::key(81));
  EXPECT_EQ(c.dtype(), uint32);
  EXPECT_EQ(c.shape(), Shape{n});
  std::vector<double> counts(4, 0.0);
  for (auto x : values<int64_t>(c)) {
    ASSERT_LT(x, 4);
    counts[static_cast<size_t>(x)] += 1;
  }
  double z = 0.0;
  for (float l : logits_v) {
    z += std::exp(static_cast<double>(l));
  }
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(counts[i] / n, std::exp(static_cast<double>(logits_v[i])) / z, 4e-3) << i;
  }
}

TEST(RandomCategorical, Shapes) {
  auto logits = array({0.0F, 1.0F, 2.0F, 0.0F, -1.0F, 5.0F}, {2, 3});
  EXPECT_EQ(random::categorical(logits, -1, random::key(0)).shape(), Shape{2});
  EXPECT_EQ(random::categorical(logits, 0, random::key(0)).shape(), Shape{3});
  EXPECT_EQ(random::categorical(logits, 1, 7, random::key(0)).shape(), (Shape{2, 7}));
  // As MLX: the samples are the last axis, after the logits' other axes.
  EXPECT_EQ(random::categorical(logits, 0, 7, random::key(0)).shape(), (Shape{3, 7}));
  EXPECT_EQ(random::categorical(logits, 1, Shape{5, 2}, random::key(0)).shape(), (Shape{5, 2}));
  // A one-hot-like row always picks its dominant class.
  auto sure = array({-100.0F, 100.0F, -100.0F}, {1, 3});
  auto picks = values<int64_t>(random::categorical(sure, 1, 50, random::key(1)));
  EXPECT_TRUE(std::all_of(picks.begin(), picks.end(), [](int64_t x) { return x == 1; }));
  expect_throws_with([&] { random::categorical(logits, 1, Shape{3}, random::key(0)); },
                     "[categorical] Requested shape (3) is not broadcast compatible");
  expect_throws_with([&] { random::categorical(logits, 2, random::key(0)); }, "[categorical]");
  expect_throws_with([] { random::categorical(array({1, 2}), 0, random::key(0)); }, "[categorical]");
}

TEST(RandomPermutation, IsPermutation) {
  auto p = random::permutation(1000, random::key(91));
  EXPECT_EQ(p.dtype(), int32);
  auto v = values<int64_t>(p);
  auto sorted = v;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  EXPECT_NE(v, iota);
  EXPECT_EQ(values<int64_t>(random::permutation(1000, random::key(91))), v);
  EXPECT_EQ(random::permutation(0, random::key(0)).size(), 0U);
}

TEST(RandomPermutation, AlongAxis) {
  std::vector<float> data(4 * 6);
  std::iota(data.begin(), data.end(), 0.0F);
  auto x = array(data.begin(), Shape{4, 6});
  auto key = random::key(92);
  auto order = values<int64_t>(random::permutation(6, key));
  auto y = values<double>(random::permutation(x, 1, key));
  for (size_t r = 0; r < 4; ++r) {
    for (size_t j = 0; j < 6; ++j) {
      EXPECT_EQ(y[r * 6 + j], static_cast<double>(r * 6 + static_cast<size_t>(order[j])));
    }
  }
  // Along axis 0 on a transposed (non-contiguous) input, rows move whole.
  auto xt = transpose(x);
  auto rows = values<double>(random::permutation(xt, 0, key));
  auto xt_v = values<double>(xt);
  for (size_t i = 0; i < 6; ++i) {
    for (size_t c = 0; c < 4; ++c) {
      EXPECT_EQ(rows[i * 4 + c], xt_v[static_cast<size_t>(order[i]) * 4 + c]);
    }
  }
  expect_throws_with([] { random::permutation(array(1.0F), 0, random::key(0)); },
                     "[permutation] Cannot permute a scalar array.");
  expect_throws_with([&] { random::permutation(x, 2, random::key(0)); }, "[permutation]");
}

TEST(RandomMultivariateNormal, SampleMeanAndCovarianceMatch) {
  auto mu = array({1.0F, -2.0F, 0.5F});
  auto cov = array({2.0F, 0.6F, 0.2F, 0.6F, 1.0F, -0.3F, 0.2F, -0.3F, 0.5F}, {3, 3});
  auto samples = random::multivariate_normal(mu, cov, {40000}, float32, random::key(7));
  ASSERT_EQ(samples.shape(), (Shape{40000, 3}));
  // Sample statistics against the parameters: 40000 draws put them within a few 1e-2.
  auto expected = test::numpy_ref("out = np.concatenate([a, b.ravel()])", {mu, cov});
  auto centered = subtract(samples, mu);
  auto sample_cov = divide(matmul(transpose(centered), centered), array(40000.0F));
  auto stats = concatenate({mean(samples, 0), flatten(sample_cov)}, 0);
  EXPECT_TRUE(test::matches(stats, expected, 0.0, 0.05));
  // Batches of means broadcast with the sample shape; the dtype is honoured.
  auto batched = random::multivariate_normal(zeros({4, 1, 3}), cov, {2}, bfloat16, random::key(1));
  EXPECT_EQ(batched.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(batched.dtype(), bfloat16);
  expect_throws_with([&] { random::multivariate_normal(mu, ones({3, 2}), {2}, float32); },
                     "[multivariate_normal] cov must be a batch of square matrices; got shape (3,2).");
  expect_throws_with([&] { random::multivariate_normal(mu, ones({2, 2}), {2}, float32); },
                     "[multivariate_normal] The last dimension of mean (3) must match the matrix size of cov with "
                     "shape (2,2).");
  expect_throws_with([&] { random::multivariate_normal(mu, cov, {2}, int32); },
                     "[multivariate_normal] dtype must be a floating type; got int32.");
}

}  // namespace
}  // namespace nuvec
