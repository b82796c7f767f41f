// Gathers and scatters by index: take, take_along_axis, put_along_axis, masked_scatter, and the slices whose start
// is an array (slice, slice_update).

#include "python/src/bindings.h"

namespace nuvec::python {

void init_ops_indexing(py::module_& m) {
  m.def(
      "take",
      [](py::object a, py::object indices, std::optional<int> axis, StreamOrDevice s) {
        auto x = to_array(a);
        if (PyIndex_Check(indices.ptr()) != 0 && !py::isinstance<array>(indices)) {
          int index = indices.cast<int>();
          return axis ? take(x, index, *axis, s) : take(x, index, s);
        }
        auto idx = to_array(indices);
        return axis ? take(x, idx, *axis, s) : take(x, idx, s);
      },
      py::arg("a"), py::arg("indices"), py::arg("axis") = py::none(), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "take_along_axis",
      [](py::object a, py::object indices, std::optional<int> axis, StreamOrDevice s) {
        auto x = to_array(a);
        auto idx = to_array(indices);
        if (!axis) {
          return take_along_axis(reshape(x, {-1}), reshape(idx, {-1}), 0, s);
        }
        return take_along_axis(x, idx, *axis, s);
      },
      py::arg("a"), py::arg("indices"), py::arg("axis") = py::none(), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "put_along_axis",
      [](py::object a, py::object indices, py::object values, std::optional<int> axis, StreamOrDevice s) {
        auto x = to_array(a);
        auto v = to_array(values, x.dtype());
        if (!axis) {
          return reshape(put_along_axis(reshape(x, {-1}), reshape(to_array(indices), {-1}), reshape(v, {-1}), 0, s),
                         x.shape(), s);
        }
        return put_along_axis(x, to_array(indices), v, *axis, s);
      },
      py::arg("a"), py::arg("indices"), py::arg("values"), py::arg("axis") = py::none(), py::kw_only(),
      py::arg("stream") = py::none());
  m.def(
      "masked_scatter",
      [](py::object a, py::object mask, py::object src, StreamOrDevice s) {
        auto x = to_array(a);
        return masked_scatter(x, to_array(mask), to_array(src, x.dtype()), s);
      },
      py::arg("a"), py::arg("mask"), py::arg("src"), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "slice",
      [](py::object a, py::object start_indices, std::vector<int> axes, Shape slice_size, StreamOrDevice s) {
        return slice(to_array(a), to_array(start_indices), std::move(axes), std::move(slice_size), s);
      },
      py::arg("a"), py::arg("start_indices"), py::arg("axes"), py::arg("slice_size"), py::kw_only(),
      py::arg("stream") = py::none(), "A slice of slice_size whose start on axes is read from an array.");
  m.def(
      "slice_update",
      [](py::object a, py::object update, py::object start_indices, std::vector<int> axes, StreamOrDevice s) {
        auto x = to_array(a);
        return slice_update(x, to_array(update, x.dtype()), to_array(start_indices), std::move(axes), s);
      },
      py::arg("a"), py::arg("update"), py::arg("start_indices"), py::arg("axes"), py::kw_only(),
      py::arg("stream") = py::none(), "a with update written at a start on axes read from an array.");
}

}  // namespace nuvec::python
