#include "nuvec/lm/utf8.h"

namespace nuvec::lm::detail {

namespace {

/// The length of the well-formed sequence at `text[pos]`, or 0 when it is malformed or cut short.
size_t well_formed_length(std::string_view text, size_t pos) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[pos + i]); };
  unsigned char lead = byte(0);
  size_t length = utf8_length(lead);
  if (lead < 0x80) {
    return 1;
  }
  if (length == 1 || lead < 0xC2 || lead > 0xF4 || pos + length > text.size()) {
    return 0;
  }
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) {
      return 0;
    }
  }
  // Overlong three- and four-byte forms, surrogates, and code points past U+10FFFF.
  if ((lead == 0xE0 && byte(1) < 0xA0) || (lead == 0xED && byte(1) > 0x9F) || (lead == 0xF0 && byte(1) < 0x90) ||
      (lead == 0xF4 && byte(1) > 0x8F)) {
    return 0;
  }
  return length;
}

}  // namespace

char32_t next_code_point(std::string_view text, size_t& pos) {
  size_t length = well_formed_length(text, pos);
  if (length == 0) {
    ++pos;
    return 0xFFFD;
  }
  auto lead = static_cast<unsigned char>(text[pos]);
  char32_t cp = length == 1 ? lead : lead & (0x7F >> length);
  for (size_t i = 1; i < length; ++i) {
    cp = (cp << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
  }
  pos += length;
  return cp;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t valid_utf8_prefix(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t length = well_formed_length(text, pos);
    if (length == 0) {
      return pos;
    }
    pos += length;
  }
  return pos;
}

}  // namespace nuvec::lm::detail
