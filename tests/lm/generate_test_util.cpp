#include "tests/lm/generate_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "nuvec/core/error.h"
#include "nuvec/core/ops.h"
#include "tests/lm/model_test_util.h"

namespace nuvec::lm::test {

using nlohmann::json;

std::shared_ptr<LanguageModel> tiny_llama(uint64_t seed, int context) {
  return random_tiny_llama(seed, kVocab, context);
}

std::string token_text(int id) {
  static const std::vector<std::string> pieces = {"<unk>", "</s>", " ", ".", "th", "ing", "ab", "xyz", "lo", "ve"};
  if (id < static_cast<int>(pieces.size())) {
    return pieces[id];
  }
  const int letter = id - static_cast<int>(pieces.size());
  return std::string(1, static_cast<char>(letter < 26 ? 'a' + letter : 'A' + (letter - 26)));
}

Tokenizer make_tokenizer(std::optional<int> eos) {
  json vocab = json::object();
  for (int id = 0; id < kVocab; ++id) {
    vocab[token_text(id)] = id;
  }
  json file = {{"version", "1.0"},
               {"added_tokens", json::array()},
               {"normalizer", nullptr},
               {"pre_tokenizer", nullptr},
               {"post_processor", nullptr},
               {"decoder", {{"type", "Fuse"}}},
               {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}}};
  json config = json::object();
  if (eos) {
    config["eos_token"] = token_text(*eos);
  }
  return Tokenizer::from_json(file.dump(), eos ? config.dump() : std::string());
}

std::vector<int32_t> random_prompt(std::mt19937& rng, int length) {
  std::uniform_int_distribution<int32_t> id(2, kVocab - 1);
  std::vector<int32_t> prompt(length);
  for (auto& t : prompt) {
    t = id(rng);
  }
  return prompt;
}

void expect_same_run(const GenerationResult& got, const GenerationResult& want, const std::string& what) {
  EXPECT_EQ(got.tokens, want.tokens) << what;
  EXPECT_EQ(got.text, want.text) << what;
  EXPECT_EQ(got.finish_reason, want.finish_reason) << what;
  ASSERT_EQ(got.logprobs.size(), want.logprobs.size()) << what;
  for (size_t i = 0; i < got.logprobs.size(); ++i) {
    EXPECT_NEAR(got.logprobs[i], want.logprobs[i], 1e-4) << what << " token " << i;
  }
}

void expect_cache_holds(LanguageModel& model, const Cache& cache, const std::vector<int32_t>& tokens,
                        const std::string& what) {
  ASSERT_EQ(cache.front()->offset(), static_cast<int>(tokens.size())) << what;
  if (tokens.empty()) {
    return;
  }
  Cache fresh = model.make_cache();
  (void)model.forward(array(tokens.begin(), {1, static_cast<int>(tokens.size())}, int32), &fresh);
  for (size_t layer = 0; layer < cache.size(); ++layer) {
    const std::vector<array> got = cache[layer]->state();
    const std::vector<array> want = fresh[layer]->state();
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].shape(), want[i].shape()) << what;
      EXPECT_LT(max(abs(subtract(got[i], want[i]))).item<float>(), 1e-4F) << what << ", layer " << layer;
    }
  }
}

std::string expect_error(const std::function<void()>& call) {
  try {
    call();
  } catch (const error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return {};
}

std::vector<GenerationResult> run_batch(BatchGenerator& generator, const std::vector<uint64_t>& uids) {
  std::vector<GenerationResult> got(uids.size());
  int steps = 0;
  while (generator.has_work()) {
    for (const BatchResponse& r : generator.next()) {
      const size_t i = std::find(uids.begin(), uids.end(), r.uid) - uids.begin();
      got.at(i).tokens.push_back(r.response.token);
      got[i].logprobs.push_back(r.response.logprob);
      got[i].text += r.response.text;
      got[i].finish_reason = r.response.finish_reason.value_or("");
      got[i].stats = r.response.stats;
    }
    EXPECT_LT(++steps, 100);
    if (steps >= 100) {
      break;
    }
  }
  return got;
}

}  // namespace nuvec::lm::test
