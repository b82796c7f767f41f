#include "nuvec/lm/jinja/format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "nuvec/lm/utf8.h"

namespace nuvec::lm::jinja {
namespace {

std::string repr_at(const Value& v, std::vector<const void*>& active);

std::string hex(unsigned value, int digits) {
  static const char* hex_digits = "0123456789abcdef";
  std::string out(static_cast<size_t>(digits), '0');
  for (int i = digits - 1; i >= 0; --i, value >>= 4) {
    out[static_cast<size_t>(i)] = hex_digits[value & 0xF];
  }
  return out;
}

// Code points Python's str.isprintable() rejects beyond the ASCII controls (separators, format characters).
bool unprintable(char32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) ||
         (cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x205F && cp <= 0x2064) || cp == 0x3000 || cp == 0xFEFF ||
         (cp >= 0xD800 && cp <= 0xDFFF) || (cp >= 0xE000 && cp <= 0xF8FF);
}

std::string repr_string(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  char quote = has_single && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t cp : to_code_points(s)) {
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (unprintable(cp)) {
      out += cp < 0x100 ? "\\x" + hex(cp, 2) : "\\u" + hex(cp, 4);
    } else {
      detail::append_utf8(out, cp);
    }
  }
  return out + quote;
}

void append_json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (char32_t cp : to_code_points(s)) {
    switch (cp) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (cp < 0x20 || (ensure_ascii && cp > 0x7E)) {
          if (cp >= 0x10000) {
            char32_t v = cp - 0x10000;
            out += "\\u" + hex(0xD800 + (v >> 10), 4) + "\\u" + hex(0xDC00 + (v & 0x3FF), 4);
          } else {
            out += "\\u" + hex(cp, 4);
          }
        } else {
          detail::append_utf8(out, cp);
        }
    }
  }
  out += '"';
}

std::string json_key(const Value& key) {
  if (key.is<std::string>()) {
    return key.str();
  }
  if (key.is<bool>()) {
    return key.as<bool>() ? "true" : "false";
  }
  if (key.is_none()) {
    return "null";
  }
  if (key.is<int64_t>() || key.is<double>()) {
    return to_str(key);
  }
  fail("keys must be str, int, float, bool or None, not " + type_name(key));
}

