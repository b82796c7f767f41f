#pragma once

// A small strict JSON reader and string escaper for the safetensors header (RFC 8259: UTF-8 checked, duplicate
// keys refused, nesting bounded).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nuvec::io::detail {

struct Json {
  enum class Kind : uint8_t { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  bool boolean = false;
  std::string text;               // a string's value, or a number's literal
  std::vector<Json> items;        // an array's elements, or an object's values
  std::vector<std::string> keys;  // an object's keys, one per value in items

  /// The member named `key`, or null.
  [[nodiscard]] const Json* find(std::string_view key) const;
  /// A number that is a non-negative integer fitting uint64, or nothing.
  [[nodiscard]] std::optional<uint64_t> as_uint() const;
};

/// Parses one JSON value spanning `text` (surrounding whitespace allowed); on error returns nothing and sets
/// `error` to the problem and its byte offset.
std::optional<Json> parse_json(std::string_view text, std::string& error);
/// `value` as a JSON string literal (quotes and escapes added).
std::string json_quote(std::string_view value);
/// Whether `text` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view text);

}  // namespace nuvec::io::detail
