#pragma once

// Runs Hugging Face's tokenizers (tests/lm/reference_tokenizer.js through Node) over a batch, and builds the test
// texts: the corpus (tests/lm/corpus/corpus.jsonl) and seeded random strings.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "nuvec/lm/utf8.h"

namespace nuvec::lm::test {

inline std::string npm_dir() { return NUVEC_NPM_DIR; }

/// Why the reference cannot run here, or empty when it can.
inline std::string reference_missing(const std::string& package_file) {
  if (std::system("node --version > /dev/null 2>&1") != 0) {
    return "Node.js is not installed (scripts/install-deps.sh)";
  }
  if (!std::filesystem::exists(npm_dir() + "/node_modules/tokenizers/index.js")) {
    return "the npm package tokenizers is not in " + npm_dir() + " (scripts/install-deps.sh)";
  }
  if (!package_file.empty() && !std::filesystem::exists(package_file)) {
    return package_file + " is missing (scripts/install-deps.sh installs its npm package)";
  }
  return {};
}

/// A request for the reference: a text to encode (and decode back) or ids to decode.
struct Request {
  std::string text;
  std::vector<int32_t> ids;
  bool is_text = true;
};

/// The reference's answers, one JSON object per request (see reference_tokenizer.js).
inline std::vector<nlohmann::json> run_reference(const std::string& tokenizer_json, const std::vector<Request>& batch) {
  std::string dir = ::testing::TempDir() + "nuvec_lm_reference_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::string requests = dir + "/requests.jsonl";
  std::string output = dir + "/output.jsonl";
  {
    std::ofstream out(requests);
    for (const Request& request : batch) {
      nlohmann::json line =
          request.is_text ? nlohmann::json{{"text", request.text}} : nlohmann::json{{"ids", request.ids}};
      out << line.dump() << "\n";
    }
  }
  std::string command = "node '" + std::string(TESTS_LM_DIR) + "/reference_tokenizer.js' '" + npm_dir() + "' '" +
                        tokenizer_json + "' '" + requests + "' '" + output + "'";
  if (std::system(command.c_str()) != 0) {
    ADD_FAILURE() << "the reference failed: " << command;
    return {};
  }
  std::vector<nlohmann::json> answers;
  std::ifstream in(output);
  for (std::string line; std::getline(in, line);) {
    answers.push_back(nlohmann::json::parse(line));
  }
  EXPECT_EQ(answers.size(), batch.size());
  return answers;
}

/// The texts of tests/lm/corpus/corpus.jsonl (one JSON string a line).
inline std::vector<std::string> corpus() {
  std::vector<std::string> texts;
  std::ifstream in(std::string(TESTS_LM_DIR) + "/corpus/corpus.jsonl");
  for (std::string line; std::getline(in, line);) {
    texts.push_back(nlohmann::json::parse(line).get<std::string>());
  }
  return texts;
}

/// `count` random strings of code points from mixed ranges (ASCII, Latin, Greek, Cyrillic, CJK, Hangul, emoji,
/// combining marks, spaces and line breaks, digits, the BMP at large), some with special-token strings in them.
inline std::vector<std::string> random_texts(uint32_t seed, size_t count, const std::vector<std::string>& inserts) {
  std::mt19937 rng(seed);
  const std::vector<std::pair<char32_t, char32_t>> ranges = {
      {0x20, 0x7E},     {0x30, 0x39},     {0xA0, 0x24F},    {0x370, 0x3FF},     {0x400, 0x4FF}, {0x300, 0x36F},
      {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0x3040, 0x30FF}, {0x1F300, 0x1FAFF}, {0x600, 0x6FF}, {0x900, 0x97F},
      {0xE00, 0xE7F},   {0x1, 0xD7FF},    {0xE000, 0xFFFD}, {0x10000, 0x10FFFF}};
  const std::u32string spaces = U"  \n\t\r\u3000\u00A0\u2009";
  std::vector<std::string> texts;
  for (size_t n = 0; n < count; ++n) {
    std::string text;
    size_t length = std::uniform_int_distribution<size_t>(0, 40)(rng);
    for (size_t i = 0; i < length; ++i) {
      int pick = std::uniform_int_distribution<int>(0, 19)(rng);
      char32_t cp;
      if (pick < 4) {
        cp = spaces[std::uniform_int_distribution<size_t>(0, spaces.size() - 1)(rng)];
      } else if (pick == 4 && !inserts.empty()) {
        text += inserts[std::uniform_int_distribution<size_t>(0, inserts.size() - 1)(rng)];
        continue;
      } else {
        auto [low, high] = ranges[std::uniform_int_distribution<size_t>(0, ranges.size() - 1)(rng)];
        cp = std::uniform_int_distribution<char32_t>(low, high)(rng);
      }
      if (cp >= 0xD800 && cp <= 0xDFFF) {
        cp = 'x';
      }
      detail::append_utf8(text, cp);
    }
    texts.push_back(text);
  }
  return texts;
}

}  // namespace nuvec::lm::test
