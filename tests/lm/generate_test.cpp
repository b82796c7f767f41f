// Generation over a tiny random-weight Llama: greedy generation against a naive loop that recomputes the whole
// sequence without a cache (log-probabilities from the naive logits in float64), chunked prefill and prompt-cache
// reuse against fresh runs, stop strings (one split across tokens) and stop ids, batched generation against each
// sequence generated alone (with sequences joining and leaving, starting from prompt caches, admitted in groups of
// similar length), speculative decoding against plain greedy (also with prompt caches and windows) and, with
// sampling, against the model's own distribution. Steps that overlap the host's work with the model's give the same
// tokens as steps taken one at a time, greedy and seeded.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "nuvec/core/allocator.h"
#include "nuvec/core/error.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/random.h"
#include "nuvec/lm/generate/sequence.h"
#include "nuvec/lm/lm.h"
#include "tests/lm/generate_test_util.h"

namespace nuvec::lm {
namespace {

using nlohmann::json;
using test::expect_cache_holds;
using test::expect_error;
using test::expect_same_run;
using test::kVocab;
using test::make_tokenizer;
using test::random_prompt;
using test::Recording;
using test::run_batch;
using test::tiny_llama;
using test::token_text;

/// The reference: each step recomputes the whole sequence without a cache and takes the argmax of the last
/// position; log-probabilities are the float64 log-softmax of those logits.
struct NaiveRun {
  std::vector<int32_t> tokens;
  std::vector<double> logprobs;
};

NaiveRun naive_greedy(LanguageModel& model, std::vector<int32_t> sequence, int steps) {
  NaiveRun run;
  for (int n = 0; n < steps; ++n) {
    const array logits = model.forward(array(sequence.begin(), {1, static_cast<int>(sequence.size())}, int32), nullptr);
    array last = astype(slice(logits, {0, logits.shape(1) - 1, 0}, {1, logits.shape(1), kVocab}), float32);
    last.eval();
    const float* v = last.data<float>();
    const int best = static_cast<int>(std::max_element(v, v + kVocab) - v);
    double total = 0;
    for (int i = 0; i < kVocab; ++i) {
      total += std::exp(static_cast<double>(v[i]) - v[best]);
    }
    run.tokens.push_back(best);
    run.logprobs.push_back(-std::log(total));
    sequence.push_back(best);
  }
  return run;
}

GenerationResult alone(LanguageModel& model, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                       int max_tokens) {
  GenerateOptions options;
  options.max_tokens = max_tokens;
  return generate(model, tokenizer, prompt, options);
}

TEST(Generate, GreedyEqualsNaiveRecomputation) {
  const auto model_owner = tiny_llama(1);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(7);
  for (int length : {1, 5, 13}) {
    const std::vector<int32_t> prompt = random_prompt(rng, length);
    GenerateOptions options;
    options.max_tokens = 12;
    options.sampling.top_logprobs = 3;
    const GenerationResult got = generate(model, tokenizer, prompt, options);
    const NaiveRun want = naive_greedy(model, prompt, 12);
    EXPECT_EQ(got.tokens, want.tokens) << "prompt length " << length;
    ASSERT_EQ(got.logprobs.size(), want.logprobs.size());
    for (size_t i = 0; i < want.logprobs.size(); ++i) {
      EXPECT_NEAR(got.logprobs[i], want.logprobs[i], 1e-4) << "token " << i;
      ASSERT_EQ(got.top_logprobs[i].size(), 3U);
      EXPECT_EQ(got.top_logprobs[i][0].token, got.tokens[i]);
      EXPECT_NEAR(got.top_logprobs[i][0].logprob, want.logprobs[i], 1e-4);
    }
    EXPECT_EQ(got.text, tokenizer.decode(got.tokens));
    EXPECT_EQ(got.finish_reason, "length");
  }
}

TEST(Generate, ChunkedPrefillEqualsOneShot) {
  const auto model_owner = tiny_llama(2);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(11);
  const std::vector<int32_t> prompt = random_prompt(rng, 37);
  GenerateOptions options;
  options.max_tokens = 10;
  const GenerationResult one_shot = generate(model, tokenizer, prompt, options);
  for (int chunk : {1, 5, 36}) {
    options.prefill_chunk_size = chunk;
    expect_same_run(generate(model, tokenizer, prompt, options), one_shot, "chunk " + std::to_string(chunk));
  }
  EXPECT_EQ(one_shot.tokens, naive_greedy(model, prompt, 10).tokens);
}

TEST(Generate, ReservedCachesTakeTheWholeRequestAtOnceAndChangeNothing) {
  const auto model_owner = tiny_llama(2, 64);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(12);
  const std::vector<int32_t> prompt = random_prompt(rng, 9);
  GenerateOptions options;
  options.max_tokens = 12;
  const GenerationResult growing = generate(model, tokenizer, prompt, options);
  // Positions the buffer behind a layer's keys has room for (a growing cache's first step is 256).
  auto room = [](const Cache& cache) {
    array keys = cache.front()->state()[0];
    keys.eval();
    return static_cast<int>(keys.buffer().size() / (keys.nbytes() / static_cast<size_t>(keys.shape(2))));
  };
  // The request's 21 positions, and no more than the model's context of 64.
  for (const auto& [asked, expected] : std::vector<std::pair<int, int>>{{21, 21}, {1000, 64}}) {
    PromptCache state;
    state.cache = detail::reserved_cache(model, asked);
    options.prompt_cache = &state;
    expect_same_run(generate(model, tokenizer, prompt, options), growing, "reserved " + std::to_string(asked));
    EXPECT_EQ(room(state.cache), expected);
  }
  // generate itself reserves what the request can hold: the prompt and every generated token but the last (20); a
  // reused cache that holds 20 positions grows once for a following request of 20 + 9 + 11 positions.
  PromptCache state;
  options.prompt_cache = &state;
  expect_same_run(generate(model, tokenizer, prompt, options), growing, "generate's own reservation");
  EXPECT_EQ(room(state.cache), 20);
  std::vector<int32_t> following = state.tokens;
  following.push_back(growing.tokens.back());
  const std::vector<int32_t> more = random_prompt(rng, 8);
  following.insert(following.end(), more.begin(), more.end());
  (void)generate(model, tokenizer, following, options);
  EXPECT_EQ(room(state.cache), static_cast<int>(following.size()) + options.max_tokens - 1);
}

TEST(Generate, PromptCacheReuseEqualsFreshRun) {
  const auto model_owner = tiny_llama(3);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(5);
  const std::vector<int32_t> first = random_prompt(rng, 20);
  GenerateOptions options;
  options.max_tokens = 6;
  PromptCache reused;
  options.prompt_cache = &reused;
  const GenerationResult initial = generate(model, tokenizer, first, options);
  // The cache holds the prompt and every generated token but the last, which was never fed back.
  std::vector<int32_t> held = first;
  held.insert(held.end(), initial.tokens.begin(), initial.tokens.end() - 1);
  EXPECT_EQ(reused.tokens, held);
  EXPECT_EQ(reused.cache.front()->offset(), static_cast<int>(held.size()));

  // A prompt sharing 12 tokens (the cache holds more: trimmed), the first prompt back (12 shared again), the same
  // prompt again (all but its last token reused), and one that continues what the cache holds (nothing trimmed).
  std::vector<int32_t> diverging(first.begin(), first.begin() + 12);
  const std::vector<int32_t> tail = random_prompt(rng, 7);
  diverging.insert(diverging.end(), tail.begin(), tail.end());
  diverging[12] = first[12] == 2 ? 3 : 2;
  std::vector<int32_t> continuing = first;
  continuing.insert(continuing.end(), initial.tokens.begin(), initial.tokens.end());
  continuing.push_back(9);
  const std::vector<std::pair<std::vector<int32_t>, int>> cases = {
      {diverging, 12}, {first, 12}, {first, 19}, {continuing, static_cast<int>(first.size()) + 5}};
  for (const auto& [prompt, expected_cached] : cases) {
    const GenerationResult got = generate(model, tokenizer, prompt, options);
    GenerateOptions fresh_options = options;
    fresh_options.prompt_cache = nullptr;
    expect_same_run(got, generate(model, tokenizer, prompt, fresh_options), "reused cache");
    EXPECT_EQ(got.stats.cached_prompt_tokens, expected_cached);
    EXPECT_EQ(got.stats.prompt_tokens, static_cast<int>(prompt.size()));
  }
  // A cache whose token list disagrees with what it holds is refused.
  reused.tokens.pop_back();
  const std::string message = expect_error([&] { (void)generate(model, tokenizer, first, options); });
  EXPECT_NE(message.find("prompt cache holds"), std::string::npos) << message;
}

TEST(Generate, MaxKvSizeKeepsAWindowAndMatchesWhileItFits) {
  const auto model_owner = tiny_llama(4);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(3);
  const std::vector<int32_t> prompt = random_prompt(rng, 10);
  GenerateOptions options;
  options.max_tokens = 8;
  const GenerationResult plain = generate(model, tokenizer, prompt, options);
  options.max_kv_size = 64;
  expect_same_run(generate(model, tokenizer, prompt, options), plain, "a window larger than the sequence");
  options.max_kv_size = 8;
  options.max_tokens = 20;
  EXPECT_EQ(generate(model, tokenizer, prompt, options).tokens.size(), 20U);
}

TEST(Generate, StopStringsEndTheTextBeforeThem) {
  const auto model_owner = tiny_llama(5);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(13);
  const std::vector<int32_t> prompt = random_prompt(rng, 6);
  GenerateOptions options;
  options.max_tokens = 24;
  const GenerationResult plain = generate(model, tokenizer, prompt, options);
  ASSERT_EQ(plain.tokens.size(), 24U);

  // A stop string made of the last character of token 9's text and all of token 10's: split across tokens.
  const std::string before = token_text(plain.tokens[9]);
  const std::string stop = before.substr(before.size() - 1) + token_text(plain.tokens[10]);
  const size_t at = plain.text.find(stop);
  ASSERT_NE(at, std::string::npos);
  // The tokens it takes for the stop string to appear in the text.
  size_t needed = 0;
  while (tokenizer.decode(std::vector<int32_t>(plain.tokens.begin(), plain.tokens.begin() + needed)).find(stop) ==
         std::string::npos) {
    ++needed;
  }
  options.stop_strings = {"never-generated", stop};
  std::string streamed;
  int responses = 0;
  stream_generate(model, tokenizer, prompt, options, [&](const GenerationResponse& response) {
    streamed += response.text;
    ++responses;
    // No text past the stop string is ever handed out.
    EXPECT_EQ(plain.text.compare(0, streamed.size(), streamed), 0) << streamed;
    EXPECT_LE(streamed.size(), at);
    return true;
  });
  EXPECT_EQ(streamed, plain.text.substr(0, at));
  EXPECT_EQ(responses, static_cast<int>(needed));
  const GenerationResult stopped = generate(model, tokenizer, prompt, options);
  EXPECT_EQ(stopped.finish_reason, "stop");
  EXPECT_EQ(stopped.text, plain.text.substr(0, at));

  // Text held back as a possible start of a stop string comes out when generation ends without it.
  options.stop_strings = {plain.text.substr(plain.text.size() - 1) + "#"};
  const GenerationResult held = generate(model, tokenizer, prompt, options);
  EXPECT_EQ(held.text, plain.text);
  EXPECT_EQ(held.finish_reason, "length");
}

TEST(Generate, StopIdsFromOptionsAndTokenizer) {
  const auto model_owner = tiny_llama(6);
  LanguageModel& model = *model_owner;
  const Tokenizer plain_tokenizer = make_tokenizer();
  std::mt19937 rng(17);
  const std::vector<int32_t> prompt = random_prompt(rng, 5);
  GenerateOptions options;
  options.max_tokens = 16;
  const GenerationResult plain = generate(model, plain_tokenizer, prompt, options);
  const int32_t stop = plain.tokens[5];
  const size_t first = std::find(plain.tokens.begin(), plain.tokens.end(), stop) - plain.tokens.begin();
  const std::vector<int32_t> before(plain.tokens.begin(), plain.tokens.begin() + first);

  auto check = [&](const GenerationResult& got, const std::string& what) {
    std::vector<int32_t> expected = before;
    expected.push_back(stop);
    EXPECT_EQ(got.tokens, expected) << what;
    EXPECT_EQ(got.finish_reason, "stop") << what;
    EXPECT_EQ(got.text, plain_tokenizer.decode(before)) << what;  // the stop token's text is left out
  };
  GenerateOptions with_ids = options;
  with_ids.stop_ids = {stop};
  check(generate(model, plain_tokenizer, prompt, with_ids), "options.stop_ids");
  check(generate(model, make_tokenizer(stop), prompt, options), "the tokenizer's EOS");
  GenerationConfig generation;
  generation.eos_token_ids = {stop};
  const LoadedModel loaded{model_owner, plain_tokenizer, generation, json::object()};
  check(generate(loaded, prompt, options), "the generation config's EOS ids");
}

TEST(Generate, MaxTokensAndCancelling) {
  const auto model_owner = tiny_llama(7);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  const std::vector<int32_t> prompt = {5, 9, 12};
  GenerateOptions options;
  options.max_tokens = 0;
  const GenerationResult none = generate(model, tokenizer, prompt, options);
  EXPECT_TRUE(none.tokens.empty());
  EXPECT_EQ(none.finish_reason, "");
  for (int max_tokens : {1, 7}) {
    options.max_tokens = max_tokens;
    const GenerationResult got = generate(model, tokenizer, prompt, options);
    EXPECT_EQ(got.tokens.size(), static_cast<size_t>(max_tokens));
    EXPECT_EQ(got.finish_reason, "length");
  }
  int calls = 0;
  stream_generate(model, tokenizer, prompt, options, [&](const GenerationResponse& response) {
    ++calls;
    EXPECT_FALSE(response.finish_reason.has_value());
    return calls < 3;
  });
  EXPECT_EQ(calls, 3);
}

TEST(Generate, StatisticsArePopulated) {
  const auto model_owner = tiny_llama(8);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  GenerateOptions options;
  options.max_tokens = 5;
  std::vector<GenerationStats> seen;
  stream_generate(model, tokenizer, {4, 8, 15, 16, 23, 42}, options, [&](const GenerationResponse& response) {
    seen.push_back(response.stats);
    return true;
  });
  ASSERT_EQ(seen.size(), 5U);
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].prompt_tokens, 6);
    EXPECT_EQ(seen[i].cached_prompt_tokens, 0);
    EXPECT_EQ(seen[i].generation_tokens, static_cast<int>(i) + 1);
    EXPECT_GT(seen[i].prompt_tps, 0);
    EXPECT_GT(seen[i].peak_memory, 0U);
  }
  EXPECT_EQ(seen[0].generation_tps, 0);
  EXPECT_GT(seen.back().generation_tps, 0);
}

