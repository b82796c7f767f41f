#include "nuvec/lm/tokenizer/precompiled.h"

#include <utf8proc.h>

#include "nuvec/core/error.h"
#include "nuvec/lm/utf8.h"

namespace nuvec::lm::detail {

namespace {

// The fields of a darts unit.
uint32_t unit_offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }
uint32_t unit_label(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
bool unit_has_leaf(uint32_t unit) { return ((unit >> 8) & 1) != 0; }
uint32_t unit_value(uint32_t unit) { return unit & ((1u << 31) - 1); }

}  // namespace

std::optional<std::string> decode_base64(std::string_view text) {
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    int value = -1;
    if (c >= 'A' && c <= 'Z') {
      value = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      value = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      value = c - '0' + 52;
    } else if (c == '+') {
      value = 62;
    } else if (c == '/') {
      value = 63;
    } else if (c == '=') {
      break;
    } else {
      return std::nullopt;
    }
    buffer = (buffer << 6) | static_cast<uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xFF);
    }
  }
  return out;
}

PrecompiledCharsmap::PrecompiledCharsmap(std::string_view bytes, std::string_view where) {
  if (bytes.size() < 4) {
    throw_invalid(std::string(where) + ": the charsmap is too short");
  }
  auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])); };
  size_t trie_size = byte(0) | byte(1) << 8 | byte(2) << 16 | byte(3) << 24;
  if (trie_size % 4 != 0 || trie_size == 0 || 4 + trie_size > bytes.size()) {
    throw_invalid(std::string(where) + ": the charsmap's trie size " + std::to_string(trie_size) +
                  " does not fit its " + std::to_string(bytes.size()) + " bytes");
  }
  trie_.resize(trie_size / 4);
  for (size_t i = 0; i < trie_.size(); ++i) {
    size_t at = 4 + 4 * i;
    trie_[i] = byte(at) | byte(at + 1) << 8 | byte(at + 2) << 16 | byte(at + 3) << 24;
  }
  replacements_ = std::string(bytes.substr(4 + trie_size));
}

std::optional<std::string_view> PrecompiledCharsmap::transform(std::string_view chunk) const {
  size_t node = unit_offset(trie_[0]);
  for (char ch : chunk) {
    auto c = static_cast<unsigned char>(ch);
    if (c == 0) {
      break;
    }
    node ^= c;
    if (node >= trie_.size()) {
      return std::nullopt;
    }
    uint32_t unit = trie_[node];
    if (unit_label(unit) != c) {
      return std::nullopt;
    }
    node ^= unit_offset(unit);
    if (node >= trie_.size()) {
      return std::nullopt;
    }
    if (unit_has_leaf(unit)) {
      size_t begin = unit_value(trie_[node]);
      if (begin >= replacements_.size()) {
        return std::nullopt;
      }
      size_t end = replacements_.find('\0', begin);
      return std::string_view(replacements_).substr(begin, end == std::string::npos ? end : end - begin);
    }
  }
  return std::nullopt;
}

std::string PrecompiledCharsmap::normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    // One extended grapheme cluster: characters up to the next break.
    size_t begin = pos;
    utf8proc_int32_t state = 0;
    char32_t previous = next_code_point(text, pos);
    while (pos < text.size()) {
      size_t at = pos;
      char32_t cp = next_code_point(text, at);
      if (utf8proc_grapheme_break_stateful(static_cast<utf8proc_int32_t>(previous), static_cast<utf8proc_int32_t>(cp),
                                           &state)) {
        break;
      }
      previous = cp;
      pos = at;
    }
    std::string_view grapheme = text.substr(begin, pos - begin);
    if (grapheme.size() < 6) {
      if (auto replacement = transform(grapheme)) {
        out += *replacement;
        continue;
      }
    }
    for (size_t at = 0; at < grapheme.size();) {
      size_t length = utf8_length(static_cast<unsigned char>(grapheme[at]));
      std::string_view part = grapheme.substr(at, length);
      auto replacement = transform(part);
      out += replacement ? *replacement : part;
      at += length;
    }
  }
  return out;
}

}  // namespace nuvec::lm::detail
