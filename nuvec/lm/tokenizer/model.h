#pragma once

// The model of a tokenizer.json ("model"): turns one pre-tokenized word into ids. A closed set: BPE, WordPiece,
// Unigram and WordLevel.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "nuvec/lm/tokenizer/bpe.h"
#include "nuvec/lm/tokenizer/json_field.h"
#include "nuvec/lm/tokenizer/unigram.h"
#include "nuvec/lm/tokenizer/word_level.h"
#include "nuvec/lm/tokenizer/wordpiece.h"

namespace nuvec::lm::detail {

class Model {
 public:
  using Kind = std::variant<Bpe, WordPiece, Unigram, WordLevel>;

  explicit Model(Kind kind) : kind_(std::move(kind)) {}
  /// Reads the "model" object; an unknown "type" is unsupported, naming the path.
  static Model from_json(const JsonField& field);

  /// Appends the ids of `word`. Safe to call from several threads at once.
  void tokenize(std::string_view word, std::vector<int32_t>& ids) const;
  /// The model's vocabulary (without the added tokens).
  [[nodiscard]] const Vocab& vocab() const;

 private:
  Kind kind_;
};

}  // namespace nuvec::lm::detail
