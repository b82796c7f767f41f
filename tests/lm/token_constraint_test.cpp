// The token-constraint hook of generation: a toy constraint that allows one token at a time forces a known
// sequence, at temperature 0 and 1, alone (generate) and in a batch with unconstrained neighbours
// (BatchGenerator), which give the same tokens; a constraint that is complete lets the EOS id through, and one that
// allows nothing more ends the sequence with "stop".

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nuvec/core/error.h"
#include "nuvec/core/random.h"
#include "nuvec/lm/lm.h"
#include "tests/lm/model_test_util.h"

namespace nuvec::lm {
namespace {

using nlohmann::json;

constexpr int vocab_count = 32;
constexpr int eos_id = 1;

std::shared_ptr<LanguageModel> tiny_llama(uint64_t seed) { return test::random_tiny_llama(seed, vocab_count); }

/// A BPE tokenizer whose tokens are "<unk>", "</s>" (EOS when `with_eos`) and the letters a, b, c, ...
Tokenizer letters_tokenizer(bool with_eos = true) {
  json vocab = {{"<unk>", 0}, {"</s>", eos_id}};
  for (int id = 2; id < vocab_count; ++id) {
    vocab[std::string(1, static_cast<char>('a' + id - 2))] = id;
  }
  const json file = {{"version", "1.0"},
                     {"added_tokens", json::array()},
                     {"normalizer", nullptr},
                     {"pre_tokenizer", nullptr},
                     {"post_processor", nullptr},
                     {"decoder", {{"type", "Fuse"}}},
                     {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}}};
  return Tokenizer::from_json(file.dump(), with_eos ? json{{"eos_token", "</s>"}}.dump() : std::string());
}

/// Allows exactly the next token of `sequence`; complete at its end, after which it allows nothing (so the EOS id
/// is forced) or, with `open_end`, any letter.
class ForcedSequence final : public TokenConstraint {
 public:
  ForcedSequence(std::vector<int32_t> sequence, bool open_end) : sequence_(std::move(sequence)), open_end_(open_end) {}

  void allowed(std::vector<uint8_t>& mask) override {
    if (at_ < sequence_.size()) {
      mask[static_cast<size_t>(sequence_[at_])] = 1;
    } else if (open_end_) {
      std::fill(mask.begin() + 2, mask.end(), uint8_t{1});
    }
  }
  void accept(int32_t id) override {
    if (at_ < sequence_.size()) {
      EXPECT_EQ(id, sequence_[at_]);
    }
    ++at_;
  }
  [[nodiscard]] bool complete() const override { return at_ >= sequence_.size(); }

