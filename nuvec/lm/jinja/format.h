#pragma once

// Python's text forms of values: str(), repr(), float formatting and json.dumps.

#include <string>

#include "nuvec/lm/jinja/value.h"

namespace nuvec::lm::jinja {

/// Python's str(value); undefined gives "".
std::string to_str(const Value& v);
/// Python's repr(value).
std::string to_repr(const Value& v);
/// Python's repr of a float: shortest round-trip digits, "1.0", "1e+16", "inf".
std::string format_float(double d);

/// The options of json.dumps that the tojson filter passes on.
struct JsonStyle {
  int indent = -1;  // -1: all on one line
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};
/// Python's json.dumps(value, ...) with the given style.
std::string to_json(const Value& v, const JsonStyle& style);

}  // namespace nuvec::lm::jinja
