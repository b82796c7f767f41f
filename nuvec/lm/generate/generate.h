#pragma once

// Text generation from a language model: the prompt goes through the model in chunks, then tokens are sampled one
// at a time, each reported with its text, its log-probability and running statistics (stream_generate), or all at
// once at the end (generate). Generation stops at max_tokens, at a stop id (the tokenizer's EOS and end-of-turn ids
// and any given) or at a stop string, whose text is never returned.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nuvec/lm/cache/kv_cache.h"
#include "nuvec/lm/generate/token_constraint.h"
#include "nuvec/lm/models/language_model.h"
#include "nuvec/lm/models/load.h"
#include "nuvec/lm/sample/sampling.h"
#include "nuvec/lm/tokenizer/tokenizer.h"

namespace nuvec::lm {

/// A cache kept from one generation to the next with the tokens it holds: a prompt that starts with the same tokens
/// computes only the rest. Generation leaves it holding the prompt and the generated tokens (the last one only when
/// it was fed back: `tokens` always lists what `cache` holds). A BatchGenerator request only reads it.
struct PromptCache {
  Cache cache;
  std::vector<int32_t> tokens;
  /// The draft model's cache (speculative decoding): it holds the first draft_cache.front()->offset() of `tokens`,
  /// never more than `cache` does. Plain generation trims it to the prefix it keeps; empty until a draft ran.
  Cache draft_cache;
};

struct GenerateOptions {
  /// The most tokens to generate (0 generates none). The caches reserve room for the whole request (prompt and
  /// max_tokens, within the model's context) when generation starts, so they never copy their history while
  /// decoding.
  int max_tokens = 256;
  /// How each token is chosen (greedy by default), and how many top log-probabilities each token reports.
  SamplingParams sampling;
  /// mlx_lm's logits_processors and sampler: functions of the caller's own, for what `sampling` cannot express
  /// (processors run first, on the raw logits; a chooser replaces the temperature, the filters and the draw).
  /// Reported log-probabilities stay the model's own. Not with a draft model.
  SamplingHooks hooks;
  /// Generation stops where one of these appears in the text; the text from it on is not returned.
  std::vector<std::string> stop_strings;
  /// Ids that end generation besides the tokenizer's EOS and end-of-turn ids (a generation config's eos ids).
  std::vector<int32_t> stop_ids;
  /// Whether the returned text leaves out special tokens.
  bool skip_special_tokens = false;
  /// The prompt goes through the model this many tokens at a time, bounding the memory of long prompts.
  int prefill_chunk_size = 512;
  /// A cache to reuse and update; a fresh one when null.
  PromptCache* prompt_cache = nullptr;
  /// Keeps at most this many positions in a fresh cache (rotating caches), bounding memory on long generations.
  /// With a draft model the window must hold the whole generation (prompt + max_tokens - 1 positions): a rotating
  /// cache that has wrapped cannot drop rejected draft tokens, so a longer request is refused up front.
  std::optional<int> max_kv_size;
  /// A smaller model with the same vocabulary that proposes `num_draft` tokens for the model to check at once
  /// (speculative decoding); with greedy sampling the output is the model's own.
  LanguageModel* draft_model = nullptr;
  int num_draft = 3;
  /// Whether each step's computation is built and started before the previous step's token is read back, so the
  /// host's work (graph building, detokenizing, the callback) overlaps the kernels'. Unset: only when the default
  /// device is a GPU; on the CPU the host's work takes cores from the kernels, and decoding measured up to 15% slower
  /// overlapped. The tokens are the same either way. Steps stay one at a time when a repetition, presence or
  /// frequency penalty needs the newest token on the host, and with a draft model. When an overlapped generation
  /// stops at a stop id or string (or the callback stops it), the model has already been fed the last token: a
  /// prompt cache then holds it too.
  std::optional<bool> overlap_steps;
  /// Limits which tokens may come next (constrained decoding); it holds one sequence's state, so each sequence needs
  /// its own. Its masks need each token on the host, so constrained steps never overlap; no draft model with it.
  std::shared_ptr<TokenConstraint> constraint;
};

/// Running statistics of a generation.
struct GenerationStats {
  /// Tokens of the prompt, and how many of them a reused prompt cache already held (not computed again).
  int prompt_tokens = 0;
  int cached_prompt_tokens = 0;
  /// Prompt tokens computed per second, up to the first generated token.
  double prompt_tps = 0;
  int generation_tokens = 0;
  /// Generated tokens per second after the first.
  double generation_tps = 0;
  /// The most memory nuvec's allocator has held since this generation started, in bytes: the peak is reset when
  /// generation starts (reset_peak_memory), but it is process-wide, so allocations made meanwhile by other threads
  /// (or other sequences of a batch) count too.
  size_t peak_memory = 0;
};

/// One generated token.
struct GenerationResponse {
  /// The text that became final with this token (possibly empty: held back by the detokenizer or a stop string).
  std::string text;
  int32_t token = 0;
  float logprob = 0;
  /// The most likely tokens at this step, most likely first (as many as the sampling parameters ask).
  std::vector<TokenLogprob> top_logprobs;
  /// "stop" (a stop id or stop string), "length" (max_tokens), or none while generation goes on.
  std::optional<std::string> finish_reason;
  /// Whether the draft model proposed this token (speculative decoding).
  bool from_draft = false;
  GenerationStats stats;
};

/// Called with each response; returns whether to go on.
using GenerateCallback = std::function<bool(const GenerationResponse&)>;

/// Generates from `prompt` (token ids), calling `callback` with each token as it comes.
void stream_generate(LanguageModel& model, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                     const GenerateOptions& options, const GenerateCallback& callback);

/// The whole of a generation.
struct GenerationResult {
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  std::vector<std::vector<TokenLogprob>> top_logprobs;
  /// "stop", "length", or "" when max_tokens is 0.
  std::string finish_reason;
  GenerationStats stats;
};

/// Generates from `prompt` and returns the text and each token's data.
GenerationResult generate(LanguageModel& model, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                          const GenerateOptions& options = {});

/// `options` with the EOS ids of the model's generation config added to its stop ids.
GenerateOptions with_model_stop_ids(const LoadedModel& loaded, GenerateOptions options);
/// stream_generate and generate for a loaded model: its tokenizer, and its generation config's EOS ids as stop ids.
void stream_generate(const LoadedModel& loaded, const std::vector<int32_t>& prompt, const GenerateOptions& options,
                     const GenerateCallback& callback);
GenerationResult generate(const LoadedModel& loaded, const std::vector<int32_t>& prompt,
                          const GenerateOptions& options = {});

}  // namespace nuvec::lm
