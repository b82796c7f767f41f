#pragma once

// Continuous batching: several sequences decode together, one forward pass per step for all of them. Sequences join
// between steps (their prompts are prefilled as a batch of their own, then merged into the running batch) and leave
// when they finish, so a server can keep the batch full while requests come and go. While the batch decodes, a
// joining group's prompts go in one chunk per step, so running sequences keep getting a token every step while a
// long prompt arrives.
//
// Keys and values live in one pool of blocks shared by every sequence (BlockPool for the bookkeeping, PagedKVStore for
// the arrays), of BatchOptions::kv_cache_tokens positions in all. Each sequence holds a table of the blocks its
// positions are in. A waiting sequence joins only when the pool can hold its prompt and a few blocks of growth; a
// prompt whose leading full blocks are already registered (a shared system prompt, earlier turns of a conversation with
// their answers, a sequence computed before) takes those blocks, held by both, and computes only the rest: a block is
// registered once full, whether the prompt or generated tokens filled it. A step that needs a block when none is free
// (after forgetting registered blocks nobody holds, least recently used first) preempts the most recently admitted
// sequence: its blocks go back to the pool and it waits again at the front of the queue, to be computed again later
// from its prompt and the tokens it has generated (its sampler and output carry on, so its stream simply continues). A
// request that could outgrow the whole pool alone is refused when it is inserted.

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "nuvec/lm/cache/kv_cache.h"
#include "nuvec/lm/generate/block_pool.h"
#include "nuvec/lm/generate/generate.h"
#include "nuvec/lm/generate/paged_cache.h"
#include "nuvec/lm/models/language_model.h"
#include "nuvec/lm/models/load.h"
#include "nuvec/lm/sample/sampling.h"
#include "nuvec/lm/tokenizer/tokenizer.h"

namespace nuvec::lm {

struct BatchOptions {
  /// The most sequences decoding at once; more wait for a place.
  int max_batch_size = 32;
  /// The most waiting prompts prefilled together in one batch. Prompts admitted at once are grouped by length, so
  /// a short prompt is not padded to a long one.
  int prefill_batch_size = 8;
  /// Prompts go through the model this many positions at a time: one chunk per step while other sequences decode,
  /// all at once when none does.
  int prefill_chunk_size = 512;
  /// Positions of prompt keys and values kept after their prefill, so that a later prompt that starts the same way
  /// (a shared system prompt, a conversation's earlier turns) computes only the rest; the least recently used go
  /// first. 0 keeps none. Prompts share whole blocks only (kv_block_size positions).
  int prefix_cache_size = 0;
  /// Positions of keys and values the pool holds for all sequences together; 0: max_batch_size times the model's
  /// context (8192 when the model does not say), so that every sequence can grow to the full context.
  int kv_cache_tokens = 0;
  /// Positions per block of the pool.
  int kv_block_size = 16;
  /// Blocks of growth a waiting sequence needs free besides those of its context to join (fewer when it cannot
  /// grow that far), so that a sequence just admitted, or just preempted and back, is not preempted at once.
  int admission_margin = 2;
  /// Ids that end every sequence, besides the tokenizer's EOS and end-of-turn ids and each sequence's own.
  std::vector<int32_t> stop_ids;
  /// Whether each step is built and started before the previous step's tokens are read back (unset: only when the
  /// default device is a GPU; see GenerateOptions::overlap_steps). Steps stay one at a time while a sequence's
  /// penalties need its newest token on the host.
  std::optional<bool> overlap_steps;
};

/// Prompt tokens looked up in the prefix cache, and how many of them it held.
struct PrefixCacheStats {
  uint64_t queries = 0;
  uint64_t hits = 0;
};

/// The pool of KV-cache blocks: its size, the blocks sequences hold now, and the preemptions so far.
struct KVCacheStats {
  int block_size = 0;
  int blocks = 0;
  int used_blocks = 0;
  uint64_t preemptions = 0;
};

/// One sequence's token from a step.
struct BatchResponse {
  uint64_t uid = 0;
  GenerationResponse response;
};

class BatchGenerator {
 public:
  /// The model and tokenizer must outlive the generator.
  BatchGenerator(LanguageModel& model, const Tokenizer& tokenizer, BatchOptions options = {});
  /// For a loaded model (which must outlive the generator): its tokenizer, and its generation config's EOS ids
  /// added to options.stop_ids.
  explicit BatchGenerator(const LoadedModel& loaded, BatchOptions options = {});
  ~BatchGenerator();
  BatchGenerator(const BatchGenerator&) = delete;
  BatchGenerator& operator=(const BatchGenerator&) = delete;
  BatchGenerator(BatchGenerator&&) = delete;
  BatchGenerator& operator=(BatchGenerator&&) = delete;

