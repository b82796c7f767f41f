#include "nuvec/lm/generate/batch_generator.h"

#include <algorithm>
#include <string>
#include <utility>

#include "nuvec/core/ops.h"
#include "nuvec/lm/generate/batch_cache.h"
#include "nuvec/lm/generate/sequence.h"

namespace nuvec::lm {

struct BatchGenerator::Sequence {
  Sequence(uint64_t id, const std::vector<int32_t>& tokens, const GenerateOptions& options, const LanguageModel& model,
           const Tokenizer& tokenizer)
      : uid(id),
        prompt(tokens),
        sampler(options.sampling, model.vocab_size(), tokens),
        output(tokenizer, options, static_cast<int>(tokens.size()), 0) {}

  uint64_t uid;
  std::vector<int32_t> prompt;
  detail::SequenceSampler sampler;
  detail::SequenceOutput output;
  /// The token to feed at the next step: the prompt's last, then each generated one.
  int32_t next = 0;
};

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
  if (options.prompt_cache != nullptr || options.max_kv_size || options.draft_model != nullptr) {
    throw_unsupported(
        "[BatchGenerator] prompt caches, max_kv_size and draft models are for single sequences; batched sequences "
        "cannot use them.");
  }
  detail::check_prompt(model_, prompt, "BatchGenerator");
  GenerateOptions own = options;
  own.stop_ids.insert(own.stop_ids.end(), options_.stop_ids.begin(), options_.stop_ids.end());
  waiting_.push_back(std::make_unique<Sequence>(next_uid_, prompt, own, model_, tokenizer_));
  return next_uid_++;
}

void BatchGenerator::admit() {
  while (!waiting_.empty() && active() < options_.max_batch_size) {
    const int count = std::min({options_.prefill_batch_size, options_.max_batch_size - active(), waiting()});
    std::vector<std::unique_ptr<Sequence>> group;
    for (int i = 0; i < count; ++i) {
      group.push_back(std::move(waiting_.front()));
      waiting_.pop_front();
    }
    // Everything but each prompt's last token goes into the cache now, left-padded to a common length; the last
    // token is fed with the next decoding step of the whole batch.
    int longest = 0;
    for (const auto& sequence : group) {
      longest = std::max(longest, static_cast<int>(sequence->prompt.size()) - 1);
    }
    std::vector<int> padding;
    std::vector<int32_t> tokens(static_cast<size_t>(count) * longest, 0);
    for (int b = 0; b < count; ++b) {
      Sequence& sequence = *group[b];
      sequence.output.start_prompt();
      const int length = static_cast<int>(sequence.prompt.size()) - 1;
      padding.push_back(longest - length);
      std::copy(sequence.prompt.begin(), sequence.prompt.end() - 1,
                tokens.begin() + static_cast<std::ptrdiff_t>(b) * longest + (longest - length));
      sequence.next = sequence.prompt.back();
    }
    Cache cache = make_batch_cache(model_, padding);
    if (longest > 0) {
      const array all(tokens.begin(), {count, longest}, int32);
      for (int start = 0; start < longest; start += options_.prefill_chunk_size) {
        const int stop = std::min(longest, start + options_.prefill_chunk_size);
        (void)model_.forward(slice(all, {0, start}, {count, stop}), &cache);
        detail::eval_cache(cache);
      }
    }
    if (active_.empty()) {
      cache_ = std::move(cache);
    } else {
      extend_batch_cache(cache_, cache);
    }
    for (auto& sequence : group) {
      active_.push_back(std::move(sequence));
    }
  }
}

std::vector<BatchResponse> BatchGenerator::next() {
  admit();
  if (active_.empty()) {
    return {};
  }
  const int batch = active();
  std::vector<int32_t> inputs;
  inputs.reserve(active_.size());
  for (const auto& sequence : active_) {
    inputs.push_back(sequence->next);
  }
  const array logits = model_.forward(array(inputs.begin(), {batch, 1}, int32), &cache_);
  std::vector<SamplingRow> rows;
  rows.reserve(active_.size());
  for (const auto& sequence : active_) {
    rows.push_back(sequence->sampler.row());
  }
  // One draw for the whole batch: each row with its own parameters, history and key.
  const std::vector<SampledToken> picked = sample(reshape(logits, {batch, logits.shape(-1)}), rows).read();
  std::vector<BatchResponse> responses;
  std::vector<int> finished;
  for (int b = 0; b < batch; ++b) {
    Sequence& sequence = *active_[b];
    BatchResponse out{sequence.uid, {}};
    out.response.token = picked[b].token;
    out.response.logprob = picked[b].logprob;
    out.response.top_logprobs = picked[b].top;
    sequence.sampler.push(picked[b].token);
    sequence.output.complete(out.response);
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
  } else {
    filter_batch_cache(cache_, kept);
  }
}

}  // namespace nuvec::lm
