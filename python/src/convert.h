#pragma once

// Conversions between Python values and nuvec arrays, shared by every binding file.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <variant>
#include <vector>

#include "nuvec/core/array.h"
#include "nuvec/core/ops.h"
#include "python/src/array_object.h"

namespace py = pybind11;

namespace nuvec::python {

/// An `axis=` argument: one axis, several, or none (all axes).
using Axes = std::optional<std::variant<int, std::vector<int>>>;

/// An array from any array-like Python value: an array, a Python scalar, a nested list or tuple, a NumPy array or
/// another buffer, or a DLPack object. Python scalars take `dtype` when given (MLX's weak scalars), else bool, int32,
/// float32 or complex64.
array to_array(py::handle value, std::optional<Dtype> dtype = std::nullopt);
/// Two operands of a binary op: a Python scalar beside an array takes the array's dtype where its kind allows (an int
/// with a float or integer array, a float with a float array), as MLX does.
std::pair<array, array> to_arrays(py::handle a, py::handle b);
/// `value` as the other operand of a binary op with `other` (the same promotion as to_arrays).
array to_array_like(py::handle value, const array& other);
/// Whether `value` is an array or something to_array accepts.
bool is_array_like(py::handle value);
/// An optional array argument (None gives nothing).
std::optional<array> to_optional_array(py::handle value);

/// The array's elements as nested Python lists of Python scalars (evaluates as eval_released).
py::object to_list(array a);
/// The single element of `a` as a Python scalar.
py::object to_scalar(array a);
/// Evaluates `a` with the GIL released (a small node whose inputs are computed runs at once, keeping it). `a` may be
/// the array of a Python object: evaluation holds a handle of its own.
void eval_released(const array& a);

/// Every axis of `a` when `axes` is empty, else the axes given.
std::vector<int> axes_or_all(const Axes& axes, const array& a);

}  // namespace nuvec::python
