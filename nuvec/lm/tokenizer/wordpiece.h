#pragma once

// WordPiece (BERT): the longest vocabulary entry at the start of the word, then the longest "##"-prefixed entry at
// each following position; a word with no such split (or too long) is the unknown token.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nuvec/lm/tokenizer/json_field.h"
#include "nuvec/lm/tokenizer/vocab.h"

namespace nuvec::lm::detail {

class WordPiece {
 public:
  /// Reads a "model" object of type WordPiece.
  static WordPiece from_json(const JsonField& model);
  /// Appends the ids of `word`.
  void tokenize(std::string_view word, std::vector<int32_t>& ids) const;
  [[nodiscard]] const Vocab& vocab() const { return data_->vocab; }

 private:
  struct Data {
    Vocab vocab;
    int32_t unk_id = -1;
    std::string prefix;
    size_t max_input_chars_per_word = 100;
  };
  std::shared_ptr<const Data> data_;
};

}  // namespace nuvec::lm::detail
