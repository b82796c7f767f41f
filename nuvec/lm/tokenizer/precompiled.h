#pragma once

// SentencePiece's precompiled normalization rules ("Precompiled" normalizer, "precompiled_charsmap"): a darts
// double-array trie over UTF-8 byte strings whose values index a blob of NUL-terminated replacements.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nuvec::lm::detail {

class PrecompiledCharsmap {
 public:
  /// Parses the decoded charsmap: a little-endian u32 trie size in bytes, the trie, then the replacement blob.
  /// Throws nuvec::error naming `where` when it is malformed.
  PrecompiledCharsmap(std::string_view bytes, std::string_view where);

  /// `text` normalized: each grapheme cluster (shorter than 6 bytes) or else each of its characters replaced by
  /// the rule of the shortest matching prefix, as the spm_precompiled crate does.
  [[nodiscard]] std::string normalize(std::string_view text) const;

 private:
  /// The replacement for the shortest rule that is a prefix of `chunk`, if any.
  [[nodiscard]] std::optional<std::string_view> transform(std::string_view chunk) const;

  std::vector<uint32_t> trie_;
  std::string replacements_;
};

/// Decodes standard base64 (with or without padding); nothing when `text` is not base64.
std::optional<std::string> decode_base64(std::string_view text);

}  // namespace nuvec::lm::detail
