#pragma once

// Speculative decoding: a small draft model proposes a few tokens, the model checks all of them in one forward pass
// and keeps the longest run it agrees with, plus one token of its own. Greedy output is exactly the model's own;
// with sampling, each draft token is kept with probability min(1, p/q) (p the model's probability, q the draft's)
// and a rejected one is replaced by a draw from max(p - q, 0), so the output follows the model's distribution.

#include <cstdint>
#include <vector>

#include "nuvec/lm/generate/generate.h"

namespace nuvec::lm {

/// stream_generate with `draft` proposing options.num_draft tokens at a time (options.draft_model is not read).
/// Both models must share the vocabulary. A prompt cache keeps both models' caches (PromptCache::draft_cache), each
/// reused for the prefix the prompt shares; max_kv_size must hold the whole request (see GenerateOptions).
void speculative_stream_generate(LanguageModel& model, LanguageModel& draft, const Tokenizer& tokenizer,
                                 const std::vector<int32_t>& prompt, const GenerateOptions& options,
                                 const GenerateCallback& callback);

}  // namespace nuvec::lm
