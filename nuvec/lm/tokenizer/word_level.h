#pragma once

// WordLevel: each word is one vocabulary entry, or the unknown token.

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "nuvec/lm/tokenizer/json_field.h"
#include "nuvec/lm/tokenizer/vocab.h"

namespace nuvec::lm::detail {

class WordLevel {
 public:
  /// Reads a "model" object of type WordLevel.
  static WordLevel from_json(const JsonField& model);
  /// Appends the id of `word`.
  void tokenize(std::string_view word, std::vector<int32_t>& ids) const;
  [[nodiscard]] const Vocab& vocab() const { return data_->vocab; }

 private:
  struct Data {
    Vocab vocab;
    int32_t unk_id = -1;
  };
  std::shared_ptr<const Data> data_;
};

}  // namespace nuvec::lm::detail
