#include "nuvec/lm/generate/generate.h"

#include <algorithm>
#include <sstream>

#include "nuvec/core/ops.h"
#include "nuvec/lm/cache/prompt_cache.h"
#include "nuvec/lm/generate/sequence.h"
#include "nuvec/lm/generate/speculative.h"

namespace nuvec::lm {
namespace {

/// Readies `reused` for `prompt`: keeps the longest prefix of its tokens that the prompt shares (at most all but the
/// prompt's last token, whose logits are needed), trimming the rest or starting afresh where the cache cannot be
/// trimmed. Returns how many prompt tokens the cache already holds.
int reuse_prefix(PromptCache& reused, const LanguageModel& model, const std::vector<int32_t>& prompt,
                 std::optional<int> max_kv_size) {
  if (reused.cache.empty()) {
    reused.cache = make_prompt_cache(model, max_kv_size);
    reused.tokens.clear();
    return 0;
  }
  const int held = reused.cache.front()->offset();
  if (held != static_cast<int>(reused.tokens.size())) {
    std::ostringstream msg;
    msg << "[generate] the prompt cache holds " << held << " positions but lists " << reused.tokens.size()
        << " tokens; keep its tokens in step with its cache.";
    throw_invalid(msg.str());
  }
  const int common = std::min(common_prefix_length(reused.tokens, prompt), static_cast<int>(prompt.size()) - 1);
  const int excess = held - common;
  if (excess > 0 && !can_trim_prompt_cache(reused.cache)) {
    reused.cache = make_prompt_cache(model, max_kv_size);
    reused.tokens.clear();
    return 0;
  }
  if (excess > 0) {
    trim_prompt_cache(reused.cache, excess);
  }
  reused.tokens.resize(common);
  return common;
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
  detail::SequenceSampler sampler(options.sampling, model.vocab_size(), prompt);
  PromptCache fresh;
  PromptCache& state = options.prompt_cache != nullptr ? *options.prompt_cache : fresh;
  const int prompt_tokens = static_cast<int>(prompt.size());
  const int cached = reuse_prefix(state, model, prompt, options.max_kv_size);
  detail::SequenceOutput output(tokenizer, options, prompt_tokens, cached);
  detail::prefill(model, state.cache, prompt.data() + cached, prompt_tokens - cached - 1, options.prefill_chunk_size);
  state.tokens.insert(state.tokens.end(), prompt.begin() + cached, prompt.end() - 1);

  int32_t next = prompt.back();
  while (true) {
    const array logits = model.forward(array({next}, {1, 1}, int32), &state.cache);
    state.tokens.push_back(next);
    GenerationResponse response = sampler.choose(reshape(logits, {1, logits.shape(-1)}));
    output.complete(response);
    if (!callback(response) || output.finished()) {
      return;
    }
    next = response.token;
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
