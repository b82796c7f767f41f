// nuvec's side of run_tokenizer.py: encodes documents (one JSON string per line) with a tokenizer: joined as one
// text (encode_single), one after another on one thread (encode_each), and as a batch on threads (encode_batch).
// Prints "<row> <median ms> <tokens>" lines.
//
// usage: tokenizer_bench TOKENIZER DOCUMENTS_JSONL REPS

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nuvec/lm/lm.h"

namespace {

template <class Run>
void time_row(const char* row, int reps, Run run) {
  size_t tokens = run();  // warm-up: the word caches fill as they would in a server
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    tokens = run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(ms.begin(), ms.begin() + static_cast<long>(ms.size() / 2), ms.end());
  std::printf("%s %.2f %zu\n", row, ms[ms.size() / 2], tokens);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: tokenizer_bench TOKENIZER DOCUMENTS_JSONL REPS\n");
    return 2;
  }
  auto tokenizer = nuvec::lm::Tokenizer::load(argv[1]);
  std::vector<std::string> documents;
  std::ifstream in(argv[2]);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) {
      documents.push_back(nlohmann::json::parse(line).get<std::string>());
    }
  }
  std::string whole;
  for (const auto& document : documents) {
    whole += whole.empty() ? "" : "\n";
    whole += document;
  }
  int reps = std::stoi(argv[3]);
  time_row("encode_single", reps, [&] { return tokenizer.encode(whole, false).size(); });
  time_row("encode_each", reps, [&] {
    size_t n = 0;
    for (const auto& document : documents) {
      n += tokenizer.encode(document, false).size();
    }
    return n;
  });
  time_row("encode_batch", reps, [&] {
    size_t n = 0;
    for (const auto& ids : tokenizer.encode_batch(documents, false)) {
      n += ids.size();
    }
    return n;
  });
}
