#pragma once

// Python's str operations on UTF-8 text: whitespace, case, strip, split.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nuvec::lm::jinja {

/// Python's str.isspace() for one code point.
bool is_python_space(char32_t cp);
/// Python's str.upper()/lower() for the scripts with simple case pairs (Latin, Greek, Cyrillic).
std::string to_upper(const std::string& s);
std::string to_lower(const std::string& s);
/// Python's str.capitalize(): the first character upper, the rest lower.
std::string capitalize(const std::string& s);
/// Python's str.title(): each run of letters starts upper, continues lower.
std::string title_case(const std::string& s);
/// Python's strip/lstrip/rstrip; `chars` null strips whitespace.
std::string strip(const std::string& s, const std::string* chars, bool left, bool right);
/// Python's str.split(sep, maxsplit); `sep` null splits on whitespace runs.
std::vector<std::string> split(const std::string& s, const std::string* sep, long long maxsplit);
/// Python's str.splitlines(keepends).
std::vector<std::string> split_lines(const std::string& s, bool keep_ends);
/// Python's str.replace(old, new, count); count < 0 replaces all.
std::string replace(const std::string& s, const std::string& old, const std::string& with, long long count);
/// Python's str.count(sub).
long long count(const std::string& s, const std::string& sub);
/// The decimal integer `s` spells, or nothing when it is not all digits or does not fit in 64 bits.
std::optional<int64_t> parse_integer(std::string_view s);
/// Python's str.find/rfind as code point indices; -1 when absent.
long long find(const std::string& s, const std::string& sub, bool reverse);

}  // namespace nuvec::lm::jinja
