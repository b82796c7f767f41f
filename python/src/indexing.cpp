// Indexing with NumPy's rules: a[idx], a[idx] = v and the a.at[idx] updates. Integers, slices, None and Ellipsis
// select a view (basic indexing); integer arrays (and the integers beside them) gather (advanced indexing). The
// broadcast shape of the index arrays goes where the first of them was when they are adjacent, else in front.

#include <numeric>
#include <string>

#include "python/src/bindings.h"

namespace nuvec::python {
namespace {

enum class UpdateMode { set, add, multiply, maximum, minimum };

/// An index resolved against an array: `expanded` is the array with a size-1 axis for each None, and every entry
/// of the index now covers one of its axes.
struct Plan {
  array expanded;
  Shape start, stop, step;        // per axis of expanded
  Shape sliced_shape;             // expanded's shape after the slices
  std::vector<int> integer_axes;  // basic indexing: the axes an integer picked (dropped from the result)
  std::vector<array> indices;     // advanced indexing: one index array per axis in advanced_axes
  std::vector<int> advanced_axes;
};

bool is_index_array(py::handle v) {
  if (is_array(v) || py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    return true;
  }
  // NumPy arrays (of any rank but 0) index as arrays; NumPy integer scalars and 0-d arrays as integers.
  return py::hasattr(v, "__array__") && (PyIndex_Check(v.ptr()) == 0 || v.attr("ndim").cast<int>() > 0);
}

Plan make_plan(const array& a, py::handle index) {
  std::vector<py::object> entries;
  if (py::isinstance<py::tuple>(index)) {
    for (auto item : index) {
      entries.push_back(py::reinterpret_borrow<py::object>(item));
    }
  } else {
    entries.push_back(py::reinterpret_borrow<py::object>(index));
  }
  int consumed = 0;
  int ellipses = 0;
  bool advanced = false;
  for (const auto& e : entries) {
    if (e.ptr() == Py_Ellipsis) {
      ++ellipses;
    } else if (!e.is_none()) {
      ++consumed;
      advanced = advanced || is_index_array(e);
    }
  }
  if (ellipses > 1) {
    throw py::index_error("an index can only have a single ellipsis ('...')");
  }
  if (consumed > a.ndim()) {
    throw py::index_error(std::string("too many indices for array: array is ")
                              .append(std::to_string(a.ndim()))
                              .append("-dimensional, but ")
                              .append(std::to_string(consumed))
                              .append(" were indexed"));
  }
  // Ellipsis (or the end) stands for the axes no entry names.
  std::vector<py::object> full;
  py::object all = py::slice(py::none(), py::none(), py::none());
  for (const auto& e : entries) {
    if (e.ptr() == Py_Ellipsis) {
      full.insert(full.end(), a.ndim() - consumed, all);
    } else {
      full.push_back(e);
    }
  }
  if (ellipses == 0) {
    full.insert(full.end(), a.ndim() - consumed, all);
  }
  Shape expanded_shape;
  int axis = 0;
  for (auto& e : full) {
    if (e.is_none()) {
      expanded_shape.push_back(1);
      e = all;
    } else {
      expanded_shape.push_back(a.shape(axis++));
    }
  }
  Plan plan{expanded_shape == a.shape() ? a : reshape(a, expanded_shape), {}, {}, {}, {}, {}, {}, {}};
  for (int i = 0; i < static_cast<int>(full.size()); ++i) {
    const auto& e = full[i];
    int n = expanded_shape[i];
    if (py::isinstance<py::slice>(e)) {
      Py_ssize_t begin = 0;
      Py_ssize_t end = 0;
      Py_ssize_t step = 0;
      if (PySlice_Unpack(e.ptr(), &begin, &end, &step) < 0) {
        throw py::error_already_set();
      }
      Py_ssize_t count = PySlice_AdjustIndices(n, &begin, &end, step);
      // A stop of -1 here means "before the first element", which slice() reads as counting from the end.
      plan.start.push_back(static_cast<int>(begin));
      plan.stop.push_back(static_cast<int>(end < 0 ? end - n : end));
      plan.step.push_back(static_cast<int>(step));
      plan.sliced_shape.push_back(static_cast<int>(count));
    } else if (is_index_array(e)) {
      auto idx = to_array(e);
      if (idx.dtype() == bool_ || !is_integer(idx.dtype())) {
        throw py::index_error(std::string("Arrays used as indices must be of integer type; got ")
                                  .append(dtype_name(idx.dtype()))
                                  .append(" (boolean masks are not supported)."));
      }
      plan.start.push_back(0);
      plan.stop.push_back(n);
      plan.step.push_back(1);
      plan.sliced_shape.push_back(n);
      plan.indices.push_back(idx);
      plan.advanced_axes.push_back(i);
    } else if (PyIndex_Check(e.ptr()) != 0) {
      PyObject* number = PyNumber_Index(e.ptr());
      if (number == nullptr) {
        throw py::error_already_set();
      }
      auto value = py::reinterpret_steal<py::int_>(number).cast<long long>();
      if (value < -n || value >= n) {
        throw py::index_error(std::string("index ")
                                  .append(std::to_string(value))
                                  .append(" is out of bounds for axis ")
                                  .append(std::to_string(i))
                                  .append(" with size ")
                                  .append(std::to_string(n)));
      }
      int k = static_cast<int>(value < 0 ? value + n : value);
      if (advanced) {
        plan.start.push_back(0);
        plan.stop.push_back(n);
        plan.step.push_back(1);
        plan.sliced_shape.push_back(n);
        plan.indices.push_back(array(k));
        plan.advanced_axes.push_back(i);
      } else {
        plan.start.push_back(k);
        plan.stop.push_back(k + 1);
        plan.step.push_back(1);
        plan.sliced_shape.push_back(1);
        plan.integer_axes.push_back(i);
      }
    } else {
      throw py::index_error(std::string("Cannot index an array with an object of type ")
                                .append(py::str(e.get_type()).cast<std::string>())
                                .append("; use integers, slices, None, Ellipsis or integer arrays."));
    }
  }
  return plan;
}

bool slices_everything(const Plan& plan) {
  for (size_t i = 0; i < plan.start.size(); ++i) {
    if (plan.start[i] != 0 || plan.step[i] != 1 || plan.sliced_shape[i] != plan.expanded.shape(static_cast<int>(i))) {
      return false;
    }
  }
  return true;
}

array sliced(const Plan& plan) {
  return slices_everything(plan) ? plan.expanded : slice(plan.expanded, plan.start, plan.stop, plan.step);
}

/// The shape of the index arrays broadcast together.
Shape index_shape(const Plan& plan) {
  Shape shape;
  for (const auto& idx : plan.indices) {
    shape = broadcast_shapes(shape, idx.shape());
  }
  return shape;
}

bool adjacent(const Plan& plan) {
  const auto& axes = plan.advanced_axes;
  return axes.back() - axes.front() + 1 == static_cast<int>(axes.size());
}

/// Where the broadcast index axes go in the result, and the permutation that puts them there from the front.
std::vector<int> from_front(const Plan& plan, int index_ndim, int result_ndim) {
  std::vector<int> order(result_ndim);
  std::iota(order.begin(), order.end(), 0);
  int p = plan.advanced_axes.front();
  if (!adjacent(plan) || p == 0) {
    return order;
  }
  std::vector<int> moved;
  moved.reserve(order.size());
  for (int i = 0; i < p; ++i) {
    moved.push_back(index_ndim + i);
  }
  for (int i = 0; i < index_ndim; ++i) {
    moved.push_back(i);
  }
  for (int i = index_ndim + p; i < result_ndim; ++i) {
    moved.push_back(i);
  }
  return moved;
}

array get_item(const array& a, py::handle index) {
  auto plan = make_plan(a, index);
  auto part = sliced(plan);
  if (plan.indices.empty()) {
    if (plan.integer_axes.empty()) {
      return part;
    }
    return squeeze(part, plan.integer_axes);
  }
  Shape slice_sizes = part.shape();
  for (int axis : plan.advanced_axes) {
    slice_sizes[axis] = 1;
  }
  auto gathered = gather(part, plan.indices, plan.advanced_axes, slice_sizes);
  int index_ndim = static_cast<int>(index_shape(plan).size());
  std::vector<int> dropped;
  for (int axis : plan.advanced_axes) {
    dropped.push_back(index_ndim + axis);
  }
  auto result = squeeze(gathered, dropped);
  auto order = from_front(plan, index_ndim, result.ndim());
  return std::is_sorted(order.begin(), order.end()) ? result : transpose(result, order);
}

/// `update` broadcast to `shape`, after dropping leading size-1 axes NumPy ignores.
array fit_update(array update, const Shape& shape) {
  while (update.ndim() > static_cast<int>(shape.size()) && update.shape(0) == 1) {
    update = squeeze(update, 0);
  }
  return broadcast_to(update, shape);
}

array basic_update(const array& target, const array& update, const Plan& plan, UpdateMode mode) {
  switch (mode) {
    case UpdateMode::set:
      return slice_update(target, update, plan.start, plan.stop, plan.step);
    case UpdateMode::add:
      return slice_update_add(target, update, plan.start, plan.stop, plan.step);
    case UpdateMode::multiply:
      return slice_update_prod(target, update, plan.start, plan.stop, plan.step);
    case UpdateMode::maximum:
      return slice_update_max(target, update, plan.start, plan.stop, plan.step);
    case UpdateMode::minimum:
      return slice_update_min(target, update, plan.start, plan.stop, plan.step);
  }
  return target;
}

array scatter_update(const array& target, const array& update, const Plan& plan, UpdateMode mode) {
  switch (mode) {
    case UpdateMode::set:
      return scatter(target, plan.indices, update, plan.advanced_axes);
    case UpdateMode::add:
      return scatter_add(target, plan.indices, update, plan.advanced_axes);
    case UpdateMode::multiply:
      return scatter_prod(target, plan.indices, update, plan.advanced_axes);
    case UpdateMode::maximum:
      return scatter_max(target, plan.indices, update, plan.advanced_axes);
    case UpdateMode::minimum:
      return scatter_min(target, plan.indices, update, plan.advanced_axes);
  }
  return target;
}

/// a with a[index] combined with `value` by `mode`.
array updated(const array& a, py::handle index, py::handle value, UpdateMode mode) {
  auto plan = make_plan(a, index);
  auto update = to_array(value, a.dtype());
  if (update.dtype() != a.dtype()) {
    update = astype(update, a.dtype());
  }
  array result = a;
  if (plan.indices.empty()) {
    Shape selected;
    for (int i = 0; i < static_cast<int>(plan.sliced_shape.size()); ++i) {
      if (std::find(plan.integer_axes.begin(), plan.integer_axes.end(), i) == plan.integer_axes.end()) {
        selected.push_back(plan.sliced_shape[i]);
      }
    }
    auto fitted = reshape(fit_update(update, selected), plan.sliced_shape);
    result = basic_update(plan.expanded, fitted, plan, mode);
  } else {
    auto part = sliced(plan);
    auto index_dims = index_shape(plan);
    int index_ndim = static_cast<int>(index_dims.size());
    Shape front = index_dims;  // the gathered result with the index axes in front
    Shape slice_sizes = part.shape();
    for (int axis = 0; axis < part.ndim(); ++axis) {
      if (std::find(plan.advanced_axes.begin(), plan.advanced_axes.end(), axis) == plan.advanced_axes.end()) {
        front.push_back(part.shape(axis));
      } else {
        slice_sizes[axis] = 1;
      }
    }
    auto order = from_front(plan, index_ndim, static_cast<int>(front.size()));
    Shape placed(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      placed[i] = front[order[i]];
    }
    auto fitted = fit_update(update, placed);
    if (!std::is_sorted(order.begin(), order.end())) {
      std::vector<int> inverse(order.size());
      for (size_t i = 0; i < order.size(); ++i) {
        inverse[order[i]] = static_cast<int>(i);
      }
      fitted = transpose(fitted, inverse);
    }
    Shape scatter_shape = index_dims;
    scatter_shape.insert(scatter_shape.end(), slice_sizes.begin(), slice_sizes.end());
    auto combined = scatter_update(part, reshape(fitted, scatter_shape), plan, mode);
    result =
        slices_everything(plan) ? combined : slice_update(plan.expanded, combined, plan.start, plan.stop, plan.step);
  }
  return result.shape() == a.shape() ? result : reshape(result, a.shape());
}

/// a.at[index]: the functional updates MLX offers in place of NumPy's ufunc.at.
struct ArrayAt {
  array a;
  py::object index;
};

}  // namespace

void init_indexing(ArrayClass& cls) {
  cls.def("__getitem__", &get_item, py::arg("index"))
      .def(
          "__setitem__",
          [](array& a, const py::object& index, const py::object& value) {
            a = updated(a, index, value, UpdateMode::set);
          },
          py::arg("index"), py::arg("value"))
      .def_property_readonly(
          "at",
          [](const array& a) {
            return py::cast(ArrayAt{a, py::none()});
          },
          "Updates at an index that return a new array: a.at[idx].add(v), subtract, multiply, divide, maximum, "
          "minimum (repeated indices all apply).");
  py::class_<ArrayAt>(cls, "_ArrayAt")
      .def("__getitem__",
           [](const ArrayAt& at, py::object index) {
             return ArrayAt{at.a, std::move(index)};
           })
      .def("add", [](const ArrayAt& at, const py::object& v) { return updated(at.a, at.index, v, UpdateMode::add); })
      .def("subtract",
           [](const ArrayAt& at, const py::object& v) {
             return updated(at.a, at.index, py::cast(negative(to_array(v, at.a.dtype()))), UpdateMode::add);
           })
      .def("multiply",
           [](const ArrayAt& at, const py::object& v) { return updated(at.a, at.index, v, UpdateMode::multiply); })
      .def("divide",
           [](const ArrayAt& at, const py::object& v) {
             return updated(at.a, at.index, py::cast(reciprocal(to_array(v, at.a.dtype()))), UpdateMode::multiply);
           })
      .def("maximum",
           [](const ArrayAt& at, const py::object& v) { return updated(at.a, at.index, v, UpdateMode::maximum); })
      .def("minimum",
           [](const ArrayAt& at, const py::object& v) { return updated(at.a, at.index, v, UpdateMode::minimum); });
}

}  // namespace nuvec::python
