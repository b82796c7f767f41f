// Sampling (nuvec/lm/sample) against its definitions, written out here in float64: which tokens each filter keeps,
// the logits after bias and penalties, the drawn frequencies against the filtered softmax (chi-square), log-softmax
// log-probabilities and top-N lists, greedy argmax, seeds, and a batch against its rows sampled one by one.

#include "nuvec/lm/sample/sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "nuvec/core/ops.h"
#include "nuvec/core/random.h"
#include "nuvec/lm/sample/logits_processors.h"
#include "tests/support/reference.h"

namespace nuvec::lm {
namespace {

using nuvec::test::error_of;

std::vector<double> host_doubles(const array& a) {
  auto c = contiguous(astype(a, float64));
  c.eval();
  return {c.data<double>(), c.data<double>() + c.size()};
}

std::vector<int32_t> host_ids(const array& a) {
  auto c = contiguous(astype(a, int32));
  c.eval();
  return {c.data<int32_t>(), c.data<int32_t>() + c.size()};
}

/// Random logits: normal with standard deviation 2, or with `ties` on a coarse grid so that many values repeat.
std::vector<float> random_logits(std::mt19937& rng, std::size_t n, bool ties) {
  std::normal_distribution<float> normal(0.0F, 2.0F);
  std::vector<float> values(n);
  for (auto& v : values) {
    v = ties ? std::round(normal(rng)) * 0.5F : normal(rng);
  }
  return values;
}

array batch_array(const std::vector<float>& values, int batch, Dtype dtype = float32) {
  auto vocab = static_cast<int32_t>(values.size()) / batch;
  return astype(array(values.begin(), Shape{batch, vocab}, float32), dtype);
}

std::vector<double> row_of(const std::vector<double>& values, std::size_t row, std::size_t vocab) {
  return {values.begin() + static_cast<std::ptrdiff_t>(row * vocab),
          values.begin() + static_cast<std::ptrdiff_t>((row + 1) * vocab)};
}

// ---------------------------------------------------------------- the definitions

/// The tokens the filters keep from scaled logits x: top-k keeps values at least the k-th largest; top-p, over the
/// top-k survivors renormalised, keeps tokens whose strictly more probable survivors weigh less than top_p; min-p
/// keeps tokens at least min_p times as probable as the most probable, or among the min_tokens_to_keep largest.
std::vector<bool> reference_keep(const std::vector<double>& x, const SamplingParams& p) {
  const std::size_t n = x.size();
  std::vector<bool> keep(n, true);
  if (p.temperature == 0.0F) {
    return keep;
  }
  std::vector<double> descending = x;
  std::sort(descending.begin(), descending.end(), std::greater<>());
  const double top = descending.front();
  if (p.top_k > 0 && static_cast<std::size_t>(p.top_k) < n) {
    for (std::size_t i = 0; i < n; ++i) {
      keep[i] = x[i] >= descending[static_cast<std::size_t>(p.top_k) - 1];
    }
  }
  if (p.top_p < 1.0F) {
    // Survivors by descending value; a group of equal values shares the mass of the groups before it.
    std::vector<std::size_t> order;
    double total = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      if (keep[i]) {
        order.push_back(i);
        total += std::exp(x[i] - top);
      }
    }
    std::sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return x[i] > x[j]; });
    double above = 0.0;
    for (std::size_t g = 0; g < order.size();) {
      std::size_t end = g;
      double group = 0.0;
      for (; end < order.size() && x[order[end]] == x[order[g]]; ++end) {
        group += std::exp(x[order[end]] - top) / total;
      }
      for (std::size_t i = g; i < end; ++i) {
        keep[order[i]] = above < p.top_p;
      }
      above += group;
      g = end;
    }
  }
  if (p.min_p > 0.0F) {
    auto kept = std::min(static_cast<std::size_t>(p.min_tokens_to_keep), n);
    for (std::size_t i = 0; i < n; ++i) {
      keep[i] = keep[i] && (std::exp(x[i] - top) >= p.min_p || x[i] >= descending[kept - 1]);
    }
  }
  return keep;
}

