#include "nuvec/lm/generate/sequence.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <sstream>
#include <thread>
#include <utility>

#include "nuvec/core/allocator.h"
#include "nuvec/core/device.h"
#include "nuvec/core/eval.h"
#include "nuvec/core/op_prefix.h"
#include "nuvec/core/ops.h"
#include "nuvec/lm/cache/prompt_cache.h"
#include "nuvec/lm/sample/logits_processors.h"

namespace nuvec::lm::detail {

std::vector<int32_t> stop_ids(const Tokenizer& tokenizer, const std::vector<int32_t>& extra) {
  std::vector<int32_t> ids = extra;
  for (std::optional<int32_t> id : {tokenizer.eos_id(), tokenizer.eot_id()}) {
    if (id) {
      ids.push_back(*id);
    }
  }
  return ids;
}

void check_options(const GenerateOptions& options, const char* caller) {
  auto fail = [&](const std::string& what, int given) {
    throw_invalid(nuvec::detail::op_prefix(caller) + what + "; got " + std::to_string(given) + ".");
  };
  if (options.max_tokens < 0) {
    fail("max_tokens must not be negative", options.max_tokens);
  }
  if (options.prefill_chunk_size <= 0) {
    fail("prefill_chunk_size must be positive", options.prefill_chunk_size);
  }
  if (options.max_kv_size && *options.max_kv_size <= 0) {
    fail("max_kv_size must be positive", *options.max_kv_size);
  }
  if (options.draft_model != nullptr && options.constraint != nullptr) {
    throw_unsupported(nuvec::detail::op_prefix(caller) + "a token constraint cannot be used with a draft model.");
  }
  if (options.draft_model != nullptr && !options.hooks.empty()) {
    throw_unsupported(nuvec::detail::op_prefix(caller) +
                      "logits processors and samplers of the caller's own cannot be used with a draft model.");
  }
  if (options.draft_model != nullptr && options.num_draft <= 0) {
    fail("num_draft must be positive", options.num_draft);
  }
  for (const std::string& stop : options.stop_strings) {
    if (stop.empty()) {
      throw_invalid(nuvec::detail::op_prefix(caller) + "stop strings must not be empty.");
    }
  }
}

void check_prompt(const LanguageModel& model, const std::vector<int32_t>& prompt, const char* caller) {
  if (prompt.empty()) {
    throw_invalid(nuvec::detail::op_prefix(caller) + "the prompt is empty; give at least one token.");
  }
  const int vocab = model.vocab_size();
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= vocab) {
      std::ostringstream msg;
      msg << nuvec::detail::op_prefix(caller) << "prompt token " << i << " is id " << prompt[i]
          << ", outside the model's vocabulary of " << vocab << ".";
      throw_invalid(msg.str());
    }
  }
  const int context = model.max_context();
  if (context > 0 && static_cast<int>(prompt.size()) > context) {
    std::ostringstream msg;
    msg << nuvec::detail::op_prefix(caller) << "the prompt has " << prompt.size()
        << " tokens, more than the model's context of " << context << " tokens.";
    throw_invalid(msg.str());
  }
}

void eval_cache(const Cache& cache) {
  std::vector<array> arrays;
  for (const auto& layer : cache) {
    for (const array& a : layer->state()) {
      arrays.push_back(a);
    }
  }
  eval(std::move(arrays));
}

void reserve(Cache& cache, const LanguageModel& model, int64_t positions) {
  const int64_t context = model.max_context();
  const auto room =
      static_cast<int>(std::clamp<int64_t>(positions, 1, context > 0 ? context : std::numeric_limits<int>::max()));
  for (const auto& layer : cache) {
    layer->reserve(room);
  }
}

Cache reserved_cache(const LanguageModel& model, int64_t positions) {
  Cache cache = model.make_cache();
  reserve(cache, model, positions);
  return cache;
}

bool overlap_steps(std::optional<bool> setting) { return setting.value_or(default_device().type == Device::gpu); }

void start(const SampledTokens& choices) {
  if (choices.tokens.status() == Status::unscheduled) {
    async_eval(choices.tokens, choices.logprobs, choices.top_tokens, choices.top_logprobs);
  }
}

