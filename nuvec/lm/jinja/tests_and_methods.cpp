// Jinja2's tests (`x is defined`) and the str, dict and list methods templates call (`s.strip()`, `d.items()`).

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "nuvec/lm/jinja/builtins.h"
#include "nuvec/lm/jinja/format.h"
#include "nuvec/lm/jinja/operators.h"
#include "nuvec/lm/jinja/text.h"

namespace nuvec::lm::jinja {
namespace {

const Value& required(const Arguments& args, size_t position, const char* name, const char* what) {
  const Value* v = args.get(position, name);
  if (!v) {
    fail(std::string(what) + "() missing required argument '" + name + "'");
  }
  return *v;
}

int64_t integer_argument(const Value& v) {
  if (!is_integer(v)) {
    fail(quoted_type_name(v) + " object cannot be interpreted as an integer");
  }
  return as_integer(v);
}

const std::string* optional_string(const Arguments& args, size_t position, const char* name) {
  const Value* v = args.get(position, name);
  if (!v || v->is_none()) {
    return nullptr;
  }
  if (!v->is<std::string>()) {
    fail("expected a string argument, got " + type_name(*v));
  }
  return &v->str();
}

// ---- tests ----

using TestFunction = bool (*)(const Value&, const Arguments&);

bool is_int_value(const Value& v) { return v.is<int64_t>(); }

const std::unordered_map<std::string, TestFunction>& test_table() {
  static const std::unordered_map<std::string, TestFunction> table = [] {
    std::unordered_map<std::string, TestFunction> t;
    t["defined"] = [](const Value& v, const Arguments&) { return !v.is_undefined(); };
    t["undefined"] = [](const Value& v, const Arguments&) { return v.is_undefined(); };
    t["none"] = [](const Value& v, const Arguments&) { return v.is_none(); };
    t["string"] = [](const Value& v, const Arguments&) { return v.is<std::string>(); };
    t["number"] = [](const Value& v, const Arguments&) { return v.is_number(); };
    t["integer"] = [](const Value& v, const Arguments&) { return is_int_value(v); };
    t["float"] = [](const Value& v, const Arguments&) { return v.is<double>(); };
    t["boolean"] = [](const Value& v, const Arguments&) { return v.is<bool>(); };
    t["true"] = [](const Value& v, const Arguments&) { return v.is<bool>() && v.as<bool>(); };
    t["false"] = [](const Value& v, const Arguments&) { return v.is<bool>() && !v.as<bool>(); };
    t["mapping"] = [](const Value& v, const Arguments&) { return v.is<Dict>(); };
    t["iterable"] = [](const Value& v, const Arguments&) {
      return v.is<List>() || v.is<Dict>() || v.is<std::string>() || v.is_undefined();
    };
    t["sequence"] = [](const Value& v, const Arguments&) {
      return v.is<List>() || v.is<Dict>() || v.is<std::string>() || v.is_undefined();
    };
    t["callable"] = [](const Value& v, const Arguments&) { return v.is<std::shared_ptr<Callable>>(); };
    t["odd"] = [](const Value& v, const Arguments&) { return equal(binary_op("%", v, Value(2)), Value(1)); };
    t["even"] = [](const Value& v, const Arguments&) { return equal(binary_op("%", v, Value(2)), Value(0)); };
    t["divisibleby"] = [](const Value& v, const Arguments& a) {
      return equal(binary_op("%", v, required(a, 0, "num", "divisibleby")), Value(0));
    };
    t["eq"] = [](const Value& v, const Arguments& a) { return equal(v, required(a, 0, "other", "eq")); };
    t["ne"] = [](const Value& v, const Arguments& a) { return !equal(v, required(a, 0, "other", "ne")); };
    t["lt"] = [](const Value& v, const Arguments& a) { return less(v, required(a, 0, "other", "lt")); };
    t["gt"] = [](const Value& v, const Arguments& a) { return less(required(a, 0, "other", "gt"), v); };
    t["le"] = [](const Value& v, const Arguments& a) { return !less(required(a, 0, "other", "le"), v); };
    t["ge"] = [](const Value& v, const Arguments& a) { return !less(v, required(a, 0, "other", "ge")); };
    t["equalto"] = t["=="] = t["eq"];
    t["!="] = t["ne"];
    t["lessthan"] = t["<"] = t["lt"];
    t["greaterthan"] = t[">"] = t["gt"];
    t["<="] = t["le"];
    t[">="] = t["ge"];
    t["in"] = [](const Value& v, const Arguments& a) { return contains(required(a, 0, "seq", "in"), v); };
    t["sameas"] = [](const Value& v, const Arguments& a) {
      const Value& other = required(a, 0, "other", "sameas");
      if (v.data.index() != other.data.index()) {
        return false;
      }
      if (v.is<List>()) {
        return v.as<List>() == other.as<List>();
      }
      if (v.is<Dict>()) {
        return v.as<Dict>() == other.as<Dict>();
      }
      return equal(v, other);
    };
    // str(value).islower() and .isupper(): some cased character, and all of them in that case.
    t["lower"] = [](const Value& v, const Arguments&) {
      std::string s = to_str(v);
      return to_lower(s) == s && to_upper(s) != s;
    };
    t["upper"] = [](const Value& v, const Arguments&) {
      std::string s = to_str(v);
      return to_upper(s) == s && to_lower(s) != s;
    };
    t["escaped"] = [](const Value&, const Arguments&) { return false; };
    t["filter"] = [](const Value& v, const Arguments&) { return v.is<std::string>() && has_filter(v.str()); };
    t["test"] = [](const Value& v, const Arguments&) { return v.is<std::string>() && has_test(v.str()); };
    return t;
  }();
  return table;
}

// ---- str methods ----

using StringMethod = Value (*)(const std::string&, const Arguments&);

bool all_code_points(const std::string& s, bool (*predicate)(char32_t)) {
  std::u32string cps = to_code_points(s);
  return !cps.empty() && std::all_of(cps.begin(), cps.end(), predicate);
}
bool is_alpha_cp(char32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= 0xC0 && c != 0xD7 && c != 0xF7);
}
bool is_digit_cp(char32_t c) { return c >= '0' && c <= '9'; }

Value affix_test(const std::string& s, const Arguments& a, bool prefix) {
  const Value& affix = required(a, 0, prefix ? "prefix" : "suffix", prefix ? "startswith" : "endswith");
  std::vector<Value> options = affix.is<List>() ? affix.as<List>()->items : std::vector<Value>{affix};
  for (const Value& o : options) {
    if (!o.is<std::string>()) {
      fail("expected a str or a tuple of str, got " + type_name(o));
    }
    const std::string& x = o.str();
    bool hit = x.size() <= s.size() &&
               (prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0);
    if (hit) {
      return Value(true);
    }
  }
  return Value(false);
}

Value to_string_list(const std::vector<std::string>& parts) {
  std::vector<Value> items(parts.begin(), parts.end());
  return make_list(std::move(items));
}

// Python's str.format for `{}`, `{0}` and `{name}` fields with an optional !r or !s conversion.
Value python_format(const std::string& s, const Arguments& a) {
  std::string out;
  size_t automatic = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if ((c == '{' || c == '}') && i + 1 < s.size() && s[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '}') {
      fail("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    size_t close = s.find('}', i);
    if (close == std::string::npos) {
      fail("Single '{' encountered in format string");
    }
    std::string field = s.substr(i + 1, close - i - 1);
    i = close;
    char conversion = 's';
    if (size_t bang = field.find('!'); bang != std::string::npos) {
      conversion = bang + 1 < field.size() ? field[bang + 1] : 's';
      field.resize(bang);
    }
    if (field.find(':') != std::string::npos) {
      fail("format specifications in str.format() are not supported");
    }
    const Value* v = nullptr;
    if (field.empty()) {
      if (automatic >= a.positional.size()) {
        fail("Replacement index " + std::to_string(automatic) + " out of range");
      }
      v = &a.positional[automatic++];
    } else if (std::optional<int64_t> index = parse_integer(field)) {
      if (static_cast<uint64_t>(*index) >= a.positional.size()) {
        fail("Replacement index " + field + " out of range");
      }
      v = &a.positional[static_cast<size_t>(*index)];
    } else {
      for (const auto& [k, x] : a.keyword) {
        if (k == field) {
          v = &x;
        }
      }
      if (!v) {
        fail("KeyError: '" + field + "'");
      }
    }
    out += conversion == 'r' ? to_repr(*v) : to_str(*v);
  }
  return Value(std::move(out));
}

const std::unordered_map<std::string, StringMethod>& string_methods() {
  static const std::unordered_map<std::string, StringMethod> table = [] {
    std::unordered_map<std::string, StringMethod> t;
    t["strip"] = [](const std::string& s, const Arguments& a) {
      return Value(strip(s, optional_string(a, 0, "chars"), true, true));
    };
    t["lstrip"] = [](const std::string& s, const Arguments& a) {
      return Value(strip(s, optional_string(a, 0, "chars"), true, false));
    };
    t["rstrip"] = [](const std::string& s, const Arguments& a) {
      return Value(strip(s, optional_string(a, 0, "chars"), false, true));
    };
    t["split"] = [](const std::string& s, const Arguments& a) {
      const Value* n = a.get(1, "maxsplit");
      return to_string_list(split(s, optional_string(a, 0, "sep"), n ? integer_argument(*n) : -1));
    };
    t["splitlines"] = [](const std::string& s, const Arguments& a) {
      const Value* keep = a.get(0, "keepends");
      return to_string_list(split_lines(s, keep != nullptr && truthy(*keep)));
    };
    t["startswith"] = [](const std::string& s, const Arguments& a) { return affix_test(s, a, true); };
    t["endswith"] = [](const std::string& s, const Arguments& a) { return affix_test(s, a, false); };
    t["upper"] = [](const std::string& s, const Arguments&) { return Value(to_upper(s)); };
    t["lower"] = [](const std::string& s, const Arguments&) { return Value(to_lower(s)); };
    t["title"] = [](const std::string& s, const Arguments&) { return Value(title_case(s)); };
    t["capitalize"] = [](const std::string& s, const Arguments&) { return Value(capitalize(s)); };
    t["replace"] = [](const std::string& s, const Arguments& a) {
      const Value& old = required(a, 0, "old", "replace");
      const Value& with = required(a, 1, "new", "replace");
      if (!old.is<std::string>() || !with.is<std::string>()) {
        fail("replace() arguments must be str");
      }
      const Value* n = a.get(2, "count");
      return Value(replace(s, old.str(), with.str(), n ? integer_argument(*n) : -1));
    };
    t["find"] = [](const std::string& s, const Arguments& a) {
      const Value& sub = required(a, 0, "sub", "find");
      if (!sub.is<std::string>()) {
        fail("must be str, not " + type_name(sub));
      }
      return Value(static_cast<int64_t>(find(s, sub.str(), false)));
    };
    t["rfind"] = [](const std::string& s, const Arguments& a) {
      const Value& sub = required(a, 0, "sub", "rfind");
      if (!sub.is<std::string>()) {
        fail("must be str, not " + type_name(sub));
      }
      return Value(static_cast<int64_t>(find(s, sub.str(), true)));
    };
    t["count"] = [](const std::string& s, const Arguments& a) {
      const Value& sub = required(a, 0, "sub", "count");
      if (!sub.is<std::string>()) {
        fail("must be str, not " + type_name(sub));
      }
      return Value(static_cast<int64_t>(count(s, sub.str())));
    };
    t["join"] = [](const std::string& s, const Arguments& a) {
      std::string out;
      bool first = true;
      for (const Value& v : iterate(required(a, 0, "iterable", "join"))) {
        if (!v.is<std::string>()) {
          fail("sequence item: expected str instance, " + type_name(v) + " found");
        }
        out += (first ? "" : s) + v.str();
        first = false;
      }
      return Value(std::move(out));
    };
    t["format"] = python_format;
    t["isdigit"] = [](const std::string& s, const Arguments&) { return Value(all_code_points(s, is_digit_cp)); };
    t["isnumeric"] = t["isdecimal"] = t["isdigit"];
    t["isalpha"] = [](const std::string& s, const Arguments&) { return Value(all_code_points(s, is_alpha_cp)); };
    t["isalnum"] = [](const std::string& s, const Arguments&) {
      return Value(all_code_points(s, [](char32_t c) { return is_alpha_cp(c) || is_digit_cp(c); }));
    };
    t["isspace"] = [](const std::string& s, const Arguments&) { return Value(all_code_points(s, is_python_space)); };
    t["isupper"] = [](const std::string& s, const Arguments&) { return Value(to_upper(s) == s && to_lower(s) != s); };
    t["islower"] = [](const std::string& s, const Arguments&) { return Value(to_lower(s) == s && to_upper(s) != s); };
    return t;
  }();
  return table;
}

// ---- dict and list methods ----

using ObjectMethod = Value (*)(const Value&, const Arguments&);

const std::unordered_map<std::string, ObjectMethod>& dict_methods() {
  static const std::unordered_map<std::string, ObjectMethod> table = [] {
    std::unordered_map<std::string, ObjectMethod> t;
    t["items"] = [](const Value& d, const Arguments&) {
      std::vector<Value> items;
      for (const auto& [k, v] : d.as<Dict>()->items) {
        items.push_back(make_list({k, v}, true));
      }
      return make_list(std::move(items));
    };
    t["keys"] = [](const Value& d, const Arguments&) { return make_list(iterate(d)); };
    t["values"] = [](const Value& d, const Arguments&) {
      std::vector<Value> values;
      for (const auto& item : d.as<Dict>()->items) {
        values.push_back(item.second);
      }
      return make_list(std::move(values));
    };
    t["get"] = [](const Value& d, const Arguments& a) {
      const Value* found = d.as<Dict>()->find(required(a, 0, "key", "get"));
      if (found) {
        return *found;
      }
      const Value* fallback = a.get(1, "default");
      return fallback ? *fallback : Value(None{});
    };
    t["copy"] = [](const Value& d, const Arguments&) {
      Value copy = make_dict();
      copy.as<Dict>()->items = d.as<Dict>()->items;
      return copy;
    };
    return t;
  }();
  return table;
}

const std::unordered_map<std::string, ObjectMethod>& list_methods() {
  static const std::unordered_map<std::string, ObjectMethod> table = [] {
    std::unordered_map<std::string, ObjectMethod> t;
    t["index"] = [](const Value& l, const Arguments& a) {
      const Value& x = required(a, 0, "value", "index");
      const auto& items = l.as<List>()->items;
      for (size_t i = 0; i < items.size(); ++i) {
        if (equal(items[i], x)) {
          return Value(static_cast<int64_t>(i));
        }
      }
      fail(to_repr(x) + " is not in list");
    };
    t["count"] = [](const Value& l, const Arguments& a) {
      const Value& x = required(a, 0, "value", "count");
      const auto& items = l.as<List>()->items;
      return Value(
          static_cast<int64_t>(std::count_if(items.begin(), items.end(), [&](const Value& v) { return equal(v, x); })));
    };
    t["copy"] = [](const Value& l, const Arguments&) { return make_list(l.as<List>()->items); };
    return t;
  }();
  return table;
}

// The sandbox (ImmutableSandboxedEnvironment) hides methods that change a list or dict.
bool mutating_method(const Value& object, const std::string& name) {
  static const std::unordered_set<std::string> list_names = {"append", "extend",  "insert", "pop",
                                                             "remove", "reverse", "sort",   "clear"};
  static const std::unordered_set<std::string> dict_names = {"clear", "pop", "popitem", "setdefault", "update"};
  return (object.is<List>() && list_names.contains(name)) || (object.is<Dict>() && dict_names.contains(name));
}

}  // namespace

bool apply_test(const std::string& name, const Value& value, Arguments& args) {
  const auto& table = test_table();
  auto it = table.find(name);
  if (it == table.end()) {
    fail("No test named '" + name + "'.");
  }
  return it->second(value, args);
}

bool has_test(const std::string& name) { return test_table().contains(name); }

std::optional<Value> bound_method(const Value& object, const std::string& name) {
  if (object.is<std::string>()) {
    auto it = string_methods().find(name);
    if (it == string_methods().end()) {
      return std::nullopt;
    }
    return make_callable(name, [text = object.str(), method = it->second](Arguments& a) { return method(text, a); });
  }
  if (mutating_method(object, name)) {
    return Value(Undefined{"access to attribute '" + name + "' of '" + type_name(object) + "' object is unsafe."});
  }
  const auto* table = object.is<Dict>() ? &dict_methods() : object.is<List>() ? &list_methods() : nullptr;
  if (!table) {
    return std::nullopt;
  }
  auto it = table->find(name);
  if (it == table->end()) {
    return std::nullopt;
  }
  return make_callable(name, [object, method = it->second](Arguments& a) { return method(object, a); });
}

}  // namespace nuvec::lm::jinja
