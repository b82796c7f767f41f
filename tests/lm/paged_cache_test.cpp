// The paged KV cache of the batch generator: the block pool's bookkeeping (holders, registered prefixes, least
// recently used first), sequences in scattered blocks against a fresh cache, requests sharing a prefix's blocks,
// a conversation's next turn sharing the blocks its answer filled, preemption when the pool runs out (streams equal
// to the requests alone) and the admission margin that keeps a preempted sequence from going again at once,
// cancelled sequences giving back every block, and the requests the pool cannot hold.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "nuvec/core/error.h"
#include "nuvec/core/ops.h"
#include "nuvec/lm/lm.h"
#include "tests/lm/generate_test_util.h"

namespace nuvec::lm {
namespace {

using test::expect_cache_holds;
using test::expect_error;
using test::expect_same_run;
using test::kVocab;
using test::make_tokenizer;
using test::random_prompt;
using test::Recording;
using test::run_batch;
using test::tiny_llama;

TEST(BlockPool, SharesRegisteredBlocksAndForgetsTheLeastRecentlyUsedFirst) {
  BlockPool pool(4, 2, 4);
  const std::vector<int32_t> tokens = {5, 6, 7, 8, 9};
  std::vector<int> first;
  for (int i = 0; i < pool.blocks_for(5); ++i) {
    first.push_back(*pool.allocate());
  }
  EXPECT_EQ(first, (std::vector<int>{0, 1, 2}));  // the lowest free blocks
  pool.publish(tokens, first);
  EXPECT_EQ(pool.registered(), 2);  // the two full blocks; the third holds one token
  // A prompt that starts the same way takes the blocks whose tokens match, in a row.
  EXPECT_EQ(pool.match(std::vector<int32_t>{5, 6, 7, 8, 1}), (std::vector<int>{0, 1}));
  EXPECT_EQ(pool.match(std::vector<int32_t>{5, 6, 1, 8}), (std::vector<int>{0}));
  EXPECT_EQ(pool.match(std::vector<int32_t>{7, 8}), std::vector<int>{});  // block 1 follows block 0 only
  EXPECT_EQ(pool.used(), 3);
  pool.release({0, 1});
  pool.release({0});
  pool.release(first);
  EXPECT_EQ(pool.used(), 0);
  EXPECT_EQ(pool.available(), 4);
  // Free blocks go first, then registered ones nobody holds: the tail of the last release (block 1) before block 0.
  EXPECT_EQ(*pool.allocate(), 2);
  EXPECT_EQ(*pool.allocate(), 3);
  EXPECT_EQ(*pool.allocate(), 1);
  EXPECT_EQ(pool.registered(), 1);
  EXPECT_EQ(pool.match(tokens), (std::vector<int>{0}));
  EXPECT_FALSE(pool.allocate().has_value());
  EXPECT_EQ(pool.used(), 4);

  // At most one registered block waits unheld: the head of a released prompt outlives its tail.
  BlockPool small(4, 2, 1);
  const std::vector<int> held = {*small.allocate(), *small.allocate()};
  small.publish(tokens, held);
  small.release(held);
  EXPECT_EQ(small.registered(), 1);
  EXPECT_EQ(small.match(tokens), (std::vector<int>{0}));
  EXPECT_THROW(BlockPool(0, 16, 0), nuvec::error);
}

TEST(PagedKVStore, SequencesInScatteredBlocksDecodeAsAlone) {
  const auto model_owner = tiny_llama(41);
  LanguageModel& model = *model_owner;
  std::mt19937 rng(71);
  std::vector<int32_t> a = random_prompt(rng, 5);
  std::vector<int32_t> b = random_prompt(rng, 2);
  // Blocks of 2 positions, out of order, with room for two more positions each.
  PagedKVStore store(model.num_layers(), 8, 2);
  const std::vector<int> table_a = {5, 2, 7};
  const std::vector<int> table_b = {0, 3};
  for (const auto& [prompt, table] : {std::pair{&a, &table_a}, std::pair{&b, &table_b}}) {
    Cache prefill = make_batch_cache(model, {0});
    const int length = static_cast<int>(prompt->size()) - 1;
    (void)model.forward(array(prompt->begin(), {1, length}, int32), &prefill);
    store.write(prefill, 0, 0, length, *table);
  }
  store.eval();
  // The last position's logits of the whole sequence, computed without a cache.
  auto last_logits = [&](const std::vector<int32_t>& tokens) {
    const array logits = model.forward(array(tokens.begin(), {1, static_cast<int>(tokens.size())}, int32), nullptr);
    return reshape(slice(logits, {0, logits.shape(1) - 1, 0}, {1, logits.shape(1), logits.shape(2)}), {-1});
  };
  for (int step = 0; step < 2; ++step) {
    Cache view = store.view({&table_a, &table_b}, {static_cast<int>(a.size()) - 1, static_cast<int>(b.size()) - 1});
    const std::vector<int32_t> inputs = {a.back(), b.back()};
    const array logits = model.forward(array(inputs.begin(), {2, 1}, int32), &view);
    const array got_a = reshape(slice(logits, {0, 0, 0}, {1, 1, kVocab}), {-1});
    const array got_b = reshape(slice(logits, {1, 0, 0}, {2, 1, kVocab}), {-1});
    EXPECT_LT(max(abs(subtract(got_a, last_logits(a)))).item<float>(), 1e-4F) << "step " << step;
    EXPECT_LT(max(abs(subtract(got_b, last_logits(b)))).item<float>(), 1e-4F) << "step " << step;
    a.push_back(static_cast<int32_t>(2 + step));
    b.push_back(static_cast<int32_t>(9 + step));
  }
  // Read back in order, the blocks hold what a fresh cache computes.
  expect_cache_holds(model, store.read(table_a, 6), std::vector<int32_t>(a.begin(), a.end() - 1), "sequence a");
  expect_cache_holds(model, store.read(table_b, 3), std::vector<int32_t>(b.begin(), b.end() - 1), "sequence b");
}

TEST(BatchGenerator, RequestsWithACommonPrefixHoldTheSameBlocks) {
  const auto model_owner = tiny_llama(43);
  Recording model(*model_owner);
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(73);
  const std::vector<int32_t> system = random_prompt(rng, 48);  // three blocks of 16
  std::vector<int32_t> first = system;
  std::vector<int32_t> second = system;
  for (int32_t t : random_prompt(rng, 10)) {
    first.push_back(t);
  }
  for (int32_t t : random_prompt(rng, 10)) {
    second.push_back(t);
  }
  GenerateOptions options;
  options.max_tokens = 6;
  BatchOptions batch_options;
  batch_options.prefix_cache_size = 256;
  BatchGenerator generator(model, tokenizer, batch_options);
  std::map<uint64_t, GenerationResult> got;
  auto collect = [&](const std::vector<BatchResponse>& responses) {
    for (const BatchResponse& r : responses) {
      got[r.uid].tokens.push_back(r.response.token);
      got[r.uid].logprobs.push_back(r.response.logprob);
      got[r.uid].text += r.response.text;
      got[r.uid].finish_reason = r.response.finish_reason.value_or("");
    }
  };
  const uint64_t a = generator.insert(first, options);
  collect(generator.next());
  // 57 positions and the one the next step writes: four blocks.
  EXPECT_EQ(generator.kv_cache_stats().used_blocks, 4);
  model.inputs.clear();
  const uint64_t b = generator.insert(second, options);
  collect(generator.next());
  // The second request holds the first's three system blocks and one of its own: five blocks, not eight.
  EXPECT_EQ(generator.kv_cache_stats().used_blocks, 5);
  EXPECT_EQ(generator.prefix_cache_stats().hits, 48U);
  EXPECT_EQ(model.inputs.front(), (Shape{1, 9}));  // only its own tokens before the last are computed
  while (generator.has_work()) {
    collect(generator.next());
  }
  expect_same_run(got[a], generate(*model_owner, tokenizer, first, options), "the first request");
  expect_same_run(got[b], generate(*model_owner, tokenizer, second, options), "the second request");
  EXPECT_EQ(generator.kv_cache_stats().used_blocks, 0);
  EXPECT_EQ(generator.kv_cache_stats().preemptions, 0U);
}

TEST(BatchGenerator, ARequestPreemptedWhenThePoolRunsOutContinuesItsStream) {
  const auto model_owner = tiny_llama(47);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(79);
  const std::vector<std::vector<int32_t>> prompts = {random_prompt(rng, 9), random_prompt(rng, 12),
                                                     random_prompt(rng, 7)};
  auto options_for = [](size_t i) {
    GenerateOptions options;
    options.max_tokens = 20;
    options.sampling.top_logprobs = static_cast<int>(i) + 1;
    return options;
  };
  for (bool prefix_cache : {false, true}) {
    for (bool overlap : {false, true}) {
      // Four blocks of 16: each request fits alone, but the three outgrow the pool once they pass 16 positions.
      BatchOptions batch_options;
      batch_options.kv_cache_tokens = 64;
      batch_options.prefix_cache_size = prefix_cache ? 64 : 0;
      batch_options.overlap_steps = overlap;
      BatchGenerator generator(model, tokenizer, batch_options);
      std::vector<uint64_t> uids;
      for (size_t i = 0; i < prompts.size(); ++i) {
        uids.push_back(generator.insert(prompts[i], options_for(i)));
      }
      const std::vector<GenerationResult> got = run_batch(generator, uids);
      const std::string what = std::string(prefix_cache ? "prefix cache" : "no prefix cache") +
                               (overlap ? ", overlapped" : "") + ", sequence ";
      EXPECT_GT(generator.kv_cache_stats().preemptions, 0U) << what;
      for (size_t i = 0; i < prompts.size(); ++i) {
        expect_same_run(got[i], generate(model, tokenizer, prompts[i], options_for(i)), what + std::to_string(i));
      }
      EXPECT_EQ(generator.kv_cache_stats().used_blocks, 0) << what;
    }
  }
}

TEST(BatchGenerator, CancelledSequencesGiveBackEveryBlock) {
  const auto model_owner = tiny_llama(53);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(83);
  GenerateOptions options;
  options.max_tokens = 30;
  BatchOptions batch_options;
  batch_options.max_batch_size = 3;
  batch_options.prefill_chunk_size = 8;
  batch_options.prefix_cache_size = 32;
  batch_options.kv_cache_tokens = 160;
  BatchGenerator generator(model, tokenizer, batch_options);
  const uint64_t decoding = generator.insert(random_prompt(rng, 20), options);
  (void)generator.next();
  const uint64_t prefilling = generator.insert(random_prompt(rng, 40), options);
  (void)generator.next();  // its prompt is one chunk in
  const uint64_t kept = generator.insert(random_prompt(rng, 5), options);
  const uint64_t waiting = generator.insert(random_prompt(rng, 6), options);
  (void)generator.next();  // `kept` takes the batch's last place; `waiting` waits
  EXPECT_EQ(generator.active() + generator.waiting(), 4);
  EXPECT_GT(generator.kv_cache_stats().used_blocks, 0);
  EXPECT_TRUE(generator.remove(prefilling));  // half-way through its prompt
  EXPECT_TRUE(generator.remove(waiting));
  (void)generator.next();
  EXPECT_TRUE(generator.remove(decoding));
  while (generator.has_work()) {
    for (const BatchResponse& r : generator.next()) {
      EXPECT_EQ(r.uid, kept);
    }
  }
  const KVCacheStats stats = generator.kv_cache_stats();
  EXPECT_EQ(stats.used_blocks, 0);
  EXPECT_EQ(stats.blocks, 10);
  EXPECT_LE(generator.prefix_cache_positions(), 32);
}

TEST(BatchGenerator, RefusesARequestThePoolCannotHoldAlone) {
  const auto model_owner = tiny_llama(59);
  const Tokenizer tokenizer = make_tokenizer();
  BatchOptions batch_options;
  batch_options.kv_cache_tokens = 40;  // three blocks of 16: 48 positions
  BatchGenerator generator(*model_owner, tokenizer, batch_options);
  std::mt19937 rng(89);
  GenerateOptions options;
  options.max_tokens = 40;
  const std::string message = expect_error([&] { (void)generator.insert(random_prompt(rng, 10), options); });
  EXPECT_NE(message.find("the KV cache holds 48 positions for all sequences together; this request may need 50 (10 "
                         "in the prompt, 40 to generate)"),
            std::string::npos)
      << message;
  options.max_tokens = 38;
  (void)generator.insert(random_prompt(rng, 10), options);
  BatchOptions negative;
  negative.kv_cache_tokens = -1;
  EXPECT_THROW(BatchGenerator(*model_owner, tokenizer, negative), nuvec::error);
}

TEST(BatchGenerator, AConversationsNextTurnReusesTheBlocksItsAnswerFilled) {
  const auto model_owner = tiny_llama(97);
  Recording model(*model_owner);
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(101);
  const std::vector<int32_t> question = random_prompt(rng, 20);
  const std::vector<int32_t> follow_up = random_prompt(rng, 7);
  GenerateOptions options;
  options.max_tokens = 30;
  for (bool overlap : {false, true}) {
    const std::string what = overlap ? ", overlapped" : "";
    BatchOptions batch_options;
    batch_options.prefix_cache_size = 256;
    batch_options.overlap_steps = overlap;
    BatchGenerator generator(model, tokenizer, batch_options);
    const std::vector<GenerationResult> first = run_batch(generator, {generator.insert(question, options)});
    expect_same_run(first[0], generate(*model_owner, tokenizer, question, options), "the first turn" + what);
    // The question and the answer but its last token (never fed back) fill 20 + 29 = 49 positions: three whole
    // blocks, two of them filled by generated tokens.
    EXPECT_EQ(generator.prefix_cache_positions(), 48) << what;
    // The next turn's prompt holds the question, the answer and a new message: 57 tokens, of which the 56 before
    // the last are stored; the three blocks are shared, so only 8 positions are computed.
    std::vector<int32_t> next = question;
    next.insert(next.end(), first[0].tokens.begin(), first[0].tokens.end());
    next.insert(next.end(), follow_up.begin(), follow_up.end());
    model.inputs.clear();
    const std::vector<GenerationResult> second = run_batch(generator, {generator.insert(next, options)});
    expect_same_run(second[0], generate(*model_owner, tokenizer, next, options), "the next turn" + what);
    EXPECT_EQ(generator.prefix_cache_stats().hits, 48U) << what;
    EXPECT_EQ(model.inputs.front(), (Shape{1, 8})) << what;
    EXPECT_EQ(generator.kv_cache_stats().used_blocks, 0) << what;
  }
}

TEST(BatchGenerator, APreemptedSequenceComesBackOnlyWithRoomToGrow) {
  const auto model_owner = tiny_llama(103);
  LanguageModel& model = *model_owner;
  const Tokenizer tokenizer = make_tokenizer();
  std::mt19937 rng(109);
  std::uniform_int_distribution<int> length(4, 14);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 6; ++i) {
    prompts.push_back(random_prompt(rng, length(rng)));
  }
  GenerateOptions options;
  options.max_tokens = 20;
  // Without a margin a sequence comes back as soon as its context fits and is the first to go again: one is
  // preempted twice. With the default margin none is.
  for (int margin : {0, BatchOptions{}.admission_margin}) {
    const std::string what = "margin " + std::to_string(margin);
    // Twelve blocks of 4 positions for six requests that grow to 6 or 8 blocks each.
    BatchOptions batch_options;
    batch_options.kv_block_size = 4;
    batch_options.kv_cache_tokens = 48;
    batch_options.admission_margin = margin;
    BatchGenerator generator(model, tokenizer, batch_options);
    std::map<uint64_t, size_t> which;
    for (size_t i = 0; i < prompts.size(); ++i) {
      which[generator.insert(prompts[i], options)] = i;
    }
    // A sequence that gave a token, had not finished, and gives none at the next step was preempted.
    std::vector<GenerationResult> got(prompts.size());
    std::vector<int> preempted(prompts.size(), 0);
    std::set<uint64_t> going;
    for (int step = 0; generator.has_work(); ++step) {
      ASSERT_LT(step, 200) << what;
      std::set<uint64_t> gave;
      std::set<uint64_t> still;
      for (const BatchResponse& r : generator.next()) {
        GenerationResult& result = got[which.at(r.uid)];
        result.tokens.push_back(r.response.token);
        result.logprobs.push_back(r.response.logprob);
        result.text += r.response.text;
        result.finish_reason = r.response.finish_reason.value_or("");
        gave.insert(r.uid);
        if (!r.response.finish_reason) {
          still.insert(r.uid);
        }
      }
      for (uint64_t uid : going) {
        preempted[which.at(uid)] += gave.contains(uid) ? 0 : 1;
      }
      going = std::move(still);
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
      expect_same_run(got[i], generate(model, tokenizer, prompts[i], options), what + ", sequence " + std::to_string(i));
    }
    const int most = *std::max_element(preempted.begin(), preempted.end());
    EXPECT_EQ(most, margin == 0 ? 2 : 1) << what;
    EXPECT_EQ(generator.kv_cache_stats().used_blocks, 0) << what;
  }
}

}  // namespace
}  // namespace nuvec::lm