TEST(Generate, OverlappedStepsEqualStepsOneAtATime) {
  const auto model_owner = tiny_llama(19);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(37);
  const std::vector<int32_t> prompt = random_prompt(rng, 9);
  std::vector<SamplingParams> settings(4);
  settings[0].top_logprobs = 3;
  settings[1].temperature = 0.9F;
  settings[1].top_p = 0.9F;
  settings[1].seed = 3;
  settings[1].top_logprobs = 2;
  settings[2].temperature = 1.3F;
  settings[2].top_k = 12;
  settings[2].min_p = 0.05F;
  settings[2].seed = 4;
  // Penalties keep the steps one at a time either way.
  settings[3].temperature = 1.0F;
  settings[3].seed = 5;
  settings[3].repetition_penalty = 1.3F;
  settings[3].presence_penalty = 0.4F;
  for (size_t i = 0; i < settings.size(); ++i) {
    GenerateOptions options;
    options.max_tokens = 14;
    options.sampling = settings[i];
    options.overlap_steps = false;
    const GenerationResult one_at_a_time = generate(model, tokenizer, prompt, options);
    options.overlap_steps = true;
    const GenerationResult overlapped = generate(model, tokenizer, prompt, options);
    const std::string what = "settings " + std::to_string(i);
    expect_same_run(overlapped, one_at_a_time, what);
    ASSERT_EQ(overlapped.top_logprobs.size(), one_at_a_time.top_logprobs.size()) << what;
    for (size_t t = 0; t < overlapped.top_logprobs.size(); ++t) {
      ASSERT_EQ(overlapped.top_logprobs[t].size(), static_cast<size_t>(settings[i].top_logprobs)) << what;
      for (size_t k = 0; k < overlapped.top_logprobs[t].size(); ++k) {
        EXPECT_EQ(overlapped.top_logprobs[t][k].token, one_at_a_time.top_logprobs[t][k].token) << what;
      }
    }
  }
  EXPECT_EQ(alone(model, tokenizer, prompt, 14).tokens, naive_greedy(model, prompt, 14).tokens);
}

