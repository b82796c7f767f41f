#pragma once

// UTF-8 helpers shared by the lm library (the tokenizer's pieces and the Jinja interpreter).

#include <cstdint>
#include <string>
#include <string_view>

namespace nuvec::lm::detail {

/// The length in bytes of the UTF-8 sequence that starts with `lead` (1 for a stray continuation or invalid byte).
inline size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) {
    return 1;
  }
  if ((lead & 0xE0) == 0xC0) {
    return 2;
  }
  if ((lead & 0xF0) == 0xE0) {
    return 3;
  }
  if ((lead & 0xF8) == 0xF0) {
    return 4;
  }
  return 1;
}

/// Decodes the code point at `text[pos]` and advances `pos`; returns U+FFFD (advancing one byte) for a malformed
/// sequence.
char32_t next_code_point(std::string_view text, size_t& pos);

/// Appends `cp` encoded as UTF-8.
void append_utf8(std::string& out, char32_t cp);

/// The length of the longest prefix of `text` that is well-formed UTF-8 and ends on a character boundary.
size_t valid_utf8_prefix(std::string_view text);

/// Whether all of `text` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
inline bool is_valid_utf8(std::string_view text) { return valid_utf8_prefix(text) == text.size(); }

/// How many bytes at the end of `text` begin a character that is cut short (0 to 3): bytes that later bytes could
/// still complete. A streaming decoder holds exactly these back; anything else already has its final text.
size_t partial_character_length(std::string_view text);

/// Rust's String::from_utf8_lossy: each maximal ill-formed subsequence becomes one U+FFFD.
std::string utf8_lossy(std::string_view bytes);

}  // namespace nuvec::lm::detail
