#pragma once

// The bytes each token of a vocabulary adds to the text, worked out once per tokenizer for constrained decoding,
// with the tokens grouped by their first byte (a grammar usually rules out most first bytes at once).

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nuvec/lm/tokenizer/tokenizer.h"

namespace nuvec::lm {

class TokenTexts {
 public:
  /// The texts of ids 0 .. vocab_size - 1 (the model's vocabulary, which may pad the tokenizer's).
  TokenTexts(const Tokenizer& tokenizer, int vocab_size);

  /// The bytes of `id`; empty for special tokens and ids the tokenizer lacks (a constraint never allows them).
  [[nodiscard]] std::string_view bytes(int32_t id) const { return texts_[static_cast<size_t>(id)]; }
  /// Whether every byte of `id` may stand unescaped inside a JSON string (no quote, backslash or control byte).
  [[nodiscard]] bool plain(int32_t id) const { return plain_[static_cast<size_t>(id)] != 0; }
  /// The ids whose bytes begin with `byte`.
  [[nodiscard]] const std::vector<int32_t>& starting_with(uint8_t byte) const { return by_first_byte_[byte]; }
  [[nodiscard]] int size() const { return static_cast<int>(texts_.size()); }

 private:
  std::vector<std::string> texts_;
  std::vector<uint8_t> plain_;
  std::array<std::vector<int32_t>, 256> by_first_byte_;
};

}  // namespace nuvec::lm
