// The pre-tokenizers and the regex dialect against Hugging Face's tokenizers: every expected value comes from the
// reference (PreTokenizer.preTokenizeString and Normalizer.normalizeString of the Rust library through its Node
// binding) for the same JSON.

#include "nuvec/lm/tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nuvec/core/error.h"
#include "nuvec/lm/tokenizer/normalizer.h"
#include "nuvec/lm/utf8.h"
#include "tests/lm/text_reference.h"

namespace nuvec::lm {
namespace {

using nlohmann::json;

PreTokenizer pre_tokenizer_from(const json& value) {
  return PreTokenizer::from_json(detail::JsonField(value, "test.json"));
}

json split(const json& pattern, const char* behavior, bool invert = false) {
  return {{"type", "Split"}, {"pattern", pattern}, {"behavior", behavior}, {"invert", invert}};
}

/// Pre-tokenizer JSONs covering every kind and option, and those of the real files.
std::vector<json> pre_tokenizer_cases() {
  std::vector<json> cases;
  for (const char* behavior : {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"}) {
    cases.push_back(split({{"String", " "}}, behavior));
    cases.push_back(split({{"Regex", "\\s+"}}, behavior));
    cases.push_back(split({{"Regex", "\\p{N}"}}, behavior, true));
    cases.push_back({{"type", "Punctuation"}, {"behavior", behavior}});
  }
  cases.push_back(split({{"String", "ab"}}, "Isolated", true));
  cases.push_back(split({{"Regex", "\\w+|[^\\w\\s]+"}}, "Isolated"));
  cases.push_back(split({{"Regex", "[\\s\\S]"}}, "Isolated"));
  cases.push_back(split({{"Regex", "\\d+|\\h+|\\W"}}, "Isolated"));
  cases.push_back(split({{"Regex", "^.|.$|x*"}}, "Isolated"));
  cases.push_back(split({{"Regex", "\\s+(?!\\S)|\\s+"}}, "Isolated"));
  cases.push_back(split({{"Regex", "(?i:'s|'ll)|\\p{L}+|\\p{M}+|\\p{P}|\\p{S}"}}, "Isolated"));
  for (bool prefix : {false, true}) {
    for (bool use_regex : {false, true}) {
      cases.push_back(
          {{"type", "ByteLevel"}, {"add_prefix_space", prefix}, {"trim_offsets", true}, {"use_regex", use_regex}});
    }
  }
  for (const char* scheme : {"first", "never", "always"}) {
    for (bool split_words : {false, true}) {
      cases.push_back(
          {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", scheme}, {"split", split_words}});
    }
  }
  cases.push_back({{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"add_prefix_space", true}});
  cases.push_back({{"type", "Digits"}, {"individual_digits", true}});
  cases.push_back({{"type", "Digits"}, {"individual_digits", false}});
  cases.push_back({{"type", "Whitespace"}});
  cases.push_back({{"type", "WhitespaceSplit"}});
  cases.push_back({{"type", "BertPreTokenizer"}});
  cases.push_back({{"type", "CharDelimiterSplit"}, {"delimiter", "a"}});
  cases.push_back(
      {{"type", "Sequence"},
       {"pretokenizers",
        {{{"type", "WhitespaceSplit"}},
         {{"type", "Metaspace"}, {"replacement", "_"}, {"prepend_scheme", "first"}, {"split", true}},
         {{"type", "Digits"}, {"individual_digits", true}},
         {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}}}});
  for (const char* name : {"llama3", "qwen3", "gemma3", "deepseek_v3", "mistral_nemo"}) {
    json file = testing::real_tokenizer(name);
    if (!file.is_null() && !file["pre_tokenizer"].is_null()) {
      cases.push_back(file["pre_tokenizer"]);
    }
  }
  return cases;
}

TEST(PreTokenizer, MatchesTheReferenceOnManyScriptsAndKinds) {
  if (auto missing = testing::reference_missing()) {
    GTEST_SKIP() << *missing;
  }
  std::vector<json> cases = pre_tokenizer_cases();
  std::vector<std::string> texts = testing::sample_texts();
  // The empty string never reaches a pre-tokenizer (the added-token split drops empty pieces).
  texts.erase(texts.begin());
  json requests = json::array();
  for (const json& pre_tokenizer : cases) {
    requests.push_back(
        {{"tokenizer", testing::tokenizer_with(nullptr, pre_tokenizer)}, {"mode", "pretokenize"}, {"texts", texts}});
  }
  json expected = testing::run_reference(requests);
  size_t passed = 0;
  for (size_t c = 0; c < cases.size(); ++c) {
    PreTokenizer pre_tokenizer = pre_tokenizer_from(cases[c]);
    for (size_t t = 0; t < texts.size(); ++t) {
      std::vector<std::string> words;
      pre_tokenizer.split(texts[t], true, words);
      EXPECT_EQ(json(words), expected[c][t])
          << "pre-tokenizer " << cases[c].dump() << "\ntext " << json(texts[t]).dump();
      passed += json(words) == expected[c][t] ? 1 : 0;
    }
  }
  EXPECT_EQ(passed, cases.size() * texts.size());
}

TEST(PreTokenizer, MetaspaceFirstPrependsOnlyToTheFirstSegment) {
  json metaspace = {
      {"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "first"}, {"split", true}};
  std::vector<std::string> words;
  pre_tokenizer_from(metaspace).split("a b", true, words);
  pre_tokenizer_from(metaspace).split("c d", false, words);
  EXPECT_EQ(words, (std::vector<std::string>{"\xE2\x96\x81"
                                             "a",
                                             "\xE2\x96\x81"
                                             "b",
                                             "c",
                                             "\xE2\x96\x81"
                                             "d"}));
}

TEST(PreTokenizer, NoneKeepsTheSegmentAndErrorsNameTheField) {
  std::vector<std::string> words;
  pre_tokenizer_from(nullptr).split("a b", true, words);
  EXPECT_EQ(words, std::vector<std::string>{"a b"});
  try {
    pre_tokenizer_from({{"type", "Sequence"}, {"pretokenizers", {{{"type", "Whitespace"}}, {{"type", "Nope"}}}}});
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    EXPECT_NE(std::string(e.what()).find("pretokenizers[1].type"), std::string::npos) << e.what();
  }
  try {
    pre_tokenizer_from(split({{"Regex", "x"}}, "Sideways"));
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("behavior"), std::string::npos) << e.what();
  }
}

// Oniguruma's classes (\w, \s, \d, \h, inside and outside brackets) differ from PCRE2's: each pattern replaces
// what it matches in a string of every code point up to U+2FFFF and the reference says which matched.
TEST(PreTokenizer, RegexClassesMatchOnigurumaOnEveryCodePoint) {
  if (auto missing = testing::reference_missing()) {
    GTEST_SKIP() << *missing;
  }
  // PCRE2 10.42 knows Unicode 14 and the reference a later version: leave out what PCRE2 sees as unassigned.
  json unassigned = {{"type", "Replace"}, {"pattern", {{"Regex", "\\p{Cn}"}}}, {"content", ""}};
  Normalizer drop_unassigned = Normalizer::from_json(detail::JsonField(unassigned, "test.json"));
  std::string all;
  for (char32_t cp = 1; cp < 0x30000; ++cp) {
    if ((cp < 0xD800 || cp > 0xDFFF) && cp != '#') {
      detail::append_utf8(all, cp);
    }
  }
  all = drop_unassigned.apply(all);
  std::vector<std::string> patterns = {"\\w",    "\\W",    "[\\w]",  "[^\\w]", "\\s",    "\\S",
                                       "[\\s]",  "[^\\s]", "[\\S]",  "\\d",    "\\D",    "\\h",
                                       "\\p{L}", "\\p{N}", "\\p{M}", "\\p{P}", "\\p{S}", "[^\\s\\p{L}\\p{N}]",
                                       ".",      "(?i:s)"};
  json requests = json::array();
  for (const std::string& pattern : patterns) {
    json replace = {{"type", "Replace"}, {"pattern", {{"Regex", pattern}}}, {"content", "#"}};
    requests.push_back(
        {{"tokenizer", testing::tokenizer_with(replace, nullptr)}, {"mode", "normalize"}, {"texts", {all}}});
  }
  json expected = testing::run_reference(requests);
  for (size_t p = 0; p < patterns.size(); ++p) {
    json replace = {{"type", "Replace"}, {"pattern", {{"Regex", patterns[p]}}}, {"content", "#"}};
    std::string got = Normalizer::from_json(detail::JsonField(replace, "test.json")).apply(all);
    std::string want = expected[p][0].get<std::string>();
    // Compare code point by code point and list the first differences.
    std::string differences;
    size_t count = 0;
    size_t a = 0;
    size_t b = 0;
    size_t o = 0;
    while (a < got.size() && b < want.size() && o < all.size()) {
      char32_t original = detail::next_code_point(all, o);
      char32_t x = detail::next_code_point(got, a);
      char32_t y = detail::next_code_point(want, b);
      if (x != y) {
        if (++count <= 12) {
          char hex[16];
          std::snprintf(hex, sizeof(hex), "U+%04X ", static_cast<unsigned>(original));
          differences += hex;
        }
      }
    }
    EXPECT_EQ(count, 0u) << "pattern " << patterns[p] << " differs on " << count << " code points: " << differences;
  }
}

}  // namespace
}  // namespace nuvec::lm
