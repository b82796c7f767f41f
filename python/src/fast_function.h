#pragma once

// Functions and array methods that Python calls with its vectorcall convention (METH_FASTCALL | METH_KEYWORDS),
// without pybind11's dispatcher: the arguments are matched to the parameter names as Python matches them, the body
// converts only what it reads, and arrays return through wrap. The per-call path of reductions and layout functions,
// where pybind11's argument conversion cost more than building the node.

#include <functional>
#include <string>
#include <vector>

#include "python/src/convert.h"

namespace nuvec::python {

/// The arguments of one call, matched to the parameters of the function's signature (null where not given).
class Arguments {
 public:
  Arguments(const char* function, const std::vector<std::string>& names, PyObject* const* slots)
      : function_(function), names_(names), slots_(slots) {}

  [[nodiscard]] bool given(size_t i) const { return slots_[i] != nullptr && slots_[i] != Py_None; }
  /// Whether the call left parameter i out (None counts as given: a parameter whose None means something).
  [[nodiscard]] bool absent(size_t i) const { return slots_[i] == nullptr; }
  [[nodiscard]] py::handle operator[](size_t i) const { return slots_[i]; }

  /// The argument as an array (to_array's conversions).
  [[nodiscard]] array to_array(size_t i) const;
  /// An int, or `fallback` when not given.
  [[nodiscard]] int to_int(size_t i, int fallback) const;
  /// An int; a required argument.
  [[nodiscard]] int to_int(size_t i) const;
  /// An int; `fallback` when left out, nothing when None (an axis whose None means the flattened array).
  [[nodiscard]] std::optional<int> to_optional_int(size_t i, std::optional<int> fallback) const;
  [[nodiscard]] bool to_bool(size_t i, bool fallback) const;
  /// A sequence of ints (a shape or a list of axes).
  [[nodiscard]] std::vector<int> to_ints(size_t i) const;
  /// A variadic argument (`*shape`) of ints, or of one sequence of them: a.reshape(2, 3) and a.reshape((2, 3)).
  [[nodiscard]] std::vector<int> to_packed_ints(size_t i) const;
  /// None (not given), one int or a sequence of ints.
  [[nodiscard]] Axes to_axes(size_t i) const;
  [[nodiscard]] Dtype to_dtype(size_t i) const;
  [[nodiscard]] StreamOrDevice to_stream(size_t i) const;

 private:
  /// `value` (argument i or its one element) as a sequence of ints.
  [[nodiscard]] std::vector<int> ints_of(PyObject* value, size_t i) const;
  /// `item` (argument i or one of its elements) as an int.
  [[nodiscard]] int as_int(PyObject* item, size_t i, const char* expected) const;
  /// The TypeError of an argument of the wrong type, worded as Python's.
  [[noreturn]] void wrong_type(size_t i, const char* expected) const;

  const char* function_;
  const std::vector<std::string>& names_;
  PyObject* const* slots_;
};

using FastBody = std::function<py::object(const Arguments&)>;

/// The `stream` parameter as signatures spell it (pybind11's spelling, which the stubs read).
inline constexpr const char* stream_parameter =
    "stream: Union[None, nuvec.core.Stream, nuvec.core.ThreadLocalStream, nuvec.core.Device, "
    "nuvec.core.DeviceType] = None";

/// Adds `m.<name>` called as `body(arguments)`. `signature` is the Python signature, as pybind11 writes it
/// ("sum(a: object, axis: ... = None, *, stream: ... = None) -> nuvec.core.array"): it gives the parameter names,
/// which have defaults and which are keyword-only, and it is the first line of the docstring, which the stubs read.
void def_fast(py::module_& m, const std::string& signature, FastBody body);

/// Adds the array method whose signature's first parameter is `self`: the array the method is called on.
void def_fast_method(ArrayClass& cls, const std::string& signature, FastBody body);

/// Adds `name` both as a function of an array `a` and as its array method, with the same `parameters` after the
/// array (starting with ", ") and the same body.
void def_fast_both(py::module_& m, ArrayClass& cls, const std::string& name, const std::string& parameters,
                   const FastBody& body);

}  // namespace nuvec::python
