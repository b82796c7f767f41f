// Gathers and scatters by index: take, take_along_axis, put_along_axis, scatter_add_axis, masked_scatter, the
// scatters, and slice/slice_update (with a start read from an array, or static start/stop/strides).

#include "python/src/bindings.h"

namespace nuvec::python {
namespace {

using Scatter = array (*)(const array&, const std::vector<array>&, const array&, const std::vector<int>&,
                          StreamOrDevice);

/// One scatter function: indices is one index array with one axis, or a sequence of them with a sequence of axes.
void def_scatter(py::module_& m, const char* name, Scatter op, const char* doc) {
  m.def(
      name,
      [op](const py::object& a, const py::object& indices, const py::object& updates,
           std::variant<int, std::vector<int>> axes, StreamOrDevice s) {
        auto x = to_array(a);
        std::vector<array> idx;
        std::vector<int> ax;
        if (std::holds_alternative<int>(axes)) {
          idx.push_back(to_array(indices));
          ax.push_back(std::get<int>(axes));
        } else {
          for (auto i : indices.cast<py::sequence>()) {
            idx.push_back(to_array(i));
          }
          ax = std::get<std::vector<int>>(axes);
        }
        return op(x, idx, to_array(updates, x.dtype()), ax, s);
      },
      py::arg("a"), py::arg("indices"), py::arg("updates"), py::arg("axes"), py::kw_only(),
      py::arg("stream") = py::none(), doc);
}

/// A static start/stop/strides triple: strides default to 1.
Shape strides_or_ones(const std::optional<Shape>& strides, const Shape& start) {
  return strides ? *strides : Shape(start.size(), 1);
}

}  // namespace

void init_ops_indexing(py::module_& m) {
  m.def(
      "take",
      [](const py::object& a, py::object indices, std::optional<int> axis, StreamOrDevice s) {
        auto x = to_array(a);
        if (PyIndex_Check(indices.ptr()) != 0 && !is_array(indices)) {
          int index = indices.cast<int>();
          return axis ? take(x, index, *axis, s) : take(x, index, s);
        }
        auto idx = to_array(indices);
        return axis ? take(x, idx, *axis, s) : take(x, idx, s);
      },
      py::arg("a"), py::arg("indices"), py::arg("axis") = py::none(), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "take_along_axis",
      [](const py::object& a, const py::object& indices, std::optional<int> axis, StreamOrDevice s) {
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
      [](const py::object& a, const py::object& indices, const py::object& values, std::optional<int> axis,
         StreamOrDevice s) {
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
      "scatter_add_axis",
      [](const py::object& a, const py::object& indices, const py::object& values, int axis, StreamOrDevice s) {
        auto x = to_array(a);
        return scatter_add_axis(x, to_array(indices), to_array(values, x.dtype()), axis, s);
      },
      py::arg("a"), py::arg("indices"), py::arg("values"), py::arg("axis"), py::kw_only(),
      py::arg("stream") = py::none(), "a with values added at indices along axis, duplicates summed.");
  def_scatter(m, "scatter", &scatter, "a with the slices of updates written at indices on axes.");
  def_scatter(m, "scatter_add", &scatter_add, "scatter, adding the updates (np.add.at).");
  def_scatter(m, "scatter_prod", &scatter_prod, "scatter, multiplying by the updates (np.multiply.at).");
  def_scatter(m, "scatter_max", &scatter_max, "scatter, keeping the maximum (np.maximum.at).");
  def_scatter(m, "scatter_min", &scatter_min, "scatter, keeping the minimum (np.minimum.at).");
  m.def(
      "masked_scatter",
      [](const py::object& a, const py::object& mask, const py::object& src, StreamOrDevice s) {
        auto x = to_array(a);
        return masked_scatter(x, to_array(mask), to_array(src, x.dtype()), s);
      },
      py::arg("a"), py::arg("mask"), py::arg("src"), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "slice",
      [](const py::object& a, const py::object& start_indices, std::vector<int> axes, Shape slice_size,
         StreamOrDevice s) {
        return slice(to_array(a), to_array(start_indices), std::move(axes), std::move(slice_size), s);
      },
      py::arg("a"), py::arg("start_indices"), py::arg("axes"), py::arg("slice_size"), py::kw_only(),
      py::arg("stream") = py::none(), "A slice of slice_size whose start on axes is read from an array.");
  // The static forms take keywords only, so positional calls keep MLX's array-start form.
  m.def(
      "slice",
      [](const py::object& a, Shape start, Shape stop, const std::optional<Shape>& strides, StreamOrDevice s) {
        auto st = strides_or_ones(strides, start);
        return slice(to_array(a), std::move(start), std::move(stop), std::move(st), s);
      },
      py::arg("a"), py::kw_only(), py::arg("start"), py::arg("stop"), py::arg("strides") = py::none(),
      py::arg("stream") = py::none(), "a[start:stop:strides] on every axis.");
  m.def(
      "slice_update",
      [](const py::object& a, const py::object& update, const py::object& start_indices, std::vector<int> axes,
         StreamOrDevice s) {
        auto x = to_array(a);
        return slice_update(x, to_array(update, x.dtype()), to_array(start_indices), std::move(axes), s);
      },
      py::arg("a"), py::arg("update"), py::arg("start_indices"), py::arg("axes"), py::kw_only(),
      py::arg("stream") = py::none(), "a with update written at a start on axes read from an array.");
  m.def(
      "slice_update",
      [](const py::object& a, const py::object& update, Shape start, Shape stop, const std::optional<Shape>& strides,
         StreamOrDevice s) {
        auto x = to_array(a);
        auto st = strides_or_ones(strides, start);
        return slice_update(x, to_array(update, x.dtype()), std::move(start), std::move(stop), std::move(st), s);
      },
      py::arg("a"), py::arg("update"), py::kw_only(), py::arg("start"), py::arg("stop"),
      py::arg("strides") = py::none(), py::arg("stream") = py::none(), "a with a[start:stop:strides] = update.");
}

}  // namespace nuvec::python
