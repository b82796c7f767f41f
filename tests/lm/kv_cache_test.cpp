// The KV caches checked against attention written out here in float64 over the whole history: every chunk of
// queries (single tokens, short chunks, prompts longer than a window) attends through the cache, and the reference
// attends over every key and value fed so far under the mask the definition gives (causal, sliding window, window
// with sink positions). Grouped-query heads (N_q = 4, N_kv = 2), batch 2, head dims 16/32/64, float32 and bfloat16.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "nuvec/io/safetensors.h"
#include "nuvec/lm/cache/cache.h"
#include "tests/support/reference.h"

namespace nuvec::lm {
namespace {

constexpr double minus_inf = -std::numeric_limits<double>::infinity();

std::vector<double> doubles(const array& a) { return test::as_doubles(test::to_host(a)); }

struct Dims {
  int batch;
  int n_q;
  int n_kv;
  int head_dim;
  Dtype dtype;
};

std::string describe(const Dims& d) {
  std::ostringstream s;
  s << "B=" << d.batch << " N_q=" << d.n_q << " N_kv=" << d.n_kv << " D=" << d.head_dim << " " << d.dtype;
  return s.str();
}

const std::vector<Dims> all_dims = {
    {2, 4, 2, 16, float32}, {2, 4, 2, 64, bfloat16}, {1, 4, 2, 64, float32}, {2, 4, 2, 16, bfloat16}};

/// The score bias of (batch, query head, query position, key position): 0 to attend, -inf to mask, other values
/// as an additive mask.
using Bias = std::function<double(int b, int h, int p, int j)>;

/// Which keys a query at position p sees.
using Visible = std::function<bool(int p, int j)>;

Bias from_visible(Visible visible) {
  return [visible = std::move(visible)](int, int, int p, int j) { return visible(p, j) ? 0.0 : minus_inf; };
}

/// Causal attention, limited to the last `window` positions when given.
Visible causal(std::optional<int> window = std::nullopt) {
  return [window](int p, int j) { return j <= p && (!window || p - j < *window); };
}

/// What a rotating cache of `max_size` positions keeping the first `keep` lets a query see (and the model's
/// `window`, when given).
Visible rotating_window(int max_size, int keep, std::optional<int> window) {
  return [=](int p, int j) { return j <= p && (j < keep || p - j < max_size - keep) && (!window || p - j < *window); };
}

/// Every key and value fed so far, as doubles: rows[b * N_kv + h] holds T rows of D values.
class History {
 public:
  explicit History(const Dims& d) : d_(d), keys_(static_cast<size_t>(d.batch * d.n_kv)), values_(keys_.size()) {}

  void append(const array& keys, const array& values) {
    auto add = [&](std::vector<std::vector<double>>& rows, const array& a) {
      const std::vector<double> v = doubles(a);
      const size_t per_head = v.size() / rows.size();
      for (size_t r = 0; r < rows.size(); ++r) {
        rows[r].insert(rows[r].end(), v.begin() + static_cast<std::ptrdiff_t>(r * per_head),
                       v.begin() + static_cast<std::ptrdiff_t>((r + 1) * per_head));
      }
    };
    add(keys_, keys);
    add(values_, values);
  }

  void trim(int n) {
    for (auto* rows : {&keys_, &values_}) {
      for (auto& r : *rows) {
        r.resize(r.size() - static_cast<size_t>(n * d_.head_dim));
      }
    }
  }

  [[nodiscard]] int length() const { return static_cast<int>(keys_[0].size()) / d_.head_dim; }

  /// softmax(scale * q k^T + bias) v for queries (B, N_q, L, D) at the last L positions; a sink adds one more
  /// logit per query head.
  [[nodiscard]] std::vector<double> attention(const array& queries, double scale, const Bias& bias,
                                              const std::vector<double>& sinks = {}) const {
    const std::vector<double> q = doubles(queries);
    const int length = queries.shape(2);
    const int total = this->length();
    const int dim = d_.head_dim;
    const int repeats = d_.n_q / d_.n_kv;
    std::vector<double> out(q.size(), 0.0);
    std::vector<double> scores(static_cast<size_t>(total));
    for (int b = 0; b < d_.batch; ++b) {
      for (int h = 0; h < d_.n_q; ++h) {
        const auto& k = keys_[static_cast<size_t>(b * d_.n_kv + h / repeats)];
        const auto& v = values_[static_cast<size_t>(b * d_.n_kv + h / repeats)];
        for (int i = 0; i < length; ++i) {
          const int p = total - length + i;
          const size_t row = ((static_cast<size_t>(b) * d_.n_q + h) * length + i) * dim;
          double top = sinks.empty() ? minus_inf : sinks[static_cast<size_t>(h)];
          for (int j = 0; j < total; ++j) {
            double s = 0;
            for (int c = 0; c < dim; ++c) {
              s += q[row + c] * k[static_cast<size_t>(j) * dim + c];
            }
            scores[j] = scale * s + bias(b, h, p, j);
            top = std::max(top, scores[j]);
          }
          double sum = sinks.empty() ? 0.0 : std::exp(sinks[static_cast<size_t>(h)] - top);
          for (int j = 0; j < total; ++j) {
            const double e = std::exp(scores[j] - top);
            sum += e;
            for (int c = 0; c < dim; ++c) {
              out[row + c] += e * v[static_cast<size_t>(j) * dim + c];
            }
          }
          for (int c = 0; c < dim; ++c) {
            out[row + c] /= sum;
          }
        }
      }
    }
    return out;
  }