 private:
  std::vector<int32_t> sequence_;
  bool open_end_;
  size_t at_ = 0;
};

GenerateOptions forced(const std::vector<int32_t>& sequence, float temperature, uint64_t seed, bool open_end = false) {
  GenerateOptions options;
  options.max_tokens = 20;
  options.sampling.temperature = temperature;
  options.sampling.seed = seed;
  options.constraint = std::make_shared<ForcedSequence>(sequence, open_end);
  return options;
}

const std::vector<int32_t> forced_ids = {7, 3, 9, 9, 4, 12};
const std::vector<int32_t> prompt_ids = {5, 6, 7, 8};

TEST(TokenConstraint, ForcesAKnownSequenceAndStops) {
  const auto model = tiny_llama(3);
  const Tokenizer tokenizer = letters_tokenizer();
  for (float temperature : {0.0F, 1.0F}) {
    const GenerationResult result = generate(*model, tokenizer, prompt_ids, forced(forced_ids, temperature, 11));
    std::vector<int32_t> want = forced_ids;
    want.push_back(eos_id);
    EXPECT_EQ(result.tokens, want) << "temperature " << temperature;
    EXPECT_EQ(result.text, "fbhhck");
    EXPECT_EQ(result.finish_reason, "stop");
  }
}

TEST(TokenConstraint, ACompleteConstraintLetsTheEosIdThrough) {
  const auto model = tiny_llama(4);
  const Tokenizer tokenizer = letters_tokenizer();
  // After the forced part any letter may come, and EOS: the sequence ends at EOS ("stop") or at max_tokens.
  for (uint64_t seed = 0; seed < 4; ++seed) {
    const GenerationResult result = generate(*model, tokenizer, prompt_ids, forced(forced_ids, 1.0F, seed, true));
    ASSERT_GE(result.tokens.size(), forced_ids.size());
    EXPECT_EQ(std::vector<int32_t>(result.tokens.begin(), result.tokens.begin() + 6), forced_ids);
    EXPECT_EQ(result.finish_reason, result.tokens.back() == eos_id ? "stop" : "length");
  }
  // Before the end the EOS id is masked out even when the logit bias favours it.
  GenerateOptions options = forced(forced_ids, 0.0F, 0);
  options.sampling.logit_bias = {{eos_id, 100.0F}};
  const std::vector<int32_t> tokens = generate(*model, tokenizer, prompt_ids, options).tokens;
  EXPECT_EQ(std::vector<int32_t>(tokens.begin(), tokens.end() - 1), forced_ids);
}

TEST(TokenConstraint, BatchedEqualsAlone) {
  const auto model = tiny_llama(5);
  const Tokenizer tokenizer = letters_tokenizer();
  for (float temperature : {0.0F, 1.0F}) {
    BatchGenerator batch(*model, tokenizer);
    std::map<uint64_t, std::vector<int32_t>> got;
    std::map<uint64_t, std::string> finish;
    std::map<uint64_t, GenerationResult> want;
    // Constrained sequences beside an unconstrained one, which must be as it is alone.
    for (uint64_t seed = 0; seed < 3; ++seed) {
      const bool constrained = seed != 1;
      GenerateOptions options = forced(forced_ids, temperature, seed, seed == 2);
      if (!constrained) {
        options.constraint = nullptr;
        options.max_tokens = 8;
      }
      GenerateOptions fresh = options;
      if (constrained) {
        fresh.constraint = std::make_shared<ForcedSequence>(forced_ids, seed == 2);
      }
      const uint64_t uid = batch.insert(prompt_ids, options);
      want[uid] = generate(*model, tokenizer, prompt_ids, fresh);
    }
    while (batch.has_work()) {
      for (const BatchResponse& r : batch.next()) {
        got[r.uid].push_back(r.response.token);
        if (r.response.finish_reason) {
          finish[r.uid] = *r.response.finish_reason;
        }
      }
    }
    for (const auto& [uid, result] : want) {
      EXPECT_EQ(got[uid], result.tokens) << "sequence " << uid << ", temperature " << temperature;
      EXPECT_EQ(finish[uid], result.finish_reason) << "sequence " << uid;
    }
  }
}

TEST(TokenConstraint, WithoutAStopIdTheSequenceEndsWhereNothingMoreIsAllowed) {
  const auto model = tiny_llama(7);
  const GenerationResult result = generate(*model, letters_tokenizer(false), prompt_ids, forced(forced_ids, 1.0F, 3));
  EXPECT_EQ(result.tokens, forced_ids);
  EXPECT_EQ(result.finish_reason, "stop");
}

TEST(TokenConstraint, OneThatAllowsNoFirstTokenIsRefusedUpFront) {
  const auto model = tiny_llama(8);
  const Tokenizer tokenizer = letters_tokenizer();
  // A constraint that allows nothing and is not complete, as a JSON grammar over a vocabulary of whole words.
  class Nothing final : public TokenConstraint {
   public:
    void allowed(std::vector<uint8_t>& /*mask*/) override {}
    void accept(int32_t /*id*/) override {}
    [[nodiscard]] bool complete() const override { return false; }
  };
  GenerateOptions options;
  options.constraint = std::make_shared<Nothing>();
  for (bool batched : {false, true}) {
    try {
      if (batched) {
        BatchGenerator batch(*model, tokenizer);
        (void)batch.insert(prompt_ids, options);
      } else {
        (void)generate(*model, tokenizer, prompt_ids, options);
      }
      ADD_FAILURE() << "expected an error";
    } catch (const error& e) {
      EXPECT_NE(std::string(e.what()).find("allows no first token"), std::string::npos) << e.what();
    }
  }
}

TEST(TokenConstraint, RefusedWithADraftModel) {
  const auto model = tiny_llama(6);
  const Tokenizer tokenizer = letters_tokenizer();
  GenerateOptions options = forced(forced_ids, 0.0F, 0);
  options.draft_model = model.get();
  try {
    (void)generate(*model, tokenizer, prompt_ids, options);
    ADD_FAILURE() << "expected an error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("constraint cannot be used with a draft model"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace nuvec::lm
