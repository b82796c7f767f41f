// Jinja2's built-in filters, with transformers' tojson in place of Jinja2's own.

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "nuvec/lm/jinja/builtins.h"
#include "nuvec/lm/jinja/format.h"
#include "nuvec/lm/jinja/operators.h"
#include "nuvec/lm/jinja/text.h"

namespace nuvec::lm::jinja {
namespace {

using FilterFunction = Value (*)(const Value&, Arguments&);

const Value* argument(const Arguments& a, size_t position, const char* name) {
  const Value* v = a.get(position, name);
  return v && !v->is_undefined() ? v : nullptr;
}

bool flag(const Arguments& a, size_t position, const char* name) {
  const Value* v = argument(a, position, name);
  return v != nullptr && truthy(*v);
}

std::string text_argument(const Arguments& a, size_t position, const char* name, const char* fallback) {
  const Value* v = argument(a, position, name);
  return v ? to_str(*v) : fallback;
}

// Follows a dotted attribute path ("a.b", "0") as Jinja2's attribute= arguments do.
Value attribute_path(const Value& object, const std::string& path) {
  Value current = object;
  size_t start = 0;
  for (;;) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    std::optional<int64_t> index = parse_integer(part);
    current = index ? get_item(current, Value(*index)) : get_item(current, Value(part));
    if (dot == std::string::npos) {
      return current;
    }
    start = dot + 1;
  }
}

int64_t length_of(const Value& v) {
  if (v.is<std::string>()) {
    return static_cast<int64_t>(to_code_points(v.str()).size());
  }
  if (v.is<List>()) {
    return static_cast<int64_t>(v.as<List>()->items.size());
  }
  if (v.is<Dict>()) {
    return static_cast<int64_t>(v.as<Dict>()->items.size());
  }
  if (v.is_undefined()) {
    return 0;
  }
  fail("object of type '" + type_name(v) + "' has no len()");
}

// The sort key Jinja2 uses unless case_sensitive: strings lowered.
Value sort_key(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.is<std::string>() ? Value(to_lower(v.str())) : v;
}

Value select_items(const Value& input, Arguments& a, bool by_attribute, bool keep) {
  size_t next = 0;
  std::string attribute;
  if (by_attribute) {
    const Value* name = a.get(next++, "attribute");
    if (!name) {
      fail("selectattr() missing the attribute name");
    }
    attribute = to_str(*name);
  }
  const Value* test = a.get(next++, "test");
  Arguments test_args;
  for (size_t i = next; i < a.positional.size(); ++i) {
    test_args.positional.push_back(a.positional[i]);
  }
  std::vector<Value> out;
  for (const Value& item : iterate(input)) {
    Value subject = by_attribute ? attribute_path(item, attribute) : item;
    bool passes = test ? apply_test(to_str(*test), subject, test_args) : truthy(subject);
    if (passes == keep) {
      out.push_back(item);
    }
  }
  return make_list(std::move(out));
}

Value aggregate(const Value& input, Arguments& a, bool maximum) {
  bool case_sensitive = flag(a, 0, "case_sensitive");
  const Value* attribute = argument(a, 1, "attribute");
  std::vector<Value> items = iterate(input);
  if (items.empty()) {
    return Value(Undefined{"No aggregated item, sequence was empty."});
  }
  auto key = [&](const Value& v) {
    return sort_key(attribute ? attribute_path(v, to_str(*attribute)) : v, case_sensitive);
  };
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    bool better = maximum ? less(key(items[best]), key(items[i])) : less(key(items[i]), key(items[best]));
    if (better) {
      best = i;
    }
  }
  return items[best];
}