TEST(Generate, StoppingWhileOverlappedKeepsThePromptCacheInStep) {
  const auto model_owner = tiny_llama(20);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(41);
  const std::vector<int32_t> prompt = random_prompt(rng, 8);
  const GenerationResult plain = alone(model, tokenizer, prompt, 16);
  const int32_t stop = plain.tokens[4];
  const auto emitted =
      static_cast<std::ptrdiff_t>(std::find(plain.tokens.begin(), plain.tokens.end(), stop) - plain.tokens.begin() + 1);
  for (bool overlap : {true, false}) {
    PromptCache reused;
    GenerateOptions options;
    options.max_tokens = 16;
    options.stop_ids = {stop};
    options.prompt_cache = &reused;
    options.overlap_steps = overlap;
    const GenerationResult got = generate(model, tokenizer, prompt, options);
    EXPECT_EQ(got.tokens, std::vector<int32_t>(plain.tokens.begin(), plain.tokens.begin() + emitted));
    // Overlapped, the model was fed the stop token before it was read back: the cache holds it and says so.
    std::vector<int32_t> held = prompt;
    held.insert(held.end(), plain.tokens.begin(), plain.tokens.begin() + emitted - (overlap ? 0 : 1));
    EXPECT_EQ(reused.tokens, held) << "overlap " << overlap;
    expect_cache_holds(model, reused.cache, held, "overlap " + std::to_string(overlap));
    // A prompt continuing the conversation reuses all of it and equals a fresh run.
    std::vector<int32_t> continuing(prompt);
    continuing.insert(continuing.end(), plain.tokens.begin(), plain.tokens.begin() + emitted);
    continuing.insert(continuing.end(), {9, 21, 30});
    options.stop_ids.clear();
    options.max_tokens = 6;
    const GenerationResult next = generate(model, tokenizer, continuing, options);
    EXPECT_EQ(next.stats.cached_prompt_tokens, static_cast<int>(held.size()));
    expect_same_run(next, alone(model, tokenizer, continuing, 6), "continuing, overlap " + std::to_string(overlap));
  }
}

TEST(Generate, PeakMemoryCountsFromTheStartOfTheGeneration) {
  const auto model_owner = tiny_llama(21);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  const size_t big = size_t{64} << 20;
  {
    array scratch = arange(0, static_cast<int>(big / sizeof(float)), float32);
    scratch.eval();
  }
  ASSERT_GE(get_peak_memory(), big);
  for (LanguageModel* draft : {static_cast<LanguageModel*>(nullptr), &model}) {
    GenerateOptions options;
    options.max_tokens = 4;
    options.draft_model = draft;
    const GenerationResult got = generate(model, tokenizer, {4, 8, 15, 16}, options);
    EXPECT_GT(got.stats.peak_memory, 0U);
    EXPECT_LT(got.stats.peak_memory, big / 4) << (draft != nullptr ? "speculative" : "plain");
  }
}

// The prefill empties the allocator's cache (as mlx-lm's does): buffers freed before it, or by its chunks, are not
// kept resident through the decode steps.
TEST(Generate, PrefillEmptiesTheAllocatorCache) {
  const auto model_owner = tiny_llama(22);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  const size_t big = size_t{64} << 20;
  {
    array scratch = arange(0, static_cast<int>(big / sizeof(float)), float32);
    scratch.eval();
  }
  ASSERT_GE(get_cache_memory(), big);
  GenerateOptions options;
  options.max_tokens = 2;
  options.prefill_chunk_size = 3;
  std::vector<size_t> cached;
  stream_generate(model, tokenizer, {4, 8, 15, 16, 23, 42, 7}, options, [&](const GenerationResponse&) {
    cached.push_back(get_cache_memory());
    return true;
  });
  ASSERT_EQ(cached.size(), 2U);
  EXPECT_LT(cached[0], big / 16);
}

TEST(Generate, BadRequestsGiveClearErrors) {
  const auto model_owner = tiny_llama(9, 16);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  GenerateOptions options;
  auto message = [&](const std::vector<int32_t>& prompt, const GenerateOptions& o) {
    return expect_error([&] { (void)generate(model, tokenizer, prompt, o); });
  };
  EXPECT_NE(message({}, options).find("the prompt is empty"), std::string::npos);
  EXPECT_NE(message({3, 64}, options).find("prompt token 1 is id 64, outside the model's vocabulary of 64"),
            std::string::npos);
  EXPECT_NE(message(std::vector<int32_t>(17, 3), options)
                .find("the prompt has 17 tokens, more than the model's context of 16 tokens"),
            std::string::npos);
  GenerateOptions bad = options;
  bad.max_tokens = -1;
  EXPECT_NE(message({3}, bad).find("max_tokens must not be negative; got -1"), std::string::npos);
  bad = options;
  bad.prefill_chunk_size = 0;
  EXPECT_NE(message({3}, bad).find("prefill_chunk_size must be positive; got 0"), std::string::npos);
  bad = options;
  bad.stop_strings = {""};
  EXPECT_NE(message({3}, bad).find("stop strings must not be empty"), std::string::npos);
  bad = options;
  bad.sampling.temperature = -1;
  EXPECT_NE(message({3}, bad).find("temperature"), std::string::npos);
}

