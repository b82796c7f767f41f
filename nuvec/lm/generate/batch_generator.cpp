#include "nuvec/lm/generate/batch_generator.h"

#include <algorithm>
#include <span>
#include <string>
#include <utility>

#include "nuvec/core/allocator.h"
#include "nuvec/core/ops.h"
#include "nuvec/lm/cache/prompt_cache.h"
#include "nuvec/lm/generate/batch_cache.h"
#include "nuvec/lm/generate/sequence.h"

namespace nuvec::lm {
namespace {

/// `a` (B, w) with zero columns after it up to `width`.
array widened(const array& a, int width) {
  if (a.shape(1) == width) {
    return a;
  }
  return concatenate({a, zeros({a.shape(0), width - a.shape(1)}, a.dtype())}, 1);
}

/// The rows of `a` followed by those of `b`; the narrower top-token columns are padded (each row reads only its own
/// top_counts entries).
SampledTokens joined(const SampledTokens& a, const SampledTokens& b) {
  const int width = std::max(a.top_tokens.shape(1), b.top_tokens.shape(1));
  std::vector<int> counts = a.top_counts;
  counts.insert(counts.end(), b.top_counts.begin(), b.top_counts.end());
  return SampledTokens{
      .tokens = concatenate({a.tokens, b.tokens}, 0),
      .logprobs = concatenate({a.logprobs, b.logprobs}, 0),
      .top_tokens = concatenate({widened(a.top_tokens, width), widened(b.top_tokens, width)}, 0),
      .top_logprobs = concatenate({widened(a.top_logprobs, width), widened(b.top_logprobs, width)}, 0),
      .top_counts = std::move(counts),
  };
}

/// The rows of `choices` at `rows`, in that order.
SampledTokens rows_of(const SampledTokens& choices, const std::vector<int>& rows) {
  const array index(rows.begin(), {static_cast<int>(rows.size())}, int32);
  std::vector<int> counts;
  counts.reserve(rows.size());
  for (int r : rows) {
    counts.push_back(choices.top_counts[r]);
  }
  return SampledTokens{
      .tokens = take(choices.tokens, index, 0),
      .logprobs = take(choices.logprobs, index, 0),
      .top_tokens = take(choices.top_tokens, index, 0),
      .top_logprobs = take(choices.top_logprobs, index, 0),
      .top_counts = std::move(counts),
  };
}

/// Feeds `inputs` (B, 1) to the model over `cache`; each row's choice, not yet computed.
SampledTokens decode(LanguageModel& model, Cache& cache, const array& inputs, const std::vector<SamplingRow>& rows) {
  const array logits = model.forward(inputs, &cache);
  return sample(reshape(logits, {inputs.shape(0), logits.shape(-1)}), rows);
}

}  // namespace

struct BatchGenerator::Sequence {
  Sequence(uint64_t id, const std::vector<int32_t>& tokens, const GenerateOptions& options, const LanguageModel& model,
           const Tokenizer& tokenizer, int cached_tokens, Cache cached_prefix)
      : uid(id),
        context(tokens.begin(), tokens.end() - 1),
        max_tokens(options.max_tokens),
        cached(cached_tokens),
        prefix(std::move(cached_prefix)),
        sampler(options.sampling, model.vocab_size(), tokens, options.constraint,
                detail::stop_ids(tokenizer, options.stop_ids), options.hooks),
        output(tokenizer, options, static_cast<int>(tokens.size()), cached_tokens),
        next(tokens.back()) {}

