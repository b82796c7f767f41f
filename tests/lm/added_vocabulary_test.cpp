// Added-token matching against Hugging Face's tokenizers: each expected split comes from the reference (encode of
// the Rust library through its Node binding) on a tokenizer.json with the same added tokens and normalizer, whose
// model is the 256 byte-level characters with no merges, so that its tokens spell out each piece.

#include "nuvec/lm/tokenizer/added_vocabulary.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "nuvec/lm/tokenizer/byte_level.h"
#include "nuvec/lm/tokenizer/pre_tokenizer.h"
#include "tests/lm/text_reference.h"

namespace nuvec::lm {
namespace {

using nlohmann::json;

// The byte-level characters take ids from here on, above every added token's id.
constexpr int64_t kByteIdBase = 2'000'000;

/// Each text segment shows as Metaspace (prepend_scheme first, no split) then ByteLevel (no regex) make it: one
/// word whose tokens are its bytes, with U+2581 in front when it starts the input.
json segment_pre_tokenizer() {
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "first"}, {"split", false}},
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}};
}

json byte_tokenizer(const json& added_tokens, const json& normalizer) {
  json vocab = json::object();
  const auto& chars = detail::byte_level_chars();
  for (int b = 0; b < 256; ++b) {
    vocab[chars[static_cast<size_t>(b)]] = kByteIdBase + b;
  }
  for (const json& token : added_tokens) {
    vocab[token["content"].get<std::string>()] = token["id"];
  }
  return {{"version", "1.0"},
          {"added_tokens", added_tokens},
          {"normalizer", normalizer},
          {"pre_tokenizer", segment_pre_tokenizer()},
          {"post_processor", nullptr},
          {"decoder", nullptr},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}}};
}

/// The reference's pieces: an added token's id, or the bytes of a text segment's word.
json reference_pieces(const json& encoding) {
  json pieces = json::array();
  const json& ids = encoding["ids"];
  const json& words = encoding["words"];
  for (size_t i = 0; i < ids.size();) {
    int64_t id = ids[i].get<int64_t>();
    if (id < kByteIdBase) {
      pieces.push_back(id);
      ++i;
      continue;
    }
    std::string bytes;
    size_t j = i;
    for (; j < ids.size() && words[j] == words[i] && ids[j].get<int64_t>() >= kByteIdBase; ++j) {
      bytes += static_cast<char>(ids[j].get<int64_t>() - kByteIdBase);
    }
    pieces.push_back(bytes);
    i = j;
  }
  return pieces;
}

/// Ours, the same way: segments through the same pre-tokenizer, words mapped back from the byte-level alphabet.
json our_pieces(const AddedVocabulary& vocabulary, const Normalizer& normalizer, const PreTokenizer& pre_tokenizer,
                const std::string& text) {
  json pieces = json::array();
  for (const Segment& segment : vocabulary.split(text, normalizer)) {
    if (segment.id >= 0) {
      pieces.push_back(segment.id);
      continue;
    }
    std::vector<std::string> words;
    pre_tokenizer.split(segment.text, segment.first, words);
    for (const std::string& word : words) {
      pieces.push_back(detail::from_byte_level(word).value_or("<not byte-level>"));
    }
  }
  return pieces;
}

struct Case {
  std::string name;
  json added_tokens;
  json normalizer;
  std::vector<std::string> texts;
};

json token(int id, const std::string& content, bool normalized, bool lstrip = false, bool rstrip = false,
           bool single_word = false, bool special = true) {
  return {{"id", id},         {"content", content},       {"single_word", single_word}, {"lstrip", lstrip},
          {"rstrip", rstrip}, {"normalized", normalized}, {"special", special}};
}

std::vector<Case> cases() {
  std::vector<std::string> texts = testing::sample_texts();
  std::vector<std::string> special_texts = {
      "<s>hello</s>",
      "<s><s></s>",
      "a <s> b </s> c",
      "  <mask>  x  <mask>",
      "word<mask>word <mask> end",
      "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
      "<|im_start|><|im_start|> <|im_end|>",
      "cat catalog concat cat. (cat)",
      "ABC abc Abc <S> <s>",
      "\xE2\x96\x81<s> <s>",
      "<|endoftext|><|endoftext|>x",
      "<s",
      "<|im_",
      "  ",
      "<mask>",
      "x<mask>\t\ny",
      "héllo <s>wörld</s> 你好<mask>",
      "ab start",
      "abab<s>ab",
      "\x01control first",
      "\xCC\x81mark first",
      "x first",
  };
  texts.insert(texts.end(), special_texts.begin(), special_texts.end());
  json synthetic = json::array({
      token(1000, "<s>", false),
      token(1001, "</s>", false),
      token(1002, "<mask>", false, true, true),
      token(1003, "<|im_start|>", false),
      token(1004, "<|im_end|>", false, false, true),
      token(1005, "<|im_", false),
      token(1006, "cat", true, false, false, true, false),
      token(1007, "abc", true, false, false, false, false),
      token(1008, "<|endoftext|>", true),
  });
  std::vector<Case> all = {
      {"no normalizer", synthetic, nullptr, texts},
      {"lowercase", synthetic, {{"type", "Lowercase"}}, texts},
      {"llama2-style",
       synthetic,
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}}}},
       texts},
      {"strip", synthetic, {{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}, texts},
      {"replacements at the start",
       synthetic,
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "Replace"}, {"pattern", {{"String", "ab"}}}, {"content", "Z"}},
          {{"type", "Replace"}, {"pattern", {{"Regex", "^\\s+"}}}, {"content", ""}},
          {{"type", "Replace"}, {"pattern", {{"String", "x"}}}, {"content", "yy"}}}}},
       texts},
      {"bert",
       synthetic,
       {{"type", "BertNormalizer"},
        {"clean_text", true},
        {"handle_chinese_chars", true},
        {"strip_accents", nullptr},
        {"lowercase", true}},
       texts},
      {"nmt and strip accents",
       synthetic,
       {{"type", "Sequence"}, {"normalizers", {{{"type", "Nmt"}}, {{"type", "StripAccents"}}}}},
       texts},
  };
  // The real files' added tokens and normalizers.
  for (const char* name : {"llama3", "qwen3", "gemma3", "deepseek_v3", "mistral_nemo", "llama2"}) {
    json file = testing::real_tokenizer(name);
    if (file.is_null()) {
      continue;
    }
    std::vector<std::string> real_texts = texts;
    for (size_t i = 0; i < file["added_tokens"].size() && i < 40; ++i) {
      const json& t = file["added_tokens"][i * file["added_tokens"].size() / 40];
      std::string content = t["content"];
      real_texts.push_back("x " + content + content + "y" + content + " z");
    }
    all.push_back({name, file["added_tokens"], file["normalizer"], real_texts});
  }
  return all;
}