void append_json(std::string& out, const Value& v, const JsonStyle& style, int depth) {
  if (depth > 500) {
    fail("maximum recursion depth exceeded while encoding a JSON object");
  }
  auto newline = [&](int level) {
    if (style.indent < 0) {
      return;
    }
    out += '\n';
    out.append(static_cast<size_t>(style.indent) * static_cast<size_t>(level), ' ');
  };
  const auto& d = v.data;
  if (v.is_none()) {
    out += "null";
  } else if (auto* b = std::get_if<bool>(&d)) {
    out += *b ? "true" : "false";
  } else if (auto* i = std::get_if<int64_t>(&d)) {
    out += std::to_string(*i);
  } else if (auto* f = std::get_if<double>(&d)) {
    out += std::isnan(*f) ? "NaN" : std::isinf(*f) ? (*f > 0 ? "Infinity" : "-Infinity") : format_float(*f);
  } else if (auto* s = std::get_if<std::string>(&d)) {
    append_json_string(out, *s, style.ensure_ascii);
  } else if (auto* l = std::get_if<List>(&d)) {
    const auto& items = (*l)->items;
    if (items.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t k = 0; k < items.size(); ++k) {
      if (k > 0) {
        out += style.item_separator;
      }
      newline(depth + 1);
      append_json(out, items[k], style, depth + 1);
    }
    newline(depth);
    out += ']';
  } else if (auto* m = std::get_if<Dict>(&d)) {
    auto items = (*m)->items;
    if (items.empty()) {
      out += "{}";
      return;
    }
    if (style.sort_keys) {
      std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return less(a.first, b.first); });
    }
    out += '{';
    for (size_t k = 0; k < items.size(); ++k) {
      if (k > 0) {
        out += style.item_separator;
      }
      newline(depth + 1);
      append_json_string(out, json_key(items[k].first), style.ensure_ascii);
      out += style.key_separator;
      append_json(out, items[k].second, style, depth + 1);
    }
    newline(depth);
    out += '}';
  } else {
    fail("Object of type " + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

std::string format_float(double d) {
  if (std::isnan(d)) {
    return "nan";
  }
  if (std::isinf(d)) {
    return d > 0 ? "inf" : "-inf";
  }
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, d, std::chars_format::scientific);
  std::string sci(buffer, result.ptr);  // "-1.2345e+02": shortest round-trip digits
  bool negative = sci[0] == '-';
  size_t e = sci.find('e');
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e; ++i) {
    if (sci[i] != '.') {
      digits += sci[i];
    }
  }
  int exponent = std::stoi(sci.substr(e + 1));
  int point = exponent + 1;  // digits before the decimal point
  std::string out = negative ? "-" : "";
  if (point > -4 && point <= 16) {
    if (point <= 0) {
      out += "0." + std::string(static_cast<size_t>(-point), '0') + digits;
    } else if (static_cast<size_t>(point) >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(point) - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(point)) + "." + digits.substr(static_cast<size_t>(point));
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    out += "." + digits.substr(1);
  }
  char exp_text[16];
  std::snprintf(exp_text, sizeof exp_text, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exp_text;
}

std::string to_str(const Value& v) {
  const auto& d = v.data;
  if (v.is_undefined()) {
    return "";
  }
  if (auto* s = std::get_if<std::string>(&d)) {
    return *s;
  }
  return to_repr(v);
}

std::string to_repr(const Value& v) {
  std::vector<const void*> active;
  return repr_at(v, active);
}

namespace {

// `active` holds the containers being written; meeting one again prints Python's "[...]" or "{...}".
std::string repr_at(const Value& v, std::vector<const void*>& active) {
  const auto& d = v.data;
  if (v.is_undefined()) {
    return "Undefined";
  }
  if (v.is_none()) {
    return "None";
  }
  if (auto* b = std::get_if<bool>(&d)) {
    return *b ? "True" : "False";
  }
  if (auto* i = std::get_if<int64_t>(&d)) {
    return std::to_string(*i);
  }
  if (auto* f = std::get_if<double>(&d)) {
    return format_float(*f);
  }
  if (auto* s = std::get_if<std::string>(&d)) {
    return repr_string(*s);
  }
  const void* container = v.is<List>()   ? static_cast<const void*>(v.as<List>().get())
                          : v.is<Dict>() ? static_cast<const void*>(v.as<Dict>().get())
                          : v.is<std::shared_ptr<Namespace>>()
                              ? static_cast<const void*>(v.as<std::shared_ptr<Namespace>>().get())
                              : nullptr;
  if (container != nullptr && std::find(active.begin(), active.end(), container) != active.end()) {
    if (v.is<std::shared_ptr<Namespace>>()) {
      return "<Namespace {...}>";  // its repr recurses into its dict's
    }
    return v.is<List>() ? (v.as<List>()->is_tuple ? "(...)" : "[...]") : "{...}";
  }
  if (active.size() > 200) {
    fail("maximum recursion depth exceeded while getting the repr of an object");
  }
  active.push_back(container);
  struct Pop {
    std::vector<const void*>& active;
    ~Pop() { active.pop_back(); }
  } pop{active};
  if (auto* l = std::get_if<List>(&d)) {
    const auto& items = (*l)->items;
    std::string out = (*l)->is_tuple ? "(" : "[";
    for (size_t k = 0; k < items.size(); ++k) {
      out += (k > 0 ? ", " : "") + repr_at(items[k], active);
    }
    if ((*l)->is_tuple && items.size() == 1) {
      out += ",";
    }
    return out + ((*l)->is_tuple ? ")" : "]");
  }
  auto dict_repr = [&active](const DictData& dict) {
    std::string out = "{";
    for (size_t k = 0; k < dict.items.size(); ++k) {
      out += (k > 0 ? ", " : "") + repr_at(dict.items[k].first, active) + ": " + repr_at(dict.items[k].second, active);
    }
    return out + "}";
  };
  if (auto* m = std::get_if<Dict>(&d)) {
    return dict_repr(**m);
  }
  if (auto* c = std::get_if<std::shared_ptr<Callable>>(&d)) {
    return "<function " + (*c)->name + ">";
  }
  return "<Namespace " + dict_repr(v.as<std::shared_ptr<Namespace>>()->attributes) + ">";
}

}  // namespace

std::string to_json(const Value& v, const JsonStyle& style) {
  std::string out;
  append_json(out, v, style, 0);
  return out;
}

}  // namespace nuvec::lm::jinja