TEST(Generate, CallersProcessorsAndSamplerRunEachStep) {
  const auto model_owner = tiny_llama(21);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(21);
  const std::vector<int32_t> prompt = random_prompt(rng, 6);
  GenerateOptions plain;
  plain.max_tokens = 8;
  plain.sampling.top_logprobs = 2;
  const GenerationResult greedy = generate(model, tokenizer, prompt, plain);

  // A processor that bans greedy's first token equals the built-in logit bias doing it; each call sees the ids so
  // far, the prompt and one more generated id a step.
  const int32_t banned = greedy.tokens.front();
  std::vector<int> seen;
  GenerateOptions hooked = plain;
  hooked.hooks.processors = {[&](const array& ids, const array& logits) {
    seen.push_back(ids.size());
    EXPECT_EQ(ids.dtype(), int32);
    return logits + array(-1e30F) * astype(arange(kVocab) == array(banned), float32);
  }};
  GenerateOptions biased = plain;
  biased.sampling.logit_bias = {{banned, -1e30F}};
  const GenerationResult processed = generate(model, tokenizer, prompt, hooked);
  expect_same_run(processed, generate(model, tokenizer, prompt, biased), "a processor banning a token");
  EXPECT_EQ(std::count(processed.tokens.begin(), processed.tokens.end(), banned), 0);
  std::vector<int> expected_sizes;
  for (int step = 0; step < plain.max_tokens; ++step) {
    expected_sizes.push_back(static_cast<int>(prompt.size()) + step);
  }
  EXPECT_EQ(seen, expected_sizes);

  // A sampler taking the argmax of its log-probabilities is greedy; one taking the second most likely token differs,
  // and the reported log-probabilities stay the model's own (greedy's top 2 at its first step).
  GenerateOptions argmax_sampler = plain;
  argmax_sampler.hooks.chooser = [](const array& logprobs) { return argmax(logprobs, -1); };
  expect_same_run(generate(model, tokenizer, prompt, argmax_sampler), greedy, "an argmax sampler");
  GenerateOptions second = plain;
  second.max_tokens = 1;
  second.hooks.chooser = [](const array& logprobs) {
    EXPECT_NEAR(sum(exp(logprobs)).item<float>(), 1.0F, 1e-5F);
    return slice(argsort(negative(logprobs), -1), {0, 1}, {1, 2});
  };
  const GenerationResult runner_up = generate(model, tokenizer, prompt, second);
  ASSERT_EQ(runner_up.tokens.size(), 1U);
  EXPECT_EQ(runner_up.tokens[0], greedy.top_logprobs[0][1].token);
  EXPECT_FLOAT_EQ(runner_up.logprobs[0], greedy.top_logprobs[0][1].logprob);

  // Their mistakes are named.
  GenerateOptions bad = plain;
  bad.hooks.processors = {[](const array&, const array& logits) { return reshape(logits, {-1}); }};
  EXPECT_NE(expect_error([&] {
              (void)generate(model, tokenizer, prompt, bad);
            }).find("A logits processor must return floating logits of shape (1, 64); got shape (64)"),
            std::string::npos);
  bad = plain;
  bad.hooks.chooser = [](const array&) { return array(kVocab); };
  EXPECT_NE(expect_error([&] {
              (void)generate(model, tokenizer, prompt, bad);
            }).find("A sampler chose token 64, outside the vocabulary of 64"),
            std::string::npos);
  bad = plain;
  bad.hooks.chooser = [](const array& logprobs) { return logprobs; };
  EXPECT_NE(expect_error([&] {
              (void)generate(model, tokenizer, prompt, bad);
            }).find("A sampler must return one integer token; got shape (1,64) and dtype float32"),
            std::string::npos);
  bad = argmax_sampler;
  bad.draft_model = &model;
  EXPECT_NE(
      expect_error([&] { (void)generate(model, tokenizer, prompt, bad); }).find("cannot be used with a draft model"),
      std::string::npos);
}

// ---------------------------------------------------------------- batches

TEST(BatchKVCache, MaskHidesPaddingAndFollowsCausality) {
  BatchKVCache cache({2, 0});
  const array keys = zeros({2, 1, 3, 4});
  const MaskSpec prefill = cache.make_mask(3);
  (void)cache.update_and_fetch(keys, keys);
  ASSERT_EQ(prefill.mode, "array");
  array mask = astype(*prefill.mask, int32);
  mask.eval();
  ASSERT_EQ(mask.shape(), (Shape{2, 1, 3, 3}));
  // Row 0 is padded by 2: its padding queries see only themselves, its real query sees only itself.
  const std::vector<int> expected = {1, 0, 0, 0, 1, 0, 0, 0, 1,   // sequence 0
                                     1, 0, 0, 1, 1, 0, 1, 1, 1};  // sequence 1: causal
  EXPECT_EQ(std::vector<int>(mask.data<int>(), mask.data<int>() + 18), expected);
  array offsets = *cache.batch_offsets();
  offsets.eval();
  EXPECT_EQ(std::vector<int>(offsets.data<int>(), offsets.data<int>() + 2), (std::vector<int>{1, 3}));

  // Dropping sequence 1 drops the two padding columns sequence 0 no longer shares with anyone.
  cache.filter({0});
  EXPECT_EQ(cache.offset(), 1);
  EXPECT_EQ(cache.left_padding(), (std::vector<int>{0}));
}

TEST(BatchGenerator, EqualsEachSequenceAloneWithJoinsAndLeaves) {
  const auto model_owner = tiny_llama(10);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(23);
  const std::vector<std::vector<int32_t>> prompts = {random_prompt(rng, 3), random_prompt(rng, 9),
                                                     random_prompt(rng, 17), random_prompt(rng, 6),
                                                     random_prompt(rng, 1)};
  const std::vector<int> max_tokens = {8, 10, 4, 7, 5};
  // Sequence 1 samples (seeded): its draws are its own, alone or in a batch. Sequence 3 asks for more top tokens
  // than the others.
  auto options_for = [&](size_t i) {
    GenerateOptions options;
    options.max_tokens = max_tokens[i];
    options.sampling.top_logprobs = i == 3 ? 4 : 2;
    if (i == 1) {
      options.sampling.temperature = 1.0F;
      options.sampling.top_k = 10;
      options.sampling.seed = 42;
    }
    return options;
  };
  for (bool overlap : {false, true}) {
    BatchOptions batch_options;
    batch_options.prefill_chunk_size = 4;
    batch_options.overlap_steps = overlap;
    BatchGenerator generator(model, tokenizer, batch_options);
    std::map<uint64_t, size_t> which;
    std::map<size_t, GenerationResult> got;
    auto add = [&](size_t i) { which[generator.insert(prompts[i], options_for(i))] = i; };
    for (size_t i = 0; i < 3; ++i) {
      add(i);
    }
    const uint64_t removed = generator.insert(prompts[1]);
    int step = 0;
    while (generator.has_work()) {
      if (step == 2) {
        add(3);  // joins mid-way
      }
      if (step == 3) {
        EXPECT_TRUE(generator.remove(removed));  // cancelled mid-way
        add(4);
      }
      const int active_before = generator.active() + generator.waiting();
      const std::vector<BatchResponse> responses = generator.next();
      EXPECT_LE(static_cast<int>(responses.size()), active_before);
      for (const BatchResponse& r : responses) {
        if (r.uid == removed) {
          continue;
        }
        ASSERT_TRUE(which.count(r.uid)) << "uid " << r.uid;
        const size_t i = which[r.uid];
        GenerationResult& result = got[i];
        result.tokens.push_back(r.response.token);
        result.logprobs.push_back(r.response.logprob);
        result.text += r.response.text;
        result.finish_reason = r.response.finish_reason.value_or("");
        EXPECT_EQ(r.response.top_logprobs.size(), static_cast<size_t>(options_for(i).sampling.top_logprobs));
      }
      ++step;
      ASSERT_LT(step, 40);
    }
    EXPECT_FALSE(generator.remove(removed));
    ASSERT_EQ(got.size(), prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
      expect_same_run(got[i], generate(model, tokenizer, prompts[i], options_for(i)),
                      "sequence " + std::to_string(i) + (overlap ? ", overlapped" : ""));
    }
  }
}