 private:
  Dims d_;
  std::vector<std::vector<double>> keys_;
  std::vector<std::vector<double>> values_;
};

double max_error(const array& actual, const std::vector<double>& expected) {
  const std::vector<double> a = doubles(actual);
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - expected[i]));
  }
  return worst;
}

::testing::AssertionResult close(const array& actual, const std::vector<double>& expected, double atol, double rtol) {
  const std::vector<double> a = doubles(actual);
  if (a.size() != expected.size()) {
    return ::testing::AssertionFailure() << "size " << a.size() << " != " << expected.size();
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (!(std::abs(a[i] - expected[i]) <= atol + rtol * std::abs(expected[i]))) {
      return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << " vs " << expected[i] << " (max error "
                                           << max_error(actual, expected) << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult close(const array& actual, const array& expected, double atol) {
  return close(actual, doubles(expected), atol, 0.0);
}

/// Tolerance for an output rounded to `dtype` (attention computes in float32).
double tolerance(Dtype dtype) { return dtype == bfloat16 ? 5e-3 : 2e-5; }

struct Chunk {
  array queries;
  array keys;
  array values;
};

Chunk random_chunk(const Dims& d, int length, std::mt19937& rng) {
  auto part = [&](int heads) {
    array a = test::random_array({d.batch, heads, length, d.head_dim}, d.dtype, rng);
    a.eval();
    return a;
  };
  return {part(d.n_q), part(d.n_kv), part(d.n_kv)};
}

/// Chunk lengths: a first prompt, then mostly single tokens, some short chunks and prompts longer than `window`.
std::vector<int> schedule(std::mt19937& rng, int window, int steps) {
  std::uniform_real_distribution<double> pick(0.0, 1.0);
  std::vector<int> lengths{std::uniform_int_distribution<int>(1, 2 * window)(rng)};
  for (int i = 0; i < steps; ++i) {
    const double r = pick(rng);
    lengths.push_back(r < 0.6   ? 1
                      : r < 0.9 ? std::uniform_int_distribution<int>(2, 5)(rng)
                                : std::uniform_int_distribution<int>(window + 1, 2 * window)(rng));
  }
  return lengths;
}

/// How a cache's stored keys and values read back: unchanged, or through the quantized form.
using Stored = std::function<array(const array&)>;

Stored unchanged() {
  return [](const array& a) { return a; };
}

/// The values the quantized form stands for, scale * code + bias, computed in float32 from the scales and biases
/// (rounded to `dtype` when given, as update_and_fetch gives them).
Stored quantized_round_trip(int group_size, int bits, Dtype dtype = float32) {
  return [=](const array& a) {
    auto q = quantize(a, group_size, bits);
    return dequantize(q[0], q[1], q[2], group_size, bits, "affine", std::nullopt, dtype);
  };
}

/// One cache and the float64 reference, fed the same chunks.
struct CacheRun {
  CacheRun(KVCache& cache, const Dims& d, std::optional<int> window, Bias bias, Stored stored = unchanged(),
           std::optional<array> sinks = std::nullopt)
      : cache(cache),
        d(d),
        window(window),
        bias(std::move(bias)),
        stored(std::move(stored)),
        sinks(std::move(sinks)),
        history(d),
        scale(1.0 / std::sqrt(static_cast<double>(d.head_dim))) {}

  KVCache& cache;
  Dims d;
  std::optional<int> window;  // what the model passes to make_mask
  Bias bias;
  Stored stored;
  std::optional<array> sinks;
  History history;
  double scale;

  array attend(const Chunk& c) {
    const MaskSpec mask = cache.make_mask(c.keys.shape(2), window);
    array out = cache.attend(c.queries, c.keys, c.values, static_cast<float>(scale), mask, sinks);
    out.eval();
    history.append(stored(c.keys), stored(c.values));
    return out;
  }

  [[nodiscard]] std::vector<double> expected(const Chunk& c) const {
    return history.attention(c.queries, scale, bias, sinks ? doubles(*sinks) : std::vector<double>{});
  }

  void trim(int n) {
    ASSERT_EQ(cache.trim(n), n);
    history.trim(n);
  }

  /// Feeds chunks of `lengths`, checking each against the reference (and the cache's offset).
  void check(const std::vector<int>& lengths, std::mt19937& rng, double atol, double rtol) {
    for (size_t s = 0; s < lengths.size(); ++s) {
      const Chunk c = random_chunk(d, lengths[s], rng);
      const array out = attend(c);
      ASSERT_EQ(out.dtype(), d.dtype);
      ASSERT_TRUE(close(out, expected(c), atol, rtol)) << "chunk " << s << " of length " << lengths[s];
      ASSERT_EQ(cache.offset(), history.length());
    }
  }
};

TEST(KVCacheTest, GrowingCacheMatchesCausalAttention) {
  std::mt19937 rng(11);
  for (const Dims& d : all_dims) {
    for (std::optional<int> window : {std::optional<int>{}, std::optional<int>{5}}) {
      SCOPED_TRACE(describe(d) + (window ? " window 5" : ""));
      GrowingKVCache cache(8);
      CacheRun run{cache, d, window, from_visible(causal(window))};
      run.check(schedule(rng, 8, 20), rng, tolerance(d.dtype), tolerance(d.dtype));
      EXPECT_EQ(cache.state()[0].dtype(), d.dtype);  // the cache keeps the model's dtype
    }
  }
}

TEST(KVCacheTest, RotatingCacheMatchesWindowedAttention) {
  struct Case {
    int max_size;
    int keep;
    std::optional<int> window;
  };
  const std::vector<Case> cases = {{8, 0, std::nullopt}, {8, 0, 8},           {8, 2, std::nullopt}, {10, 0, 6},
                                   {7, 3, std::nullopt}, {1, 0, std::nullopt}};
  std::mt19937 rng(12);
  for (const Dims& d : all_dims) {
    for (const Case& c : cases) {
      SCOPED_TRACE(describe(d) + " max_size " + std::to_string(c.max_size) + " keep " + std::to_string(c.keep) +
                   (c.window ? " window " + std::to_string(*c.window) : ""));
      RotatingKVCache cache(c.max_size, c.keep, 4);
      CacheRun run{cache, d, c.window, from_visible(rotating_window(c.max_size, c.keep, c.window))};
      run.check(schedule(rng, c.max_size, 30), rng, tolerance(d.dtype), tolerance(d.dtype));
    }
  }
}

TEST(KVCacheTest, RotatingCacheEqualsGrowingCacheWithWindowMask) {
  std::mt19937 rng(13);
  const Dims d{2, 4, 2, 16, float32};
  RotatingKVCache rotating(8);
  GrowingKVCache growing;
  for (int length : schedule(rng, 8, 30)) {
    const Chunk c = random_chunk(d, length, rng);
    const float scale = 0.25F;
    array a = rotating.attend(c.queries, c.keys, c.values, scale, rotating.make_mask(length, 8));
    array b = growing.attend(c.queries, c.keys, c.values, scale, growing.make_mask(length, 8));
    ASSERT_TRUE(close(a, b, 2e-6)) << "chunk of " << length << " at offset " << growing.offset();
  }
  EXPECT_EQ(rotating.offset(), growing.offset());
  EXPECT_FALSE(rotating.is_trimmable());
  EXPECT_EQ(rotating.trim(1), 0);
}

TEST(KVCacheTest, QuantizedCacheMatchesAttentionOverItsDequantizedKeys) {
  struct Case {
    Dims d;
    int group_size;
    int bits;
    std::optional<int> window;
  };
  const std::vector<Case> cases = {{{2, 4, 2, 64, float32}, 64, 8, std::nullopt},
                                   {{2, 4, 2, 64, bfloat16}, 64, 4, std::nullopt},
                                   {{2, 4, 2, 32, float32}, 32, 4, 6},
                                   {{1, 4, 2, 64, bfloat16}, 32, 8, 5},
                                   {{2, 4, 2, 64, float32}, 64, 4, std::nullopt}};
  std::mt19937 rng(14);
  for (const Case& c : cases) {
    SCOPED_TRACE(describe(c.d) + " group " + std::to_string(c.group_size) + " bits " + std::to_string(c.bits));
    QuantizedKVCache cache(c.group_size, c.bits, 8);
    CacheRun run{cache, c.d, c.window, from_visible(causal(c.window)), quantized_round_trip(c.group_size, c.bits)};
    // Scores and products in float32 (int8 levels of the queries in the decode products: a few 1e-6).
    run.check(schedule(rng, 8, 20), rng, c.d.dtype == bfloat16 ? 5e-3 : 1e-4, tolerance(c.d.dtype));
    EXPECT_EQ(cache.state().size(), 6U);
    EXPECT_EQ(cache.state()[1].dtype(), c.d.dtype);  // scales in the model's dtype, as mlx-lm keeps them
  }
}

TEST(KVCacheTest, QuantizedCacheIsWithinQuantizationErrorOfFloatAttention) {
  const Dims d{2, 4, 2, 64, float32};
  double worst[2] = {0, 0};
  for (int which = 0; which < 2; ++which) {
    const int bits = which == 0 ? 8 : 4;
    std::mt19937 rng(15);  // the same inputs for both widths
    QuantizedKVCache cache(64, bits);
    CacheRun run{cache, d, std::nullopt, from_visible(causal())};
    for (int length : schedule(rng, 8, 20)) {
      const Chunk c = random_chunk(d, length, rng);
      const array out = run.attend(c);
      worst[which] = std::max(worst[which], max_error(out, run.expected(c)));
    }
  }
  // Values in [-2, 2): an 8-bit step is 4/255, a 4-bit one 4/15 (17 times as coarse).
  EXPECT_LT(worst[0], 0.03) << "8-bit";
  EXPECT_LT(worst[1], 0.5) << "4-bit";
  EXPECT_GT(worst[1], 4 * worst[0]);
}

TEST(KVCacheTest, QuantizedCacheHonoursArrayMasksAndSinks) {
  const Dims d{2, 4, 2, 32, float32};
  std::mt19937 rng(16);
  const int prompt = 7;
  const int length = 5;
  const int total = prompt + length;
  // A boolean mask per batch and head with a random pattern (each query keeps its own position), and an additive
  // one shared by the heads.
  std::vector<uint8_t> keep(static_cast<size_t>(d.batch * d.n_q * length * total));
  std::vector<float> added(static_cast<size_t>(d.batch * length * total));
  std::bernoulli_distribution coin(0.6);
  std::uniform_real_distribution<float> bias(-3.0F, 1.0F);
  for (size_t i = 0; i < keep.size(); ++i) {
    const auto j = static_cast<int>(i % total);
    const auto q = static_cast<int>(i / total % length);
    keep[i] = (j == prompt + q || coin(rng)) ? 1 : 0;
  }
  for (auto& v : added) {
    v = bias(rng);
  }
  const array bool_mask(keep.begin(), Shape{d.batch, d.n_q, length, total}, bool_);
  const array additive(added.begin(), Shape{d.batch, 1, length, total}, float32);
  auto at = [&](int b, int h, int p, int j) {
    return static_cast<size_t>(((b * d.n_q + h) * length + (p - prompt)) * total + j);
  };
  const Bias bool_bias = [&](int b, int h, int p, int j) { return keep[at(b, h, p, j)] != 0 ? 0.0 : minus_inf; };
  const Bias add_bias = [&](int b, int, int p, int j) {
    return static_cast<double>(added[static_cast<size_t>((b * length + (p - prompt)) * total + j)]);
  };
  const array sinks = test::random_array({d.n_q}, float32, rng);

  struct Case {
    MaskSpec mask;
    Bias bias;
    std::optional<array> sinks;
  };
  const std::vector<Case> cases = {{{"array", bool_mask}, bool_bias, std::nullopt},
                                   {{"array", additive}, add_bias, std::nullopt},
                                   {{"causal", std::nullopt}, from_visible(causal()), sinks},
                                   {{"array", bool_mask}, bool_bias, sinks}};
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    std::mt19937 data(17);
    QuantizedKVCache cache(32, 8, 4);
    CacheRun run{cache, d, std::nullopt, from_visible(causal()), quantized_round_trip(32, 8), cases[i].sinks};
    run.attend(random_chunk(d, prompt, data));
    const Chunk c = random_chunk(d, length, data);
    const array out =
        cache.attend(c.queries, c.keys, c.values, static_cast<float>(run.scale), cases[i].mask, cases[i].sinks);
    run.history.append(run.stored(c.keys), run.stored(c.values));
    run.bias = cases[i].bias;
    EXPECT_TRUE(close(out, run.expected(c), 1e-4, 1e-4));
  }
}

TEST(KVCacheTest, GrowingCacheHonoursSinks) {
  const Dims d{2, 4, 2, 16, float32};
  std::mt19937 rng(18);
  GrowingKVCache cache;
  CacheRun run{cache, d, std::nullopt, from_visible(causal()), unchanged(), test::random_array({d.n_q}, float32, rng)};
  run.check({6, 1, 3, 1}, rng, 2e-5, 2e-5);
}

TEST(KVCacheTest, QuantizedUpdateAndFetchGivesTheDequantizedHistory) {
  const Dims d{2, 4, 2, 64, bfloat16};
  std::mt19937 rng(19);
  QuantizedKVCache cache(64, 4, 4);
  const Stored round_trip = quantized_round_trip(64, 4, bfloat16);
  std::vector<array> keys_fed;
  std::vector<array> values_fed;
  for (int length : {3, 1, 1, 6, 1}) {
    const Chunk c = random_chunk(d, length, rng);
    keys_fed.push_back(round_trip(c.keys));
    values_fed.push_back(round_trip(c.values));
    auto [keys, values] = cache.update_and_fetch(c.keys, c.values);
    ASSERT_EQ(keys.dtype(), bfloat16);
    EXPECT_TRUE(close(keys, concatenate(keys_fed, 2), 0.0));
    EXPECT_TRUE(close(values, concatenate(values_fed, 2), 0.0));
  }
}

/// Keys and values of A, then B trimmed away, then C, against A then C.
TEST(KVCacheTest, TrimThenAppendEqualsNeverAppending) {
  const Dims d{2, 4, 2, 32, float32};
  const std::vector<std::function<std::shared_ptr<KVCache>()>> makers = {
      [] { return std::make_shared<GrowingKVCache>(4); }, [] { return std::make_shared<RotatingKVCache>(32, 0, 4); },
      [] { return std::make_shared<RotatingKVCache>(12, 2, 4); },
      [] { return std::make_shared<QuantizedKVCache>(32, 8, 4); }};
  for (size_t m = 0; m < makers.size(); ++m) {
    SCOPED_TRACE("cache " + std::to_string(m));
    std::mt19937 rng(20);
    const Chunk a = random_chunk(d, 6, rng);
    const Chunk b = random_chunk(d, 3, rng);
    const Chunk c1 = random_chunk(d, 2, rng);
    const Chunk c2 = random_chunk(d, 1, rng);
    auto trimmed = makers[m]();
    auto fresh = makers[m]();
    auto attend = [&](KVCache& cache, const Chunk& c) {
      return cache.attend(c.queries, c.keys, c.values, 0.2F, cache.make_mask(c.keys.shape(2)));
    };
    attend(*trimmed, a).eval();
    attend(*trimmed, b).eval();
    ASSERT_TRUE(trimmed->is_trimmable());
    EXPECT_EQ(trimmed->trim(3), 3);
    EXPECT_EQ(trimmed->offset(), 6);
    attend(*fresh, a).eval();
    EXPECT_TRUE(close(attend(*trimmed, c1), attend(*fresh, c1), 1e-6));
    EXPECT_TRUE(close(attend(*trimmed, c2), attend(*fresh, c2), 1e-6));
    EXPECT_EQ(trimmed->trim(100), 9);  // no more than it holds
    EXPECT_EQ(trimmed->offset(), 0);
  }
}

TEST(KVCacheTest, TrimmingInterleavedWithDecodingMatchesReference) {
  std::mt19937 rng(21);
  for (const Dims& d : {Dims{2, 4, 2, 32, float32}, Dims{2, 4, 2, 64, bfloat16}}) {
    SCOPED_TRACE(describe(d));
    GrowingKVCache growing(4);
    QuantizedKVCache quantized(32, 8, 4);
    std::vector<CacheRun> runs = {
        CacheRun{growing, d, std::nullopt, from_visible(causal())},
        CacheRun{quantized, d, std::nullopt, from_visible(causal()), quantized_round_trip(32, 8)}};
    for (CacheRun& run : runs) {
      // Speculative decoding's pattern: a prompt, then drafts of 3 of which 1 or 2 are rejected.
      run.check({9}, rng, tolerance(d.dtype), tolerance(d.dtype));
      for (int round = 0; round < 4; ++round) {
        run.check({3}, rng, tolerance(d.dtype), tolerance(d.dtype));
        run.trim(1 + round % 2);
        run.check({1}, rng, tolerance(d.dtype), tolerance(d.dtype));
      }
    }
  }
}

array attend_layer(KVCache& cache, const Chunk& c) {
  array out = cache.attend(c.queries, c.keys, c.values, 0.2F, cache.make_mask(c.keys.shape(2)));
  out.eval();
  return out;
}

/// The address of the buffer behind a cache's first state array; equal across steps when writes stay in place.
const void* buffer_of(const KVCache& cache) {
  array keys = cache.state()[0];
  keys.eval();
  return keys.raw_data();
}

TEST(KVCacheTest, DecodingWritesInPlace) {
  const Dims d{1, 4, 2, 32, float32};
  std::mt19937 rng(22);
  GrowingKVCache growing(64);
  RotatingKVCache rotating(16, 0, 64);
  QuantizedKVCache quantized(32, 4, 64);
  for (KVCache* cache : std::vector<KVCache*>{&growing, &rotating, &quantized}) {
    SCOPED_TRACE(cache->type_name());
    std::vector<const void*> seen;
    for (int step = 0; step < 40; ++step) {
      attend_layer(*cache, random_chunk(d, step == 0 ? 20 : 1, rng));
      if (step >= 2) {  // after the prompt (and, for the rotating cache, the step that cuts it to the window)
        seen.push_back(buffer_of(*cache));
      }
    }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [&](const void* p) { return p == seen.front(); }));
  }
}

