#include "nuvec/lm/generate/batch_generator.h"

#include <algorithm>
#include <string>
#include <tuple>
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
        prompt(tokens),
        max_tokens(options.max_tokens),
        cached(cached_tokens),
        prefix(std::move(cached_prefix)),
        sampler(options.sampling, model.vocab_size(), tokens, options.constraint,
                detail::stop_ids(tokenizer, options.stop_ids)),
        output(tokenizer, options, static_cast<int>(tokens.size()), cached_tokens) {}

  uint64_t uid;
  std::vector<int32_t> prompt;
  int max_tokens;
  /// The prompt tokens a prompt cache supplied, held by `prefix` (a batch cache of this sequence alone) until the
  /// sequence joins the batch.
  int cached;
  Cache prefix;
  detail::SequenceSampler sampler;
  detail::SequenceOutput output;
  /// The token to feed when no step is under way: the prompt's last, then each one read back.
  int32_t next = 0;
};

/// A group of prompts on its way into the batch: every prompt's tokens after its cached prefix but its last,
/// left-padded to a common length, go into the group's cache a chunk at a time.
struct BatchGenerator::Prefill {
  std::vector<std::unique_ptr<Sequence>> group;
  Cache cache;
  array tokens;  // (group, length)
  int done = 0;  // positions already in the cache

  [[nodiscard]] int length() const { return tokens.shape(1); }
};

/// A prompt's keys and values kept for later prompts that start the same way: all its positions but the last.
struct BatchGenerator::PrefixEntry {
  std::vector<int32_t> tokens;
  Cache cache;  // a batch cache of this sequence alone
  uint64_t last_use = 0;
};

namespace {
// A shorter shared prefix is not worth it: a prompt that starts from a cached prefix is prefilled alone, where
// prompts without one share a prefill batch, and a short prefix saves little compute.
constexpr int min_prefix_reuse = 16;
}  // namespace

