// The normalizers against Hugging Face's tokenizers: every expected string comes from the reference
// (Normalizer.normalizeString of the Rust library through its Node binding) for the same normalizer JSON.

#include "nuvec/lm/tokenizer/normalizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "nuvec/core/error.h"
#include "tests/lm/text_reference.h"

namespace nuvec::lm {
namespace {

using nlohmann::json;

Normalizer normalizer_from(const json& value) { return Normalizer::from_json(detail::JsonField(value, "test.json")); }

/// Normalizer JSONs covering every kind and option.
std::vector<json> normalizer_cases() {
  std::vector<json> cases = {
      {{"type", "NFC"}},
      {{"type", "NFD"}},
      {{"type", "NFKC"}},
      {{"type", "NFKD"}},
      {{"type", "Lowercase"}},
      {{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}},
      {{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}},
      {{"type", "Strip"}, {"strip_left", false}, {"strip_right", true}},
      {{"type", "StripAccents"}},
      {{"type", "Nmt"}},
      {{"type", "ByteLevel"}},
      {{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
      {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}},
      {{"type", "Replace"}, {"pattern", {{"String", "ab"}}}, {"content", ""}},
      {{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}},
      {{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", "_"}},
      {{"type", "Replace"}, {"pattern", {{"Regex", "\\w+"}}}, {"content", "W"}},
      {{"type", "Replace"}, {"pattern", {{"Regex", "\\d"}}}, {"content", "D"}},
      {{"type", "Replace"}, {"pattern", {{"Regex", "(?i:[a-c]+)|^ |$"}}}, {"content", "#"}},
      {{"type", "Replace"}, {"pattern", {{"Regex", "x*"}}}, {"content", "-"}},
      {{"type", "Sequence"},
       {"normalizers",
        {{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
         {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}}}},
      {{"type", "Sequence"}, {"normalizers", {{{"type", "NFD"}}, {{"type", "StripAccents"}}, {{"type", "Lowercase"}}}}},
      {{"type", "BertNormalizer"},
       {"clean_text", true},
       {"handle_chinese_chars", true},
       {"strip_accents", nullptr},
       {"lowercase", true}},
      {{"type", "BertNormalizer"},
       {"clean_text", true},
       {"handle_chinese_chars", true},
       {"strip_accents", nullptr},
       {"lowercase", false}},
      {{"type", "BertNormalizer"},
       {"clean_text", false},
       {"handle_chinese_chars", false},
       {"strip_accents", true},
       {"lowercase", false}},
      {{"type", "BertNormalizer"},
       {"clean_text", true},
       {"handle_chinese_chars", false},
       {"strip_accents", false},
       {"lowercase", true}},
  };
  for (const char* name : {"llama2", "qwen3", "gemma3"}) {
    json file = testing::real_tokenizer(name);
    if (!file.is_null() && !file["normalizer"].is_null()) {
      cases.push_back(file["normalizer"]);
    }
  }
  return cases;
}

TEST(Normalizer, MatchesTheReferenceOnManyScriptsAndKinds) {
  if (auto missing = testing::reference_missing()) {
    GTEST_SKIP() << *missing;
  }
  std::vector<json> cases = normalizer_cases();
  std::vector<std::string> texts = testing::sample_texts();
  json requests = json::array();
  for (const json& normalizer : cases) {
    requests.push_back(
        {{"tokenizer", testing::tokenizer_with(normalizer, nullptr)}, {"mode", "normalize"}, {"texts", texts}});
  }
  json expected = testing::run_reference(requests);
  size_t compared = 0;
  for (size_t c = 0; c < cases.size(); ++c) {
    Normalizer normalizer = normalizer_from(cases[c]);
    for (size_t t = 0; t < texts.size(); ++t) {
      EXPECT_EQ(normalizer.apply(texts[t]), expected[c][t].get<std::string>())
          << "normalizer " << cases[c].dump() << "\ntext " << json(texts[t]).dump();
      ++compared;
    }
  }
  EXPECT_EQ(compared, cases.size() * texts.size());
}

TEST(Normalizer, NullAndEmptySequenceAreTheIdentity) {
  EXPECT_TRUE(normalizer_from(nullptr).identity());
  EXPECT_TRUE(normalizer_from({{"type", "Sequence"}, {"normalizers", json::array()}}).identity());
  EXPECT_FALSE(normalizer_from({{"type", "NFC"}}).identity());
  EXPECT_EQ(Normalizer().apply("Abc"), "Abc");
}

TEST(Normalizer, ErrorsNameTheField) {
  try {
    normalizer_from({{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "Unknown"}}}}});
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    EXPECT_NE(std::string(e.what()).find("normalizers[1].type"), std::string::npos) << e.what();
  }
  try {
    normalizer_from({{"type", "Replace"}, {"pattern", {{"Regex", "(unclosed"}}}, {"content", ""}});
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("pattern.Regex"), std::string::npos) << e.what();
  }
}

TEST(Normalizer, PrecompiledReadsADartsTrie) {
  // A hand-built double array with one rule, "A" -> "b": the root's offset is 1, so 'A' (0x41) sits at unit
  // 1 ^ 0x41 = 0x40, whose offset 1 leads to unit 0x41 holding the value 0 (the replacement's offset). 256 units
  // keep every first step inside the array.
  std::vector<uint32_t> units(256, 0);
  units[0] = 1u << 10;
  units[0x40] = (1u << 10) | (1u << 8) | 0x41;
  units[0x41] = 0;
  std::string bytes;
  auto put = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) {
      bytes += static_cast<char>((v >> (8 * i)) & 0xFF);
    }
  };
  put(static_cast<uint32_t>(units.size() * 4));
  for (uint32_t u : units) {
    put(u);
  }
  bytes += std::string("b\0", 2);
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string base64;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t chunk = 0;
    for (size_t k = 0; k < 3; ++k) {
      chunk = (chunk << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    }
    for (size_t k = 0; k < 4; ++k) {
      base64 += k <= n ? alphabet[(chunk >> (18 - 6 * k)) & 63] : '=';
    }
  }
  json precompiled = {{"type", "Precompiled"}, {"precompiled_charsmap", base64}};
  EXPECT_EQ(normalizer_from(precompiled).apply("xAyAA"), "xbybb");
  if (auto missing = testing::reference_missing()) {
    GTEST_SKIP() << *missing;
  }
  std::vector<std::string> texts = {"xAyAA", "A\xCC\x81", "AAAAAA", ""};
  json expected = testing::run_reference(json::array(
      {{{"tokenizer", testing::tokenizer_with(precompiled, nullptr)}, {"mode", "normalize"}, {"texts", texts}}}));
  Normalizer normalizer = normalizer_from(precompiled);
  for (size_t t = 0; t < texts.size(); ++t) {
    EXPECT_EQ(normalizer.apply(texts[t]), expected[0][t].get<std::string>()) << texts[t];
  }
}

}  // namespace
}  // namespace nuvec::lm
