#include "python/src/fast_function.h"

#include <array>
#include <deque>
#include <limits>
#include <string_view>
#include <utility>

namespace nuvec::python {
namespace {

constexpr size_t max_parameters = 8;

/// One function or method: its parameters, as its signature names them, and its body.
struct FastFunction {
  std::string name;
  std::vector<std::string> names;
  std::vector<PyObject*> interned;  // the names as interned strings: keywords usually match by pointer
  std::vector<bool> required;
  size_t positional = 0;  // how many parameters may be passed by position
  bool variadic = false;  // the parameter after those is `*name`: a tuple of the other positional arguments
  std::string doc;
  PyMethodDef def{};
  FastBody body;

  /// The parameter named `key` at or after `first`, or names.size().
  [[nodiscard]] size_t find(PyObject* key, size_t first) const {
    for (size_t j = first; j < names.size(); ++j) {
      if (interned[j] == key) {
        return j;
      }
    }
    for (size_t j = first; j < names.size(); ++j) {
      if (PyUnicode_Compare(interned[j], key) == 0) {
        return j;
      }
    }
    return names.size();
  }
};

/// The parameter list of a signature, split at its top-level commas.
std::vector<std::string> split_parameters(const std::string& signature) {
  auto open = signature.find('(');
  std::vector<std::string> parts;
  int depth = 0;
  std::string part;
  for (size_t i = open + 1; i < signature.size(); ++i) {
    char c = signature[i];
    if (depth == 0 && (c == ',' || c == ')')) {
      if (!part.empty()) {
        parts.push_back(part);
      }
      part.clear();
      if (c == ')') {
        break;
      }
      continue;
    }
    depth += c == '[' || c == '(' ? 1 : c == ']' || c == ')' ? -1 : 0;
    if (!(part.empty() && c == ' ')) {
      part += c;
    }
  }
  return parts;
}

/// Functions live as long as the process (the module is never unloaded); none of them owns a Python reference.
std::deque<FastFunction>& functions() {
  static std::deque<FastFunction> all;
  return all;
}

FastFunction& make_function(const std::string& signature, FastBody body) {
  auto& f = functions().emplace_back();
  f.name = signature.substr(0, signature.find('('));
  bool keyword_only = false;
  for (const auto& part : split_parameters(signature)) {
    if (part == "*") {
      keyword_only = true;
      continue;
    }
    if (part[0] == '*') {
      f.variadic = true;
      f.names.push_back(part.substr(1, part.find_first_of(":= ") - 1));
      f.required.push_back(false);
      keyword_only = true;
      continue;
    }
    f.names.push_back(part.substr(0, part.find_first_of(":= ")));
    f.required.push_back(part.find(" = ") == std::string::npos);
    f.positional += keyword_only ? 0 : 1;
  }
  if (f.names.size() > max_parameters) {
    throw std::logic_error(std::string("[def_fast] Too many parameters in ").append(signature));
  }
  for (const auto& name : f.names) {
    f.interned.push_back(PyUnicode_InternFromString(name.c_str()));
  }
  f.doc = signature + "\n";
  f.body = std::move(body);
  f.def.ml_name = f.name.c_str();
  f.def.ml_flags = METH_FASTCALL | METH_KEYWORDS;
  f.def.ml_doc = f.doc.c_str();
  return f;
}

[[noreturn]] void call_error(const FastFunction& f, const std::string& what) {
  throw py::type_error(std::string(f.name).append("() ").append(what));
}

/// Matches the arguments to the parameters as Python does and runs the body; `self`, when not null, is the first.
PyObject* call(const FastFunction& f, PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  try {
    std::array<PyObject*, max_parameters> slots{};
    const size_t first = self != nullptr ? 1 : 0;
    slots[0] = self;
    const auto count = static_cast<size_t>(nargs);
    py::object rest;  // the variadic parameter's tuple
    if (f.variadic) {
      const size_t fixed = std::min(count, f.positional - first);
      rest = py::reinterpret_steal<py::object>(PyTuple_New(static_cast<Py_ssize_t>(count - fixed)));
      for (size_t k = fixed; k < count; ++k) {
        PyTuple_SET_ITEM(rest.ptr(), static_cast<Py_ssize_t>(k - fixed), py::handle(args[k]).inc_ref().ptr());
      }
      slots[f.positional] = rest.ptr();
      std::copy(args, args + fixed, slots.begin() + static_cast<std::ptrdiff_t>(first));
    } else if (first + count > f.positional) {
      call_error(f, std::string("takes at most ")
                        .append(std::to_string(f.positional - first))
                        .append(" positional arguments (")
                        .append(std::to_string(count))
                        .append(" given)"));
    } else {
      std::copy(args, args + count, slots.begin() + static_cast<std::ptrdiff_t>(first));
    }
    const Py_ssize_t keywords = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < keywords; ++k) {
      PyObject* key = PyTuple_GET_ITEM(kwnames, k);
      size_t j = f.find(key, first);
      if (j == f.names.size()) {
        call_error(
            f,
            std::string("got an unexpected keyword argument '").append(py::str(key).cast<std::string>()).append("'"));
      }
      if (slots[j] != nullptr) {  // the variadic parameter is always set: it takes no keyword
        call_error(f, std::string("got multiple values for argument '").append(f.names[j]).append("'"));
      }
      slots[j] = args[count + static_cast<size_t>(k)];
    }
    for (size_t j = first; j < f.names.size(); ++j) {
      if (f.required[j] && slots[j] == nullptr) {
        call_error(f, std::string("missing required argument '").append(f.names[j]).append("'"));
      }
    }
    return f.body(Arguments(f.name.c_str(), f.names, slots.data())).release().ptr();
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

PyObject* function_entry(PyObject* capsule, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const auto* f = static_cast<const FastFunction*>(PyCapsule_GetPointer(capsule, nullptr));
  return call(*f, nullptr, args, nargs, kwnames);
}

// A method's C function receives the array, not data of its own, so each method gets its own entry point, which
// finds its function by its index in this table.
constexpr size_t max_methods = 96;
std::array<const FastFunction*, max_methods> method_table{};

template <size_t I>
PyObject* method_entry(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return call(*method_table[I], self, args, nargs, kwnames);
}

using Entry = PyObject* (*)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*);

template <size_t... I>
constexpr std::array<Entry, sizeof...(I)> method_entries(std::index_sequence<I...> /*indices*/) {
  return {&method_entry<I>...};
}

PyCFunction as_cfunction(Entry entry) {
  // METH_FASTCALL | METH_KEYWORDS functions are stored as PyCFunction and called with their real signature.
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(entry));
}

}  // namespace