  uint64_t uid;
  /// The tokens whose keys and values the sequence stores: its prompt but the last, then every token fed since (so
  /// a preempted sequence is computed again from its prompt and what it generated).
  std::vector<int32_t> context;
  int max_tokens;
  /// The context tokens `prefix` (a batch cache of this sequence alone) holds until the sequence joins the batch: a
  /// prompt cache's, or the registered blocks' it starts from.
  int cached;
  Cache prefix;
  detail::SequenceSampler sampler;
  detail::SequenceOutput output;
  /// The token to feed when no step is under way: the prompt's last, then each one read back.
  int32_t next;
  /// The blocks of the pool the sequence holds; the first `shared` positions came registered from the pool.
  std::vector<int> blocks;
  int shared = 0;
  /// Positions its blocks hold, or will once the steps built so far are computed.
  int stored = 0;
  /// Its leading full blocks offered to the prefix cache so far.
  int published = 0;
  /// When it was last admitted: the latest goes first when the pool runs out.
  uint64_t admitted = 0;
};

/// A group of prompts on its way into the batch: every sequence's context after its cached prefix, left-padded to a
/// common length, goes into the group's cache a chunk at a time; the group's blocks are written when it joins.
struct BatchGenerator::Prefill {
  std::vector<std::unique_ptr<Sequence>> group;
  Cache cache;
  array tokens;  // (group, length)
  int done = 0;  // positions already in the cache