/// Positions the buffer behind a cache's first state array has room for.
int room_of(const KVCache& cache) {
  array keys = cache.state()[0];
  keys.eval();
  return static_cast<int>(keys.buffer().size() / (keys.nbytes() / static_cast<size_t>(keys.shape(2))));
}

TEST(KVCacheTest, ReservedRoomIsTakenAtOnceAndSteppingResumesPastIt) {
  const Dims d{1, 4, 2, 32, float32};
  std::mt19937 rng(23);
  GrowingKVCache growing(4);
  RotatingKVCache rotating(64, 0, 4);
  RotatingKVCache small_window(12, 0, 4);
  QuantizedKVCache quantized(32, 4, 4);
  for (KVCache* cache : std::vector<KVCache*>{&growing, &rotating, &small_window, &quantized}) {
    const bool windowed = cache == &small_window;
    SCOPED_TRACE(cache->type_name() + (windowed ? " of 12" : ""));
    cache->reserve(30);
    std::vector<const void*> seen;
    for (int step = 0; step < 25; ++step) {  // a prompt of 6, then single tokens up to 30 positions
      attend_layer(*cache, random_chunk(d, step == 0 ? 6 : 1, rng));
      seen.push_back(buffer_of(*cache));
      ASSERT_EQ(room_of(*cache), windowed ? 12 : 30) << "after " << cache->offset() << " positions";
    }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [&](const void* p) { return p == seen.front(); }));
    // Past the reservation the buffer grows by whole steps of 4 again.
    attend_layer(*cache, random_chunk(d, 1, rng));
    EXPECT_EQ(room_of(*cache), windowed ? 12 : 32);
  }
}