/// Logits after the bias, then the repetition penalty over the window's distinct ids, then presence and frequency
/// penalties over the generated ids.
std::vector<double> reference_process(std::vector<double> x, const SamplingParams& p,
                                      const std::vector<int32_t>& prompt, const std::vector<int32_t>& generated) {
  for (auto [id, bias] : p.logit_bias) {
    x[static_cast<std::size_t>(id)] += bias;
  }
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), generated.begin(), generated.end());
  std::set<int32_t> window;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all.size() - i <= static_cast<std::size_t>(p.repetition_context_size)) {
      window.insert(all[i]);
    }
  }
  for (int32_t id : window) {
    double& v = x[static_cast<std::size_t>(id)];
    v = v > 0 ? v / p.repetition_penalty : v * p.repetition_penalty;
  }
  std::map<int32_t, int> counts;
  for (int32_t id : generated) {
    ++counts[id];
  }
  for (auto [id, count] : counts) {
    x[static_cast<std::size_t>(id)] -= p.presence_penalty + p.frequency_penalty * count;
  }
  return x;
}

std::vector<double> log_softmax(const std::vector<double>& x) {
  double top = *std::max_element(x.begin(), x.end());
  double total = 0.0;
  for (double v : x) {
    total += std::exp(v - top);
  }
  std::vector<double> out;
  for (double v : x) {
    out.push_back(v - top - std::log(total));
  }
  return out;
}

SamplingParams random_filter_params(std::mt19937& rng, int vocab) {
  std::uniform_real_distribution<float> unit(0.0F, 1.0F);
  SamplingParams p;
  p.temperature = unit(rng) < 0.15F ? 0.0F : 1.0F;
  if (unit(rng) < 0.5F) {  // small k reads only the blocks with the largest maxima
    p.top_k = std::uniform_int_distribution<int>(1, unit(rng) < 0.5F ? 12 : vocab + 2)(rng);
  }
  if (unit(rng) < 0.5F) {
    p.top_p = 0.05F + 0.93F * unit(rng);
  }
  if (unit(rng) < 0.5F) {
    p.min_p = 0.01F + 0.5F * unit(rng);
    p.min_tokens_to_keep = std::uniform_int_distribution<int>(1, 4)(rng);
  }
  return p;
}

// ---------------------------------------------------------------- filters

TEST(SamplingFilters, TiesAtTheEdgeAreKept) {
  // Top-p and min-p read only each row's two largest values here (no row needs a full sort).
  std::vector<Sampler> samplers{
      Sampler({.temperature = 1.0F, .top_k = 2}, 5),
      // The top-k survivors are 2 and the three 1s; over them 2 weighs 0.475, so top-p 0.5 keeps the 1s too.
      Sampler({.temperature = 1.0F, .top_k = 2, .top_p = 0.5F}, 5),
      // min-p alone keeps the 2; two tokens at least means every token tied with the second largest.
      Sampler({.temperature = 1.0F, .min_p = 0.9F, .min_tokens_to_keep = 2}, 5),
      // Over the whole vocabulary 2 weighs 0.447.
      Sampler({.temperature = 1.0F, .top_p = 0.5F}, 5),
  };
  std::vector<SamplingRow> rows;
  for (auto& s : samplers) {
    rows.push_back({&s, {}});
  }
  const double inf = std::numeric_limits<double>::infinity();
  auto logits =
      array({3.0F, 1.0F, 2.0F, 2.0F, 0.0F, 2.0F, 1.0F, 1.0F, 1.0F, 0.0F, 2.0F, 1.0F, 1.0F, 1.0F, 0.0F}, Shape{3, 5});
  auto out = host_doubles(filter_logits(logits, std::span(rows).first(3)));
  EXPECT_EQ(row_of(out, 0, 5), (std::vector<double>{3.0, -inf, 2.0, 2.0, -inf}));
  const std::vector<double> expected{2.0, 1.0, 1.0, 1.0, -inf};
  EXPECT_EQ(row_of(out, 1, 5), expected);
  EXPECT_EQ(row_of(out, 2, 5), expected);
  EXPECT_EQ(host_doubles(filter_logits(array({2.0F, 1.0F, 1.0F, 1.0F, 0.0F}, Shape{1, 5}), std::span(rows).last(1))),
            expected);
}

