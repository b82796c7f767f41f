// Shape and layout: reshape, transpose, squeeze, expand_dims, astype, concatenate, stack, split, pad, roll,
// diagonal, view... The per-call ones (reshape to broadcast_to, astype, split, diag, view) take the fast-call path
// (fast_function.h), as functions and as array methods, and concatenate and stack as functions.

#include "python/src/bindings.h"
#include "python/src/fast_function.h"

namespace nuvec::python {
namespace {

std::vector<array> to_array_list(py::handle arrays) {
  std::vector<array> out;
  for (auto a : arrays) {
    out.push_back(to_array(a));
  }
  return out;
}

py::tuple to_tuple(const std::vector<array>& arrays) {
  py::tuple out(arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) {
    out[i] = py::cast(arrays[i]);
  }
  return out;
}

/// A pad_width: one int, one (low, high) pair for every axis, or one pair per axis.
std::vector<std::pair<int, int>> pad_widths(py::handle width, int ndim) {
  if (PyIndex_Check(width.ptr()) != 0) {
    int w = width.cast<int>();
    return std::vector<std::pair<int, int>>(ndim, {w, w});
  }
  auto seq = width.cast<py::sequence>();
  if (py::len(seq) > 0 && PyIndex_Check(seq[0].ptr()) != 0) {
    if (py::len(seq) == 1) {
      int w = seq[0].cast<int>();
      return std::vector<std::pair<int, int>>(ndim, {w, w});
    }
    return std::vector<std::pair<int, int>>(ndim, {seq[0].cast<int>(), seq[1].cast<int>()});
  }
  std::vector<std::pair<int, int>> widths;
  for (auto item : seq) {
    auto pair = item.cast<py::sequence>();
    widths.emplace_back(pair[0].cast<int>(), pair[py::len(pair) > 1 ? 1 : 0].cast<int>());
  }
  if (widths.size() == 1) {
    widths.resize(ndim, widths[0]);
  }
  return widths;
}

}  // namespace

void init_ops_layout(py::module_& m, ArrayClass& cls) {
  // Each is a function and, where MLX has one, an array method with the same parameters after the array.
  const std::string stream = std::string(", *, ").append(stream_parameter);
  def_fast(m, "reshape(a: object, shape: List[int]" + stream + ") -> nuvec.core.array",
           [](const Arguments& args) { return wrap(reshape(args.to_array(0), args.to_ints(1), args.to_stream(2))); });
  def_fast_method(
      cls,
      std::string("reshape(self: nuvec.core.array, *shape: int, ")
          .append(stream_parameter)
          .append(") -> nuvec.core.array"),
      [](const Arguments& args) { return wrap(reshape(args.to_array(0), args.to_packed_ints(1), args.to_stream(2))); });
  def_fast_both(m, cls, "flatten", ", start_axis: int = 0, end_axis: int = -1" + stream, [](const Arguments& args) {
    return wrap(flatten(args.to_array(0), args.to_int(1, 0), args.to_int(2, -1), args.to_stream(3)));
  });
  m.def(
      "unflatten",
      [](const py::object& a, int axis, const Shape& shape, StreamOrDevice s) {
        return unflatten(to_array(a), axis, shape, s);
      },
      py::arg("a"), py::arg("axis"), py::arg("shape"), py::kw_only(), py::arg("stream") = py::none());
  def_fast_both(m, cls, "squeeze", ", axis: Optional[Union[int, List[int]]] = None" + stream,
                [](const Arguments& args) {
                  auto x = args.to_array(0);
                  auto axis = args.to_axes(1);
                  auto s = args.to_stream(2);
                  return wrap(axis ? squeeze(x, axes_or_all(axis, x), s) : squeeze(x, s));
                });
  def_fast(m, "expand_dims(a: object, axis: Union[int, List[int]]" + stream + ") -> nuvec.core.array",
           [](const Arguments& args) {
             auto x = args.to_array(0);
             return wrap(expand_dims(x, axes_or_all(args.to_axes(1), x), args.to_stream(2)));
           });
  auto transpose_body = [](const Arguments& args) {
    auto x = args.to_array(0);
    auto s = args.to_stream(2);
    return wrap(args.given(1) ? transpose(x, args.to_ints(1), s) : transpose(x, s));
  };
  for (const char* name : {"transpose", "permute_dims"}) {
    def_fast(m,
             std::string(name)
                 .append("(a: object, axes: Optional[List[int]] = None")
                 .append(stream)
                 .append(") -> nuvec.core.array"),
             transpose_body);
  }
  def_fast_method(cls,
                  std::string("transpose(self: nuvec.core.array, *axes: int, ")
                      .append(stream_parameter)
                      .append(") -> nuvec.core.array"),
                  [](const Arguments& args) {
                    auto x = args.to_array(0);
                    auto s = args.to_stream(2);
                    auto axes = py::reinterpret_borrow<py::tuple>(args[1]);
                    bool all = axes.empty() || (axes.size() == 1 && axes[0].is_none());
                    return wrap(all ? transpose(x, s) : transpose(x, args.to_packed_ints(1), s));
                  });
  def_fast_both(m, cls, "swapaxes", ", axis1: int, axis2: int" + stream, [](const Arguments& args) {
    return wrap(swapaxes(args.to_array(0), args.to_int(1), args.to_int(2), args.to_stream(3)));
  });
  def_fast_both(m, cls, "moveaxis", ", source: int, destination: int" + stream, [](const Arguments& args) {
    return wrap(moveaxis(args.to_array(0), args.to_int(1), args.to_int(2), args.to_stream(3)));
  });
  def_fast(m, "broadcast_to(a: object, shape: List[int]" + stream + ") -> nuvec.core.array", [](const Arguments& args) {
    return wrap(broadcast_to(args.to_array(0), args.to_ints(1), args.to_stream(2)));
  });
  // MLX's astype method takes the stream by position too.
  def_fast(m, "astype(a: object, dtype: nuvec.core.Dtype" + stream + ") -> nuvec.core.array",
           [](const Arguments& args) { return wrap(astype(args.to_array(0), args.to_dtype(1), args.to_stream(2))); });
  def_fast_method(
      cls,
      std::string("astype(self: nuvec.core.array, dtype: nuvec.core.Dtype, ")
          .append(stream_parameter)
          .append(") -> nuvec.core.array"),
      [](const Arguments& args) { return wrap(astype(args.to_array(0), args.to_dtype(1), args.to_stream(2))); });
  m.def(
      "broadcast_arrays",
      [](const py::args& arrays, StreamOrDevice s) { return to_tuple(broadcast_arrays(to_array_list(arrays), s)); },
      py::kw_only(), py::arg("stream") = py::none());
  for (int rank = 1; rank <= 3; ++rank) {
    auto name = std::string("atleast_").append(std::to_string(rank)).append("d");
    m.def(
        name.c_str(),
        [rank](const py::args& arys, StreamOrDevice s) -> py::object {
          auto inputs = to_array_list(arys);
          auto lift = [&](const array& a) {
            return rank == 1 ? atleast_1d(a, s) : rank == 2 ? atleast_2d(a, s) : atleast_3d(a, s);
          };
          if (inputs.size() == 1) {
            return py::cast(lift(inputs[0]));
          }
          std::vector<array> out;
          out.reserve(inputs.size());
          for (const auto& a : inputs) {
            out.push_back(lift(a));
          }
          return py::cast(out);
        },
        py::kw_only(), py::arg("stream") = py::none());
  }
  for (const char* name : {"concatenate", "concat"}) {
    def_fast(m, std::string(name).append("(arrays: object, axis: Optional[int] = 0") + stream + ") -> nuvec.core.array",
             [](const Arguments& args) {
               auto inputs = to_array_list(args[0]);
               auto axis = args.to_optional_int(1, 0);
               auto s = args.to_stream(2);
               return wrap(axis ? concatenate(inputs, *axis, s) : concatenate(inputs, s));
             });
  }
  def_fast(m, "stack(arrays: object, axis: int = 0" + stream + ") -> nuvec.core.array", [](const Arguments& args) {
    return wrap(stack(to_array_list(args[0]), args.absent(1) ? 0 : args.to_int(1), args.to_stream(2)));
  });
  m.def(
      "unstack", [](const py::object& a, int axis, StreamOrDevice s) { return unstack(to_array(a), axis, s); },
      py::arg("a"), py::arg("axis") = 0, py::kw_only(), py::arg("stream") = py::none());
  const auto split_body = [](const Arguments& args) {
    auto x = args.to_array(0);
    int axis = args.to_int(2, 0);
    auto s = args.to_stream(3);
    auto parts =
        PyIndex_Check(args[1].ptr()) != 0 ? split(x, args.to_int(1), axis, s) : split(x, args.to_ints(1), axis, s);
    py::list out(parts.size());
    for (size_t i = 0; i < parts.size(); ++i) {
      PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), wrap(std::move(parts[i])).release().ptr());
    }
    return py::object(std::move(out));
  };
  const std::string split_parameters = ", indices_or_sections: Union[int, List[int]], axis: int = 0" + stream;
  def_fast(m, "split(a: object" + split_parameters + ") -> List[nuvec.core.array]", split_body);
  def_fast_method(cls, "split(self: nuvec.core.array" + split_parameters + ") -> List[nuvec.core.array]", split_body);
  m.def(
      "repeat",
      [](const py::object& a, int repeats, std::optional<int> axis, StreamOrDevice s) {
        auto x = to_array(a);
        return axis ? repeat(x, repeats, *axis, s) : repeat(x, repeats, s);
      },
      py::arg("array"), py::arg("repeats"), py::arg("axis") = py::none(), py::kw_only(),
      py::arg("stream") = py::none());
  m.def(
      "tile",
      [](const py::object& a, std::variant<int, std::vector<int>> reps, StreamOrDevice s) {
        auto x = to_array(a);
        return tile(x, axes_or_all(reps, x), s);
      },
      py::arg("a"), py::arg("reps"), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "pad",
      [](const py::object& a, const py::object& pad_width, const std::string& mode, const py::object& constant_values,
         StreamOrDevice s) {
        auto x = to_array(a);
        return pad(x, pad_widths(pad_width, x.ndim()), to_array(constant_values), mode, s);
      },
      py::arg("a"), py::arg("pad_width"), py::arg("mode") = "constant", py::arg("constant_values") = 0, py::kw_only(),
      py::arg("stream") = py::none());
  m.def(
      "roll",
      [](const py::object& a, std::variant<int, Shape> shift, const Axes& axis, StreamOrDevice s) {
        auto x = to_array(a);
        Shape shifts = std::holds_alternative<int>(shift) ? Shape{std::get<int>(shift)} : std::get<Shape>(shift);
        if (!axis) {
          return roll(x, shifts, s);
        }
        return roll(x, shifts, axes_or_all(axis, x), s);
      },
      py::arg("a"), py::arg("shift"), py::arg("axis") = py::none(), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "flip",
      [](const py::object& a, const Axes& axis, StreamOrDevice s) {
        auto x = to_array(a);
        return axis ? flip(x, axes_or_all(axis, x), s) : flip(x, s);
      },
      py::arg("a"), py::arg("axis") = py::none(), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "diagonal",
      [](const py::object& a, int offset, int axis1, int axis2, StreamOrDevice s) {
        return diagonal(to_array(a), offset, axis1, axis2, s);
      },
      py::arg("a"), py::arg("offset") = 0, py::arg("axis1") = 0, py::arg("axis2") = 1, py::kw_only(),
      py::arg("stream") = py::none());
  def_fast_both(m, cls, "diag", ", k: int = 0" + stream, [](const Arguments& args) {
    return wrap(diag(args.to_array(0), args.to_int(1, 0), args.to_stream(2)));
  });
  def_fast_both(m, cls, "view", ", dtype: nuvec.core.Dtype" + stream, [](const Arguments& args) {
    return wrap(view(args.to_array(0), args.to_dtype(1), args.to_stream(2)));
  });
  m.def(
      "trace",
      [](const py::object& a, int offset, int axis1, int axis2, std::optional<Dtype> dtype, StreamOrDevice s) {
        auto x = to_array(a);
        return dtype ? trace(x, offset, axis1, axis2, *dtype, s) : trace(x, offset, axis1, axis2, s);
      },
      py::arg("a"), py::arg("offset") = 0, py::arg("axis1") = 0, py::arg("axis2") = 1, py::arg("dtype") = py::none(),
      py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "as_strided",
      [](const py::object& a, const std::optional<Shape>& shape, std::optional<Strides> strides, size_t offset,
         StreamOrDevice s) {
        auto x = to_array(a);
        Shape out_shape = shape.value_or(x.shape());
        Strides out_strides;
        if (strides) {
          out_strides = *strides;
        } else {
          // Row-major strides of the output shape.
          out_strides.assign(out_shape.size(), 1);
          for (int i = static_cast<int>(out_shape.size()) - 2; i >= 0; --i) {
            out_strides[i] = out_strides[i + 1] * out_shape[i + 1];
          }
        }
        return as_strided(x, out_shape, out_strides, offset, s);
      },
      py::arg("a"), py::arg("shape") = py::none(), py::arg("strides") = py::none(), py::arg("offset") = 0,
      py::kw_only(), py::arg("stream") = py::none());
}

}  // namespace nuvec::python