// ---------------------------------------------------------------- prompt caches

class TempDir {
 public:
  TempDir() : path_(std::filesystem::temp_directory_path() / ("nuvec_kv_cache_test_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() { std::filesystem::remove_all(path_); }
  [[nodiscard]] std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

Cache mixed_cache() {
  return {std::make_shared<GrowingKVCache>(4), std::make_shared<RotatingKVCache>(8, 0, 4),
          std::make_shared<RotatingKVCache>(6, 2, 4), std::make_shared<QuantizedKVCache>(32, 4, 4),
          std::make_shared<QuantizedKVCache>(32, 8, 4)};
}

TEST(PromptCacheTest, SaveLoadRoundTripKeepsAttentionAndMetadata) {
  TempDir dir;
  std::mt19937 rng(30);
  for (const Dims& d : {Dims{2, 4, 2, 32, float32}, Dims{2, 4, 2, 64, bfloat16}}) {
    SCOPED_TRACE(describe(d));
    Cache cache = mixed_cache();
    const std::map<std::string, std::string> metadata = {{"model", "tiny"}, {"tokens", "1,2,3"}, {"a.b", ""}};
    // A prompt longer than the windows, decoding past their ends, a chunk into the full windows, decoding. After
    // each chunk the cache is saved and loaded, and the next chunk goes through both the original and the copy.
    const std::vector<int> lengths = {10, 1, 1, 3, 1, 1, 1, 1, 1, 4, 1};
    for (auto& layer : cache) {
      attend_layer(*layer, random_chunk(d, lengths[0], rng));
    }
    for (size_t s = 1; s < lengths.size(); ++s) {
      const std::string path = dir.file(describe(d) + "_" + std::to_string(s) + ".safetensors");
      save_prompt_cache(path, cache, metadata);
      auto [loaded, loaded_metadata] = load_prompt_cache(path);
      ASSERT_EQ(loaded.size(), cache.size());
      EXPECT_EQ(loaded_metadata, metadata);
      const Chunk next = random_chunk(d, lengths[s], rng);
      for (size_t i = 0; i < cache.size(); ++i) {
        SCOPED_TRACE("before chunk " + std::to_string(s) + ", layer " + std::to_string(i));
        EXPECT_EQ(loaded[i]->type_name(), cache[i]->type_name());
        EXPECT_EQ(loaded[i]->offset(), cache[i]->offset());
        EXPECT_EQ(loaded[i]->meta_state(), cache[i]->meta_state());
        EXPECT_EQ(loaded[i]->is_trimmable(), cache[i]->is_trimmable());
        EXPECT_TRUE(close(attend_layer(*loaded[i], next), attend_layer(*cache[i], next), 1e-6));
      }
    }
  }
}

TEST(PromptCacheTest, FileLayoutIsMlxLms) {
  TempDir dir;
  std::mt19937 rng(31);
  const Dims d{1, 4, 2, 32, float32};
  Cache cache = {std::make_shared<GrowingKVCache>(), std::make_shared<RotatingKVCache>(8, 4),
                 std::make_shared<QuantizedKVCache>(32, 4)};
  const Chunk c = random_chunk(d, 5, rng);
  for (auto& layer : cache) {
    attend_layer(*layer, c);
  }
  const std::string path = dir.file("layout.safetensors");
  save_prompt_cache(path, cache, {{"chat", "yes"}});
  auto [arrays, info] = load_safetensors(path);
  std::vector<std::string> names;
  for (const auto& [name, a] : arrays) {
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"0.0", "0.1", "1.0", "1.1", "2.0.0", "2.0.1", "2.0.2", "2.1.0", "2.1.1",
                                             "2.1.2"}));
  EXPECT_EQ(arrays.at("0.0").shape(), (Shape{1, 2, 5, 32}));
  EXPECT_EQ(arrays.at("2.0.0").shape(), (Shape{1, 2, 5, 4}));  // 32 values of 4 bits in 4 words
  EXPECT_EQ(arrays.at("2.0.0").dtype(), uint32);
  const std::map<std::string, std::string> expected = {{"0.0", ""},
                                                       {"0.1.0", "4"},
                                                       {"0.1.1", "8"},
                                                       {"0.1.2", "5"},
                                                       {"0.1.3", "5"},
                                                       {"0.2.0", "5"},
                                                       {"0.2.1", "32"},
                                                       {"0.2.2", "4"},
                                                       {"1.chat", "yes"},
                                                       {"2.0", "KVCache"},
                                                       {"2.1", "RotatingKVCache"},
                                                       {"2.2", "QuantizedKVCache"}};
  for (const auto& [key, value] : expected) {
    ASSERT_TRUE(info.contains(key)) << key;
    EXPECT_EQ(info.at(key), value) << key;
  }
}

TEST(PromptCacheTest, LoadsMlxLmsOlderRotatingMetaState) {
  // mlx-lm once wrote {keep, max_size, step, offset, idx}.
  TempDir dir;
  std::mt19937 rng(32);
  const array keys = test::random_array({1, 2, 6, 16}, float32, rng);
  const array values = test::random_array({1, 2, 6, 16}, float32, rng);
  const std::string path = dir.file("old.safetensors");
  save_safetensors(
      path, {{"0.0", keys}, {"0.1", values}},
      {{"0.0.0", "0"}, {"0.0.1", "6"}, {"0.0.2", "256"}, {"0.0.3", "9"}, {"0.0.4", "3"}, {"2.0", "RotatingKVCache"}});
  auto [cache, metadata] = load_prompt_cache(path);
  ASSERT_EQ(cache.size(), 1U);
  EXPECT_TRUE(metadata.empty());
  EXPECT_EQ(cache[0]->offset(), 9);
  EXPECT_EQ(cache[0]->meta_state(), (std::vector<int>{0, 6, 9, 3}));
  EXPECT_FALSE(cache[0]->is_trimmable());
}

TEST(PromptCacheTest, BadFilesGiveClearErrors) {
  TempDir dir;
  const std::string text = dir.file("text.safetensors");
  std::ofstream(text) << "not a safetensors file at all";
  EXPECT_NE(test::error_of([&] { load_prompt_cache(text); }).find("[load_prompt_cache] cannot read"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { load_prompt_cache(dir.file("missing.safetensors")); }).find("[load_prompt_cache]"),
            std::string::npos);

  const array a = zeros({1, 1, 2, 16}, float32);
  const std::string weights = dir.file("weights.safetensors");
  save_safetensors(weights, {{"model.embed.weight", a}});
  EXPECT_NE(test::error_of([&] { load_prompt_cache(weights); }).find("is not a prompt cache"), std::string::npos);

  const std::string unknown = dir.file("unknown.safetensors");
  save_safetensors(unknown, {{"0.0", a}, {"0.1", a}}, {{"0.0", ""}, {"2.0", "ChunkedKVCache"}});
  EXPECT_NE(test::error_of([&] { load_prompt_cache(unknown); }).find("cache type 'ChunkedKVCache'"), std::string::npos);

  const std::string stray = dir.file("stray.safetensors");
  save_safetensors(stray, {{"0.0", a}, {"0.1", a}, {"3.0", a}}, {{"0.0", ""}, {"2.0", "KVCache"}});
  EXPECT_NE(test::error_of([&] { load_prompt_cache(stray); }).find("unexpected array '3.0'"), std::string::npos);

  const std::string inconsistent = dir.file("inconsistent.safetensors");
  save_safetensors(inconsistent, {{"0.0", a}, {"0.1", a}},
                   {{"0.0.0", "0"}, {"0.0.1", "4"}, {"0.0.2", "1"}, {"0.0.3", "1"}, {"2.0", "RotatingKVCache"}});
  EXPECT_NE(test::error_of([&] { load_prompt_cache(inconsistent); }).find("layer 0"), std::string::npos);

  const std::string bad_meta = dir.file("bad_meta.safetensors");
  save_safetensors(bad_meta, {{"0.0", a}, {"0.1", a}},
                   {{"0.0.0", "x"}, {"0.0.1", "4"}, {"0.0.2", "2"}, {"0.0.3", "2"}, {"2.0", "RotatingKVCache"}});
  EXPECT_NE(test::error_of([&] { load_prompt_cache(bad_meta); }).find("not a number"), std::string::npos);
}

TEST(KVCacheTest, BadArgumentsGiveClearErrors) {
  EXPECT_NE(test::error_of([] { RotatingKVCache(4, 4); }).find("0 <= keep < max_size"), std::string::npos);
  EXPECT_NE(test::error_of([] { RotatingKVCache(0); }).find("max_size >= 1"), std::string::npos);
  EXPECT_NE(test::error_of([] { QuantizedKVCache(48); }).find("group_size must be 32, 64 or 128"), std::string::npos);
  EXPECT_NE(test::error_of([] { QuantizedKVCache(64, 7); }).find("bits must be"), std::string::npos);
  QuantizedKVCache quantized(32, 8);
  const array small = zeros({1, 2, 3, 16}, float32);
  EXPECT_NE(test::error_of([&] {
              quantized.update_and_fetch(small, small);
            }).find("head dimension must be a multiple of the group size 32"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] {
              quantized.set_state({small}, {0, 32, 8});
            }).find("codes, scales and biases"),
            std::string::npos);
  GrowingKVCache growing;
  EXPECT_NE(test::error_of([&] { growing.set_state({small}, {}); }).find("keys and values"), std::string::npos);
  RotatingKVCache rotating(8);
  EXPECT_NE(test::error_of([&] {
              rotating.update_and_fetch(zeros({2, 3, 16}, float32), small);
            }).find("(B, N_kv, L, D)"),
            std::string::npos);
}

