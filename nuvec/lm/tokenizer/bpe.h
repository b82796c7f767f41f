#pragma once

// Byte-pair encoding (the "BPE" model of a tokenizer.json): a word starts as its characters (or their <0xXX> byte
// tokens, or the unknown token) and the adjacent pair with the lowest merge rank is merged until none is left.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nuvec/lm/tokenizer/json_field.h"
#include "nuvec/lm/tokenizer/vocab.h"

namespace nuvec::lm::detail {

class Bpe {
 public:
  /// Reads a "model" object of type BPE.
  static Bpe from_json(const JsonField& model);

  /// Appends the ids of `word`. Safe to call from several threads at once (the word cache is locked per shard).
  void tokenize(std::string_view word, std::vector<int32_t>& ids) const;

  [[nodiscard]] const Vocab& vocab() const;

  struct Data;

 private:
  std::shared_ptr<const Data> data_;
};

}  // namespace nuvec::lm::detail
