// Array creation: arange, linspace, full, zeros, ones, eye, identity, tri, tril, triu, meshgrid, windows, copy.

#include "python/src/bindings.h"

namespace nuvec::python {
namespace {

/// A `shape` argument: one int or a sequence of ints.
Shape to_shape(py::handle shape) {
  if (PyIndex_Check(shape.ptr()) != 0) {
    return Shape{shape.cast<int>()};
  }
  return shape.cast<Shape>();
}

}  // namespace

void init_ops_creation(py::module_& m) {
  m.def(
      "arange",
      [](py::object start, py::object stop, py::object step, std::optional<Dtype> dtype, StreamOrDevice s) {
        if (stop.is_none()) {
          stop = start;
          start = py::int_(0);
        }
        if (step.is_none()) {
          step = py::int_(1);
        }
        // As MLX: integer bounds give int32, any float gives float32.
        bool ints = py::isinstance<py::int_>(start) && py::isinstance<py::int_>(stop) && py::isinstance<py::int_>(step);
        Dtype type = dtype.value_or(ints ? int32 : float32);
        return arange(start.cast<double>(), stop.cast<double>(), step.cast<double>(), type, s);
      },
      py::arg("start"), py::arg("stop") = py::none(), py::arg("step") = py::none(), py::kw_only(),
      py::arg("dtype") = py::none(), py::arg("stream") = py::none(),
      "Values from start (default 0) up to stop, spaced by step.");
  m.def(
      "linspace",
      [](double start, double stop, int num, std::optional<Dtype> dtype, StreamOrDevice s) {
        return linspace(start, stop, num, dtype.value_or(float32), s);
      },
      py::arg("start"), py::arg("stop"), py::arg("num") = 50, py::arg("dtype") = py::none(), py::kw_only(),
      py::arg("stream") = py::none());
  m.def(
      "full",
      [](const py::object& shape, const py::object& vals, std::optional<Dtype> dtype, StreamOrDevice s) {
        auto v = to_array(vals, dtype);
        return full(to_shape(shape), v, s);
      },
      py::arg("shape"), py::arg("vals"), py::arg("dtype") = py::none(), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "zeros",
      [](const py::object& shape, std::optional<Dtype> dtype, StreamOrDevice s) {
        return zeros(to_shape(shape), dtype.value_or(float32), s);
      },
      py::arg("shape"), py::arg("dtype") = py::none(), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "ones",
      [](const py::object& shape, std::optional<Dtype> dtype, StreamOrDevice s) {
        return ones(to_shape(shape), dtype.value_or(float32), s);
      },
      py::arg("shape"), py::arg("dtype") = py::none(), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "zeros_like", [](const py::object& a, StreamOrDevice s) { return zeros_like(to_array(a), s); }, py::arg("a"),
      py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "ones_like", [](const py::object& a, StreamOrDevice s) { return ones_like(to_array(a), s); }, py::arg("a"),
      py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "full_like",
      [](const py::object& a, const py::object& vals, std::optional<Dtype> dtype, StreamOrDevice s) {
        auto x = to_array(a);
        Dtype type = dtype.value_or(x.dtype());
        return full_like(x, to_array(vals, type), type, s);
      },
      py::arg("a"), py::arg("vals"), py::arg("dtype") = py::none(), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "eye",
      [](int n, std::optional<int> m_, int k, std::optional<Dtype> dtype, StreamOrDevice s) {
        return eye(n, m_.value_or(n), k, dtype.value_or(float32), s);
      },
      py::arg("n"), py::arg("m") = py::none(), py::arg("k") = 0, py::arg("dtype") = py::none(), py::kw_only(),
      py::arg("stream") = py::none());
  m.def(
      "identity",
      [](int n, std::optional<Dtype> dtype, StreamOrDevice s) { return identity(n, dtype.value_or(float32), s); },
      py::arg("n"), py::arg("dtype") = py::none(), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "tri",
      [](int n, std::optional<int> m_, int k, std::optional<Dtype> dtype, StreamOrDevice s) {
        return tri(n, m_.value_or(n), k, dtype.value_or(float32), s);
      },
      py::arg("n"), py::arg("m") = py::none(), py::arg("k") = 0, py::arg("dtype") = py::none(), py::kw_only(),
      py::arg("stream") = py::none());
  m.def(
      "tril", [](const py::object& x, int k, StreamOrDevice s) { return tril(to_array(x), k, s); }, py::arg("x"),
      py::arg("k") = 0, py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "triu", [](const py::object& x, int k, StreamOrDevice s) { return triu(to_array(x), k, s); }, py::arg("x"),
      py::arg("k") = 0, py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "meshgrid",
      [](const py::args& arrays, bool sparse, const std::string& indexing, StreamOrDevice s) {
        std::vector<array> inputs;
        for (auto a : arrays) {
          inputs.push_back(to_array(a));
        }
        return meshgrid(inputs, sparse, indexing, s);
      },
      py::kw_only(), py::arg("sparse") = false, py::arg("indexing") = "xy", py::arg("stream") = py::none());
  for (const char* name : {"bartlett", "blackman", "hamming", "hanning"}) {
    std::string which = name;
    m.def(
        name,
        [which](int M, StreamOrDevice s) {
          if (which == "bartlett") {
            return bartlett(M, s);
          }
          if (which == "blackman") {
            return blackman(M, s);
          }
          return which == "hamming" ? hamming(M, s) : hanning(M, s);
        },
        py::arg("M"), py::kw_only(), py::arg("stream") = py::none());
  }
  m.def(
      "copy", [](const py::object& a, StreamOrDevice s) { return copy(to_array(a), s); }, py::arg("a"), py::kw_only(),
      py::arg("stream") = py::none());
  m.def(
      "contiguous",
      [](const py::object& a, bool allow_col_major, StreamOrDevice s) {
        return contiguous(to_array(a), allow_col_major, s);
      },
      py::arg("a"), py::arg("allow_col_major") = false, py::kw_only(), py::arg("stream") = py::none());
}

}  // namespace nuvec::python