TEST(SamplingFilters, KeepExactlyTheDefinedTokens) {
  std::mt19937 rng(7);
  int checked_rows = 0;
  for (int vocab : {5, 8, 33, 200, 1000, 5000}) {
    for (int round = 0; round < 6; ++round) {
      const int batch = 1 + round;
      std::vector<Sampler> samplers;
      for (int b = 0; b < batch; ++b) {
        samplers.emplace_back(random_filter_params(rng, vocab), vocab);
      }
      std::vector<SamplingRow> rows;
      for (auto& s : samplers) {
        rows.push_back({&s, {}});
      }
      auto values = random_logits(rng, static_cast<std::size_t>(batch * vocab), round % 2 == 1);
      auto x = host_doubles(batch_array(values, batch));
      auto out = host_doubles(filter_logits(batch_array(values, batch), rows));
      for (int b = 0; b < batch; ++b) {
        auto row = row_of(x, static_cast<std::size_t>(b), static_cast<std::size_t>(vocab));
        auto filtered = row_of(out, static_cast<std::size_t>(b), static_cast<std::size_t>(vocab));
        auto keep = reference_keep(row, samplers[static_cast<std::size_t>(b)].params());
        for (int i = 0; i < vocab; ++i) {
          auto at = static_cast<std::size_t>(i);
          const auto& p = samplers[static_cast<std::size_t>(b)].params();
          ASSERT_EQ(std::isfinite(filtered[at]), keep[at])
              << "V " << vocab << " row " << b << " token " << i << " top_k " << p.top_k << " top_p " << p.top_p
              << " min_p " << p.min_p << " keep " << p.min_tokens_to_keep;
          if (keep[at]) {
            ASSERT_EQ(filtered[at], row[at]);
          }
        }
        ++checked_rows;
      }
    }
  }
  EXPECT_EQ(checked_rows, 6 * 21);
}

TEST(SamplingFilters, CandidatesHoldTheLargestValuesAndTheirLowestIds) {
  std::mt19937 rng(17);
  for (int vocab : {300, 4001, 20000}) {
    for (int count : {1, 5, 20}) {
      const int batch = 3;
      auto values = random_logits(rng, static_cast<std::size_t>(batch * vocab), true);
      auto candidates = detail::largest_candidates(batch_array(values, batch), count);
      auto candidate_values = host_doubles(candidates.values);
      auto candidate_ids = host_ids(candidates.ids);
      const auto width = static_cast<std::size_t>(candidates.values.shape(1));
      ASSERT_GE(width, static_cast<std::size_t>(count));
      for (std::size_t b = 0; b < batch; ++b) {
        std::vector<int32_t> order(static_cast<std::size_t>(vocab));
        std::iota(order.begin(), order.end(), 0);
        auto row = values.begin() + static_cast<std::ptrdiff_t>(b * static_cast<std::size_t>(vocab));
        std::stable_sort(order.begin(), order.end(), [&](int32_t i, int32_t j) { return row[i] > row[j]; });
        std::set<int32_t> ids;
        for (std::size_t i = 0; i < width; ++i) {
          int32_t id = candidate_ids[b * width + i];
          if (id < vocab) {  // ids past the vocabulary are the padding
            EXPECT_EQ(candidate_values[b * width + i], row[id]);
          }
          if (i > 0) {
            EXPECT_LT(candidate_ids[b * width + i - 1], id);
          }
          ids.insert(id);
        }
        for (std::size_t i = 0; i < static_cast<std::size_t>(count); ++i) {
          EXPECT_TRUE(ids.contains(order[i])) << "V " << vocab << " count " << count << " rank " << i;
        }
      }
    }
  }
}

// ---------------------------------------------------------------- bias and penalties