Value to_int(const Value& v, const Value& fallback) {
  if (v.is<int64_t>()) {
    return v;
  }
  if (v.is<bool>()) {
    return Value(as_integer(v));
  }
  if (v.is<double>()) {
    return std::isnan(v.as<double>()) ? fallback : Value(truncate_to_integer(v.as<double>()));
  }
  if (v.is<std::string>()) {
    std::string s = strip(v.str(), nullptr, true, true);
    std::erase(s, '_');
    char* end = nullptr;
    errno = 0;
    long long n = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end == s.c_str() + s.size()) {
      if (errno == ERANGE) {
        fail("integer overflow: " + s + " does not fit in 64 bits");
      }
      return Value(static_cast<int64_t>(n));
    }
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(d)) {
      return Value(truncate_to_integer(d));
    }
  }
  return fallback;
}

Value to_float(const Value& v, const Value& fallback) {
  if (v.is_number()) {
    return Value(to_double(v));
  }
  if (v.is<std::string>()) {
    std::string s = strip(v.str(), nullptr, true, true);
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) {
      return Value(d);
    }
  }
  return fallback;
}

// Python's round(int, digits): an int again, ties to even when digits < 0.
Value round_integer(int64_t x, int64_t digits) {
  if (digits >= 0) {
    return Value(x);
  }
  if (digits < -18) {
    return Value(int64_t{0});
  }
  int64_t m = 1;
  for (int64_t i = 0; i < -digits; ++i) {
    m *= 10;
  }
  int64_t q = x / m, r = x % m;
  if (r < 0) {
    r += m;
    --q;
  }
  if (2 * r > m || (2 * r == m && (q % 2) != 0)) {
    ++q;
  }
  return Value(q * m);
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Value tojson(const Value& v, Arguments& a) {
  // transformers' signature: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
  JsonStyle style;
  style.ensure_ascii = flag(a, 0, "ensure_ascii");
  if (const Value* indent = argument(a, 1, "indent"); indent && !indent->is_none()) {
    if (!indent->is<int64_t>()) {
      fail("tojson indent must be an integer");
    }
    style.indent = static_cast<int>(std::max<int64_t>(0, indent->as<int64_t>()));
    style.item_separator = ",";
  }
  if (const Value* separators = argument(a, 2, "separators"); separators && !separators->is_none()) {
    std::vector<Value> parts = iterate(*separators);
    if (parts.size() != 2) {
      fail("tojson separators must be a pair of strings");
    }
    style.item_separator = to_str(parts[0]);
    style.key_separator = to_str(parts[1]);
  }
  style.sort_keys = flag(a, 3, "sort_keys");
  return Value(to_json(v, style));
}

Value indent(const Value& v, Arguments& a) {
  const Value* width = argument(a, 0, "width");
  std::string pad =
      !width ? "    "
      : width->is<std::string>()
          ? width->str()
          : std::string(static_cast<size_t>(std::max<int64_t>(0, to_int(*width, Value(4)).as<int64_t>())), ' ');
  bool first = flag(a, 1, "first"), blank = flag(a, 2, "blank");
  if (v.is_undefined()) {
    fail_undefined(v.as<Undefined>());
  }
  if (!v.is<std::string>()) {
    fail("unsupported operand type(s) for +=: '" + type_name(v) + "' and 'str'");  // Jinja2 appends a newline
  }
  std::vector<std::string> lines = split_lines(v.str() + "\n", false);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += "\n";
    }
    bool pad_line = i == 0 ? first : (blank || !lines[i].empty());
    out += (pad_line ? pad : "") + lines[i];
  }
  return Value(std::move(out));
}

Value sort(const Value& v, Arguments& a) {
  bool reverse = flag(a, 0, "reverse"), case_sensitive = flag(a, 1, "case_sensitive");
  const Value* attribute = argument(a, 2, "attribute");
  std::vector<Value> items = iterate(v);
  auto key = [&](const Value& x) {
    return sort_key(attribute ? attribute_path(x, to_str(*attribute)) : x, case_sensitive);
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return reverse ? less(key(y), key(x)) : less(key(x), key(y));
  });
  return make_list(std::move(items));
}

