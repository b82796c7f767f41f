#include "nuvec/lm/tokenizer/byte_level.h"

#include "nuvec/lm/utf8.h"

namespace nuvec::lm::detail {

namespace {

bool stands_for_itself(int byte) {
  return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
}

/// Each byte's code point in the alphabet.
std::array<char32_t, 256> make_code_points() {
  std::array<char32_t, 256> points{};
  char32_t next = 0x100;
  for (int byte = 0; byte < 256; ++byte) {
    points[byte] = stands_for_itself(byte) ? static_cast<char32_t>(byte) : next++;
  }
  return points;
}

const std::array<char32_t, 256>& code_points() {
  static const std::array<char32_t, 256> points = make_code_points();
  return points;
}

}  // namespace

const std::array<std::string, 256>& byte_level_chars() {
  static const std::array<std::string, 256> chars = [] {
    std::array<std::string, 256> out;
    for (int byte = 0; byte < 256; ++byte) {
      append_utf8(out[byte], code_points()[byte]);
    }
    return out;
  }();
  return chars;
}

void to_byte_level(std::string_view bytes, std::string& out) {
  const auto& chars = byte_level_chars();
  for (char c : bytes) {
    out += chars[static_cast<unsigned char>(c)];
  }
}

std::optional<std::string> from_byte_level(std::string_view chars) {
  // The alphabet's code points all lie below U+0144.
  static const std::array<int, 0x144> byte_of = [] {
    std::array<int, 0x144> table{};
    table.fill(-1);
    for (int byte = 0; byte < 256; ++byte) {
      table[code_points()[byte]] = byte;
    }
    return table;
  }();
  std::string bytes;
  bytes.reserve(chars.size());
  size_t pos = 0;
  while (pos < chars.size()) {
    char32_t cp = next_code_point(chars, pos);
    if (cp >= byte_of.size() || byte_of[cp] < 0) {
      return std::nullopt;
    }
    bytes.push_back(static_cast<char>(byte_of[cp]));
  }
  return bytes;
}

}  // namespace nuvec::lm::detail
