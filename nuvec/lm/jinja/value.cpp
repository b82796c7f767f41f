#include "nuvec/lm/jinja/value.h"

#include <algorithm>
#include <cmath>

#include "nuvec/lm/jinja/builtins.h"
#include "nuvec/lm/jinja/format.h"
#include "nuvec/lm/overload.h"
#include "nuvec/lm/utf8.h"

namespace nuvec::lm::jinja {

const Value* DictData::find(const Value& key) const {
  for (const auto& [k, v] : items) {
    if (equal(k, key)) {
      return &v;
    }
  }
  return nullptr;
}

const Value* DictData::find(const std::string& key) const {
  for (const auto& [k, v] : items) {
    if (k.is<std::string>() && k.str() == key) {
      return &v;
    }
  }
  return nullptr;
}

void DictData::set(const Value& key, Value value) {
  for (auto& [k, v] : items) {
    if (equal(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(key, std::move(value));
}

const Value* Arguments::get(size_t position, const char* name) const {
  if (position < positional.size()) {
    return &positional[position];
  }
  for (const auto& [k, v] : keyword) {
    if (k == name) {
      return &v;
    }
  }
  return nullptr;
}

Value make_list(std::vector<Value> items, bool is_tuple) {
  auto list = std::make_shared<ListData>();
  list->items = std::move(items);
  list->is_tuple = is_tuple;
  return Value(std::move(list));
}

Value make_dict() { return Value(std::make_shared<DictData>()); }

Value make_callable(std::string name, std::function<Value(Arguments&)> call) {
  return Value(std::make_shared<Callable>(Callable{std::move(name), std::move(call), nullptr}));
}

void fail(std::string message) { throw RenderError{std::move(message)}; }

void fail_undefined(const Undefined& u) { fail(u.hint.empty() ? "value is undefined" : u.hint); }

bool truthy(const Value& v) {
  const auto& d = v.data;
  if (v.is_undefined() || v.is_none()) {
    return false;
  }
  if (auto* b = std::get_if<bool>(&d)) {
    return *b;
  }
  if (auto* i = std::get_if<int64_t>(&d)) {
    return *i != 0;
  }
  if (auto* f = std::get_if<double>(&d)) {
    return *f != 0.0;
  }
  if (auto* s = std::get_if<std::string>(&d)) {
    return !s->empty();
  }
  if (auto* l = std::get_if<List>(&d)) {
    return !(*l)->items.empty();
  }
  if (auto* m = std::get_if<Dict>(&d)) {
    return !(*m)->items.empty();
  }
  return true;
}

double to_double(const Value& v) {
  if (auto* b = std::get_if<bool>(&v.data)) {
    return *b ? 1.0 : 0.0;
  }
  if (auto* i = std::get_if<int64_t>(&v.data)) {
    return static_cast<double>(*i);
  }
  if (auto* f = std::get_if<double>(&v.data)) {
    return *f;
  }
  fail("expected a number, got " + type_name(v));
}

int64_t truncate_to_integer(double d) {
  double t = std::trunc(d);
  if (!(t >= -9223372036854775808.0 && t < 9223372036854775808.0)) {
    fail("integer overflow: " + format_float(d) + " does not fit in 64 bits");
  }
  return static_cast<int64_t>(t);
}

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is<double>() || b.is<double>()) {
      return to_double(a) == to_double(b);
    }
    return as_integer(a) == as_integer(b);
  }
  if (a.data.index() != b.data.index()) {
    return false;
  }
  if (a.is_undefined() || a.is_none()) {
    return true;
  }
  if (a.is<std::string>()) {
    return a.str() == b.str();
  }
  if (a.is<List>()) {
    const auto& x = *a.as<List>();
    const auto& y = *b.as<List>();
    if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) {
      return false;
    }
    for (size_t i = 0; i < x.items.size(); ++i) {
      if (!equal(x.items[i], y.items[i])) {
        return false;
      }
    }
    return true;
  }
  if (a.is<Dict>()) {
    const auto& x = *a.as<Dict>();
    const auto& y = *b.as<Dict>();
    if (x.items.size() != y.items.size()) {
      return false;
    }
    for (const auto& [k, v] : x.items) {
      const Value* other = y.find(k);
      if (!other || !equal(v, *other)) {
        return false;
      }
    }
    return true;
  }
  if (a.is<std::shared_ptr<Callable>>()) {
    return a.as<std::shared_ptr<Callable>>() == b.as<std::shared_ptr<Callable>>();
  }
  return a.as<std::shared_ptr<Namespace>>() == b.as<std::shared_ptr<Namespace>>();
}

