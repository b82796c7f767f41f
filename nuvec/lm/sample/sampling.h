#pragma once

// Picking the next token from a language model's logits, designed after mlx-lm's sample_utils and transformers'
// logits processors. The steps, in order: the logit bias and the repetition, presence and frequency penalties, then
// the temperature, then the top-k, top-p and min-p filters, then a draw (the argmax at temperature 0). Each sequence
// carries its own parameters and random key, so one call samples a batch of sequences with different settings, and a
// seeded sequence draws the same tokens alone or in any batch.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "nuvec/core/array.h"

namespace nuvec::lm {

/// How one sequence picks its tokens. The defaults switch everything off: greedy decoding. Filters keep every token
/// tied with the last one they keep, so their result never depends on how a sort orders equal values.
struct SamplingParams {
  float temperature = 0.0F;          // 0: greedy (the argmax, ties to the lowest id)
  int top_k = 0;                     // keep the k most probable tokens (0 or >= the vocabulary: off)
  float top_p = 1.0F;                // keep the most probable tokens until their mass reaches top_p (1: off)
  float min_p = 0.0F;                // keep tokens at least min_p times as probable as the most probable one (0: off)
  int min_tokens_to_keep = 1;        // min-p keeps at least this many tokens
  float repetition_penalty = 1.0F;   // CTRL's: logits of the recent ids divided (> 0) or multiplied (< 0) (1: off)
  int repetition_context_size = 20;  // how many of the last ids (prompt included) the repetition penalty sees
  float presence_penalty = 0.0F;     // OpenAI's: subtracted once from each generated id's logit
  float frequency_penalty = 0.0F;    // OpenAI's: subtracted from a generated id's logit once per occurrence
  std::map<int32_t, float> logit_bias{};  // added to these ids' logits
  std::optional<uint64_t> seed{};         // the sequence's key; without one, a key from nuvec::random's global sequence
  int top_logprobs = 0;                   // also report the N most probable tokens (0 to 20)

  /// Throws nuvec::error naming the first invalid field and its value; `vocab_size` bounds the logit_bias ids.
  void validate(int vocab_size) const;
};

/// The most probable tokens are reported up to this many (OpenAI's limit).
inline constexpr int max_top_logprobs = 20;

/// A sequence's ids so far. The repetition penalty sees the last ids of both parts; the presence and frequency
/// penalties only the generated ids (as OpenAI and vLLM define them).
struct TokenHistory {
  std::span<const int32_t> prompt{};
  std::span<const int32_t> generated{};
};

struct SampledTokens;

/// mlx_lm's logits processor: a sequence's ids so far ((N) int32, prompt and generated) and its logits (1, V) to the
/// logits (1, V) to sample from.
using LogitsProcessor = std::function<array(const array& ids, const array& logits)>;
/// mlx_lm's sampler: a sequence's log-probabilities (1, V), after every processor, to its chosen token (one integer).
using TokenChooser = std::function<array(const array& logprobs)>;

/// A sequence's own functions, for choices its parameters cannot express: processors that run first, in order, on
/// the raw logits (the parameters' logit bias and penalties come after them), and a chooser that replaces the
/// temperature, the filters and the draw (the argmax or the parameters' draw without one).
struct SamplingHooks {
  std::vector<LogitsProcessor> processors;
  TokenChooser chooser;
  [[nodiscard]] bool empty() const { return processors.empty() && !chooser; }
};

/// One sequence's sampling state: its parameters and its random key. Each draw splits the key as random::split does,
/// draws with the second half and keeps the first (MLX's discipline for its global key), so the n-th draw depends on
/// the seed and n alone, never on the batch the sequence is in.
class Sampler {
 public:
  /// Validates `params`; `vocab_size` is the logits' last dimension.
  Sampler(SamplingParams params, int vocab_size);

  [[nodiscard]] const SamplingParams& params() const { return params_; }
  [[nodiscard]] int vocab_size() const { return vocab_size_; }
  /// Whether the sequence takes the argmax (temperature 0) and so never draws.
  [[nodiscard]] bool greedy() const { return params_.temperature == 0.0F && !hooks_.chooser; }
  [[nodiscard]] const SamplingHooks& hooks() const { return hooks_; }
  void set_hooks(SamplingHooks hooks) { hooks_ = std::move(hooks); }

  /// Samples one token from logits (V) or (1, V); the batch form is `sample`.
  SampledTokens sample(const array& logits, TokenHistory history = {});

  /// The next draw's uniform number in (0, 1): (w + 0.5) / 2^32, w the first word of random::bits({2}, 4, k) for the
  /// next key k. Advances the sequence's key.
  double next_uniform();

 private:
  SamplingParams params_;
  int vocab_size_;
  SamplingHooks hooks_;
  std::array<uint32_t, 2> key_{};
};

/// One row of a batch: the sequence's sampler (whose key advances when the row draws), its ids so far, and, for a
/// constrained sequence, which tokens it may take (V entries, 0: never drawn).
struct SamplingRow {
  Sampler* sampler = nullptr;
  TokenHistory history{};
  const std::vector<uint8_t>* allowed = nullptr;
};

/// A token with its log-probability under the model's own distribution.
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0F;
};

/// A row's choice, read back to the host.
struct SampledToken {
  int32_t token = 0;
  float logprob = 0.0F;           // log-softmax of the raw logits (before penalties and temperature) at `token`
  std::vector<TokenLogprob> top;  // the row's top_logprobs most probable tokens, most probable first
};

/// The choices for a batch of B rows, as lazy arrays: evaluate them (eval or async_eval), or call `read`.
/// Log-probabilities are the log-softmax of the raw logits, before penalties and temperature.
struct SampledTokens {
  array tokens;                 // (B) int32
  array logprobs;               // (B) float32: the chosen tokens' log-probabilities
  array top_tokens;             // (B, N) int32, N the largest top_logprobs of the rows: most probable first, ties
                                // to the lowest id
  array top_logprobs;           // (B, N) float32
  std::vector<int> top_counts;  // each row's own top_logprobs (at most N)

  /// Evaluates the arrays and reads each row's choice (with its own number of top tokens).
  [[nodiscard]] std::vector<SampledToken> read() const;
};

/// Samples one token for each row of `logits` (B, V), row b as rows[b] says (its sampler's hooks included). Logits may
/// be float32, float16, bfloat16 or float64; the work is done in float32.
SampledTokens sample(const array& logits, std::span<const SamplingRow> rows);

}  // namespace nuvec::lm
