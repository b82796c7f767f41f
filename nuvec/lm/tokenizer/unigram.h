#pragma once

// Unigram (SentencePiece's unigram model, T5-style files): the split of a word into vocabulary pieces with the
// highest total score (Viterbi over a trie of the pieces); characters no piece covers become the unknown token
// (runs of them fused into one) or, with byte_fallback, their <0xXX> byte tokens.

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nuvec/lm/tokenizer/json_field.h"
#include "nuvec/lm/tokenizer/vocab.h"

namespace nuvec::lm::detail {

class Unigram {
 public:
  /// Reads a "model" object of type Unigram.
  static Unigram from_json(const JsonField& model);
  /// Appends the ids of `word`.
  void tokenize(std::string_view word, std::vector<int32_t>& ids) const;
  [[nodiscard]] const Vocab& vocab() const { return data_->vocab; }

 private:
  struct Data {
    Vocab vocab;
    std::vector<double> scores;
    std::optional<int32_t> unk_id;
    bool byte_fallback = false;
    double unk_score = 0;
    // The trie of the pieces: node 0 is the root; edges keyed by (node << 8 | byte); each node's piece id or -1.
    std::unordered_map<uint64_t, int32_t> edges;
    std::vector<int32_t> node_piece;
  };
  std::shared_ptr<const Data> data_;
};

}  // namespace nuvec::lm::detail
