#include "python/src/convert.h"

#include <pybind11/complex.h>

#include <complex>
#include <cstring>
#include <limits>
#include <string>

#include "nuvec/core/dispatch.h"
#include "nuvec/core/eval_small.h"
#include "python/src/dlpack.h"

namespace nuvec::python {
namespace {

/// The kinds a nested list can hold, in promotion order.
enum class ListKind { bool_, int_, float_, complex_ };

struct ListScan {
  Shape shape;
  ListKind kind = ListKind::bool_;
  bool has_arrays = false;  // an element is an array or buffer: stack converted elements instead
  bool wide_ints = false;   // an int past int32: int64, as MLX
};

bool is_sequence(py::handle v) { return py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v); }

void scan_list(py::handle v, size_t depth, ListScan& scan) {
  if (is_sequence(v)) {
    auto seq = py::reinterpret_borrow<py::sequence>(v);
    auto n = static_cast<int>(py::len(seq));
    if (depth == scan.shape.size()) {
      scan.shape.push_back(n);
    } else if (depth > scan.shape.size() || scan.shape[depth] != n) {
      throw_invalid("[array] Initialization encountered non-uniform length.");
    }
    for (auto item : seq) {
      scan_list(item, depth + 1, scan);
    }
    return;
  }
  if (depth != scan.shape.size()) {
    throw_invalid("[array] Initialization encountered non-uniform length.");
  }
  if (py::isinstance<py::bool_>(v)) {
    return;
  }
  if (py::isinstance<py::int_>(v)) {
    auto value = v.cast<long long>();
    scan.wide_ints |= value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max();
    scan.kind = std::max(scan.kind, ListKind::int_);
  } else if (py::isinstance<py::float_>(v)) {
    scan.kind = std::max(scan.kind, ListKind::float_);
  } else if (PyComplex_Check(v.ptr())) {
    scan.kind = ListKind::complex_;
  } else if (is_array_like(v)) {
    scan.has_arrays = true;
  } else {
    throw py::type_error(std::string("[array] Invalid type in list: ").append(py::str(v.get_type()).cast<std::string>()));
  }
}

template <class T>
void fill_list(py::handle v, std::vector<T>& out) {
  if (is_sequence(v)) {
    for (auto item : v) {
      fill_list(item, out);
    }
  } else {
    out.push_back(v.cast<T>());
  }
}

array list_to_array(py::handle v, std::optional<Dtype> dtype) {
  ListScan scan;
  scan_list(v, 0, scan);
  if (scan.has_arrays) {
    std::vector<array> parts;
    for (auto item : v) {
      parts.push_back(to_array(item, dtype));
    }
    return stack(parts);
  }
  switch (scan.kind) {
    case ListKind::bool_: {
      std::vector<uint8_t> values;  // vector<bool> has no data()
      fill_list(v, values);
      return array(values.begin(), scan.shape, dtype.value_or(bool_));
    }
    case ListKind::int_: {
      std::vector<int64_t> values;
      fill_list(v, values);
      return array(values.begin(), scan.shape, dtype.value_or(scan.wide_ints ? int64 : int32));
    }
    case ListKind::float_: {
      std::vector<double> values;
      fill_list(v, values);
      return array(values.begin(), scan.shape, dtype.value_or(float32));
    }
    case ListKind::complex_: {
      std::vector<std::complex<double>> values;
      fill_list(v, values);
      std::vector<complex64_t> narrow(values.begin(), values.end());
      return array(narrow.begin(), scan.shape, dtype.value_or(complex64));
    }
  }
  return array(0);  // unreachable: the switch covers ListKind
}

/// The nuvec dtype of a buffer's format and item size; complex128 maps to complex64 (converted on copy).
std::optional<Dtype> buffer_dtype(const py::buffer_info& info) {
  std::string format = info.format;
  if (!format.empty() && (format[0] == '<' || format[0] == '=' || format[0] == '@' || format[0] == '!' ||
                          format[0] == '>')) {
    format.erase(0, 1);
  }
  if (format.empty()) {
    return std::nullopt;
  }
  char kind = format[0];
  auto size = info.itemsize;
  if (kind == '?') {
    return bool_;
  }
  if (kind == 'e') {
    return float16;
  }
  if (kind == 'f') {
    return float32;
  }
  if (kind == 'd') {
    return float64;
  }
  if (kind == 'Z') {
    return complex64;
  }
  bool is_signed = kind == 'b' || kind == 'h' || kind == 'i' || kind == 'l' || kind == 'q' || kind == 'n';
  bool is_unsigned = kind == 'B' || kind == 'H' || kind == 'I' || kind == 'L' || kind == 'Q' || kind == 'N';
  if (!is_signed && !is_unsigned) {
    return std::nullopt;
  }
  switch (size) {
    case 1:
      return is_signed ? int8 : uint8;
    case 2:
      return is_signed ? int16 : uint16;
    case 4:
      return is_signed ? int32 : uint32;
    case 8:
      return is_signed ? int64 : uint64;
    default:
      return std::nullopt;
  }
}

array buffer_to_array(py::handle value, std::optional<Dtype> dtype) {
  // A strided buffer is made contiguous by NumPy first (the copy below is of contiguous bytes).
  py::buffer buf = py::reinterpret_borrow<py::buffer>(value);
  auto info = buf.request();
  bool contiguous = true;
  {
    py::ssize_t expected = info.itemsize;
    for (auto axis = info.ndim; axis-- > 0;) {
      if (info.shape[axis] != 1 && info.strides[axis] != expected) {
        contiguous = false;
      }
      expected *= info.shape[axis];
    }
  }
  if (!contiguous) {
    return buffer_to_array(py::module_::import("numpy").attr("ascontiguousarray")(value), dtype);
  }
  auto source = buffer_dtype(info);
  if (!source) {
    throw_invalid(std::string("[array] Cannot convert a buffer of format '").append(info.format).append("'."));
  }
  Shape shape(info.shape.begin(), info.shape.end());
  bool complex128 = *source == complex64 && info.itemsize == 16;
  auto size = static_cast<size_t>(info.size);
  auto buffer = allocator::malloc(size * size_of(*source));
  if (complex128) {
    const auto* in = static_cast<const std::complex<double>*>(info.ptr);
    auto* out = static_cast<complex64_t*>(buffer.raw_ptr());
    for (size_t i = 0; i < size; ++i) {
      out[i] = complex64_t(in[i]);
    }
  } else if (size > 0) {
    std::memcpy(buffer.raw_ptr(), info.ptr, size * size_of(*source));
  }
  array result(buffer, std::move(shape), *source);
  // As MLX: float64 NumPy arrays become float32 unless a dtype says otherwise.
  Dtype target = dtype.value_or(*source == float64 ? float32 : *source);
  return target == *source ? result : astype(result, target);
}

}  // namespace

