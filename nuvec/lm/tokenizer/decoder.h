#pragma once

// The decoders of a tokenizer.json ("decoder"): they turn the tokens of a list of ids back into text (ByteLevel maps
// the byte alphabet back to bytes, ByteFallback joins <0xXX> tokens, Metaspace and Replace turn U+2581 into spaces,
// ...). Without one the tokens are joined with spaces, as Hugging Face's does.

#include <memory>
#include <string>
#include <vector>

#include "nuvec/lm/tokenizer/json_field.h"

namespace nuvec::lm::detail {

class Decoder {
 public:
  /// No decoder: tokens joined with spaces.
  Decoder();
  /// Reads a "decoder" object (null gives none); an unknown "type" is unsupported, naming the path.
  static Decoder from_json(const JsonField& field);

  /// The text of `tokens`.
  [[nodiscard]] std::string decode(std::vector<std::string> tokens) const;
  /// Whether the chain joins <0xXX> byte tokens (the streaming detokenizer holds those back until a run ends).
  [[nodiscard]] bool joins_byte_tokens() const;
  /// Whether the chain maps GPT-2's byte alphabet back to bytes (a ByteLevel decoder).
  [[nodiscard]] bool maps_byte_level() const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
};

/// The clean-up of tokenization spaces (" ." -> ".", " n't" -> "n't", ...), as transformers' decode does it.
std::string clean_up_tokenization(std::string text);

}  // namespace nuvec::lm::detail