TEST(SamplingPenalties, AdjustTheLogitsAsDefined) {
  std::mt19937 rng(11);
  const int vocab = 50;
  const int batch = 6;
  std::uniform_real_distribution<float> unit(0.0F, 1.0F);
  std::uniform_int_distribution<int32_t> id(0, 19);  // few distinct ids, so histories repeat
  std::vector<Sampler> samplers;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::vector<int32_t>> generated;
  for (int b = 0; b < batch; ++b) {
    SamplingParams p{.temperature = 0.7F};
    if (b != 0) {  // row 0 has nothing to apply
      p.repetition_penalty = b == 1 ? 1.0F : 0.5F + 1.5F * unit(rng);
      p.repetition_context_size = std::uniform_int_distribution<int>(0, 40)(rng);
      p.presence_penalty = b == 2 ? 0.0F : 2.0F * unit(rng) - 1.0F;
      p.frequency_penalty = b == 3 ? 0.0F : 2.0F * unit(rng) - 1.0F;
      if (b % 2 == 1) {
        p.logit_bias = {{3, 2.5F}, {id(rng), -1.25F}, {49, 10.0F}};
      }
    }
    samplers.emplace_back(p, vocab);
    std::vector<int32_t> prompt(static_cast<std::size_t>(std::uniform_int_distribution<int>(0, 30)(rng)));
    std::vector<int32_t> gen(static_cast<std::size_t>(b == 4 ? 0 : std::uniform_int_distribution<int>(0, 40)(rng)));
    for (auto& t : prompt) {
      t = id(rng);
    }
    for (auto& t : gen) {
      t = id(rng);
    }
    prompts.push_back(prompt);
    generated.push_back(gen);
  }
  std::vector<SamplingRow> rows;
  for (int b = 0; b < batch; ++b) {
    auto at = static_cast<std::size_t>(b);
    rows.push_back({&samplers[at], {prompts[at], generated[at]}});
  }
  for (Dtype dtype : {float32, bfloat16}) {
    auto logits = batch_array(random_logits(rng, batch * vocab, false), batch, dtype);
    auto x = host_doubles(logits);
    auto out = host_doubles(process_logits(logits, rows));
    for (int b = 0; b < batch; ++b) {
      auto at = static_cast<std::size_t>(b);
      auto expected = reference_process(row_of(x, at, vocab), samplers[at].params(), prompts[at], generated[at]);
      auto actual = row_of(out, at, vocab);
      for (int i = 0; i < vocab; ++i) {
        auto j = static_cast<std::size_t>(i);
        ASSERT_NEAR(actual[j], expected[j], 1e-5 * (1.0 + std::abs(expected[j]))) << "row " << b << " token " << i;
      }
    }
  }
}

TEST(SamplingPenalties, HistoryIdsOutsideTheVocabularyAreErrors) {
  Sampler sampler(SamplingParams{.repetition_penalty = 1.3F}, 10);
  const std::vector<int32_t> prompt{1, 12};
  EXPECT_NE(error_of([&] { sampler.sample(zeros({10}), {prompt, {}}); }).find("12"), std::string::npos);
}

// ---------------------------------------------------------------- draws

/// 1e-7 upper quantiles of the chi-square distribution with 1 to 7 degrees of freedom: a correct sampler fails a
/// check once in ten million runs, while a wrong filter or temperature moves the statistic into the hundreds.
constexpr double chi_square_bound[] = {0.0, 28.37, 32.24, 35.41, 38.24, 40.86, 43.34, 45.70};

double chi_square(const std::vector<int>& counts, const std::vector<double>& probabilities, int draws) {
  double statistic = 0.0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (probabilities[i] > 0.0) {
      double expected = draws * probabilities[i];
      statistic += (counts[i] - expected) * (counts[i] - expected) / expected;
    }
  }
  return statistic;
}

std::vector<double> filtered_softmax(const std::vector<double>& x, const SamplingParams& p) {
  std::vector<double> scaled;
  for (double v : x) {
    scaled.push_back(v / p.temperature);
  }
  auto keep = reference_keep(scaled, p);
  double top = *std::max_element(scaled.begin(), scaled.end());
  std::vector<double> probabilities(x.size(), 0.0);
  double total = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    probabilities[i] = keep[i] ? std::exp(scaled[i] - top) : 0.0;
    total += probabilities[i];
  }
  for (auto& pr : probabilities) {
    pr /= total;
  }
  return probabilities;
}