bool less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    return to_double(a) < to_double(b);
  }
  if (a.is<std::string>() && b.is<std::string>()) {
    return a.str() < b.str();  // UTF-8 order is code point order
  }
  if (a.is<List>() && b.is<List>() && a.as<List>()->is_tuple == b.as<List>()->is_tuple) {
    const auto& x = a.as<List>()->items;
    const auto& y = b.as<List>()->items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equal(x[i], y[i])) {
        return less(x[i], y[i]);
      }
    }
    return x.size() < y.size();
  }
  if (a.is_undefined()) {
    fail_undefined(a.as<Undefined>());
  }
  if (b.is_undefined()) {
    fail_undefined(b.as<Undefined>());
  }
  fail("'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

std::string type_name(const Value& v) {
  return std::visit(
      detail::Overload{[](const Undefined&) -> std::string { return "Undefined"; },
                       [](const None&) -> std::string { return "NoneType"; },
                       [](bool) -> std::string { return "bool"; }, [](int64_t) -> std::string { return "int"; },
                       [](double) -> std::string { return "float"; },
                       [](const std::string&) -> std::string { return "str"; },
                       [](const List& list) -> std::string { return list->is_tuple ? "tuple" : "list"; },
                       [](const Dict&) -> std::string { return "dict"; },
                       [](const std::shared_ptr<Callable>&) -> std::string { return "function"; },
                       [](const std::shared_ptr<Namespace>&) -> std::string { return "Namespace"; }},
      v.data);
}

std::string quoted_type_name(const Value& v) {
  std::string quoted = "'";
  return quoted.append(type_name(v)).append("'");
}

namespace {

// Jinja2 names an object in its messages as "dict object", and None as "None".
std::string object_repr(const Value& v) {
  if (v.is_none()) {
    return "'None'";
  }
  std::string repr = "'";
  return repr.append(type_name(v)).append(" object'");
}

Value missing_attribute(const Value& object, const std::string& name) {
  return Value(Undefined{object_repr(object) + " has no attribute " + to_repr(Value(name))});
}

Value missing_element(const Value& object, const Value& key) {
  if (key.is<std::string>()) {
    return missing_attribute(object, key.str());
  }
  // Jinja2 quotes the object's name for a missing attribute but not for a missing element.
  std::string name = object_repr(object);
  return Value(Undefined{name.substr(1, name.size() - 2) + " has no element " + to_repr(key)});
}

bool is_ascii(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

}  // namespace

Value get_item(const Value& object, const Value& key) {
  if (object.is_undefined()) {
    fail_undefined(object.as<Undefined>());
  }
  if (auto* d = std::get_if<Dict>(&object.data)) {
    if (const Value* v = (*d)->find(key)) {
      return *v;
    }
  } else if (auto* ns = std::get_if<std::shared_ptr<Namespace>>(&object.data)) {
    if (const Value* v = (*ns)->attributes.find(key)) {
      return *v;
    }
  } else if (auto* c = std::get_if<std::shared_ptr<Callable>>(&object.data); c && (*c)->attributes) {
    if (const Value* v = (*c)->attributes->find(key)) {
      return *v;
    }
  } else if (is_integer(key)) {
    int64_t i = as_integer(key);
    if (auto* l = std::get_if<List>(&object.data)) {
      const auto& items = (*l)->items;
      int64_t n = static_cast<int64_t>(items.size());
      if (i < 0) {
        i += n;
      }
      if (i >= 0 && i < n) {
        return items[static_cast<size_t>(i)];
      }
    } else if (auto* s = std::get_if<std::string>(&object.data)) {
      std::u32string cps = to_code_points(*s);
      int64_t n = static_cast<int64_t>(cps.size());
      if (i < 0) {
        i += n;
      }
      if (i >= 0 && i < n) {
        return Value(from_code_points(cps.substr(static_cast<size_t>(i), 1)));
      }
    }
  }
  if (key.is<std::string>()) {
    if (auto method = bound_method(object, key.str())) {
      return *method;
    }
  }
  return missing_element(object, key);
}

Value get_attribute(const Value& object, const std::string& name) {
  if (object.is_undefined()) {
    fail_undefined(object.as<Undefined>());
  }
  if (auto method = bound_method(object, name)) {
    return *method;
  }
  if (auto* d = std::get_if<Dict>(&object.data)) {
    if (const Value* v = (*d)->find(name)) {
      return *v;
    }
  } else if (auto* ns = std::get_if<std::shared_ptr<Namespace>>(&object.data)) {
    if (const Value* v = (*ns)->attributes.find(name)) {
      return *v;
    }
  } else if (auto* c = std::get_if<std::shared_ptr<Callable>>(&object.data); c && (*c)->attributes) {
    if (const Value* v = (*c)->attributes->find(name)) {
      return *v;
    }
  }
  return missing_attribute(object, name);
}

std::vector<Value> iterate(const Value& v) {
  if (v.is_undefined()) {
    return {};
  }
  if (auto* l = std::get_if<List>(&v.data)) {
    return (*l)->items;
  }
  if (auto* d = std::get_if<Dict>(&v.data)) {
    std::vector<Value> keys;
    for (const auto& item : (*d)->items) {
      keys.push_back(item.first);
    }
    return keys;
  }
  if (auto* s = std::get_if<std::string>(&v.data)) {
    std::vector<Value> chars;
    if (is_ascii(*s)) {
      for (char c : *s) {
        chars.emplace_back(std::string(1, c));
      }
    } else {
      for (char32_t cp : to_code_points(*s)) {
        chars.emplace_back(from_code_points(std::u32string(1, cp)));
      }
    }
    return chars;
  }
  fail(quoted_type_name(v) + " object is not iterable");
}

std::u32string to_code_points(const std::string& s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    out.push_back(detail::next_code_point(s, pos));
  }
  return out;
}

std::string from_code_points(const std::u32string& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : s) {
    detail::append_utf8(out, cp);
  }
  return out;
}

}  // namespace nuvec::lm::jinja
