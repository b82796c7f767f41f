#include "nuvec/lm/utf8.h"

#include <algorithm>

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

/// How many bytes at `text[pos]` begin a well-formed sequence (the whole sequence when it is complete), at least 1:
/// the unit that from_utf8_lossy replaces by one U+FFFD when it is broken.
size_t sequence_prefix_length(std::string_view text, size_t pos) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[pos + i]); };
  const unsigned char lead = byte(0);
  if (lead < 0xC2 || lead > 0xF4) {
    return 1;
  }
  const size_t expected = utf8_length(lead);
  // The second byte's range excludes overlongs (E0, F0), surrogates (ED) and code points past U+10FFFF (F4).
  const unsigned char low = lead == 0xE0 ? 0xA0 : lead == 0xF0 ? 0x90 : 0x80;
  const unsigned char high = lead == 0xED ? 0x9F : lead == 0xF4 ? 0x8F : 0xBF;
  size_t length = 1;
  while (length < expected && pos + length < text.size()) {
    const unsigned char next = byte(length);
    if (next < (length == 1 ? low : 0x80) || next > (length == 1 ? high : 0xBF)) {
      break;
    }
    ++length;
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

size_t partial_character_length(std::string_view text) {
  // A lead byte always starts a new unit, so only the last three bytes can begin a character still cut short.
  for (size_t back = std::min<size_t>(3, text.size()); back > 0; --back) {
    const size_t pos = text.size() - back;
    const auto lead = static_cast<unsigned char>(text[pos]);
    if (lead >= 0xC2 && lead <= 0xF4 && utf8_length(lead) > back && sequence_prefix_length(text, pos) == back) {
      return back;
    }
  }
  return 0;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t valid = valid_utf8_prefix(bytes.substr(pos));
    out.append(bytes.substr(pos, valid));
    pos += valid;
    if (pos < bytes.size()) {
      out += "\xEF\xBF\xBD";
      pos += sequence_prefix_length(bytes, pos);
    }
  }
  return out;
}

}  // namespace nuvec::lm::detail