TEST(SamplingDraws, FrequenciesMatchTheFilteredSoftmax) {
  const int vocab = 8;
  const std::vector<float> logits{1.2F, -0.4F, 0.3F, 2.1F, 0.9F, -1.5F, 0.3F, 1.7F};
  const std::vector<int32_t> generated{3, 3, 7};
  std::vector<double> raw(logits.begin(), logits.end());
  const std::vector<SamplingParams> cases{
      {.temperature = 1.0F},
      {.temperature = 0.6F},
      {.temperature = 1.5F, .top_k = 3},
      {.temperature = 1.0F, .top_p = 0.7F},
      {.temperature = 0.8F, .min_p = 0.15F},
      {.temperature = 1.2F, .top_k = 6, .top_p = 0.9F, .min_p = 0.05F},
      {.temperature = 0.9F, .presence_penalty = 0.5F, .frequency_penalty = 0.3F, .logit_bias = {{5, 2.0F}}},
  };
  const int batch = 1000;
  const int steps = 20;
  int seed = 0;
  for (const auto& params : cases) {
    std::vector<Sampler> samplers;
    for (int b = 0; b < batch; ++b) {
      auto p = params;
      p.seed = static_cast<uint64_t>(++seed);
      samplers.emplace_back(p, vocab);
    }
    std::vector<SamplingRow> rows;
    for (auto& s : samplers) {
      rows.push_back({&s, {{}, generated}});
    }
    auto x = broadcast_to(array(logits.begin(), Shape{1, vocab}), {batch, vocab});
    std::vector<int> counts(vocab, 0);
    for (int step = 0; step < steps; ++step) {
      for (int32_t t : host_ids(sample(x, rows).tokens)) {
        ++counts[static_cast<std::size_t>(t)];
      }
    }
    auto probabilities = filtered_softmax(reference_process(raw, params, {}, generated), params);
    int support = 0;
    for (int i = 0; i < vocab; ++i) {
      auto at = static_cast<std::size_t>(i);
      support += probabilities[at] > 0.0 ? 1 : 0;
      if (probabilities[at] == 0.0) {
        EXPECT_EQ(counts[at], 0) << "token " << i << " is filtered out but was drawn";
      }
    }
    ASSERT_GE(support, 2);
    const double statistic = chi_square(counts, probabilities, batch * steps);
    EXPECT_LT(statistic, chi_square_bound[support - 1]) << "temperature " << params.temperature;
    if (params.temperature == 0.6F) {
      // The check has power: the same draws against the distribution at temperature 1 fail it by far.
      EXPECT_GT(chi_square(counts, filtered_softmax(raw, {.temperature = 1.0F}), batch * steps),
                10 * chi_square_bound[vocab - 1]);
    }
  }
}

TEST(SamplingDraws, GreedyIsTheArgmaxWithTiesToTheLowestId) {
  Sampler greedy(SamplingParams{}, 5);
  auto logits = array({1.0F, 5.0F, 3.0F, 5.0F, 5.0F});
  EXPECT_EQ(greedy.sample(logits).read()[0].token, 1);
  // The penalties come first: a repeated id loses its lead, and a bias restores it.
  Sampler penalised(SamplingParams{.repetition_penalty = 2.0F}, 5);
  const std::vector<int32_t> prompt{1};
  EXPECT_EQ(penalised.sample(logits, {prompt, {}}).read()[0].token, 3);
  Sampler biased(SamplingParams{.repetition_penalty = 2.0F, .logit_bias = {{1, 6.0F}}}, 5);
  EXPECT_EQ(biased.sample(logits, {prompt, {}}).read()[0].token, 1);

  std::mt19937 rng(3);
  const int batch = 20;
  const int vocab = 1000;
  std::vector<Sampler> samplers(batch, Sampler(SamplingParams{}, vocab));
  std::vector<SamplingRow> rows;
  for (auto& s : samplers) {
    rows.push_back({&s, {}});
  }
  auto values = random_logits(rng, batch * vocab, true);
  auto tokens = host_ids(sample(batch_array(values, batch), rows).tokens);
  for (int b = 0; b < batch; ++b) {
    auto begin = values.begin() + static_cast<std::ptrdiff_t>(b * vocab);
    EXPECT_EQ(tokens[static_cast<std::size_t>(b)], std::max_element(begin, begin + vocab) - begin);
  }
}

// ---------------------------------------------------------------- log-probabilities