void wait_for(const SampledTokens& choices) {
  for (const array* a : {&choices.tokens, &choices.logprobs, &choices.top_tokens, &choices.top_logprobs}) {
    while (a->status() == Status::scheduled) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

int reusable_prefix(const PromptCache& cached, const std::vector<int32_t>& prompt, const char* caller) {
  if (cached.cache.empty()) {
    return 0;
  }
  const int held = cached.cache.front()->offset();
  const int listed = static_cast<int>(cached.tokens.size());
  const int draft_held = cached.draft_cache.empty() ? 0 : cached.draft_cache.front()->offset();
  if (held != listed || draft_held > listed) {
    std::ostringstream msg;
    msg << nuvec::detail::op_prefix(caller) << "the prompt cache holds " << held << " positions";
    if (draft_held > listed) {
      msg << " and its draft cache " << draft_held;
    }
    msg << " but lists " << listed << " tokens; keep its tokens in step with its caches.";
    throw_invalid(msg.str());
  }
  return std::min(common_prefix_length(cached.tokens, prompt), static_cast<int>(prompt.size()) - 1);
}

int keep_prefix(Cache& cache, int keep, const std::function<Cache()>& fresh) {
  if (cache.empty()) {
    cache = fresh();
    return 0;
  }
  const int excess = cache.front()->offset() - keep;
  if (excess <= 0) {
    return cache.front()->offset();
  }
  if (!can_trim_prompt_cache(cache)) {
    cache = fresh();
    return 0;
  }
  trim_prompt_cache(cache, excess);
  return keep;
}

void prefill(LanguageModel& model, Cache& cache, const int32_t* tokens, int count, int chunk) {
  for (int start = 0; start < count; start += chunk) {
    const int n = std::min(chunk, count - start);
    // Only the cache is evaluated: the logits of the prefill are never computed.
    (void)model.forward(array(tokens + start, {1, n}, int32), &cache);
    eval_cache(cache);
    // As mlx-lm's prefill: the chunk's activations are sizes the decode steps never ask for again, and kept in the
    // allocator's cache they stayed resident beside the weights (63 MiB of a 1B model's 512-token prompt, and 17 MiB
    // of the C library's heap).
    clear_cache();
  }
}

SequenceSampler::SequenceSampler(const SamplingParams& params, int vocab_size, std::vector<int32_t> prompt,
                                 std::shared_ptr<TokenConstraint> constraint, std::vector<int32_t> stop_ids,
                                 SamplingHooks hooks)
    : sampler_(params, vocab_size),
      prompt_(std::move(prompt)),
      constraint_(std::move(constraint)),
      stop_ids_(std::move(stop_ids)) {
  sampler_.set_hooks(std::move(hooks));
  if (constraint_) {
    mask_.resize(static_cast<size_t>(vocab_size));
    update_mask();
    if (exhausted_) {
      throw_invalid("[generate] the token constraint allows no first token: the vocabulary cannot begin its text.");
    }
  }
}

SamplingRow SequenceSampler::row() { return {&sampler_, {prompt_, generated_}, constraint_ ? &mask_ : nullptr}; }

GenerationResponse SequenceSampler::choose(const array& logits) { return accept(sample(logits).read().front()); }

SampledTokens SequenceSampler::sample(const array& logits) {
  const SamplingRow rows[] = {row()};
  return lm::sample(reshape(logits, {1, logits.shape(-1)}), rows);
}

void SequenceSampler::update_mask() {
  std::fill(mask_.begin(), mask_.end(), uint8_t{0});
  constraint_->allowed(mask_);
  const bool complete = constraint_->complete();
  for (int32_t id : stop_ids_) {
    if (id >= 0 && static_cast<size_t>(id) < mask_.size()) {
      mask_[id] = complete ? 1 : 0;
    }
  }
  exhausted_ = std::find(mask_.begin(), mask_.end(), uint8_t{1}) == mask_.end();
}

GenerationResponse SequenceSampler::accept(SampledToken picked) {
  push(picked.token);
  if (constraint_ && std::find(stop_ids_.begin(), stop_ids_.end(), picked.token) == stop_ids_.end()) {
    constraint_->accept(picked.token);
    update_mask();
  }
  GenerationResponse response;
  response.token = picked.token;
  response.logprob = picked.logprob;
  response.top_logprobs = std::move(picked.top);
  return response;
}

bool SequenceSampler::needs_history() const {
  const SamplingParams& p = sampler_.params();
  return p.repetition_penalty != 1.0F || p.presence_penalty != 0.0F || p.frequency_penalty != 0.0F ||
         constraint_ != nullptr || !sampler_.hooks().processors.empty();
}

GenerationResponse SequenceSampler::describe(const array& logits, int32_t token) const {
  const array row = astype(reshape(logits, {-1}), float32);
  const array logprobs = subtract(row, logsumexp(row));
  GenerationResponse response;
  response.token = token;
  response.logprob = take(logprobs, token).item<float>();
  const int top = std::min(sampler_.params().top_logprobs, static_cast<int>(row.size()));
  if (top > 0) {
    array order = astype(slice(argsort(negative(logprobs)), {0}, {top}), int32);
    array values = take(logprobs, order, 0);
    eval(order, values);
    for (int i = 0; i < top; ++i) {
      response.top_logprobs.push_back({order.data<int32_t>()[i], values.data<float>()[i]});
    }
  }
  return response;
}

array SequenceSampler::distribution(const array& logits) {
  const SamplingRow rows[] = {row()};
  const array processed = process_logits(logits, rows);
  const array scaled = divide(processed, array(sampler_.params().temperature));
  return reshape(softmax(filter_logits(scaled, rows), -1, true), {-1});
}

int32_t SequenceSampler::draw(const array& weights) {
  // Inverse transform sampling with the sequence's next uniform number, so a seeded sequence draws reproducibly.
  array p = astype(weights, float32);
  p.eval();
  const float* values = p.data<float>();
  const double target = sampler_.next_uniform() * std::accumulate(values, values + p.size(), 0.0);
  double cumulative = 0;
  int32_t last_possible = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (values[i] > 0) {
      cumulative += values[i];
      last_possible = static_cast<int32_t>(i);
      if (cumulative > target) {
        break;
      }
    }
  }
  return last_possible;
}

double SequenceSampler::uniform() { return sampler_.next_uniform(); }

SequenceOutput::SequenceOutput(const Tokenizer& tokenizer, const GenerateOptions& options, int prompt_tokens,
                               int cached_prompt_tokens)
    : detokenizer_(tokenizer.detokenizer(options.skip_special_tokens)),
      stop_strings_(options.stop_strings),
      stop_ids_(stop_ids(tokenizer, options.stop_ids)),
      max_tokens_(options.max_tokens),
      prompt_start_(Clock::now()) {
  stats_.prompt_tokens = prompt_tokens;
  stats_.cached_prompt_tokens = cached_prompt_tokens;
}

void SequenceOutput::start_prompt() { prompt_start_ = Clock::now(); }

void SequenceOutput::complete(GenerationResponse& response, bool constraint_ended) {
  const Clock::time_point now = Clock::now();
  if (stats_.generation_tokens == 0) {
    const double seconds = std::chrono::duration<double>(now - prompt_start_).count();
    stats_.prompt_tps = (stats_.prompt_tokens - stats_.cached_prompt_tokens) / std::max(seconds, 1e-9);
    first_token_ = now;
  } else {
    const double seconds = std::chrono::duration<double>(now - first_token_).count();
    stats_.generation_tps = stats_.generation_tokens / std::max(seconds, 1e-9);
  }
  ++stats_.generation_tokens;
  stats_.peak_memory = get_peak_memory();
  response.finish_reason.reset();
  if (std::find(stop_ids_.begin(), stop_ids_.end(), response.token) != stop_ids_.end()) {
    response.text = flush_text();
    response.finish_reason = "stop";
  } else {
    response.text = add_text(response.token);
    if (stopped_by_string_) {
      response.finish_reason = "stop";
    } else if (constraint_ended) {
      response.text += flush_text();
      response.finish_reason = "stop";
    } else if (stats_.generation_tokens >= max_tokens_) {
      response.text += flush_text();
      response.finish_reason = stopped_by_string_ ? "stop" : "length";
    }
  }
  response.stats = stats_;
  finished_ = response.finish_reason.has_value();
}

std::string SequenceOutput::add_text(int32_t id) {
  pending_ += detokenizer_.add(id);
  return release(false);
}

std::string SequenceOutput::flush_text() {
  pending_ += detokenizer_.finish();
  return release(true);
}

std::string SequenceOutput::release(bool final) {
  size_t first_stop = std::string::npos;
  for (const std::string& stop : stop_strings_) {
    first_stop = std::min(first_stop, pending_.find(stop));
  }
  if (first_stop != std::string::npos) {
    stopped_by_string_ = true;
    std::string out = pending_.substr(0, first_stop);
    pending_.clear();
    return out;
  }
  // Hold back the longest tail of the text that is a proper start of some stop string.
  size_t held = 0;
  if (!final) {
    for (const std::string& stop : stop_strings_) {
      for (size_t n = std::min(stop.size() - 1, pending_.size()); n > held; --n) {
        if (pending_.compare(pending_.size() - n, n, stop, 0, n) == 0) {
          held = n;
          break;
        }
      }
    }
  }
  std::string out = pending_.substr(0, pending_.size() - held);
  pending_.erase(0, pending_.size() - held);
  return out;
}

}  // namespace nuvec::lm::detail