TEST(BatchGenerator, StopsEachSequenceOnItsOwnTerms) {
  const auto model_owner = tiny_llama(11);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(29);
  const std::vector<int32_t> a = random_prompt(rng, 4);
  const std::vector<int32_t> b = random_prompt(rng, 8);
  const GenerationResult a_alone = alone(model, tokenizer, a, 12);
  BatchGenerator generator(model, tokenizer);
  GenerateOptions stop_early;
  stop_early.max_tokens = 12;
  stop_early.stop_ids = {a_alone.tokens[3]};
  const uint64_t ua = generator.insert(a, stop_early);
  GenerateOptions long_run;
  long_run.max_tokens = 12;
  const uint64_t ub = generator.insert(b, long_run);
  std::map<uint64_t, std::vector<int32_t>> tokens;
  while (generator.has_work()) {
    for (const BatchResponse& r : generator.next()) {
      tokens[r.uid].push_back(r.response.token);
    }
  }
  const size_t first =
      std::find(a_alone.tokens.begin(), a_alone.tokens.end(), a_alone.tokens[3]) - a_alone.tokens.begin();
  EXPECT_EQ(tokens[ua], std::vector<int32_t>(a_alone.tokens.begin(), a_alone.tokens.begin() + first + 1));
  EXPECT_EQ(tokens[ub], alone(model, tokenizer, b, 12).tokens);

  GenerateOptions windowed;
  windowed.max_kv_size = 32;
  EXPECT_NE(expect_error([&] { (void)generator.insert(a, windowed); }).find("single sequences"), std::string::npos);
  EXPECT_NE(expect_error([&] { (void)generator.insert({}); }).find("the prompt is empty"), std::string::npos);
}

TEST(BatchGenerator, AdmitsPromptsInGroupsOfSimilarLength) {
  const auto model_owner = tiny_llama(22);
  Recording model(*model_owner);
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(43);
  const std::vector<int> lengths = {21, 3, 19, 5, 20, 2};
  std::vector<std::vector<int32_t>> prompts;
  for (int length : lengths) {
    prompts.push_back(random_prompt(rng, length));
  }
  auto options_for = [](size_t i) {
    GenerateOptions options;
    options.max_tokens = 5 + static_cast<int>(i);
    if (i % 2 == 1) {
      options.sampling.temperature = 0.8F;
      options.sampling.seed = 100 + i;
    }
    return options;
  };
  std::vector<GenerationResult> runs[2];
  for (bool overlap : {true, false}) {
    BatchOptions batch_options;
    batch_options.prefill_batch_size = 2;
    batch_options.overlap_steps = overlap;
    BatchGenerator generator(model, tokenizer, batch_options);
    std::vector<uint64_t> uids;
    for (size_t i = 0; i < prompts.size(); ++i) {
      uids.push_back(generator.insert(prompts[i], options_for(i)));
    }
    model.inputs.clear();
    runs[overlap ? 1 : 0] = run_batch(generator, uids);
    // Sorted, the pairs are (2, 3), (5, 19), (20, 21): each prefilled without its last token, padded to the longer.
    std::vector<Shape> prefills;
    std::copy_if(model.inputs.begin(), model.inputs.end(), std::back_inserter(prefills),
                 [](const Shape& shape) { return shape[1] > 1; });
    EXPECT_EQ(prefills, (std::vector<Shape>{{2, 2}, {2, 18}, {2, 20}})) << "overlap " << overlap;
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::string what = "sequence " + std::to_string(i);
    expect_same_run(runs[1][i], runs[0][i], what + ", overlapped against one step at a time");
    expect_same_run(runs[1][i], generate(*model_owner, tokenizer, prompts[i], options_for(i)), what + " alone");
  }
}

TEST(BatchGenerator, LongPromptsGoInAChunkPerStepWhileOthersDecode) {
  const auto model_owner = tiny_llama(31);
  Recording model(*model_owner);
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(59);
  const std::vector<int32_t> first = random_prompt(rng, 5);
  const std::vector<int32_t> longer = random_prompt(rng, 41);
  const std::vector<int32_t> cancelled = random_prompt(rng, 39);
  GenerateOptions options;
  options.max_tokens = 12;
  for (bool overlap : {false, true}) {
    BatchOptions batch_options;
    batch_options.prefill_chunk_size = 8;
    batch_options.overlap_steps = overlap;
    BatchGenerator generator(model, tokenizer, batch_options);
    const uint64_t a = generator.insert(first, options);
    std::map<uint64_t, GenerationResult> got;
    uint64_t b = UINT64_MAX;  // not inserted yet
    uint64_t c = UINT64_MAX;
    int step = 0;
    while (generator.has_work()) {
      if (step == 1) {
        // Two long prompts join as one group (40 and 38 positions to prefill, padded to 40: five chunks of 8).
        b = generator.insert(longer, options);
        c = generator.insert(cancelled, options);
        model.inputs.clear();
      }
      if (step == 3) {
        EXPECT_TRUE(generator.remove(c));  // cancelled half-way through its prefill
      }
      const bool a_running = got[a].finish_reason.empty();
      const std::vector<BatchResponse> responses = generator.next();
      bool a_answered = false;
      for (const BatchResponse& r : responses) {
        ASSERT_NE(r.uid, c);
        a_answered = a_answered || r.uid == a;
        GenerationResult& result = got[r.uid];
        result.tokens.push_back(r.response.token);
        result.logprobs.push_back(r.response.logprob);
        result.text += r.response.text;
        result.finish_reason = r.response.finish_reason.value_or("");
      }
      EXPECT_TRUE(!a_running || a_answered) << "step " << step << ": the decoding sequence stalled";
      ++step;
      ASSERT_LT(step, 60);
    }
    // The group's prompt went in five chunks of at most 8 positions, one per step beside the decode.
    std::vector<Shape> chunks;
    std::copy_if(model.inputs.begin(), model.inputs.end(), std::back_inserter(chunks),
                 [](const Shape& shape) { return shape[1] > 1; });
    EXPECT_EQ(chunks, (std::vector<Shape>{{2, 8}, {2, 8}, {1, 8}, {1, 8}, {1, 8}})) << "overlap " << overlap;
    const std::string what = overlap ? ", overlapped" : "";
    expect_same_run(got[a], generate(*model_owner, tokenizer, first, options), "the first sequence" + what);
    expect_same_run(got[b], generate(*model_owner, tokenizer, longer, options), "the long prompt" + what);
    EXPECT_EQ(got.count(c), 0U);
  }
}