Value dictsort(const Value& v, Arguments& a) {
  if (!v.is<Dict>()) {
    fail("dictsort requires a mapping");
  }
  bool case_sensitive = flag(a, 0, "case_sensitive");
  std::string by = text_argument(a, 1, "by", "key");
  bool reverse = flag(a, 2, "reverse");
  if (by != "key" && by != "value") {
    fail("You can only sort by either 'key' or 'value'");
  }
  auto items = v.as<Dict>()->items;
  std::stable_sort(items.begin(), items.end(), [&](const auto& x, const auto& y) {
    const Value& kx = by == "key" ? x.first : x.second;
    const Value& ky = by == "key" ? y.first : y.second;
    return reverse ? less(sort_key(ky, case_sensitive), sort_key(kx, case_sensitive))
                   : less(sort_key(kx, case_sensitive), sort_key(ky, case_sensitive));
  });
  std::vector<Value> out;
  out.reserve(items.size());
  for (auto& [k, x] : items) {
    out.push_back(make_list({k, x}, true));
  }
  return make_list(std::move(out));
}

Value map_items(const Value& v, Arguments& a) {
  std::vector<Value> out;
  const Value* attribute = a.get(SIZE_MAX, "attribute");
  if (attribute) {
    const Value* fallback = a.get(SIZE_MAX, "default");
    for (const Value& item : iterate(v)) {
      Value x = attribute_path(item, to_str(*attribute));
      out.push_back(x.is_undefined() && fallback ? *fallback : x);
    }
    return make_list(std::move(out));
  }
  if (a.positional.empty()) {
    fail("map requires a filter argument");
  }
  std::string filter = to_str(a.positional[0]);
  Arguments rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.keyword = a.keyword;
  for (const Value& item : iterate(v)) {
    out.push_back(apply_filter(filter, item, rest));
  }
  return make_list(std::move(out));
}

