#include "apps/gpt/corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "nuvec/core/error.h"

namespace nuvec::gpt {

std::string load_corpus(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    auto ext = entry.path().extension();
    if (entry.is_regular_file() && !entry.is_symlink() && ext != ".dat" && ext != ".u8") {
      files.push_back(entry.path());
    }
  }
  if (files.empty()) {
    throw_invalid("[gpt] no fortune files in " + dir + ": install Debian's fortunes (apt-get install fortunes).");
  }
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::ostringstream content;
    content << in.rdbuf();
    text += content.str();
  }
  return text;
}

std::vector<std::string> split_fortunes(const std::string& corpus) {
  std::vector<std::string> fortunes;
  std::string current;
  std::istringstream lines(corpus);
  std::string line;
  auto finish = [&] {
    if (current.find_first_not_of(" \t\n") != std::string::npos) {
      fortunes.push_back(current);
    }
    current.clear();
  };
  while (std::getline(lines, line)) {
    if (line == "%") {
      finish();
    } else {
      current += line + "\n";
    }
  }
  finish();
  return fortunes;
}

}  // namespace nuvec::gpt