TEST(BatchGenerator, PrefixCacheComputesOnlyWhatAPromptDoesNotShare) {
  const auto model_owner = tiny_llama(37);
  Recording model(*model_owner);
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(61);
  const std::vector<int32_t> system = random_prompt(rng, 32);  // two blocks of 16
  auto with = [&](const std::vector<int32_t>& tail) {
    std::vector<int32_t> prompt = system;
    prompt.insert(prompt.end(), tail.begin(), tail.end());
    return prompt;
  };
  const std::vector<int32_t> first = with(random_prompt(rng, 6));
  const std::vector<int32_t> second = with(random_prompt(rng, 9));
  const std::vector<int32_t> unrelated = random_prompt(rng, 20);
  GenerateOptions options;
  options.max_tokens = 6;
  BatchOptions batch_options;
  batch_options.prefix_cache_size = 64;
  BatchGenerator generator(model, tokenizer, batch_options);
  std::vector<GenerationResult> got = run_batch(generator, {generator.insert(first, options)});
  expect_same_run(got[0], generate(*model_owner, tokenizer, first, options), "the first prompt");
  // Its 37 positions before the last fill two whole blocks: those are kept, the rest is not.
  EXPECT_EQ(generator.prefix_cache_positions(), 32);
  // The second prompt shares the two system blocks: only its 8 other tokens before the last are prefilled.
  model.inputs.clear();
  got = run_batch(generator, {generator.insert(second, options)});
  expect_same_run(got[0], generate(*model_owner, tokenizer, second, options), "the second prompt");
  EXPECT_EQ(model.inputs.front(), (Shape{1, 8}));
  EXPECT_EQ(generator.prefix_cache_stats().hits, 32U);
  EXPECT_EQ(generator.prefix_cache_stats().queries, first.size() + second.size());
  EXPECT_EQ(generator.prefix_cache_positions(), 32);
  // An unrelated prompt is computed whole, and its one whole block is kept too.
  model.inputs.clear();
  got = run_batch(generator, {generator.insert(unrelated, options)});
  expect_same_run(got[0], generate(*model_owner, tokenizer, unrelated, options), "an unrelated prompt");
  EXPECT_EQ(model.inputs.front(), (Shape{1, 19}));
  EXPECT_EQ(generator.prefix_cache_stats().hits, 32U);
  EXPECT_EQ(generator.prefix_cache_positions(), 48);
  EXPECT_EQ(generator.kv_cache_stats().used_blocks, 0);
  BatchOptions negative;
  negative.prefix_cache_size = -1;
  EXPECT_THROW(BatchGenerator(model, tokenizer, negative), nuvec::error);
}

TEST(BatchGenerator, PromptCacheEqualsTheRequestWithout) {
  const auto model_owner = tiny_llama(23);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(47);
  const std::vector<int32_t> base = random_prompt(rng, 14);
  PromptCache shared;
  GenerateOptions fill;
  fill.max_tokens = 5;
  fill.prompt_cache = &shared;
  (void)generate(model, tokenizer, base, fill);
  const std::vector<int32_t> shared_tokens = shared.tokens;
  const int shared_positions = shared.cache.front()->offset();

  auto extended = [&](std::vector<int32_t> prompt, int more) {
    const std::vector<int32_t> tail = random_prompt(rng, more);
    prompt.insert(prompt.end(), tail.begin(), tail.end());
    return prompt;
  };
  const std::vector<std::vector<int32_t>> prompts = {
      extended(base, 6),                                                   // shares the whole base
      extended(std::vector<int32_t>(base.begin(), base.begin() + 10), 3),  // shares 10 tokens
      extended(shared_tokens, 1),                                          // shares everything the cache holds
      extended({base.front() == 2 ? 3 : 2}, 5),                            // shares nothing
  };
  const std::vector<int> expected_cached = {14, 10, static_cast<int>(shared_tokens.size()), 0};
  auto options_for = [&](size_t i, bool cached) {
    GenerateOptions options;
    options.max_tokens = 6;
    options.sampling.top_logprobs = 1;
    if (i == 1) {
      options.sampling.temperature = 1.1F;
      options.sampling.seed = 9;
    }
    options.prompt_cache = cached ? &shared : nullptr;
    return options;
  };
  for (bool overlap : {false, true}) {
    BatchOptions batch_options;
    batch_options.overlap_steps = overlap;
    BatchGenerator generator(model, tokenizer, batch_options);
    std::vector<uint64_t> uids;
    // Half the requests join while the others decode: each with the prompt cache, then the same without.
    for (size_t i = 0; i < prompts.size(); ++i) {
      if (i == 2) {
        (void)generator.next();
      }
      for (bool cached : {true, false}) {
        uids.push_back(generator.insert(prompts[i], options_for(i, cached)));
      }
    }
    const std::vector<GenerationResult> got = run_batch(generator, uids);
    for (size_t i = 0; i < prompts.size(); ++i) {
      const GenerationResult want = generate(model, tokenizer, prompts[i], options_for(i, false));
      // The first two requests' first tokens came with the step taken before the collection started.
      const size_t skipped = i < 2 ? 1 : 0;
      for (size_t c = 0; c < 2; ++c) {
        const std::string what = "request " + std::to_string(i) + (c == 0 ? " from the prompt cache" : " without") +
                                 (overlap ? ", overlapped" : "");
        const GenerationResult& run = got[2 * i + c];
        EXPECT_EQ(run.tokens, std::vector<int32_t>(want.tokens.begin() + skipped, want.tokens.end())) << what;
        ASSERT_EQ(run.logprobs.size() + skipped, want.logprobs.size()) << what;
        for (size_t t = 0; t < run.logprobs.size(); ++t) {
          EXPECT_NEAR(run.logprobs[t], want.logprobs[t + skipped], 1e-4) << what;
        }
        EXPECT_EQ(run.stats.cached_prompt_tokens, c == 0 ? expected_cached[i] : 0) << what;
      }
    }
  }
  // Requests read the prompt cache and leave it as it was.
  EXPECT_EQ(shared.tokens, shared_tokens);
  EXPECT_EQ(shared.cache.front()->offset(), shared_positions);

  // A window that has dropped positions cannot seed a batched request.
  PromptCache windowed;
  fill.prompt_cache = &windowed;
  fill.max_kv_size = 8;
  (void)generate(model, tokenizer, base, fill);
  GenerateOptions from_window;
  from_window.prompt_cache = &windowed;
  BatchGenerator generator(model, tokenizer);
  EXPECT_NE(expect_error([&] {
              (void)generator.insert(extended(base, 2), from_window);
            }).find("cannot start from a RotatingKVCache that has dropped positions"),
            std::string::npos);
}

// ---------------------------------------------------------------- speculative decoding