/// A model that only makes caches: a growing cache and a 16-position rotating one, alternately.
class CacheOnlyModel : public LanguageModel {
 public:
  array forward(const array& tokens, Cache* /*cache*/) override { return tokens; }
  array hidden_states(const array& tokens, Cache* /*cache*/) override { return tokens; }
  [[nodiscard]] Cache make_cache() const override {
    Cache cache;
    for (int i = 0; i < num_layers(); ++i) {
      cache.push_back(i % 2 == 0 ? std::shared_ptr<KVCache>(std::make_shared<GrowingKVCache>())
                                 : std::make_shared<RotatingKVCache>(16));
    }
    return cache;
  }
  [[nodiscard]] const std::string& model_type() const override { return type_; }
  [[nodiscard]] int vocab_size() const override { return 8; }
  [[nodiscard]] int num_layers() const override { return 4; }
  [[nodiscard]] int max_context() const override { return 64; }
  [[nodiscard]] std::string type_name() const override { return "CacheOnlyModel"; }

 private:
  std::string type_ = "cache_only";
};

TEST(PromptCacheTest, MakePromptCacheBoundsEveryLayer) {
  const CacheOnlyModel model;
  auto types = [](const Cache& cache) {
    std::vector<std::string> out;
    for (const auto& layer : cache) {
      const auto* rotating = dynamic_cast<const RotatingKVCache*>(layer.get());
      out.push_back(rotating ? std::string("R")
                                   .append(std::to_string(rotating->max_size()))
                                   .append("k")
                                   .append(std::to_string(rotating->keep()))
                             : layer->type_name());
    }
    return out;
  };
  EXPECT_EQ(types(make_prompt_cache(model)), (std::vector<std::string>{"KVCache", "R16k0", "KVCache", "R16k0"}));
  EXPECT_EQ(types(make_prompt_cache(model, 32)), (std::vector<std::string>{"R32k4", "R16k0", "R32k4", "R16k0"}));
  EXPECT_EQ(types(make_prompt_cache(model, 8)), (std::vector<std::string>{"R8k4", "R8k4", "R8k4", "R8k4"}));
  EXPECT_EQ(types(make_prompt_cache(model, 2)), (std::vector<std::string>{"R2k1", "R2k1", "R2k1", "R2k1"}));
  EXPECT_NE(test::error_of([&] { make_prompt_cache(model, 0); }).find("max_kv_size must be positive"),
            std::string::npos);
}