const std::unordered_map<std::string, FilterFunction>& filter_table() {
  static const std::unordered_map<std::string, FilterFunction> table = [] {
    std::unordered_map<std::string, FilterFunction> t;
    t["tojson"] = tojson;
    t["trim"] = [](const Value& v, Arguments& a) {
      const Value* chars = argument(a, 0, "chars");
      std::string set = chars && !chars->is_none() ? to_str(*chars) : "";
      return Value(strip(to_str(v), chars && !chars->is_none() ? &set : nullptr, true, true));
    };
    t["upper"] = [](const Value& v, Arguments&) { return Value(to_upper(to_str(v))); };
    t["lower"] = [](const Value& v, Arguments&) { return Value(to_lower(to_str(v))); };
    t["capitalize"] = [](const Value& v, Arguments&) { return Value(capitalize(to_str(v))); };
    t["title"] = [](const Value& v, Arguments&) {
      // Jinja2's title: words begin after '-', whitespace or an opening bracket, unlike str.title().
      std::u32string cps = to_code_points(to_str(v));
      bool word_start = true;
      std::string out;
      for (char32_t c : cps) {
        bool separator = c == '-' || is_python_space(c) || c == '(' || c == '{' || c == '[' || c == '<';
        std::string one = from_code_points(std::u32string(1, c));
        out += separator ? one : word_start ? to_upper(one) : to_lower(one);
        word_start = separator;
      }
      return Value(std::move(out));
    };
    t["length"] = [](const Value& v, Arguments&) { return Value(length_of(v)); };
    t["count"] = t["length"];
    t["first"] = [](const Value& v, Arguments&) {
      std::vector<Value> items = iterate(v);
      return items.empty() ? Value(Undefined{"No first item, sequence was empty."}) : items.front();
    };
    t["last"] = [](const Value& v, Arguments&) {
      std::vector<Value> items = iterate(v);
      return items.empty() ? Value(Undefined{"No last item, sequence was empty."}) : items.back();
    };
    t["join"] = [](const Value& v, Arguments& a) {
      std::string separator = text_argument(a, 0, "d", "");
      const Value* attribute = argument(a, 1, "attribute");
      std::string out;
      bool first = true;
      for (const Value& item : iterate(v)) {
        out += (first ? "" : separator) + to_str(attribute ? attribute_path(item, to_str(*attribute)) : item);
        first = false;
      }
      return Value(std::move(out));
    };
    t["replace"] = [](const Value& v, Arguments& a) {
      const Value* n = argument(a, 2, "count");
      return Value(replace(to_str(v), text_argument(a, 0, "old", ""), text_argument(a, 1, "new", ""),
                           n && !n->is_none() ? to_int(*n, Value(-1)).as<int64_t>() : -1));
    };
    t["default"] = [](const Value& v, Arguments& a) {
      const Value* fallback = a.get(0, "default_value");
      bool use_fallback = v.is_undefined() || (flag(a, 1, "boolean") && !truthy(v));
      return use_fallback ? (fallback ? *fallback : Value("")) : v;
    };
    t["d"] = t["default"];
    t["list"] = [](const Value& v, Arguments&) { return make_list(iterate(v)); };
    t["string"] = [](const Value& v, Arguments&) { return Value(to_str(v)); };
    t["int"] = [](const Value& v, Arguments& a) {
      if (v.is_undefined()) {
        fail_undefined(v.as<Undefined>());
      }
      const Value* fallback = argument(a, 0, "default");
      return to_int(v, fallback ? *fallback : Value(0));
    };
    t["float"] = [](const Value& v, Arguments& a) {
      if (v.is_undefined()) {
        fail_undefined(v.as<Undefined>());
      }
      const Value* fallback = argument(a, 0, "default");
      return to_float(v, fallback ? *fallback : Value(0.0));
    };
    t["abs"] = [](const Value& v, Arguments&) {
      if (v.is<double>()) {
        return Value(std::fabs(v.as<double>()));
      }
      if (!v.is_number()) {
        fail("bad operand type for abs(): '" + type_name(v) + "'");
      }
      int64_t n = as_integer(v);
      return Value(n < 0 ? -n : n);
    };
    t["round"] = [](const Value& v, Arguments& a) {
      const Value* precision = argument(a, 0, "precision");
      int64_t digits = precision ? to_int(*precision, Value(0)).as<int64_t>() : 0;
      std::string method = text_argument(a, 1, "method", "common");
      if (method != "common" && method != "ceil" && method != "floor") {
        fail("method must be 'common', 'ceil' or 'floor'");
      }
      if (method == "common" && is_integer(v)) {
        return round_integer(as_integer(v), digits);
      }
      double value = to_double(v);
      if (method == "common" && digits >= 0 && digits < 300 && std::isfinite(value)) {
        // Python rounds the exact binary value half-to-even, as printf's correctly rounded digits do.
        char buffer[400];
        std::snprintf(buffer, sizeof buffer, "%.*f", static_cast<int>(digits), value);
        return Value(std::strtod(buffer, nullptr));
      }
      double scale = std::pow(10.0, static_cast<double>(digits));
      double x = value * scale;
      double r = method == "common" ? std::nearbyint(x) : method == "ceil" ? std::ceil(x) : std::floor(x);
      return Value(r / scale);
    };
    t["items"] = [](const Value& v, Arguments&) {
      Arguments none;
      if (v.is_undefined()) {
        return make_list();
      }
      if (!v.is<Dict>()) {
        fail("Can only get item pairs from a mapping.");
      }
      return bound_method(v, "items")->as<std::shared_ptr<Callable>>()->call(none);
    };
    t["selectattr"] = [](const Value& v, Arguments& a) { return select_items(v, a, true, true); };
    t["rejectattr"] = [](const Value& v, Arguments& a) { return select_items(v, a, true, false); };
    t["select"] = [](const Value& v, Arguments& a) { return select_items(v, a, false, true); };
    t["reject"] = [](const Value& v, Arguments& a) { return select_items(v, a, false, false); };
    t["map"] = map_items;
    t["unique"] = [](const Value& v, Arguments& a) {
      bool case_sensitive = flag(a, 0, "case_sensitive");
      const Value* attribute = argument(a, 1, "attribute");
      std::vector<Value> out, seen;
      for (const Value& item : iterate(v)) {
        Value key = sort_key(attribute ? attribute_path(item, to_str(*attribute)) : item, case_sensitive);
        if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equal(s, key); })) {
          seen.push_back(key);
          out.push_back(item);
        }
      }
      return make_list(std::move(out));
    };
    t["sort"] = sort;
    t["dictsort"] = dictsort;
    t["reverse"] = [](const Value& v, Arguments&) {
      if (v.is<std::string>()) {
        std::u32string cps = to_code_points(v.str());
        std::reverse(cps.begin(), cps.end());
        return Value(from_code_points(cps));
      }
      std::vector<Value> items = iterate(v);
      std::reverse(items.begin(), items.end());
      return make_list(std::move(items));
    };
    t["indent"] = indent;
    t["safe"] = [](const Value& v, Arguments&) { return v; };
    t["escape"] = [](const Value& v, Arguments&) { return Value(html_escape(to_str(v))); };
    t["e"] = t["forceescape"] = t["escape"];
    t["format"] = [](const Value& v, Arguments& a) { return Value(percent_format(to_str(v), a.positional)); };
    t["wordcount"] = [](const Value& v, Arguments&) {
      int64_t words = 0;
      bool in_word = false;
      for (char32_t c : to_code_points(to_str(v))) {
        bool word_char = c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= 0xAA && !is_python_space(c) && c != 0xD7 && c != 0xF7);
        if (word_char && !in_word) {
          ++words;
        }
        in_word = word_char;
      }
      return Value(words);
    };
    t["batch"] = [](const Value& v, Arguments& a) {
      const Value* size = argument(a, 0, "linecount");
      int64_t n = size ? to_int(*size, Value(0)).as<int64_t>() : 0;
      if (n <= 0) {
        fail("batch size must be positive");
      }
      const Value* fill = argument(a, 1, "fill_with");
      std::vector<Value> out, row;
      for (const Value& item : iterate(v)) {
        row.push_back(item);
        if (static_cast<int64_t>(row.size()) == n) {
          out.push_back(make_list(std::exchange(row, {})));
        }
      }
      if (!row.empty()) {
        while (fill && static_cast<int64_t>(row.size()) < n) {
          row.push_back(*fill);
        }
        out.push_back(make_list(std::move(row)));
      }
      return make_list(std::move(out));
    };
    t["sum"] = [](const Value& v, Arguments& a) {
      const Value* attribute = argument(a, 0, "attribute");
      const Value* start = argument(a, 1, "start");
      Value total = start ? *start : Value(0);
      for (const Value& item : iterate(v)) {
        total = binary_op("+", total, attribute ? attribute_path(item, to_str(*attribute)) : item);
      }
      return total;
    };
    t["min"] = [](const Value& v, Arguments& a) { return aggregate(v, a, false); };
    t["max"] = [](const Value& v, Arguments& a) { return aggregate(v, a, true); };
    t["attr"] = [](const Value& v, Arguments& a) { return get_attribute(v, text_argument(a, 0, "name", "")); };
    t["center"] = [](const Value& v, Arguments& a) {
      const Value* width = argument(a, 0, "width");
      int64_t w = width ? to_int(*width, Value(80)).as<int64_t>() : 80;
      std::u32string cps = to_code_points(to_str(v));
      auto n = static_cast<int64_t>(cps.size());
      if (w <= n) {
        return Value(to_str(v));
      }
      int64_t left = (w - n) / 2 + ((w - n) & w & 1);  // Python puts the odd space on the left when w is odd
      return Value(std::string(static_cast<size_t>(left), ' ') + to_str(v) +
                   std::string(static_cast<size_t>(w - n - left), ' '));
    };
    return t;
  }();
  return table;
}

}  // namespace

Value apply_filter(const std::string& name, const Value& input, Arguments& args) {
  const auto& table = filter_table();
  auto it = table.find(name);
  if (it == table.end()) {
    fail("No filter named '" + name + "'.");
  }
  return it->second(input, args);
}

bool has_filter(const std::string& name) { return filter_table().contains(name); }

}  // namespace nuvec::lm::jinja