TEST(Speculative, GreedyEqualsPlainGreedy) {
  const auto model_owner = tiny_llama(12);
  LanguageModel& model = *model_owner;
  const auto other_owner = tiny_llama(13);
  LanguageModel& other = *other_owner;
  const auto same_owner = tiny_llama(12);
  LanguageModel& same = *same_owner;
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(31);
  for (int length : {1, 7}) {
    const std::vector<int32_t> prompt = random_prompt(rng, length);
    const GenerationResult plain = alone(model, tokenizer, prompt, 13);
    for (LanguageModel* draft : {&other, &same}) {
      for (int num_draft : {1, 3, 4}) {
        GenerateOptions options;
        options.max_tokens = 13;
        options.draft_model = draft;
        options.num_draft = num_draft;
        int from_draft = 0;
        GenerationResult got;
        stream_generate(model, tokenizer, prompt, options, [&](const GenerationResponse& r) {
          got.tokens.push_back(r.token);
          got.logprobs.push_back(r.logprob);
          got.text += r.text;
          got.finish_reason = r.finish_reason.value_or("");
          from_draft += r.from_draft ? 1 : 0;
          return true;
        });
        const std::string what =
            std::string(draft == &same ? "same" : "other") + " draft, num_draft " + std::to_string(num_draft);
        expect_same_run(got, plain, what);
        if (draft == &same) {
          // Every round but the last accepts all its drafts.
          EXPECT_GE(from_draft, 13 - (13 + num_draft) / (num_draft + 1) - 1) << what;
        }
      }
    }
  }
}

/// The model itself as a draft, except that it proposes the wrong token (the argmax + 1) for every position p with
/// p % 4 == 2: how many drafts are accepted then follows from the model's greedy output alone, provided the draft's
/// cache holds exactly the accepted tokens after each round.
class WrongAtTimes : public LanguageModel {
 public:
  explicit WrongAtTimes(LanguageModel& model) : model_(model) {}
  [[nodiscard]] std::string type_name() const override { return "WrongAtTimes"; }
  array forward(const array& tokens, Cache* cache) override {
    const int offset = (*cache)[0]->offset();
    const int length = tokens.shape(1);
    const array logits = model_.forward(tokens, cache);
    const array rolled = concatenate(
        {slice(logits, {0, 0, kVocab - 1}, {1, length, kVocab}), slice(logits, {0, 0, 0}, {1, length, kVocab - 1})}, 2);
    std::vector<int> wrong;
    for (int j = 0; j < length; ++j) {
      wrong.push_back((offset + j + 1) % 4 == 2 ? 1 : 0);  // the position this row predicts
    }
    return where(array(wrong.begin(), {1, length, 1}, bool_), rolled, logits);
  }
  array hidden_states(const array& tokens, Cache* cache) override { return model_.hidden_states(tokens, cache); }
  [[nodiscard]] Cache make_cache() const override { return model_.make_cache(); }
  [[nodiscard]] const std::string& model_type() const override { return model_.model_type(); }
  [[nodiscard]] int vocab_size() const override { return kVocab; }
  [[nodiscard]] int num_layers() const override { return model_.num_layers(); }
  [[nodiscard]] int max_context() const override { return model_.max_context(); }

 private:
  LanguageModel& model_;
};

TEST(Speculative, DraftCacheKeepsOnlyAcceptedTokens) {
  const auto model_owner = tiny_llama(18);
  LanguageModel& model = *model_owner;
  WrongAtTimes draft(model);
  const Tokenizer tokenizer = make_tokenizer();
  const std::vector<int32_t> prompt = {3, 30, 12, 50, 8};
  const int max_tokens = 17;
  const GenerationResult plain = alone(model, tokenizer, prompt, max_tokens);
  for (int num_draft : {2, 3, 5}) {
    // The rounds as they must go: drafts accepted up to the first wrong position, then the model's token.
    int emitted = 0;
    int expected_from_draft = 0;
    while (emitted < max_tokens) {
      const int count = std::min(num_draft, max_tokens - emitted - 1);
      int accepted = 0;
      while (accepted < count && (static_cast<int>(prompt.size()) + emitted + accepted) % 4 != 2) {
        ++accepted;
      }
      expected_from_draft += accepted;
      emitted += accepted + 1;
    }
    GenerateOptions options;
    options.max_tokens = max_tokens;
    options.draft_model = &draft;
    options.num_draft = num_draft;
    std::vector<int32_t> tokens;
    int from_draft = 0;
    stream_generate(model, tokenizer, prompt, options, [&](const GenerationResponse& r) {
      tokens.push_back(r.token);
      from_draft += r.from_draft ? 1 : 0;
      return true;
    });
    EXPECT_EQ(tokens, plain.tokens) << "num_draft " << num_draft;
    EXPECT_EQ(from_draft, expected_from_draft) << "num_draft " << num_draft;
  }
}

TEST(Speculative, PromptCacheEqualsPlainGreedyFromScratch) {
  const auto model_owner = tiny_llama(24);
  LanguageModel& model = *model_owner;
  const auto other_owner = tiny_llama(25);
  const auto same_owner = tiny_llama(24);
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(53);
  const std::vector<int32_t> first = random_prompt(rng, 15);
  std::vector<int32_t> diverging(first.begin(), first.begin() + 9);
  diverging.push_back(first[9] == 2 ? 3 : 2);
  const std::vector<int32_t> plain_first = alone(model, tokenizer, first, 9).tokens;
  std::vector<int32_t> continuing = first;
  continuing.insert(continuing.end(), plain_first.begin(), plain_first.end());
  continuing.insert(continuing.end(), {12, 40});

  // A draft that disagrees with the model (rejections), and the model itself: it accepts as many drafts as in a
  // fresh run only if its cache holds exactly the tokens before its proposals.
  for (LanguageModel* draft : {other_owner.get(), same_owner.get()}) {
    PromptCache reused;
    // A plain generation in the middle shares the cache too (and cuts the draft's back to what it keeps).
    const std::vector<std::pair<std::vector<int32_t>, bool>> requests = {
        {first, true}, {diverging, true}, {first, true}, {diverging, false}, {continuing, true}, {first, true}};
    for (size_t r = 0; r < requests.size(); ++r) {
      const auto& [prompt, speculative] = requests[r];
      const int reusable = reused.cache.empty() ? 0
                                                : std::min(common_prefix_length(reused.tokens, prompt),
                                                           static_cast<int>(prompt.size()) - 1);
      GenerateOptions options;
      options.max_tokens = 9;
      options.num_draft = 3;
      options.draft_model = speculative ? draft : nullptr;
      auto run = [&](PromptCache* cache) {
        options.prompt_cache = cache;
        std::pair<GenerationResult, int> out;
        stream_generate(model, tokenizer, prompt, options, [&](const GenerationResponse& response) {
          out.first.tokens.push_back(response.token);
          out.first.logprobs.push_back(response.logprob);
          out.first.text += response.text;
          out.first.finish_reason = response.finish_reason.value_or("");
          out.first.stats = response.stats;
          out.second += response.from_draft ? 1 : 0;
          return true;
        });
        return out;
      };
      const auto [got, from_draft] = run(&reused);
      const std::string what =
          std::string(draft == same_owner.get() ? "same" : "other") + " draft, request " + std::to_string(r);
      expect_same_run(got, alone(model, tokenizer, prompt, 9), what);
      EXPECT_EQ(got.stats.cached_prompt_tokens, reusable) << what;
      if (r > 0 && speculative) {
        EXPECT_GT(reusable, 0) << what;
      }
      EXPECT_EQ(from_draft, run(nullptr).second) << what;
      std::vector<int32_t> sequence = prompt;
      sequence.insert(sequence.end(), got.tokens.begin(), got.tokens.end());
      ASSERT_LE(reused.tokens.size(), sequence.size()) << what;
      EXPECT_TRUE(std::equal(reused.tokens.begin(), reused.tokens.end(), sequence.begin())) << what;
      EXPECT_GE(reused.tokens.size(), sequence.size() - 1) << what;
      EXPECT_EQ(reused.cache.front()->offset(), static_cast<int>(reused.tokens.size())) << what;
      expect_cache_holds(model, reused.cache, reused.tokens, what + ", model");
      ASSERT_FALSE(reused.draft_cache.empty()) << what;
      const int draft_held = reused.draft_cache.front()->offset();
      ASSERT_LE(draft_held, static_cast<int>(reused.tokens.size())) << what;
      expect_cache_holds(*draft, reused.draft_cache,
                         std::vector<int32_t>(reused.tokens.begin(), reused.tokens.begin() + draft_held),
                         what + ", draft");
    }
  }
}