TEST(PromptCacheTest, TrimmingAndPrefixes) {
  const Dims d{1, 4, 2, 32, float32};
  std::mt19937 rng(33);
  Cache cache = {std::make_shared<GrowingKVCache>(), std::make_shared<RotatingKVCache>(8),
                 std::make_shared<QuantizedKVCache>(32)};
  const Chunk c = random_chunk(d, 6, rng);
  for (auto& layer : cache) {
    attend_layer(*layer, c);
  }
  EXPECT_TRUE(can_trim_prompt_cache(cache));
  EXPECT_EQ(trim_prompt_cache(cache, 2), 2);
  for (const auto& layer : cache) {
    EXPECT_EQ(layer->offset(), 4);
  }
  // A chunk past the window keeps every position for its queries (still trimmable); the next token drops some.
  const Chunk more = random_chunk(d, 6, rng);
  for (auto& layer : cache) {
    attend_layer(*layer, more);
  }
  EXPECT_TRUE(can_trim_prompt_cache(cache));
  const Chunk one = random_chunk(d, 1, rng);
  for (auto& layer : cache) {
    attend_layer(*layer, one);
  }
  EXPECT_FALSE(can_trim_prompt_cache(cache));
  EXPECT_EQ(trim_prompt_cache(cache, 2), 0);
  EXPECT_EQ(cache[0]->offset(), 11);  // nothing trimmed anywhere

  EXPECT_EQ(common_prefix_length({1, 2, 3, 4}, {1, 2, 5}), 2);
  EXPECT_EQ(common_prefix_length({1, 2}, {1, 2, 3}), 2);
  EXPECT_EQ(common_prefix_length({1, 2, 3}, {1, 2, 3}), 3);
  EXPECT_EQ(common_prefix_length({}, {1}), 0);
  EXPECT_EQ(common_prefix_length({7}, {1}), 0);
}

}  // namespace
}  // namespace nuvec::lm
