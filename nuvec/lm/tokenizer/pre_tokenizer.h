#pragma once

// The pre-tokenizers of a tokenizer.json ("pre_tokenizer"): they split a normalized segment of the input into the
// words the model encodes one at a time (and may rewrite them: ByteLevel maps bytes to its alphabet, Metaspace
// spaces to U+2581). Regex splits run on PCRE2 with JIT.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nuvec/lm/tokenizer/json_field.h"

namespace nuvec::lm {

class PreTokenizer {
 public:
  /// None: the whole segment is one word.
  PreTokenizer();
  /// Reads a "pre_tokenizer" object; null gives none. Throws naming the path for a malformed or unsupported one.
  static PreTokenizer from_json(const detail::JsonField& field);

  /// Appends the words of `segment` to `words`. `first_segment` is true when the segment starts at the beginning
  /// of the input (no added token before it), which Metaspace's prepend_scheme "first" depends on. Safe to call
  /// from several threads at once.
  void split(std::string_view segment, bool first_segment, std::vector<std::string>& words) const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
};

}  // namespace nuvec::lm