bool is_array_like(py::handle v) {
  return is_array(v) || py::isinstance<py::bool_>(v) || py::isinstance<py::int_>(v) ||
         py::isinstance<py::float_>(v) || PyComplex_Check(v.ptr()) || is_sequence(v) ||
         PyObject_CheckBuffer(v.ptr()) || py::hasattr(v, "__dlpack__") || py::hasattr(v, "__array__");
}

array to_array(py::handle v, std::optional<Dtype> dtype) {
  if (is_array(v)) {
    const auto& a = array_of(v);
    return dtype && *dtype != a.dtype() ? astype(a, *dtype) : a;
  }
  if (py::isinstance<py::bool_>(v)) {
    return array(v.cast<bool>(), dtype.value_or(bool_));
  }
  if (py::isinstance<py::int_>(v)) {
    auto value = v.cast<long long>();
    if (dtype) {
      return array(static_cast<int64_t>(value), *dtype);
    }
    bool wide = value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max();
    return array(static_cast<int64_t>(value), wide ? int64 : int32);
  }
  if (py::isinstance<py::float_>(v)) {
    return array(v.cast<double>(), dtype.value_or(float32));
  }
  if (PyComplex_Check(v.ptr())) {
    return array(complex64_t(v.cast<std::complex<double>>()), dtype.value_or(complex64));
  }
  if (is_sequence(v)) {
    return list_to_array(v, dtype);
  }
  if (PyObject_CheckBuffer(v.ptr()) && !py::isinstance<py::str>(v)) {
    return buffer_to_array(v, dtype);
  }
  if (py::hasattr(v, "__dlpack__")) {
    // A copy, as MLX's array(): from_dlpack shares the memory instead.
    auto shared = from_dlpack(v);
    auto result = copy(shared);
    eval_released(result);
    return dtype && *dtype != result.dtype() ? astype(result, *dtype) : result;
  }
  if (py::hasattr(v, "__array__")) {
    return to_array(v.attr("__array__")(), dtype);
  }
  throw py::type_error(std::string("[array] Cannot convert an object of type ")
                           .append(py::str(v.get_type()).cast<std::string>())
                           .append(" to an array."));
}

