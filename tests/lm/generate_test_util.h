#pragma once

// What the generation tests share: a tiny random-weight Llama over a 64-token vocabulary with a tokenizer whose
// decode is the concatenation of its token texts, random prompts, and checks that runs (and caches) agree.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "nuvec/lm/lm.h"

namespace nuvec::lm::test {

inline constexpr int kVocab = 64;

/// A two-layer Llama of kVocab tokens with random weights from `seed`.
std::shared_ptr<LanguageModel> tiny_llama(uint64_t seed, int context = 256);
/// Token texts: single letters and a few longer pieces, so a stop string can span tokens.
std::string token_text(int id);
/// A BPE tokenizer over kVocab tokens whose decode is the concatenation of the token texts; `eos`, when given, is
/// the EOS token of its tokenizer_config.json.
Tokenizer make_tokenizer(std::optional<int> eos = std::nullopt);
/// `length` random ids past the first two (which are special).
std::vector<int32_t> random_prompt(std::mt19937& rng, int length);

/// The same tokens, text and finish reason, and log-probabilities within 1e-4.
void expect_same_run(const GenerationResult& got, const GenerationResult& want, const std::string& what);
/// Checks that every layer of `cache` holds the keys and values a fresh cache gets from `tokens`.
void expect_cache_holds(LanguageModel& model, const Cache& cache, const std::vector<int32_t>& tokens,
                        const std::string& what);
/// The message of the nuvec error `call` throws (a test failure when it throws none).
std::string expect_error(const std::function<void()>& call);

/// A model that records the shape of every input it is given.
class Recording : public LanguageModel {
 public:
  explicit Recording(LanguageModel& model) : model_(model) {}
  [[nodiscard]] std::string type_name() const override { return "Recording"; }
  array forward(const array& tokens, Cache* cache) override {
    inputs.push_back(tokens.shape());
    return model_.forward(tokens, cache);
  }
  array hidden_states(const array& tokens, Cache* cache) override { return model_.hidden_states(tokens, cache); }
  [[nodiscard]] Cache make_cache() const override { return model_.make_cache(); }
  [[nodiscard]] const std::string& model_type() const override { return model_.model_type(); }
  [[nodiscard]] int vocab_size() const override { return model_.vocab_size(); }
  [[nodiscard]] int num_layers() const override { return model_.num_layers(); }
  [[nodiscard]] int max_context() const override { return model_.max_context(); }

  std::vector<Shape> inputs;

 private:
  LanguageModel& model_;
};

/// Runs every request to its end; the results by request.
std::vector<GenerationResult> run_batch(BatchGenerator& generator, const std::vector<uint64_t>& uids);

}  // namespace nuvec::lm::test