BatchGenerator::BatchGenerator(LanguageModel& model, const Tokenizer& tokenizer, BatchOptions options)
    : model_(model), tokenizer_(tokenizer), options_(std::move(options)) {
  auto check = [](int value, const char* name) {
    if (value <= 0) {
      throw_invalid(std::string("[BatchGenerator] ") + name + " must be positive; got " + std::to_string(value) + ".");
    }
  };
  check(options_.max_batch_size, "max_batch_size");
  check(options_.prefill_batch_size, "prefill_batch_size");
  check(options_.prefill_chunk_size, "prefill_chunk_size");
  if (options_.prefix_cache_size < 0) {
    throw_invalid("[BatchGenerator] prefix_cache_size must not be negative; got " +
                  std::to_string(options_.prefix_cache_size) + ".");
  }
}

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
  int cached = 0;
  Cache prefix;
  if (options.prompt_cache != nullptr) {
    cached = detail::reusable_prefix(*options.prompt_cache, prompt, "BatchGenerator");
    if (cached > 0) {
      prefix = batch_cache_from_prefix(model_, options.prompt_cache->cache, cached);
    }
  } else if (options_.prefix_cache_size > 0) {
    std::tie(cached, prefix) = cached_prefix(prompt);
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

void BatchGenerator::admit() {
  const int count = std::min(options_.max_batch_size - active() - prefilling(), static_cast<int>(waiting_.size()));
  std::vector<std::unique_ptr<Sequence>> plain;
  std::vector<std::unique_ptr<Sequence>> cached;
  for (int i = 0; i < count; ++i) {
    (waiting_.front()->cached > 0 ? cached : plain).push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
  // Prompts prefilled together are padded to the longest of them: group prompts of similar lengths.
  std::stable_sort(plain.begin(), plain.end(),
                   [](const auto& a, const auto& b) { return a->prompt.size() < b->prompt.size(); });
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
  // The last tokens join the batch's next step, or, when that step is already under way (overlapped), give the
  // group's first choices in a step of their own.
  int longest = 0;
  for (const auto& sequence : group) {
    longest = std::max(longest, static_cast<int>(sequence->prompt.size()) - skip - 1);
  }
  std::vector<int> padding;
  std::vector<int32_t> tokens(static_cast<size_t>(count) * longest, 0);
  for (int b = 0; b < count; ++b) {
    Sequence& sequence = *group[b];
    sequence.output.start_prompt();
    const int length = static_cast<int>(sequence.prompt.size()) - skip - 1;
    padding.push_back(longest - length);
    std::copy(sequence.prompt.begin() + skip, sequence.prompt.end() - 1,
              tokens.begin() + static_cast<std::ptrdiff_t>(b) * longest + (longest - length));
    sequence.next = sequence.prompt.back();
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

int BatchGenerator::prefix_cache_positions() const {
  int positions = 0;
  for (const auto& entry : prefixes_) {
    positions += static_cast<int>(entry.tokens.size());
  }
  return positions;
}

std::pair<int, Cache> BatchGenerator::cached_prefix(const std::vector<int32_t>& prompt) {
  prefix_stats_.queries += prompt.size();
  PrefixEntry* best = nullptr;
  int longest = 0;
  for (auto& entry : prefixes_) {
    // The prompt's last token is fed to the model, so at most the others come from the cache.
    const int shared = std::min(common_prefix_length(entry.tokens, prompt), static_cast<int>(prompt.size()) - 1);
    if (shared > longest) {
      longest = shared;
      best = &entry;
    }
  }
  if (best == nullptr || longest < min_prefix_reuse) {
    return {0, {}};
  }
  best->last_use = ++prefix_clock_;
  prefix_stats_.hits += static_cast<uint64_t>(longest);
  return {longest, batch_cache_row(best->cache, 0, longest)};
}

void BatchGenerator::remember_prefixes(const Prefill& prefill) {
  for (size_t b = 0; b < prefill.group.size(); ++b) {
    const std::vector<int32_t>& prompt = prefill.group[b]->prompt;
    std::vector<int32_t> tokens(prompt.begin(), prompt.end() - 1);
    if (static_cast<int>(tokens.size()) < min_prefix_reuse ||
        static_cast<int>(tokens.size()) > options_.prefix_cache_size) {
      continue;
    }
    auto starts_with = [](const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
      return a.size() >= b.size() && std::equal(b.begin(), b.end(), a.begin());
    };
    auto covering = std::find_if(prefixes_.begin(), prefixes_.end(),
                                 [&](const PrefixEntry& entry) { return starts_with(entry.tokens, tokens); });
    if (covering != prefixes_.end()) {
      covering->last_use = ++prefix_clock_;
      continue;
    }
    // Entries this prompt extends are no longer needed.
    std::erase_if(prefixes_, [&](const PrefixEntry& entry) { return starts_with(tokens, entry.tokens); });
    const int positions = static_cast<int>(tokens.size());
    PrefixEntry entry{std::move(tokens), batch_cache_row(prefill.cache, static_cast<int>(b), positions),
                      ++prefix_clock_};
    detail::eval_cache(entry.cache);
    prefixes_.push_back(std::move(entry));
  }
  while (prefix_cache_positions() > options_.prefix_cache_size) {
    prefixes_.erase(std::min_element(prefixes_.begin(), prefixes_.end(), [](const auto& a, const auto& b) {
      return a.last_use < b.last_use;
    }));
  }
}

void BatchGenerator::join(Prefill prefill) {
  const int count = static_cast<int>(prefill.group.size());
  if (options_.prefix_cache_size > 0) {
    remember_prefixes(prefill);
  }
  if (pending_) {
    std::vector<SamplingRow> rows;
    std::vector<int32_t> lasts;
    for (const auto& sequence : prefill.group) {
      rows.push_back(sequence->sampler.row());
      lasts.push_back(sequence->next);
    }
    pending_ = joined(*pending_, decode(model_, prefill.cache, array(lasts.begin(), {count, 1}, int32), rows));
  }
  if (active_.empty()) {
    cache_ = std::move(prefill.cache);
  } else {
    extend_batch_cache(cache_, prefill.cache);
  }
  for (auto& sequence : prefill.group) {
    active_.push_back(std::move(sequence));
  }
}

SampledTokens BatchGenerator::step(const array& inputs) {
  std::vector<SamplingRow> rows;
  rows.reserve(active_.size());
  for (const auto& sequence : active_) {
    rows.push_back(sequence->sampler.row());
  }
  return decode(model_, cache_, inputs, rows);
}

std::vector<BatchResponse> BatchGenerator::next() {
  if (active_.empty()) {
    if (!has_work()) {
      return {};
    }
    // The batch becomes busy: the peak memory its statistics report counts from here.
    reset_peak_memory();
  }
  admit();
  advance_prefill();
  const int batch = active();
  if (batch == 0) {
    return {};
  }
  if (!pending_) {
    std::vector<int32_t> inputs;
    inputs.reserve(active_.size());
    for (const auto& sequence : active_) {
      inputs.push_back(sequence->next);
    }
    pending_ = step(array(inputs.begin(), {batch, 1}, int32));
  }
  const SampledTokens current = *pending_;
  // The next step is built on the pending tokens before they are read, unless a penalty needs them on the host or
  // every sequence ends with this token.
  bool overlap = detail::overlap_steps(options_.overlap_steps);
  bool any_goes_on = false;
  for (const auto& sequence : active_) {
    overlap = overlap && !sequence->sampler.needs_history();
    any_goes_on = any_goes_on || sequence->output.generated() + 1 < sequence->max_tokens;
  }
  pending_.reset();
  if (overlap && any_goes_on) {
    detail::start(current);
    pending_ = step(reshape(current.tokens, {batch, 1}));
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
    responses.push_back(std::move(out));
  }
  drop_rows(finished);
  return responses;
}

bool BatchGenerator::remove(uint64_t uid) {
  auto matches = [uid](const std::unique_ptr<Sequence>& s) { return s->uid == uid; };
  if (auto it = std::find_if(waiting_.begin(), waiting_.end(), matches); it != waiting_.end()) {
    waiting_.erase(it);
    return true;
  }
  for (auto prefill = prefilling_.begin(); prefill != prefilling_.end(); ++prefill) {
    auto& group = prefill->group;
    auto it = std::find_if(group.begin(), group.end(), matches);
    if (it == group.end()) {
      continue;
    }
    if (group.size() == 1) {
      prefilling_.erase(prefill);
      return true;
    }
    const int row = static_cast<int>(it - group.begin());
    std::vector<int> kept;
    for (int b = 0; b < static_cast<int>(group.size()); ++b) {
      if (b != row) {
        kept.push_back(b);
      }
    }
    group.erase(it);
    filter_batch_cache(prefill->cache, kept);
    prefill->tokens = take(prefill->tokens, array(kept.begin(), {static_cast<int>(kept.size())}, int32), 0);
    return true;
  }
  if (auto it = std::find_if(active_.begin(), active_.end(), matches); it != active_.end()) {
    drop_rows({static_cast<int>(it - active_.begin())});
    return true;
  }
  return false;
}

void BatchGenerator::drop_rows(const std::vector<int>& rows) {
  if (rows.empty()) {
    return;
  }
  std::vector<int> kept;
  std::vector<std::unique_ptr<Sequence>> remaining;
  for (int b = 0; b < active(); ++b) {
    if (std::find(rows.begin(), rows.end(), b) == rows.end()) {
      kept.push_back(b);
      remaining.push_back(std::move(active_[b]));
    }
  }
  active_ = std::move(remaining);
  if (active_.empty()) {
    cache_.clear();
    pending_.reset();
    return;
  }
  filter_batch_cache(cache_, kept);
  if (pending_) {
    pending_ = rows_of(*pending_, kept);
  }
}

}  // namespace nuvec::lm