  [[nodiscard]] int length() const { return tokens.shape(1); }
};

namespace {

BatchOptions checked(BatchOptions options) {
  auto check = [](int value, const char* name) {
    if (value <= 0) {
      throw_invalid(std::string("[BatchGenerator] ") + name + " must be positive; got " + std::to_string(value) + ".");
    }
  };
  check(options.max_batch_size, "max_batch_size");
  check(options.prefill_batch_size, "prefill_batch_size");
  check(options.prefill_chunk_size, "prefill_chunk_size");
  check(options.kv_block_size, "kv_block_size");
  if (options.prefix_cache_size < 0 || options.kv_cache_tokens < 0 || options.admission_margin < 0) {
    throw_invalid(
        "[BatchGenerator] prefix_cache_size, kv_cache_tokens and admission_margin must not be negative; got " +
        std::to_string(options.prefix_cache_size) + ", " + std::to_string(options.kv_cache_tokens) + " and " +
        std::to_string(options.admission_margin) + ".");
  }
  return options;
}

/// Blocks in the pool: kv_cache_tokens rounded up to whole blocks, or enough for every sequence's full context.
int pool_blocks(const BatchOptions& options, const LanguageModel& model) {
  constexpr int64_t unknown_context = 8192;
  const int64_t context = model.max_context() > 0 ? model.max_context() : unknown_context;
  const int64_t tokens = options.kv_cache_tokens > 0 ? options.kv_cache_tokens : options.max_batch_size * context;
  return static_cast<int>((tokens + options.kv_block_size - 1) / options.kv_block_size);
}

}  // namespace

BatchGenerator::BatchGenerator(LanguageModel& model, const Tokenizer& tokenizer, BatchOptions options)
    : model_(model),
      tokenizer_(tokenizer),
      options_(checked(std::move(options))),
      pool_(pool_blocks(options_, model), options_.kv_block_size, options_.prefix_cache_size / options_.kv_block_size),
      store_(model.num_layers(), pool_.capacity(), options_.kv_block_size) {}

BatchGenerator::BatchGenerator(const LoadedModel& loaded, BatchOptions options)
    : BatchGenerator(*loaded.model, loaded.tokenizer, std::move(options)) {
  const std::vector<int32_t>& eos = loaded.generation.eos_token_ids;
  options_.stop_ids.insert(options_.stop_ids.end(), eos.begin(), eos.end());
}

BatchGenerator::~BatchGenerator() = default;

uint64_t BatchGenerator::insert(const std::vector<int32_t>& prompt, const GenerateOptions& options) {
  detail::check_options(options, "BatchGenerator");
  if (options.max_tokens == 0) {
    throw_invalid("[BatchGenerator] max_tokens must be positive; got 0.");
  }
  if (options.max_kv_size || options.draft_model != nullptr) {
    throw_unsupported(
        "[BatchGenerator] max_kv_size and draft models are for single sequences; batched sequences cannot use "
        "them.");
  }
  detail::check_prompt(model_, prompt, "BatchGenerator");
  const int64_t capacity = static_cast<int64_t>(pool_.capacity()) * pool_.block_size();
  if (static_cast<int64_t>(prompt.size()) + options.max_tokens > capacity) {
    throw_invalid("[BatchGenerator] the KV cache holds " + std::to_string(capacity) +
                  " positions for all sequences together; this request may need " +
                  std::to_string(prompt.size() + static_cast<size_t>(options.max_tokens)) + " (" +
                  std::to_string(prompt.size()) + " in the prompt, " + std::to_string(options.max_tokens) +
                  " to generate).");
  }
  int cached = 0;
  Cache prefix;
  if (options.prompt_cache != nullptr) {
    cached = detail::reusable_prefix(*options.prompt_cache, prompt, "BatchGenerator");
    if (cached > 0) {
      prefix = batch_cache_from_prefix(model_, options.prompt_cache->cache, cached);
    }
  }
  GenerateOptions own = options;
  own.stop_ids.insert(own.stop_ids.end(), options_.stop_ids.begin(), options_.stop_ids.end());
  waiting_.push_back(std::make_unique<Sequence>(next_uid_, prompt, own, model_, tokenizer_, cached, std::move(prefix)));
  return next_uid_++;
}

int BatchGenerator::prefilling() const {
  int count = 0;
  for (const auto& prefill : prefilling_) {
    count += static_cast<int>(prefill.group.size());
  }
  return count;
}

bool BatchGenerator::reserve(Sequence& sequence) {
  std::vector<int> blocks;
  if (sequence.cached == 0 && options_.prefix_cache_size > 0) {
    blocks = pool_.match(sequence.context);
  }
  const int positions = static_cast<int>(sequence.context.size()) + 1;
  const int needed = pool_.blocks_for(positions);
  // Room to grow as well: a sequence admitted with no block to spare is the first preempted when the batch grows,
  // and one just preempted would come back only to go again.
  const int most = pool_.blocks_for(positions + sequence.max_tokens - sequence.output.generated());
  const int margin = std::min(options_.admission_margin, most - needed);
  if (needed + margin - static_cast<int>(blocks.size()) > pool_.available()) {
    pool_.release(blocks);
    return false;
  }
  if (options_.prefix_cache_size > 0 && sequence.cached == 0) {
    const int shared = static_cast<int>(blocks.size()) * pool_.block_size();
    prefix_stats_.queries += sequence.context.size() + 1;
    prefix_stats_.hits += static_cast<uint64_t>(shared);
    if (shared > 0) {
      // Computed now: a pending read of the store's buffers would make the next step's writes copy them whole.
      sequence.prefix = store_.read(blocks, shared);
      detail::eval_cache(sequence.prefix);
      sequence.cached = shared;
      sequence.shared = shared;
    }
  }
  while (static_cast<int>(blocks.size()) < needed) {
    blocks.push_back(*pool_.allocate());
  }
  sequence.blocks = std::move(blocks);
  sequence.admitted = ++admissions_;
  return true;
}

void BatchGenerator::admit() {
  const int count = std::min(options_.max_batch_size - active() - prefilling(), static_cast<int>(waiting_.size()));
  std::vector<std::unique_ptr<Sequence>> plain;
  std::vector<std::unique_ptr<Sequence>> cached;
  // First come, first served: a prompt the pool cannot hold yet holds back those behind it.
  for (int i = 0; i < count && reserve(*waiting_.front()); ++i) {
    (waiting_.front()->cached > 0 ? cached : plain).push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
  // Prompts prefilled together are padded to the longest of them: group prompts of similar lengths.
  std::stable_sort(plain.begin(), plain.end(),
                   [](const auto& a, const auto& b) { return a->context.size() < b->context.size(); });
  for (size_t first = 0; first < plain.size(); first += options_.prefill_batch_size) {
    const size_t last = std::min(plain.size(), first + options_.prefill_batch_size);
    start_prefill({std::make_move_iterator(plain.begin() + static_cast<std::ptrdiff_t>(first)),
                   std::make_move_iterator(plain.begin() + static_cast<std::ptrdiff_t>(last))});
  }
  // A sequence with a cached prefix starts from a cache of its own, so it is prefilled alone.
  for (auto& sequence : cached) {
    std::vector<std::unique_ptr<Sequence>> alone;
    alone.push_back(std::move(sequence));
    start_prefill(std::move(alone));
  }
}

void BatchGenerator::start_prefill(std::vector<std::unique_ptr<Sequence>> group) {
  const int count = static_cast<int>(group.size());
  const int skip = count == 1 ? group.front()->cached : 0;
  // The next tokens join the batch's next step, or, when that step is already under way (overlapped), give the
  // group's first choices in a step of their own.
  int longest = 0;
  for (const auto& sequence : group) {
    longest = std::max(longest, static_cast<int>(sequence->context.size()) - skip);
  }
  std::vector<int> padding;
  std::vector<int32_t> tokens(static_cast<size_t>(count) * longest, 0);
  for (int b = 0; b < count; ++b) {
    Sequence& sequence = *group[b];
    sequence.output.start_prompt();
    const int length = static_cast<int>(sequence.context.size()) - skip;
    padding.push_back(longest - length);
    std::copy(sequence.context.begin() + skip, sequence.context.end(),
              tokens.begin() + static_cast<std::ptrdiff_t>(b) * longest + (longest - length));
  }
  Cache cache = skip > 0 ? std::move(group.front()->prefix) : make_batch_cache(model_, padding);
  prefilling_.push_back(Prefill{std::move(group), std::move(cache), array(tokens.begin(), {count, longest}, int32)});
}

void BatchGenerator::advance_prefill() {
  const bool all = active_.empty();
  while (!prefilling_.empty()) {
    Prefill& prefill = prefilling_.front();
    const int count = static_cast<int>(prefill.group.size());
    if (prefill.done < prefill.length()) {
      const int end = std::min(prefill.length(), prefill.done + options_.prefill_chunk_size);
      (void)model_.forward(slice(prefill.tokens, {0, prefill.done}, {count, end}), &prefill.cache);
      detail::eval_cache(prefill.cache);
      prefill.done = end;
    }
    if (prefill.done < prefill.length() && !all) {
      return;  // the next chunk in the next step
    }
    if (prefill.done == prefill.length()) {
      Prefill done = std::move(prefill);
      prefilling_.pop_front();
      join(std::move(done));
      if (!all) {
        return;
      }
    }
  }
}

int BatchGenerator::prefix_cache_positions() const { return pool_.registered() * pool_.block_size(); }

KVCacheStats BatchGenerator::kv_cache_stats() const {
  return {pool_.block_size(), pool_.capacity(), pool_.used(), preemptions_};
}

void BatchGenerator::join(Prefill prefill) {
  const int count = static_cast<int>(prefill.group.size());
  for (int b = 0; b < count; ++b) {
    Sequence& sequence = *prefill.group[b];
    const int length = static_cast<int>(sequence.context.size());
    // Positions a prompt cache supplied are the sequence's own to store; registered blocks hold theirs already.
    store_.write(prefill.cache, b, sequence.shared, length, sequence.blocks);
    sequence.stored = length;
    sequence.cached = 0;
    sequence.prefix.clear();
    publish(sequence);
  }
  prefill.cache.clear();
  store_.eval();
  if (pending_) {
    std::vector<Sequence*> group;
    std::vector<int32_t> lasts;
    for (const auto& sequence : prefill.group) {
      group.push_back(sequence.get());
      lasts.push_back(sequence->next);
      sequence->context.push_back(sequence->next);
    }
    pending_ = joined(*pending_, step(group, array(lasts.begin(), {count, 1}, int32)));
  }
  for (auto& sequence : prefill.group) {
    active_.push_back(std::move(sequence));
  }
}

SampledTokens BatchGenerator::step(const std::vector<Sequence*>& sequences, const array& inputs) {
  std::vector<SamplingRow> rows;
  std::vector<const std::vector<int>*> tables;
  std::vector<int> lengths;
  rows.reserve(sequences.size());
  for (Sequence* sequence : sequences) {
    rows.push_back(sequence->sampler.row());
    tables.push_back(&sequence->blocks);
    lengths.push_back(sequence->stored++);
  }
  Cache view = store_.view(tables, lengths);
  return decode(model_, view, inputs, rows);
}

void BatchGenerator::publish(Sequence& sequence) {
  // Stored positions whose tokens are known: a step under way (overlapped) stores a token not read back yet.
  const int known = std::min(sequence.stored, static_cast<int>(sequence.context.size()));
  const int full = known / pool_.block_size();
  if (options_.prefix_cache_size == 0 || full <= sequence.published) {
    return;
  }
  pool_.publish(std::span<const int32_t>(sequence.context.data(), static_cast<size_t>(full) * pool_.block_size()),
                sequence.blocks);
  sequence.published = full;
}

bool BatchGenerator::make_room(bool may_preempt) {
  for (size_t i = 0; i < active_.size();) {
    Sequence& sequence = *active_[i];
    if (static_cast<int>(sequence.blocks.size()) >= pool_.blocks_for(sequence.stored + 1)) {
      ++i;
    } else if (const std::optional<int> block = pool_.allocate()) {
      sequence.blocks.push_back(*block);
    } else if (!may_preempt) {
      return false;
    } else {
      preempt_latest();
      i = 0;  // the rows moved; those already served are checked again at no cost
    }
  }
  return true;
}

void BatchGenerator::preempt_latest() {
  uint64_t latest = 0;
  int active_row = -1;
  auto group = prefilling_.end();
  int group_row = -1;
  for (int b = 0; b < active(); ++b) {
    if (active_[b]->admitted > latest) {
      latest = active_[b]->admitted;
      active_row = b;
    }
  }
  for (auto it = prefilling_.begin(); it != prefilling_.end(); ++it) {
    for (int b = 0; b < static_cast<int>(it->group.size()); ++b) {
      if (it->group[b]->admitted > latest) {
        latest = it->group[b]->admitted;
        group = it;
        group_row = b;
      }
    }
  }
  ++preemptions_;
  if (group_row >= 0) {
    requeue(leave_prefill(group, group_row));
  } else if (active_row >= 0) {
    requeue(std::move(drop_rows({active_row}).front()));
  } else {
    throw_internal("[BatchGenerator] the KV cache ran out with no sequence to preempt.");
  }
}

void BatchGenerator::requeue(std::unique_ptr<Sequence> sequence) {
  pool_.release(sequence->blocks);
  sequence->blocks.clear();
  sequence->shared = 0;
  sequence->stored = 0;
  sequence->published = 0;
  sequence->cached = 0;
  sequence->prefix.clear();
  waiting_.push_front(std::move(sequence));
}

std::unique_ptr<BatchGenerator::Sequence> BatchGenerator::leave_prefill(std::deque<Prefill>::iterator prefill,
                                                                        int row) {
  auto& group = prefill->group;
  std::unique_ptr<Sequence> sequence = std::move(group[static_cast<size_t>(row)]);
  group.erase(group.begin() + row);
  if (group.empty()) {
    prefilling_.erase(prefill);
    return sequence;
  }
  std::vector<int> kept;
  for (int b = 0; b <= static_cast<int>(group.size()); ++b) {
    if (b != row) {
      kept.push_back(b);
    }
  }
  filter_batch_cache(prefill->cache, kept);
  prefill->tokens = take(prefill->tokens, array(kept.begin(), {static_cast<int>(kept.size())}, int32), 0);
  return sequence;
}

std::vector<BatchResponse> BatchGenerator::next() {
  if (active_.empty()) {
    if (!has_work()) {
      return {};
    }
    // The batch becomes busy: the peak memory its statistics report counts from here.
    reset_peak_memory();
  }
  // Running sequences get their next blocks before waiting ones are admitted with what is left.
  if (!pending_) {
    (void)make_room(true);
  }
  admit();
  advance_prefill();
  if (active_.empty()) {
    return {};
  }
  if (!pending_) {
    std::vector<Sequence*> sequences;
    std::vector<int32_t> inputs;
    for (const auto& sequence : active_) {
      sequences.push_back(sequence.get());
      inputs.push_back(sequence->next);
      sequence->context.push_back(sequence->next);
    }
    pending_ = step(sequences, array(inputs.begin(), {active(), 1}, int32));
  }
  const int batch = active();
  const SampledTokens current = *pending_;
  // The next step is built on the pending tokens before they are read, unless a penalty needs them on the host,
  // every sequence ends with this token, or the pool would have to preempt (which waits for the tokens).
  bool overlap = detail::overlap_steps(options_.overlap_steps);
  bool any_goes_on = false;
  for (const auto& sequence : active_) {
    overlap = overlap && !sequence->sampler.needs_history();
    any_goes_on = any_goes_on || sequence->output.generated() + 1 < sequence->max_tokens;
  }
  pending_.reset();
  overlap = overlap && any_goes_on && make_room(false);
  if (overlap) {
    std::vector<Sequence*> sequences;
    for (const auto& sequence : active_) {
      sequences.push_back(sequence.get());
    }
    detail::start(current);
    pending_ = step(sequences, reshape(current.tokens, {batch, 1}));
    detail::start(*pending_);
  }
  detail::wait_for(current);
  const std::vector<SampledToken> picked = current.read();
  std::vector<BatchResponse> responses;
  std::vector<int> finished;
  for (int b = 0; b < batch; ++b) {
    Sequence& sequence = *active_[b];
    BatchResponse out{sequence.uid, sequence.sampler.accept(picked[b])};
    sequence.output.complete(out.response, sequence.sampler.exhausted());
    if (sequence.output.finished()) {
      finished.push_back(b);
    }
    sequence.next = picked[b].token;
    if (overlap) {
      sequence.context.push_back(sequence.next);  // fed to the step already under way
    }
    // Blocks that generated tokens filled serve later requests too (a conversation's next turn holds this answer).
    publish(sequence);
    responses.push_back(std::move(out));
  }
  for (const auto& sequence : drop_rows(finished)) {
    pool_.release(sequence->blocks);
  }
  return responses;
}

bool BatchGenerator::remove(uint64_t uid) {
  auto matches = [uid](const std::unique_ptr<Sequence>& s) { return s->uid == uid; };
  if (auto it = std::find_if(waiting_.begin(), waiting_.end(), matches); it != waiting_.end()) {
    waiting_.erase(it);  // a waiting sequence holds no blocks
    return true;
  }
  for (auto prefill = prefilling_.begin(); prefill != prefilling_.end(); ++prefill) {
    auto it = std::find_if(prefill->group.begin(), prefill->group.end(), matches);
    if (it != prefill->group.end()) {
      pool_.release(leave_prefill(prefill, static_cast<int>(it - prefill->group.begin()))->blocks);
      return true;
    }
  }
  if (auto it = std::find_if(active_.begin(), active_.end(), matches); it != active_.end()) {
    pool_.release(drop_rows({static_cast<int>(it - active_.begin())}).front()->blocks);
    return true;
  }
  return false;
}

std::vector<std::unique_ptr<BatchGenerator::Sequence>> BatchGenerator::drop_rows(const std::vector<int>& rows) {
  std::vector<std::unique_ptr<Sequence>> dropped;
  if (rows.empty()) {
    return dropped;
  }
  std::vector<int> kept;
  std::vector<std::unique_ptr<Sequence>> remaining;
  for (int b = 0; b < active(); ++b) {
    if (std::find(rows.begin(), rows.end(), b) == rows.end()) {
      kept.push_back(b);
      remaining.push_back(std::move(active_[b]));
    } else {
      dropped.push_back(std::move(active_[b]));
    }
  }
  active_ = std::move(remaining);
  if (active_.empty()) {
    pending_.reset();
  } else if (pending_) {
    pending_ = rows_of(*pending_, kept);
  }
  return dropped;
}

}  // namespace nuvec::lm