array Arguments::to_array(size_t i) const { return python::to_array(slots_[i]); }

int Arguments::to_int(size_t i) const { return as_int(slots_[i], i, "int"); }

int Arguments::as_int(PyObject* item, size_t i, const char* expected) const {
  if (PyIndex_Check(item) == 0) {
    wrong_type(i, expected);
  }
  Py_ssize_t value = PyNumber_AsSsize_t(item, PyExc_OverflowError);
  if (value == -1 && PyErr_Occurred() != nullptr) {
    throw py::error_already_set();
  }
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
    throw py::value_error(
        std::string(function_).append("(): argument '").append(names_[i]).append("' is out of range"));
  }
  return static_cast<int>(value);
}

int Arguments::to_int(size_t i, int fallback) const { return given(i) ? to_int(i) : fallback; }

std::optional<int> Arguments::to_optional_int(size_t i, std::optional<int> fallback) const {
  if (absent(i)) {
    return fallback;
  }
  return given(i) ? std::optional<int>(to_int(i)) : std::nullopt;
}

bool Arguments::to_bool(size_t i, bool fallback) const {
  if (!given(i)) {
    return fallback;
  }
  PyObject* value = slots_[i];
  if (value == Py_True || value == Py_False) {
    return value == Py_True;
  }
  // NumPy's bools and ints convert, as pybind11's bool conversion lets them.
  if (PyIndex_Check(value) == 0 && std::string_view(Py_TYPE(value)->tp_name) != "numpy.bool_") {
    wrong_type(i, "bool");
  }
  int truth = PyObject_IsTrue(value);
  if (truth < 0) {
    throw py::error_already_set();
  }
  return truth != 0;
}