TEST(Speculative, StoppingMidRoundKeepsOnlyTheEmittedTokens) {
  const auto model_owner = tiny_llama(26);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  const std::vector<int32_t> prompt = {6, 17, 33, 48, 9};
  const GenerationResult plain = alone(model, tokenizer, prompt, 12);
  // The model as its own draft accepts whole rounds of 4: stopping at token 2 stops in the middle of the first.
  const int32_t stop = plain.tokens[2];
  const auto emitted =
      static_cast<std::ptrdiff_t>(std::find(plain.tokens.begin(), plain.tokens.end(), stop) - plain.tokens.begin() + 1);
  ASSERT_LT(emitted, 4);
  PromptCache reused;
  GenerateOptions options;
  options.max_tokens = 12;
  options.num_draft = 4;
  options.draft_model = &model;
  options.stop_ids = {stop};
  options.prompt_cache = &reused;
  EXPECT_EQ(generate(model, tokenizer, prompt, options).tokens,
            std::vector<int32_t>(plain.tokens.begin(), plain.tokens.begin() + emitted));
  std::vector<int32_t> held = prompt;
  held.insert(held.end(), plain.tokens.begin(), plain.tokens.begin() + emitted);
  EXPECT_EQ(reused.tokens, held);
  expect_cache_holds(model, reused.cache, held, "model");
  const int draft_held = reused.draft_cache.front()->offset();
  ASSERT_LE(draft_held, static_cast<int>(held.size()));
  expect_cache_holds(model, reused.draft_cache, std::vector<int32_t>(held.begin(), held.begin() + draft_held), "draft");
  // Going on from there equals a fresh run.
  held.push_back(20);
  options.stop_ids.clear();
  options.max_tokens = 7;
  expect_same_run(generate(model, tokenizer, held, options), alone(model, tokenizer, held, 7), "continuing");
}

TEST(Speculative, MaxKvSizeThatHoldsTheRequestEqualsPlainGreedy) {
  const auto model_owner = tiny_llama(27);
  LanguageModel& model = *model_owner;
  const auto draft_owner = tiny_llama(28);
  LanguageModel& draft = *draft_owner;
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(59);
  const std::vector<int32_t> prompt = random_prompt(rng, 11);
  GenerateOptions options;
  options.max_tokens = 10;
  options.draft_model = &draft;
  options.max_kv_size = 20;  // exactly prompt + max_tokens - 1
  expect_same_run(generate(model, tokenizer, prompt, options), alone(model, tokenizer, prompt, 10), "window 20");
  options.max_kv_size = 19;
  EXPECT_NE(expect_error([&] {
              (void)generate(model, tokenizer, prompt, options);
            }).find("max_kv_size 19 is smaller than the 20 positions"),
            std::string::npos);
}

/// Total variation distance between two distributions.
double total_variation(const std::vector<double>& p, const std::vector<double>& q) {
  double d = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    d += std::abs(p[i] - q[i]);
  }
  return d / 2;
}

std::vector<double> softmax_of_last(LanguageModel& model, const std::vector<int32_t>& prompt, float temperature) {
  const array logits = model.forward(array(prompt.begin(), {1, static_cast<int>(prompt.size())}, int32), nullptr);
  array last = slice(logits, {0, logits.shape(1) - 1, 0}, {1, logits.shape(1), kVocab});
  last.eval();
  const float* logit = last.data<float>();
  const float top = *std::max_element(logit, logit + kVocab);
  std::vector<double> p(kVocab);
  double total = 0;
  for (int i = 0; i < kVocab; ++i) {
    p[i] = std::exp((logit[i] - top) / temperature);
    total += p[i];
  }
  for (double& x : p) {
    x /= total;
  }
  return p;
}

TEST(Speculative, SamplingFollowsTheModelsDistribution) {
  const auto model_owner = tiny_llama(14);
  LanguageModel& model = *model_owner;
  const auto draft_owner = tiny_llama(15);
  LanguageModel& draft = *draft_owner;
  const Tokenizer tokenizer = make_tokenizer();
  const std::vector<int32_t> prompt = {7, 21, 40};
  const float temperature = 1.5F;
  const std::vector<double> p = softmax_of_last(model, prompt, temperature);
  const std::vector<double> q = softmax_of_last(draft, prompt, temperature);
  ASSERT_GT(total_variation(p, q), 0.3) << "the draft must disagree with the model for this test to mean anything";
  // With max_tokens 2 the draft proposes one token and the model accepts or replaces it: the first token must
  // follow the model's distribution, not the draft's.
  const int runs = 1200;
  std::vector<double> counts(kVocab, 0);
  GenerateOptions options;
  options.max_tokens = 2;
  options.draft_model = &draft;
  options.sampling.temperature = temperature;
  for (int seed = 0; seed < runs; ++seed) {
    options.sampling.seed = seed;
    bool first = true;
    stream_generate(model, tokenizer, prompt, options, [&](const GenerationResponse& r) {
      if (first) {
        counts[r.token] += 1.0 / runs;
      }
      first = false;
      return true;
    });
  }
  // The distance sampling noise alone gives: about sum_i sqrt(2 p_i (1 - p_i) / (pi runs)) / 2.
  double noise = 0;
  for (double x : p) {
    noise += 0.5 * std::sqrt(2 * x * (1 - x) / (3.14159 * runs));
  }
  EXPECT_LT(total_variation(counts, p), 2 * noise);
  // The same seed gives the same tokens.
  options.sampling.seed = 99;
  options.max_tokens = 9;
  EXPECT_EQ(generate(model, tokenizer, prompt, options).tokens, generate(model, tokenizer, prompt, options).tokens);
}

TEST(Speculative, BadRequests) {
  const auto model_owner = tiny_llama(16);
  LanguageModel& model = *model_owner;
  const auto draft_owner = tiny_llama(17);
  LanguageModel& draft = *draft_owner;
  const Tokenizer tokenizer = make_tokenizer();
  GenerateOptions options;
  options.draft_model = &draft;
  options.num_draft = 0;
  EXPECT_NE(expect_error([&] { (void)generate(model, tokenizer, {3}, options); }).find("num_draft must be positive"),
            std::string::npos);
  options.num_draft = 2;
  // A window too small for the whole request would wrap, and a wrapped rotating cache cannot drop drafts.
  options.max_tokens = 10;
  options.max_kv_size = 12;
  EXPECT_NE(expect_error([&] {
              (void)generate(model, tokenizer, {3, 4, 5, 6}, options);
            }).find("max_kv_size 12 is smaller than the 13 positions this request needs"),
            std::string::npos);
}

}  // namespace
}  // namespace nuvec::lm