TEST(SamplingLogprobs, AreTheLogSoftmaxOfTheRawLogits) {
  std::mt19937 rng(5);
  const std::vector<int32_t> generated{4, 4, 9};
  for (Dtype dtype : {float32, bfloat16, float16}) {
    for (int vocab : {500, 6000}) {
      const bool ties = vocab > 1000 || dtype == float32;
      std::vector<Sampler> samplers{
          Sampler({.temperature = 0.7F, .top_k = 10, .repetition_penalty = 1.3F, .top_logprobs = 5}, vocab),
          Sampler({.temperature = 1.0F, .top_p = 0.9F, .presence_penalty = 1.0F, .top_logprobs = 20}, vocab),
          Sampler({.top_logprobs = 0}, vocab),
          Sampler({.temperature = 2.0F, .logit_bias = {{7, -3.0F}}, .top_logprobs = 3}, vocab),
      };
      std::vector<SamplingRow> rows;
      for (auto& s : samplers) {
        rows.push_back({&s, {{}, generated}});
      }
      const int batch = static_cast<int>(rows.size());
      auto logits = batch_array(random_logits(rng, static_cast<std::size_t>(batch * vocab), ties), batch, dtype);
      auto x = host_doubles(logits);  // the values as the logits' dtype rounded them
      auto result = sample(logits, rows);
      auto chosen = result.read();
      ASSERT_EQ(result.top_tokens.shape(), (Shape{batch, 20}));
      for (int b = 0; b < batch; ++b) {
        auto at = static_cast<std::size_t>(b);
        auto expected = log_softmax(row_of(x, at, vocab));
        EXPECT_NEAR(chosen[at].logprob, expected[static_cast<std::size_t>(chosen[at].token)], 1e-5);
        std::vector<int32_t> order(vocab);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int32_t i, int32_t j) {
          return expected[static_cast<std::size_t>(i)] > expected[static_cast<std::size_t>(j)];
        });
        const auto n = static_cast<std::size_t>(samplers[at].params().top_logprobs);
        ASSERT_EQ(chosen[at].top.size(), n);
        for (std::size_t i = 0; i < n; ++i) {
          EXPECT_EQ(chosen[at].top[i].token, order[i]) << "row " << b << " rank " << i;
          EXPECT_NEAR(chosen[at].top[i].logprob, expected[static_cast<std::size_t>(order[i])], 1e-5);
        }
      }
    }
  }
}

TEST(SamplingLogprobs, TopListIsCappedByTheVocabulary) {
  Sampler sampler(SamplingParams{.top_logprobs = 20}, 5);
  auto chosen = sampler.sample(array({0.5F, 2.0F, -1.0F, 2.0F, 0.0F})).read()[0];
  ASSERT_EQ(chosen.top.size(), 5U);
  std::vector<int32_t> ids;
  for (const auto& t : chosen.top) {
    ids.push_back(t.token);
  }
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 3, 0, 4, 2}));
  EXPECT_EQ(chosen.token, 1);
}

// ---------------------------------------------------------------- seeds and batches

TEST(SamplingSeeds, KeysFollowRandomSplit) {
  Sampler sampler(SamplingParams{.temperature = 1.0F, .seed = 0}, 4);
  auto key = random::key(0);
  for (int step = 0; step < 3; ++step) {
    auto [kept, drawn] = random::split(key);
    if (step == 0) {  // MLX's split(key(0)), from CONFORMANCE.md
      EXPECT_EQ(host_doubles(drawn), (std::vector<double>{2718843009.0, 1272950319.0}));
    }
    double word = host_doubles(random::bits({2}, 4, drawn))[0];
    EXPECT_EQ(sampler.next_uniform(), (word + 0.5) / 4294967296.0) << "step " << step;
    key = kept;
  }
}

TEST(SamplingSeeds, SeededSequencesRepeatAndUnseededFollowTheGlobalSeed) {
  std::mt19937 rng(9);
  const int vocab = 1000;
  const SamplingParams params{.temperature = 0.8F, .top_p = 0.95F, .seed = 42};
  Sampler first(params, vocab);
  Sampler second(params, vocab);
  auto other_params = params;
  other_params.seed = 43;
  Sampler other(other_params, vocab);
  auto unseeded_params = params;
  unseeded_params.seed.reset();
  random::seed(5);
  Sampler unseeded_a(unseeded_params, vocab);
  random::seed(5);
  Sampler unseeded_b(unseeded_params, vocab);
  int differences = 0;
  for (int step = 0; step < 30; ++step) {
    auto logits = array(random_logits(rng, vocab, false).begin(), Shape{vocab});
    int32_t token = first.sample(logits).read()[0].token;
    EXPECT_EQ(second.sample(logits).read()[0].token, token);
    differences += other.sample(logits).read()[0].token != token ? 1 : 0;
    EXPECT_EQ(unseeded_a.sample(logits).read()[0].token, unseeded_b.sample(logits).read()[0].token);
  }
  EXPECT_GT(differences, 0);
}