TEST(AddedVocabulary, SplitsLikeTheReference) {
  if (auto missing = testing::reference_missing()) {
    GTEST_SKIP() << *missing;
  }
  std::vector<Case> all = cases();
  json requests = json::array();
  for (const Case& c : all) {
    requests.push_back(
        {{"tokenizer", byte_tokenizer(c.added_tokens, c.normalizer)}, {"mode", "encode"}, {"texts", c.texts}});
  }
  json expected = testing::run_reference(requests);
  PreTokenizer pre_tokenizer = PreTokenizer::from_json(detail::JsonField(segment_pre_tokenizer(), "test.json"));
  size_t passed = 0;
  size_t compared = 0;
  for (size_t c = 0; c < all.size(); ++c) {
    std::vector<AddedToken> tokens;
    for (size_t i = 0; i < all[c].added_tokens.size(); ++i) {
      tokens.push_back(AddedToken::from_json(detail::JsonField(all[c].added_tokens[i], "test.json")));
    }
    AddedVocabulary vocabulary(std::move(tokens));
    Normalizer normalizer = Normalizer::from_json(detail::JsonField(all[c].normalizer, "test.json"));
    for (size_t t = 0; t < all[c].texts.size(); ++t) {
      json want = reference_pieces(expected[c][t]);
      json got = our_pieces(vocabulary, normalizer, pre_tokenizer, all[c].texts[t]);
      EXPECT_EQ(got, want) << all[c].name << "\ntext " << json(all[c].texts[t]).dump();
      passed += got == want ? 1 : 0;
      ++compared;
    }
  }
  EXPECT_EQ(passed, compared);
}

// encode_batch splits from several threads at once: the results must be those of one thread.
TEST(AddedVocabulary, ConcurrentSplitsAgreeWithSequentialOnes) {
  json added = json::array({token(1, "<|eot|>", false), token(2, "<mask>", false, true, true), token(3, "abc", true)});
  std::vector<AddedToken> tokens;
  for (size_t i = 0; i < added.size(); ++i) {
    tokens.push_back(AddedToken::from_json(detail::JsonField(added[i], "test.json")));
  }
  AddedVocabulary vocabulary(std::move(tokens));
  Normalizer normalizer = Normalizer::from_json(detail::JsonField(json{{"type", "NFKC"}}, "test.json"));
  json pre = {{"type", "Sequence"},
              {"pretokenizers",
               {{{"type", "Split"},
                 {"pattern",
                  {{"Regex",
                    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?"
                    "[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}},
                 {"behavior", "Isolated"},
                 {"invert", false}},
                {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}},
                {{"type", "Metaspace"}, {"replacement", "_"}, {"prepend_scheme", "first"}, {"split", true}}}}};
  PreTokenizer pre_tokenizer = PreTokenizer::from_json(detail::JsonField(pre, "test.json"));
  std::vector<std::string> texts = testing::sample_texts();
  for (std::string& text : texts) {
    text += " <|eot|> abc <mask> " + text;
  }
  auto words_of = [&](const std::string& text) {
    std::vector<std::string> words;
    for (const Segment& segment : vocabulary.split(text, normalizer)) {
      if (segment.id >= 0) {
        words.push_back(std::string("#").append(std::to_string(segment.id)));
      } else {
        pre_tokenizer.split(segment.text, segment.first, words);
      }
    }
    return words;
  };
  std::vector<std::vector<std::string>> sequential;
  for (const std::string& text : texts) {
    sequential.push_back(words_of(text));
  }
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < mismatches.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (size_t i = (t + static_cast<size_t>(round)) % texts.size(), n = 0; n < texts.size();
             ++n, i = (i + 1) % texts.size()) {
          mismatches[t] += words_of(texts[i]) != sequential[i] ? 1 : 0;
        }
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST(AddedVocabulary, ReadsTokenFields) {
  json value = {{"id", 7}, {"content", "<x>"}, {"special", true}, {"lstrip", true}, {"normalized", false}};
  AddedToken t = AddedToken::from_json(detail::JsonField(value, "test.json"));
  EXPECT_EQ(t.content, "<x>");
  EXPECT_EQ(t.id, 7);
  EXPECT_TRUE(t.special);
  EXPECT_TRUE(t.lstrip);
  EXPECT_FALSE(t.rstrip);
  EXPECT_FALSE(t.single_word);
  EXPECT_FALSE(t.normalized);
  EXPECT_TRUE(AddedVocabulary().split("", Normalizer()).empty());
}

}  // namespace
}  // namespace nuvec::lm