array to_array_like(py::handle value, const array& other) {
  if (is_array(value)) {
    return array_of(value);
  }
  Dtype dtype = other.dtype();
  bool is_int = py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value);
  if ((is_int && (is_integer(dtype) || is_inexact(dtype))) || (py::isinstance<py::float_>(value) && is_inexact(dtype))) {
    return to_array(value, dtype);
  }
  return to_array(value);
}

std::pair<array, array> to_arrays(py::handle a, py::handle b) {
  if (is_array(a)) {
    const auto& x = array_of(a);
    return {x, to_array_like(b, x)};
  }
  if (is_array(b)) {
    const auto& y = array_of(b);
    return {to_array_like(a, y), y};
  }
  return {to_array(a), to_array(b)};
}

std::optional<array> to_optional_array(py::handle value) {
  if (value.is_none()) {
    return std::nullopt;
  }
  return to_array(value);
}

void eval_released(const array& a) {
  // A small node whose inputs are computed runs at once with the GIL held: releasing and taking back the GIL would
  // cost more than its kernel.
  constexpr size_t small_node_bytes = 64 * 1024;
  if (a.is_available() || detail::try_eval_small_node(a, small_node_bytes)) {
    return;
  }
  array held = a;  // `a` may belong to a Python object that another thread rebinds while the GIL is released
  py::gil_scoped_release release;
  held.eval();
}

namespace {

template <class T>
py::object element(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  if constexpr (std::is_same_v<T, bool>) {
    return py::bool_(value);
  } else if constexpr (std::is_same_v<T, complex64_t>) {
    return py::reinterpret_steal<py::object>(PyComplex_FromDoubles(value.real(), value.imag()));
  } else if constexpr (std::is_integral_v<T>) {
    return py::int_(value);
  } else if constexpr (std::is_same_v<T, double>) {
    return py::float_(value);
  } else {
    return py::float_(static_cast<double>(static_cast<float>(value)));  // float16 and bfloat16 convert via float
  }
}

template <class T>
py::object nested_list(const array& a, const char* p, int axis) {
  if (axis == a.ndim()) {
    return element<T>(p);
  }
  auto n = a.shape(axis);
  py::list out(n);
  auto stride = a.strides(axis) * static_cast<int64_t>(sizeof(T));
  for (int i = 0; i < n; ++i) {
    out[i] = nested_list<T>(a, p + i * stride, axis + 1);
  }
  return out;
}

}  // namespace

py::object to_list(array a) {
  eval_released(a);
  return dispatch(a.dtype(), [&]<class T>(type_tag<T>) -> py::object {
    return nested_list<T>(a, static_cast<const char*>(a.raw_data()), 0);
  });
}

py::object to_scalar(array a) {
  if (a.size() != 1) {
    throw_invalid("[item] item can only be called on arrays of size 1.");
  }
  eval_released(a);
  return dispatch(a.dtype(), [&]<class T>(type_tag<T>) -> py::object {
    return element<T>(static_cast<const char*>(a.raw_data()));
  });
}

std::vector<int> axes_or_all(const Axes& axes, const array& a) {
  if (!axes) {
    std::vector<int> all(a.ndim());
    for (int i = 0; i < a.ndim(); ++i) {
      all[i] = i;
    }
    return all;
  }
  if (const int* axis = std::get_if<int>(&*axes)) {
    return {*axis};
  }
  return std::get<std::vector<int>>(*axes);
}

}  // namespace nuvec::python