  /// Queues a prompt; it joins the batch at the next step with room. Returns its uid. Per-sequence options:
  /// max_tokens, sampling, stop strings and ids, skip_special_tokens, and prompt_cache: the request starts from the
  /// prefix of the prompt the cache holds and computes only the rest. The prompt cache is read here and never
  /// changed (many requests may share one); it must hold one sequence in growing caches (or rotating ones that have
  /// not wrapped). max_kv_size and draft models are for single sequences and are refused.
  /// A request whose prompt and max_tokens together pass kv_cache_tokens is refused (invalid argument).
  uint64_t insert(const std::vector<int32_t>& prompt, const GenerateOptions& options = {});
  /// Lets waiting sequences join, then runs one decoding step for every active sequence in one forward pass and
  /// returns each one's token; sequences whose response has a finish reason have left the batch. The statistics'
  /// peak memory counts from the step at which the batch last became busy.
  std::vector<BatchResponse> next();
  /// Drops a sequence, waiting or active (a cancelled request); returns whether it was there.
  bool remove(uint64_t uid);

  /// Sequences decoding now, and sequences waiting to join (queued, or their prompts being prefilled).
  [[nodiscard]] int active() const { return static_cast<int>(active_.size()); }
  [[nodiscard]] int waiting() const { return static_cast<int>(waiting_.size()) + prefilling(); }
  /// Whether next() has anything to do.
  [[nodiscard]] bool has_work() const { return !active_.empty() || waiting() > 0; }
  /// The prefix cache's token counts so far, and the positions it holds now.
  [[nodiscard]] const PrefixCacheStats& prefix_cache_stats() const { return prefix_stats_; }
  [[nodiscard]] int prefix_cache_positions() const;
  [[nodiscard]] KVCacheStats kv_cache_stats() const;

 private:
  struct Sequence;
  struct Prefill;

  /// Sequences whose prompts are being prefilled.
  [[nodiscard]] int prefilling() const;
  /// Starts prefilling waiting prompts in groups while the batch and the pool have room.
  void admit();
  /// Gives `sequence` blocks for every position it has to store and the one its next step writes, taking the
  /// registered blocks its context starts with; returns false (holding nothing) when the pool has too few.
  bool reserve(Sequence& sequence);
  /// Registers the sequence's blocks that have filled since it last did, when the prefix cache is on.
  void publish(Sequence& sequence);
  /// Gives every active sequence a block for the position the next step writes; when the pool runs out, preempts
  /// (when `may_preempt`) or returns false.
  bool make_room(bool may_preempt);
  /// Sends the most recently admitted sequence, active or prefilling, back to the front of the queue.
  void preempt_latest();
  /// Puts a sequence that left the batch or its prefill back at the front of the queue, holding no blocks.
  void requeue(std::unique_ptr<Sequence> sequence);
  /// Puts `group` (prompts without a cached prefix, or one with) in the prefill queue.
  void start_prefill(std::vector<std::unique_ptr<Sequence>> group);
  /// Prefills every queued group to its end when nothing decodes, else one chunk of the first; groups done join.
  void advance_prefill();
  /// Merges a prefilled group into the batch.
  void join(Prefill prefill);
  /// Feeds `inputs` (B, 1) to `sequences`, each writing the position after those it stored: each one's next
  /// choice, not yet computed.
  SampledTokens step(const std::vector<Sequence*>& sequences, const array& inputs);
  /// Takes the active sequences at `rows` out of the batch and its pending tokens (still holding their blocks).
  std::vector<std::unique_ptr<Sequence>> drop_rows(const std::vector<int>& rows);
  /// Takes the sequence at `row` out of the prefill group `prefill` (still holding its blocks); the group goes
  /// with its last sequence.
  std::unique_ptr<Sequence> leave_prefill(std::deque<Prefill>::iterator prefill, int row);

  LanguageModel& model_;
  const Tokenizer& tokenizer_;
  BatchOptions options_;
  uint64_t next_uid_ = 0;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::deque<Prefill> prefilling_;
  PrefixCacheStats prefix_stats_;
  std::vector<std::unique_ptr<Sequence>> active_;
  BlockPool pool_;
  PagedKVStore store_;
  uint64_t admissions_ = 0;
  uint64_t preemptions_ = 0;
  /// Each active sequence's next choice, built (and, overlapped, being computed) but not yet read back; none when
  /// the next step is built from the tokens read back.
  std::optional<SampledTokens> pending_;
};

}  // namespace nuvec::lm