std::vector<int> Arguments::to_ints(size_t i) const { return ints_of(slots_[i], i); }

std::vector<int> Arguments::to_packed_ints(size_t i) const {
  PyObject* rest = slots_[i];
  if (PyTuple_GET_SIZE(rest) == 1 && PyIndex_Check(PyTuple_GET_ITEM(rest, 0)) == 0) {
    return ints_of(PyTuple_GET_ITEM(rest, 0), i);
  }
  return ints_of(rest, i);
}

std::vector<int> Arguments::ints_of(PyObject* value, size_t i) const {
  if (PyList_Check(value) || PyTuple_Check(value)) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(value);
    PyObject** items = PySequence_Fast_ITEMS(value);
    std::vector<int> out(static_cast<size_t>(n));
    for (Py_ssize_t k = 0; k < n; ++k) {
      out[static_cast<size_t>(k)] = as_int(items[k], i, "a sequence of ints");
    }
    return out;
  }
  if (PySequence_Check(value) == 0 || PyUnicode_Check(value)) {
    wrong_type(i, "a sequence of ints");
  }
  try {
    return py::handle(value).cast<std::vector<int>>();
  } catch (const py::cast_error&) {
    wrong_type(i, "a sequence of ints");
  }
}

Axes Arguments::to_axes(size_t i) const {
  if (!given(i)) {
    return std::nullopt;
  }
  if (PyIndex_Check(slots_[i]) != 0) {
    return to_int(i);
  }
  return to_ints(i);
}

Dtype Arguments::to_dtype(size_t i) const {
  try {
    return py::handle(slots_[i]).cast<Dtype>();
  } catch (const py::cast_error&) {
    wrong_type(i, "a nuvec.core.Dtype");
  }
}

StreamOrDevice Arguments::to_stream(size_t i) const {
  if (!given(i)) {
    return {};
  }
  try {
    return py::handle(slots_[i]).cast<StreamOrDevice>();
  } catch (const py::cast_error&) {
    wrong_type(i, "a Stream or a Device");
  }
}

void Arguments::wrong_type(size_t i, const char* expected) const {
  throw py::type_error(std::string(function_)
                           .append("(): argument '")
                           .append(names_[i])
                           .append("' must be ")
                           .append(expected)
                           .append(", not ")
                           .append(Py_TYPE(slots_[i])->tp_name));
}

void def_fast(py::module_& m, const std::string& signature, FastBody body) {
  auto& f = make_function(signature, std::move(body));
  f.def.ml_meth = as_cfunction(&function_entry);
  py::capsule data(static_cast<const void*>(&f));
  auto fn = py::reinterpret_steal<py::object>(PyCFunction_NewEx(&f.def, data.ptr(), m.attr("__name__").ptr()));
  if (!fn) {
    throw py::error_already_set();
  }
  m.attr(f.name.c_str()) = fn;
}

void def_fast_method(ArrayClass& cls, const std::string& signature, FastBody body) {
  static constexpr auto entries = method_entries(std::make_index_sequence<max_methods>());
  static size_t next = 0;
  if (next == max_methods) {
    throw std::logic_error("[def_fast_method] Too many methods: raise max_methods.");
  }
  auto& f = make_function(signature, std::move(body));
  method_table[next] = &f;
  f.def.ml_meth = as_cfunction(entries[next++]);
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  auto method = py::reinterpret_steal<py::object>(PyDescr_NewMethod(type, &f.def));
  if (!method) {
    throw py::error_already_set();
  }
  cls.attr(f.name.c_str()) = method;
}

void def_fast_both(py::module_& m, ArrayClass& cls, const std::string& name, const std::string& parameters,
                   const FastBody& body) {
  def_fast(m, name + "(a: object" + parameters + ") -> nuvec.core.array", body);
  def_fast_method(cls, name + "(self: nuvec.core.array" + parameters + ") -> nuvec.core.array", body);
}

}  // namespace nuvec::python
