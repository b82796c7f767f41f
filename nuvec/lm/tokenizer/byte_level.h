#pragma once

// GPT-2's byte-level alphabet: each of the 256 byte values stands for one printable character, so that any byte
// string is a string of visible characters (the ByteLevel pre-tokenizer maps into it, the ByteLevel decoder back).
// Printable Latin-1 bytes ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) stand for themselves; the other 68 take
// U+0100 upwards in byte order.

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace nuvec::lm::detail {

/// The UTF-8 encoding of the character that stands for each byte.
const std::array<std::string, 256>& byte_level_chars();

/// Appends the byte-level form of `bytes` to `out`.
void to_byte_level(std::string_view bytes, std::string& out);

/// The bytes a byte-level string stands for; nothing when it holds a character outside the alphabet.
std::optional<std::string> from_byte_level(std::string_view chars);

}  // namespace nuvec::lm::detail
