#include "nuvec/lm/jinja/text.h"

#include <charconv>

#include "nuvec/lm/jinja/value.h"
#include "nuvec/lm/utf8.h"

namespace nuvec::lm::jinja {
namespace {

bool is_upper_cp(char32_t c) {
  return (c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7) || (c >= 0x391 && c <= 0x3AB) ||
         (c >= 0x400 && c <= 0x42F);
}
bool is_lower_cp(char32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 0xE0 && c <= 0xFE && c != 0xF7) || (c >= 0x3B1 && c <= 0x3CB && c != 0x3C2) ||
         (c >= 0x430 && c <= 0x45F);
}
bool is_cased_letter(char32_t c) { return is_upper_cp(c) || is_lower_cp(c) || c == 0xDF || c == 0x3C2; }

char32_t upper_cp(char32_t c) {
  if (!is_lower_cp(c)) {
    return c;
  }
  return c >= 0x450 ? c - 0x50 : c - 0x20;
}
char32_t lower_cp(char32_t c) {
  if (!is_upper_cp(c)) {
    return c;
  }
  if (c < 0x400) {
    return c + 0x20;
  }
  return c < 0x410 ? c + 0x50 : c + 0x20;
}

std::string map_case(const std::string& s, char32_t (*f)(char32_t)) {
  std::u32string cps = to_code_points(s);
  for (char32_t& c : cps) {
    c = f(c);
  }
  return from_code_points(cps);
}

}  // namespace

bool is_python_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::string to_upper(const std::string& s) {
  std::string upper = map_case(s, upper_cp);
  return s.find("\u00DF") == std::string::npos ? upper : replace(upper, "\u00DF", "SS", -1);  // ß has no capital
}
std::string to_lower(const std::string& s) { return map_case(s, lower_cp); }

std::string capitalize(const std::string& s) {
  std::u32string cps = to_code_points(s);
  for (size_t i = 0; i < cps.size(); ++i) {
    cps[i] = i == 0 ? upper_cp(cps[i]) : lower_cp(cps[i]);
  }
  return from_code_points(cps);
}

std::string title_case(const std::string& s) {
  std::u32string cps = to_code_points(s);
  bool previous_cased = false;
  for (char32_t& c : cps) {
    bool cased = is_cased_letter(c);
    c = previous_cased ? lower_cp(c) : upper_cp(c);
    previous_cased = cased;
  }
  return from_code_points(cps);
}

std::string strip(const std::string& s, const std::string* chars, bool left, bool right) {
  std::u32string cps = to_code_points(s);
  std::u32string set = chars ? to_code_points(*chars) : std::u32string();
  auto strippable = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_python_space(c); };
  size_t begin = 0, end = cps.size();
  if (left) {
    while (begin < end && strippable(cps[begin])) {
      ++begin;
    }
  }
  if (right) {
    while (end > begin && strippable(cps[end - 1])) {
      --end;
    }
  }
  return from_code_points(cps.substr(begin, end - begin));
}

std::vector<std::string> split(const std::string& s, const std::string* sep, long long maxsplit) {
  std::vector<std::string> parts;
  if (sep) {
    if (sep->empty()) {
      fail("empty separator");
    }
    size_t start = 0;
    for (size_t at; (maxsplit < 0 || static_cast<long long>(parts.size()) < maxsplit) &&
                    (at = s.find(*sep, start)) != std::string::npos;) {
      parts.push_back(s.substr(start, at - start));
      start = at + sep->size();
    }
    parts.push_back(s.substr(start));
    return parts;
  }
  std::u32string cps = to_code_points(s);
  size_t i = 0;
  while (i < cps.size()) {
    while (i < cps.size() && is_python_space(cps[i])) {
      ++i;
    }
    if (i >= cps.size()) {
      break;
    }
    if (maxsplit >= 0 && static_cast<long long>(parts.size()) >= maxsplit) {
      size_t end = cps.size();
      while (end > i && is_python_space(cps[end - 1])) {
        --end;
      }
      parts.push_back(from_code_points(cps.substr(i, end - i)));
      break;
    }
    size_t start = i;
    while (i < cps.size() && !is_python_space(cps[i])) {
      ++i;
    }
    parts.push_back(from_code_points(cps.substr(start, i - start)));
  }
  return parts;
}

std::vector<std::string> split_lines(const std::string& s, bool keep_ends) {
  std::u32string cps = to_code_points(s);
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    char32_t c = cps[i];
    bool is_break = c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1C && c <= 0x1E) || c == 0x85 ||
                    c == 0x2028 || c == 0x2029;
    if (!is_break) {
      continue;
    }
    size_t end = i;
    if (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') {
      ++i;
    }
    lines.push_back(from_code_points(cps.substr(start, (keep_ends ? i + 1 : end) - start)));
    start = i + 1;
  }
  if (start < cps.size()) {
    lines.push_back(from_code_points(cps.substr(start)));
  }
  return lines;
}

std::string replace(const std::string& s, const std::string& old, const std::string& with, long long count) {
  std::string out;
  long long done = 0;
  if (old.empty()) {
    std::u32string cps = to_code_points(s);
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) {
        out += with, ++done;
      }
      if (i < cps.size()) {
        detail::append_utf8(out, cps[i]);
      }
    }
    return out;
  }
  size_t start = 0;
  for (size_t at; (count < 0 || done < count) && (at = s.find(old, start)) != std::string::npos; ++done) {
    out += s.substr(start, at - start) + with;
    start = at + old.size();
  }
  return out + s.substr(start);
}

long long count(const std::string& s, const std::string& sub) {
  if (sub.empty()) {
    return static_cast<long long>(to_code_points(s).size()) + 1;
  }
  long long n = 0;
  for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) {
    ++n;
  }
  return n;
}

long long find(const std::string& s, const std::string& sub, bool reverse) {
  size_t at = reverse ? s.rfind(sub) : s.find(sub);
  if (at == std::string::npos) {
    return -1;
  }
  return static_cast<long long>(to_code_points(s.substr(0, at)).size());
}

std::optional<int64_t> parse_integer(std::string_view s) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || s[0] == '-' || ec != std::errc() || end != s.data() + s.size()) {
    return std::nullopt;
  }
  return value;
}

}  // namespace nuvec::lm::jinja
