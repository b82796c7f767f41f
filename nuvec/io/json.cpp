#include "nuvec/io/json.h"

#include <cstdio>

namespace nuvec::io::detail {

namespace {

constexpr int kMaxDepth = 64;

// Length of the UTF-8 sequence at `s[i]` when valid, else 0.
size_t utf8_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) {
    return 1;
  }
  size_t n = 0;
  uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) {
    return 0;
  }
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) {
      return 0;
    }
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return n;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  std::optional<Json> document(std::string& error) {
    Json value;
    skip_space();
    if (!parse_value(value, 0)) {
      error = error_ + " at byte " + std::to_string(pos_);
      return std::nullopt;
    }
    skip_space();
    if (pos_ != s_.size()) {
      error = "unexpected text after the JSON value at byte " + std::to_string(pos_);
      return std::nullopt;
    }
    return value;
  }

 private:
  bool fail(std::string why) {
    error_ = std::move(why);
    return false;
  }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) {
      return fail("invalid JSON literal");
    }
    pos_ += word.size();
    return true;
  }

  bool parse_value(Json& out, int depth) {
    if (depth > kMaxDepth) {
      return fail("JSON nested deeper than " + std::to_string(kMaxDepth));
    }
    if (pos_ >= s_.size()) {
      return fail("unexpected end of JSON");
    }
    char c = s_[pos_];
    if (c == '{') {
      return parse_object(out, depth);
    }
    if (c == '[') {
      return parse_array(out, depth);
    }
    if (c == '"') {
      out.kind = Json::Kind::string;
      return parse_string(out.text);
    }
    if (c == 't' || c == 'f') {
      out.kind = Json::Kind::boolean;
      out.boolean = c == 't';
      return literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') {
      out.kind = Json::Kind::null;
      return literal("null");
    }
    return parse_number(out);
  }

  bool parse_object(Json& out, int depth) {
    out.kind = Json::Kind::object;
    ++pos_;
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != '"') {
        return fail("expected a string key");
      }
      std::string key;
      if (!parse_string(key)) {
        return false;
      }
      if (out.find(key) != nullptr) {
        return fail("duplicate key \"" + key + "\"");
      }
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != ':') {
        return fail("expected ':' after a key");
      }
      ++pos_;
      skip_space();
      Json value;
      if (!parse_value(value, depth + 1)) {
        return false;
      }
      out.keys.push_back(std::move(key));
      out.items.push_back(std::move(value));
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or '}' in an object");
    }
  }

  bool parse_array(Json& out, int depth) {
    out.kind = Json::Kind::array;
    ++pos_;
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      skip_space();
      Json value;
      if (!parse_value(value, depth + 1)) {
        return false;
      }
      out.items.push_back(std::move(value));
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or ']' in an array");
    }
  }

  bool hex4(uint32_t& out) {
    if (pos_ + 4 > s_.size()) {
      return fail("truncated \\u escape");
    }
    out = 0;
    for (int k = 0; k < 4; ++k) {
      char h = s_[pos_++];
      out <<= 4;
      if (h >= '0' && h <= '9') {
        out |= static_cast<uint32_t>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        out |= static_cast<uint32_t>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        out |= static_cast<uint32_t>(h - 'A' + 10);
      } else {
        return fail("invalid hex digit in a \\u escape");
      }
    }
    return true;
  }

  bool parse_string(std::string& out) {
    ++pos_;  // the opening quote
    while (true) {
      if (pos_ >= s_.size()) {
        return fail("unterminated string");
      }
      auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) {
        return fail("control character in a string");
      }
      if (c != '\\') {
        size_t n = utf8_length(s_, pos_);
        if (n == 0) {
          return fail("invalid UTF-8 in a string");
        }
        out.append(s_.substr(pos_, n));
        pos_ += n;
        continue;
      }
      if (++pos_ >= s_.size()) {
        return fail("unterminated escape");
      }
      char e = s_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!hex4(cp)) {
            return false;
          }
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low = 0;
            if (s_.substr(pos_, 2) != "\\u") {
              return fail("unpaired surrogate in a \\u escape");
            }
            pos_ += 2;
            if (!hex4(low)) {
              return false;
            }
            if (low < 0xDC00 || low > 0xDFFF) {
              return fail("unpaired surrogate in a \\u escape");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return fail("unpaired surrogate in a \\u escape");
          }
          append_utf8(out, cp);
          break;
        }
        default:
          return fail("invalid escape in a string");
      }
    }
  }

  bool parse_number(Json& out) {
    size_t start = pos_;
    auto digit = [&] { return pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9'; };
    if (pos_ < s_.size() && s_[pos_] == '-') {
      ++pos_;
    }
    if (!digit()) {
      return fail("invalid JSON value");
    }
    if (s_[pos_] == '0') {
      ++pos_;
    } else {
      while (digit()) {
        ++pos_;
      }
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!digit()) {
        return fail("invalid number");
      }
      while (digit()) {
        ++pos_;
      }
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) {
        ++pos_;
      }
      if (!digit()) {
        return fail("invalid number");
      }
      while (digit()) {
        ++pos_;
      }
    }
    out.kind = Json::Kind::number;
    out.text = std::string(s_.substr(start, pos_ - start));
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

const Json* Json::find(std::string_view key) const {
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == key) {
      return &items[i];
    }
  }
  return nullptr;
}

std::optional<uint64_t> Json::as_uint() const {
  if (kind != Kind::number || text.empty() || text.size() > 20) {
    return std::nullopt;
  }
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    if (__builtin_mul_overflow(value, 10, &value) || __builtin_add_overflow(value, c - '0', &value)) {
      return std::nullopt;
    }
  }
  return value;
}

std::optional<Json> parse_json(std::string_view text, std::string& error) { return Parser(text).document(error); }

std::string json_quote(std::string_view value) {
  std::string out = "\"";
  for (char ch : value) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

bool valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    size_t n = utf8_length(text, i);
    if (n == 0) {
      return false;
    }
    i += n;
  }
  return true;
}

}  // namespace nuvec::io::detail
