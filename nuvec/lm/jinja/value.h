#pragma once

// The values a template computes with: Python's objects as Jinja2 sees them.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace nuvec::lm::jinja {

struct Value;

/// Jinja2's default Undefined: prints as "", is falsy and iterates as empty; most other uses fail with `hint`.
struct Undefined {
  std::string hint;
};

/// Python's None.
struct None {};

/// A list or tuple; shared, as Python objects are.
struct ListData {
  std::vector<Value> items;
  bool is_tuple = false;
};

/// A dict keeping insertion order, as Python's does. Keys are few, so look-ups scan.
struct DictData {
  std::vector<std::pair<Value, Value>> items;
  /// The entry for `key`, or nullptr.
  [[nodiscard]] const Value* find(const Value& key) const;
  [[nodiscard]] const Value* find(const std::string& key) const;
  /// Sets `key` keeping its first position when it exists.
  void set(const Value& key, Value value);
};

/// Positional and keyword arguments of a call.
struct Arguments {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  /// The argument at `position` or, failing that, the keyword `name`; nullptr when neither was given.
  [[nodiscard]] const Value* get(size_t position, const char* name) const;
};

/// A function callable from a template: a global, a macro, a bound method, or a for loop's `loop`, the one
/// callable with attributes (loop.index, ...; calling it recurses in a `recursive` loop).
struct Callable {
  std::string name;
  std::function<Value(Arguments&)> call;
  std::shared_ptr<DictData> attributes;
};

/// The object `namespace()` makes: the one thing `set ns.attr = ...` may change.
struct Namespace {
  DictData attributes;
};

using List = std::shared_ptr<ListData>;
using Dict = std::shared_ptr<DictData>;

/// One template value.
struct Value {
  std::variant<Undefined, None, bool, int64_t, double, std::string, List, Dict, std::shared_ptr<Callable>,
               std::shared_ptr<Namespace>>
      data;

  Value() = default;
  Value(Undefined u) : data(std::move(u)) {}
  Value(None n) : data(n) {}
  Value(bool b) : data(b) {}
  Value(int64_t i) : data(i) {}
  Value(int i) : data(int64_t{i}) {}
  Value(double d) : data(d) {}
  Value(std::string s) : data(std::move(s)) {}
  Value(const char* s) : data(std::string(s)) {}
  Value(List l) : data(std::move(l)) {}
  Value(Dict d) : data(std::move(d)) {}
  Value(std::shared_ptr<Callable> c) : data(std::move(c)) {}
  Value(std::shared_ptr<Namespace> n) : data(std::move(n)) {}

  template <class T>
  [[nodiscard]] bool is() const {
    return std::holds_alternative<T>(data);
  }
  template <class T>
  [[nodiscard]] const T& as() const {
    return std::get<T>(data);
  }
  [[nodiscard]] bool is_undefined() const { return is<Undefined>(); }
  [[nodiscard]] bool is_none() const { return is<None>(); }
  [[nodiscard]] bool is_number() const { return is<int64_t>() || is<double>() || is<bool>(); }
  [[nodiscard]] const std::string& str() const { return as<std::string>(); }
};

/// A new list (or tuple) value.
Value make_list(std::vector<Value> items = {}, bool is_tuple = false);
/// A new empty dict value.
Value make_dict();
/// A function value.
Value make_callable(std::string name, std::function<Value(Arguments&)> call);

/// The error a template's evaluation raises; the interpreter adds the template line.
struct RenderError {
  std::string message;
};
/// Throws a RenderError.
[[noreturn]] void fail(std::string message);
/// Throws the error an Undefined holds, as Jinja2 does when one is used.
[[noreturn]] void fail_undefined(const Undefined& u);

/// Python's truth value.
bool truthy(const Value& v);
/// Python's ==.
bool equal(const Value& a, const Value& b);
/// Python's <, failing as Python does for values that do not order.
bool less(const Value& a, const Value& b);
/// Python's type name, as in "'dict object' has no attribute".
std::string type_name(const Value& v);
/// The type name in quotes: "'dict'".
std::string quoted_type_name(const Value& v);
/// A number as a double (bools count as numbers).
double to_double(const Value& v);
/// Python's int(d) for a finite double; past 64 bits it fails rather than give a wrong number.
int64_t truncate_to_integer(double d);
/// Whether `v` is a Python int: an int or a bool.
inline bool is_integer(const Value& v) { return v.is<int64_t>() || v.is<bool>(); }
/// An int or bool as Python's int (True is 1).
inline int64_t as_integer(const Value& v) {
  if (v.is<bool>()) {
    return v.as<bool>() ? 1 : 0;
  }
  return v.as<int64_t>();
}

/// Jinja2's getattr/getitem: attribute `name` of a dict reaches its key. Missing ones give an Undefined.
Value get_item(const Value& object, const Value& key);
/// `object.name`: a method when the object has one by that name, else the item.
Value get_attribute(const Value& object, const std::string& name);
/// The elements a `for` or a filter walks: list items, dict keys, string characters; undefined is empty.
std::vector<Value> iterate(const Value& v);

/// UTF-8 text as code points and back, for Python's str indexing.
std::u32string to_code_points(const std::string& s);
std::string from_code_points(const std::u32string& s);

}  // namespace nuvec::lm::jinja