TEST(SamplingSeeds, BatchedEqualsEachRowAlone) {
  std::mt19937 rng(13);
  const int vocab = 300;
  const std::vector<SamplingParams> params{
      {.top_logprobs = 2},
      {.temperature = 0.9F, .top_k = 7, .seed = 1},
      {.temperature = 1.1F, .top_p = 0.8F, .seed = 2, .top_logprobs = 5},
      {.temperature = 0.7F, .min_p = 0.1F, .min_tokens_to_keep = 3, .seed = 3},
      {.temperature = 1.0F,
       .repetition_penalty = 1.5F,
       .presence_penalty = 0.4F,
       .frequency_penalty = 0.2F,
       .logit_bias = {{0, 3.0F}},
       .seed = 4},
      {.temperature = 1.3F, .top_k = 50, .top_p = 0.9F, .min_p = 0.02F, .seed = 5, .top_logprobs = 1},
  };
  const int batch = static_cast<int>(params.size());
  std::vector<Sampler> batched;
  std::vector<Sampler> alone;
  for (const auto& p : params) {
    batched.emplace_back(p, vocab);
    alone.emplace_back(p, vocab);
  }
  std::vector<int32_t> prompt{5, 6, 7, 5};
  std::vector<std::vector<int32_t>> generated(params.size());
  for (int step = 0; step < 8; ++step) {
    auto values = random_logits(rng, static_cast<std::size_t>(batch * vocab), step % 2 == 1);
    std::vector<SamplingRow> rows;
    for (std::size_t b = 0; b < params.size(); ++b) {
      rows.push_back({&batched[b], {prompt, generated[b]}});
    }
    auto together = sample(batch_array(values, batch), rows).read();
    for (std::size_t b = 0; b < params.size(); ++b) {
      auto begin = values.begin() + static_cast<std::ptrdiff_t>(b * vocab);
      auto one = alone[b].sample(array(begin, Shape{vocab}), {prompt, generated[b]}).read()[0];
      ASSERT_EQ(together[b].token, one.token) << "row " << b << " step " << step;
      EXPECT_NEAR(together[b].logprob, one.logprob, 1e-6);
      ASSERT_EQ(together[b].top.size(), one.top.size());
      for (std::size_t i = 0; i < one.top.size(); ++i) {
        EXPECT_EQ(together[b].top[i].token, one.top[i].token);
      }
      generated[b].push_back(one.token);
    }
  }
}

// ---------------------------------------------------------------- bad input

TEST(SamplingParamsCheck, InvalidValuesNameTheFieldAndTheValue) {
  auto message = [](SamplingParams p) { return error_of([&] { Sampler(std::move(p), 50); }); };
  auto expect = [](const std::string& text, const std::string& field, const std::string& value) {
    EXPECT_NE(text.find(field), std::string::npos) << text;
    EXPECT_NE(text.find(value), std::string::npos) << text;
  };
  expect(message({.temperature = -0.5F}), "temperature", "-0.5");
  expect(message({.temperature = std::numeric_limits<float>::infinity()}), "temperature", "inf");
  expect(message({.top_k = -2}), "top_k", "-2");
  expect(message({.top_p = 1.5F}), "top_p", "1.5");
  expect(message({.top_p = 0.0F}), "top_p", "0");
  expect(message({.min_p = 1.25F}), "min_p", "1.25");
  expect(message({.min_p = -0.1F}), "min_p", "-0.1");
  expect(message({.min_tokens_to_keep = 0}), "min_tokens_to_keep", "0");
  expect(message({.repetition_penalty = 0.0F}), "repetition_penalty", "0");
  expect(message({.repetition_penalty = -1.0F}), "repetition_penalty", "-1");
  expect(message({.repetition_context_size = -3}), "repetition_context_size", "-3");
  expect(message({.presence_penalty = std::nanf("")}), "presence_penalty", "nan");
  expect(message({.top_logprobs = 21}), "top_logprobs", "21");
  expect(message({.top_logprobs = -1}), "top_logprobs", "-1");
  expect(message({.logit_bias = {{50, 1.0F}}}), "logit_bias", "50");
  expect(message({.logit_bias = {{-1, 1.0F}}}), "logit_bias", "-1");
  EXPECT_EQ(message({.temperature = 0.7F, .top_k = 5, .top_p = 1.0F, .min_p = 1.0F, .top_logprobs = 20}), "(no error)");

  Sampler sampler(SamplingParams{}, 50);
  const std::vector<SamplingRow> rows{{&sampler, {}}};
  expect(error_of([&] { sample(zeros({2, 50}), rows); }), "[sample]", "(2,50)");
  expect(error_of([&] { sample(zeros({1, 40}), rows); }), "[sample]", "40");
  expect(error_of([&] { sample(zeros({1, 50}, int32), rows); }), "[sample]", "int32");
}

}  // namespace
}  // namespace nuvec::lm
