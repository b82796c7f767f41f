#pragma once

// What every way of generating (one sequence, speculative, batched) shares: checking the request, prefilling the
// prompt, and for each sequence its token choices (SequenceSampler) and what its responses say (SequenceOutput).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nuvec/lm/generate/generate.h"
#include "nuvec/lm/sample/sampling.h"

namespace nuvec::lm::detail {

/// The ids that end a generation: the tokenizer's EOS and end-of-turn ids and `extra`.
std::vector<int32_t> stop_ids(const Tokenizer& tokenizer, const std::vector<int32_t>& extra);
/// Checks the options' numbers and stop strings; `caller` names the function in messages.
void check_options(const GenerateOptions& options, const char* caller);
/// Checks a prompt against the model: not empty, ids in the vocabulary, no longer than the context.
void check_prompt(const LanguageModel& model, const std::vector<int32_t>& prompt, const char* caller);
/// Runs `count` tokens through the model into `cache`, `chunk` at a time, evaluating the cache after each chunk.
void prefill(LanguageModel& model, Cache& cache, const int32_t* tokens, int count, int chunk);
/// Evaluates every array a cache holds.
void eval_cache(const Cache& cache);
/// Reserves room in every layer of `cache` for a request of `positions` positions (prompt and generated tokens; no
/// more than the model's context where it has one), so the buffers grow once rather than step by step: each growth
/// needs the old buffer and the new one at once, and leaves the old one in the allocator's cache.
void reserve(Cache& cache, const LanguageModel& model, int64_t positions);
/// The model's fresh caches, reserved for `positions` positions.
Cache reserved_cache(const LanguageModel& model, int64_t positions);

/// Whether steps overlap, given the option (unset: when the default device is a GPU, where the kernels do not
/// compete with the host for cores).
bool overlap_steps(std::optional<bool> setting);
/// Hands choices to the background worker (async_eval), unless they were handed to it already.
void start(const SampledTokens& choices);
/// Waits until the background worker has computed choices handed to it, without taking the evaluation lock: eval()
/// would queue for the lock behind the worker, which usually takes it again first for the step started after these
/// choices, so reading them would wait for that step too and lose the overlap.
void wait_for(const SampledTokens& choices);

/// How many of `prompt`'s tokens a prompt cache can serve: the prefix its tokens share with the prompt, at most all
/// but the prompt's last token (whose logits are needed); 0 for an empty cache. Throws when the cache's token list
/// is out of step with what its caches hold.
int reusable_prefix(const PromptCache& cached, const std::vector<int32_t>& prompt, const char* caller);
/// Cuts `cache` back to at most its first `keep` positions and returns how many it holds; an empty cache, or one
/// that would need trimming but cannot be trimmed, is replaced by `fresh()`.
int keep_prefix(Cache& cache, int keep, const std::function<Cache()>& fresh);

/// One sequence's token choices: its sampler, with the prompt and the generated tokens (for the penalties), and its
/// constraint's mask of the tokens allowed next (stop ids allowed only where the constraint is complete).
class SequenceSampler {
 public:
  SequenceSampler(const SamplingParams& params, int vocab_size, std::vector<int32_t> prompt,
                  std::shared_ptr<TokenConstraint> constraint = nullptr, std::vector<int32_t> stop_ids = {},
                  SamplingHooks hooks = {});

  /// Chooses from logits (1, V): the response's token, log-probability and top ones; the token joins the history.
  GenerationResponse choose(const array& logits);
  /// The choice at logits (1, V) as lazy arrays, to be read later; the random key advances now, the history only
  /// when the choice is accepted.
  SampledTokens sample(const array& logits);
  /// The response for a choice read back from `sample` (or from this sequence's row of a batch); its token joins the
  /// history and goes to the constraint.
  GenerationResponse accept(SampledToken picked);
  /// Whether a penalty or a logits processor reads the history, or a constraint masks the next choice, so each token
  /// must be read back before the next step's choice is built.
  [[nodiscard]] bool needs_history() const;
  /// Whether the constraint allows no token now (stop ids included): the sequence ends.
  [[nodiscard]] bool exhausted() const { return exhausted_; }
  /// This sequence's row of a batch for `sample`; valid until the history changes.
  SamplingRow row();
  /// The response for `token` at logits (1, V): its log-probability and the top ones (the history is unchanged).
  [[nodiscard]] GenerationResponse describe(const array& logits, int32_t token) const;

  /// Whether the choice is always the most likely token (temperature 0).
  [[nodiscard]] bool greedy() const { return sampler_.greedy(); }
  /// The distribution choose() draws from at logits (1, V) given the history: probabilities (V,), float32.
  array distribution(const array& logits);
  /// A token drawn from weights (V,) proportional to probabilities, with this sequence's random state.
  int32_t draw(const array& weights);
  /// A number drawn uniformly from (0, 1) with this sequence's random state.
  double uniform();

  /// Adds a generated token to the history, or forgets all but the first `count` generated tokens.
  void push(int32_t token) { generated_.push_back(token); }
  void truncate(size_t count) { generated_.resize(count); }
  [[nodiscard]] size_t generated() const { return generated_.size(); }

 private:
  /// Asks the constraint for the tokens allowed next.
  void update_mask();

  Sampler sampler_;
  std::vector<int32_t> prompt_;
  std::vector<int32_t> generated_;
  std::shared_ptr<TokenConstraint> constraint_;
  std::vector<int32_t> stop_ids_;
  std::vector<uint8_t> mask_;
  bool exhausted_ = false;
};

/// What one sequence's responses say: its text (through the tokenizer's streaming detokenizer, with text that could
/// begin a stop string held back until the next tokens settle it, so nothing past a stop string is returned even
/// when the stop string is split across tokens), when it ends (a stop id, a stop string, max_tokens) and its running
/// statistics.
class SequenceOutput {
 public:
  /// For a prompt of `prompt_tokens` of which a prompt cache held `cached_prompt_tokens`; the prompt clock starts.
  SequenceOutput(const Tokenizer& tokenizer, const GenerateOptions& options, int prompt_tokens,
                 int cached_prompt_tokens);

  /// Restarts the prompt clock (for a sequence that waited before its prompt was processed).
  void start_prompt();
  /// Fills in the text, finish reason and statistics of the response for the next generated token;
  /// `constraint_ended`: the sequence's constraint allows nothing after it (finish reason "stop").
  void complete(GenerationResponse& response, bool constraint_ended = false);
  /// Whether the last response ended the sequence.
  [[nodiscard]] bool finished() const { return finished_; }
  [[nodiscard]] int generated() const { return stats_.generation_tokens; }

 private:
  using Clock = std::chrono::steady_clock;

  /// The text of the next token, up to a stop string or the longest tail that could still begin one.
  std::string add_text(int32_t id);
  /// The text held back, once no more tokens will come.
  std::string flush_text();
  std::string release(bool final);

  StreamingDetokenizer detokenizer_;
  std::vector<std::string> stop_strings_;
  std::vector<int32_t> stop_ids_;
  int max_tokens_;
  std::string pending_;
  bool stopped_by_string_ = false;
  bool finished_ = false;
  GenerationStats stats_;
  Clock::time_point prompt_start_;
  Clock::time_point first_token_;
};

}  // namespace nuvec::lm::detail
