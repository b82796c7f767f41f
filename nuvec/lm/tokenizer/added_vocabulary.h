#pragma once

// Added tokens ("added_tokens" of a tokenizer.json, special or not): found in the input before anything else and
// never split. Tokens with normalized=false match the raw input; those with normalized=true match the normalized
// text between the others.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nuvec/lm/tokenizer/json_field.h"
#include "nuvec/lm/tokenizer/normalizer.h"

namespace nuvec::lm {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool lstrip = false;       // swallows the whitespace before it
  bool rstrip = false;       // swallows the whitespace after it
  bool single_word = false;  // matches only where it is not inside a word
  bool normalized = true;    // matches the normalized text rather than the raw input

  /// Reads one element of "added_tokens" (or an AddedToken object of tokenizer_config.json).
  static AddedToken from_json(const detail::JsonField& field);
};

/// One piece of the input: an added token's id, or normalized text for the pre-tokenizer and model.
struct Segment {
  std::string text;    // the normalized text (empty for a token)
  int32_t id = -1;     // the added token's id, or -1 for text
  bool first = false;  // the text starts at the beginning of the input (no token before it)
};

class AddedVocabulary {
 public:
  AddedVocabulary();
  explicit AddedVocabulary(std::vector<AddedToken> tokens);

  /// Splits `text` at the added tokens it holds and normalizes the text between them. Safe to call from several
  /// threads at once.
  [[nodiscard]] std::vector<Segment> split(std::string_view text, const Normalizer& normalizer) const;

  [[nodiscard]] const std::vector<AddedToken>& tokens() const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
};

}  // namespace nuvec::lm
