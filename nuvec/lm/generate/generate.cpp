#include "nuvec/lm/generate/generate.h"

#include "nuvec/core/allocator.h"
#include "nuvec/core/ops.h"
#include "nuvec/lm/cache/prompt_cache.h"
#include "nuvec/lm/generate/sequence.h"
#include "nuvec/lm/generate/speculative.h"

namespace nuvec::lm {
namespace {

/// Readies the prompt cache for `prompt`: keeps the longest prefix of its tokens that the prompt can reuse, trimming
/// the rest or starting afresh where the cache cannot be trimmed; a draft cache is cut back to that prefix too (or
/// dropped). Returns how many prompt tokens the cache already holds.
int reuse_prefix(PromptCache& reused, const LanguageModel& model, const std::vector<int32_t>& prompt,
                 std::optional<int> max_kv_size) {
  const int reusable = detail::reusable_prefix(reused, prompt, "generate");
  const int held = detail::keep_prefix(reused.cache, reusable, [&] { return make_prompt_cache(model, max_kv_size); });
  reused.tokens.resize(held);
  if (!reused.draft_cache.empty()) {
    (void)detail::keep_prefix(reused.draft_cache, held, [] { return Cache{}; });
  }
  return held;
}

/// One decoding step: feeds `token` (1, 1) to the model; the choice at its logits, not yet computed.
SampledTokens step(LanguageModel& model, Cache& cache, detail::SequenceSampler& sampler, const array& token) {
  const array logits = model.forward(token, &cache);
  return sampler.sample(reshape(logits, {1, logits.shape(-1)}));
}

}  // namespace

void stream_generate(LanguageModel& model, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                     const GenerateOptions& options, const GenerateCallback& callback) {
  if (options.draft_model != nullptr) {
    speculative_stream_generate(model, *options.draft_model, tokenizer, prompt, options, callback);
    return;
  }
  detail::check_options(options, "generate");
  detail::check_prompt(model, prompt, "generate");
  if (options.max_tokens == 0) {
    return;
  }
  reset_peak_memory();
  detail::SequenceSampler sampler(options.sampling, model.vocab_size(), prompt, options.constraint,
                                  detail::stop_ids(tokenizer, options.stop_ids), options.hooks);
  PromptCache fresh;
  PromptCache& state = options.prompt_cache != nullptr ? *options.prompt_cache : fresh;
  const int prompt_tokens = static_cast<int>(prompt.size());
  const int cached = reuse_prefix(state, model, prompt, options.max_kv_size);
  // The last token generated is never fed back.
  detail::reserve(state.cache, model, static_cast<int64_t>(prompt_tokens) + options.max_tokens - 1);
  detail::SequenceOutput output(tokenizer, options, prompt_tokens, cached);
  detail::prefill(model, state.cache, prompt.data() + cached, prompt_tokens - cached - 1, options.prefill_chunk_size);
  state.tokens.insert(state.tokens.end(), prompt.begin() + cached, prompt.end() - 1);

  const bool overlap = detail::overlap_steps(options.overlap_steps) && !sampler.needs_history();
  SampledTokens pending = step(model, state.cache, sampler, array({prompt.back()}, {1, 1}, int32));
  state.tokens.push_back(prompt.back());
  while (true) {
    // Unless this token is the last, the next step is built on it and started before it is read back.
    std::optional<SampledTokens> following;
    if (overlap && output.generated() + 1 < options.max_tokens) {
      detail::start(pending);
      following = step(model, state.cache, sampler, reshape(pending.tokens, {1, 1}));
      detail::start(*following);
    }
    detail::wait_for(pending);
    GenerationResponse response = sampler.accept(pending.read().front());
    if (following) {
      state.tokens.push_back(response.token);
    }
    output.complete(response, sampler.exhausted());
    if (!callback(response) || output.finished()) {
      return;
    }
    if (!following) {
      following = step(model, state.cache, sampler, array({response.token}, {1, 1}, int32));
      state.tokens.push_back(response.token);
    }
    pending = *following;
  }
}

GenerationResult generate(LanguageModel& model, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                          const GenerateOptions& options) {
  GenerationResult result;
  stream_generate(model, tokenizer, prompt, options, [&](const GenerationResponse& response) {
    result.text += response.text;
    result.tokens.push_back(response.token);
    result.logprobs.push_back(response.logprob);
    result.top_logprobs.push_back(response.top_logprobs);
    result.finish_reason = response.finish_reason.value_or("");
    result.stats = response.stats;
    return true;
  });
  return result;
}

GenerateOptions with_model_stop_ids(const LoadedModel& loaded, GenerateOptions options) {
  const std::vector<int32_t>& eos = loaded.generation.eos_token_ids;
  options.stop_ids.insert(options.stop_ids.end(), eos.begin(), eos.end());
  return options;
}

void stream_generate(const LoadedModel& loaded, const std::vector<int32_t>& prompt, const GenerateOptions& options,
                     const GenerateCallback& callback) {
  stream_generate(*loaded.model, loaded.tokenizer, prompt, with_model_stop_ids(loaded, options), callback);
}

GenerationResult generate(const LoadedModel& loaded, const std::vector<int32_t>& prompt,
                          const GenerateOptions& options) {
  return generate(*loaded.model, loaded.tokenizer, prompt, with_model_stop_ids(loaded, options));
}

}  // namespace nuvec::lm
