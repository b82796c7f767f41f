// Ops that build view primitives (and the few copies behind them): the
// vocabulary every other op composes.

#include <algorithm>
#include <numeric>

#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/output_shapes.h"

namespace nuvec {

using nuvec::detail::list_string;
using nuvec::detail::make_node;

array astype(array a, Dtype dtype, StreamOrDevice s) {
  if (a.dtype() == dtype) {
    return a;
  }
  return make_node(AsType{dtype}, {a}, to_stream(s));
}

array view(const array& a, const Dtype& dtype, StreamOrDevice s) {
  if (a.dtype() == dtype) {
    return a;
  }
  auto in_size = a.itemsize();
  auto out_size = size_of(dtype);
  if (in_size != out_size) {
    if (a.ndim() == 0) {
      throw_invalid("[view] Changing the type of a scalar is only allowed for types with the same size.");
    }
    auto bytes = static_cast<size_t>(a.shape().back()) * in_size;
    if (bytes % out_size != 0) {
      throw_invalid("[view] The last axis of " + std::to_string(bytes) + " bytes is not divisible by the " +
                    std::to_string(out_size) + "-byte size of " + std::string(dtype_name(dtype)) + ".");
    }
  }
  // The view needs a contiguous last axis; copy first when it has none.
  auto in = a.ndim() > 0 && in_size != out_size ? contiguous(a, false, s) : a;
  return make_node(View{dtype}, {in}, to_stream(s));
}

array as_strided(array a, Shape shape, Strides strides, size_t offset, StreamOrDevice s) {
  if (shape.size() != strides.size()) {
    throw_invalid("[as_strided] The shape " + shape_string(shape) + " and strides must have the same length; got " +
                  std::to_string(strides.size()) + " strides.");
  }
  for (auto dim : shape) {
    if (dim < 0) {
      throw_invalid("[as_strided] Negative sizes are not allowed; got shape " + shape_string(shape) + ".");
    }
  }
  // Strides address the row-contiguous layout of `a`.
  auto x = contiguous(a, false, s);
  return make_node(AsStrided{std::move(shape), std::move(strides), offset}, {x}, to_stream(s));
}

array copy(array a, StreamOrDevice s) { return make_node(Copy{}, {std::move(a)}, to_stream(s)); }

array contiguous(const array& a, bool allow_col_major, StreamOrDevice s) {
  if (a.is_available() && (a.flags().row_contiguous || (allow_col_major && a.flags().col_contiguous))) {
    return a;
  }
  // The layout of a lazy array is known only once it is computed: the kernel decides, as MLX's Contiguous does.
  return make_node(Copy{true, allow_col_major}, {a}, to_stream(s));
}

array stop_gradient(const array& a, StreamOrDevice s) { return make_node(StopGradient{}, {a}, to_stream(s)); }

array reshape(const array& a, Shape shape, StreamOrDevice s) {
  size_t known = 1;
  int infer = -1;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) {
        throw_invalid("[reshape] Can only infer one dimension.");
      }
      infer = i;
    } else if (shape[i] < 0) {
      throw_invalid("[reshape] Invalid size " + std::to_string(shape[i]) + " in shape " + shape_string(shape) + ".");
    } else {
      known *= static_cast<size_t>(shape[i]);
    }
  }
  const size_t given = known;  // product of the sizes given; 0 makes the -1 ambiguous
  if (infer >= 0 && known > 0 && a.size() % known == 0) {
    shape[infer] = checked_dim(static_cast<int64_t>(a.size() / known), "reshape");
    known *= static_cast<size_t>(shape[infer]);
  }
  if (known != a.size() || (infer >= 0 && given == 0)) {
    throw_invalid("[reshape] Cannot reshape array of size " + std::to_string(a.size()) + " into shape " +
                  shape_string(shape) + ".");
  }
  if (shape == a.shape()) {
    return a;
  }
  return make_node(Reshape{std::move(shape)}, {a}, to_stream(s));
}

array flatten(const array& a, int start_axis, int end_axis, StreamOrDevice s) {
  if (a.ndim() == 0) {
    return reshape(a, {1}, s);
  }
  // As MLX: the axes are clamped into the array (flatten(a, 0, 5) of a 2-d array flattens it all), and only a start
  // past the last axis or an end before the first is an error.
  const int ndim = a.ndim();
  const int start = std::max(0, start_axis < 0 ? start_axis + ndim : start_axis);
  const int end = std::min(ndim - 1, end_axis < 0 ? end_axis + ndim : end_axis);
  if (start > end) {
    throw_invalid("[flatten] start_axis " + std::to_string(start_axis) + " must come before end_axis " +
                  std::to_string(end_axis) + " for an array with " + std::to_string(ndim) + " dimensions.");
  }
  if (start >= ndim || end < 0) {
    throw_invalid("[flatten] Invalid axes " + std::to_string(start_axis) + " and " + std::to_string(end_axis) +
                  " for an array with " + std::to_string(ndim) + " dimensions.");
  }
  Shape shape(a.shape().begin(), a.shape().begin() + start);
  int64_t flat = 1;
  for (int i = start; i <= end; ++i) {
    flat *= a.shape(i);
  }
  shape.push_back(checked_dim(flat, "flatten"));
  shape.insert(shape.end(), a.shape().begin() + end + 1, a.shape().end());
  return reshape(a, std::move(shape), s);
}

array flatten(const array& a, StreamOrDevice s) { return flatten(a, 0, -1, s); }

array unflatten(const array& a, int axis, Shape shape, StreamOrDevice s) {
  if (shape.empty()) {
    throw_invalid("[unflatten] The shape to unflatten to cannot be empty.");
  }
  int ax = normalize_axis(axis, a.ndim(), "unflatten");
  Shape out(a.shape().begin(), a.shape().begin() + ax);
  out.insert(out.end(), shape.begin(), shape.end());
  out.insert(out.end(), a.shape().begin() + ax + 1, a.shape().end());
  size_t known = 1;
  int infer = -1;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) {
        throw_invalid("[unflatten] Can only infer one dimension; got shape " + shape_string(shape) + ".");
      }
      infer = i;
    } else {
      known *= static_cast<size_t>(shape[i]);
    }
  }
  if (infer >= 0 && known > 0) {
    out[ax + infer] = static_cast<int32_t>(static_cast<size_t>(a.shape(ax)) / known);
  } else if (known != static_cast<size_t>(a.shape(ax))) {
    throw_invalid("[unflatten] Cannot unflatten axis " + std::to_string(axis) + " of size " +
                  std::to_string(a.shape(ax)) + " into shape " + shape_string(shape) + ".");
  }
  return reshape(a, std::move(out), s);
}

array squeeze(const array& a, const std::vector<int>& axes, StreamOrDevice s) {
  auto sorted = normalize_axes(axes, a.ndim(), "squeeze");
  Shape shape;
  size_t next = 0;
  for (int i = 0; i < a.ndim(); ++i) {
    if (next < sorted.size() && sorted[next] == i) {
      if (a.shape(i) != 1) {
        throw_invalid("[squeeze] Cannot squeeze axis " + std::to_string(i) + " of size " + std::to_string(a.shape(i)) +
                      " in shape " + shape_string(a.shape()) + ".");
      }
      ++next;
    } else {
      shape.push_back(a.shape(i));
    }
  }
  return reshape(a, std::move(shape), s);
}

array squeeze(const array& a, int axis, StreamOrDevice s) { return squeeze(a, std::vector<int>{axis}, s); }

array squeeze(const array& a, StreamOrDevice s) {
  std::vector<int> axes;
  for (int i = 0; i < a.ndim(); ++i) {
    if (a.shape(i) == 1) {
      axes.push_back(i);
    }
  }
  return squeeze(a, axes, s);
}

array expand_dims(const array& a, const std::vector<int>& axes, StreamOrDevice s) {
  int out_ndim = a.ndim() + static_cast<int>(axes.size());
  auto sorted = normalize_axes(axes, out_ndim, "expand_dims");
  Shape shape;
  size_t next = 0;
  size_t source = 0;
  for (int i = 0; i < out_ndim; ++i) {
    if (next < sorted.size() && sorted[next] == i) {
      shape.push_back(1);
      ++next;
    } else {
      shape.push_back(a.shape()[source++]);
    }
  }
  return reshape(a, std::move(shape), s);
}

array expand_dims(const array& a, int axis, StreamOrDevice s) { return expand_dims(a, std::vector<int>{axis}, s); }

array transpose(const array& a, std::vector<int> axes, StreamOrDevice s) {
  if (static_cast<int>(axes.size()) != a.ndim()) {
    throw_invalid("[transpose] Received " + std::to_string(axes.size()) + " axes " + list_string(axes) +
                  " for array with " + std::to_string(a.ndim()) + " dimensions.");
  }
  std::vector<bool> seen(a.ndim(), false);
  for (auto& axis : axes) {
    axis = normalize_axis(axis, a.ndim(), "transpose");
    if (seen[axis]) {
      throw_invalid("[transpose] Repeated axis " + std::to_string(axis) + " in " + list_string(axes) + ".");
    }
    seen[axis] = true;
  }
  std::vector<int> identity(a.ndim());
  std::iota(identity.begin(), identity.end(), 0);
  if (axes == identity) {
    return a;
  }
  return make_node(Transpose{std::move(axes)}, {a}, to_stream(s));
}

array transpose(const array& a, StreamOrDevice s) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.rbegin(), axes.rend(), 0);
  return transpose(a, std::move(axes), s);
}

array swapaxes(const array& a, int axis1, int axis2, StreamOrDevice s) {
  int x = normalize_axis(axis1, a.ndim(), "swapaxes", ErrorKind::out_of_range);
  int y = normalize_axis(axis2, a.ndim(), "swapaxes", ErrorKind::out_of_range);
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  std::swap(axes[x], axes[y]);
  return transpose(a, std::move(axes), s);
}

array moveaxis(const array& a, int source, int destination, StreamOrDevice s) {
  int from = normalize_axis(source, a.ndim(), "moveaxis", ErrorKind::out_of_range);
  int to = normalize_axis(destination, a.ndim(), "moveaxis", ErrorKind::out_of_range);
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  axes.erase(axes.begin() + from);
  axes.insert(axes.begin() + to, from);
  return transpose(a, std::move(axes), s);
}

array broadcast_to(const array& a, const Shape& shape, StreamOrDevice s) {
  if (a.shape() == shape) {
    return a;
  }
  bool ok = shape.size() >= a.shape().size();
  if (ok) {
    size_t diff = shape.size() - a.shape().size();
    for (size_t i = 0; i < a.shape().size(); ++i) {
      ok = ok && (a.shape()[i] == shape[diff + i] || a.shape()[i] == 1);
    }
  }
  if (!ok) {
    throw_invalid("[broadcast_to] Cannot broadcast array of shape " + shape_string(a.shape()) + " to shape " +
                  shape_string(shape) + ".");
  }
  return make_node(Broadcast{shape}, {a}, to_stream(s));
}

std::vector<array> broadcast_arrays(const std::vector<array>& inputs, StreamOrDevice s) {
  Shape shape;
  for (const auto& in : inputs) {
    shape = broadcast_shapes(shape, in.shape());
  }
  std::vector<array> out;
  out.reserve(inputs.size());
  for (const auto& in : inputs) {
    out.push_back(broadcast_to(in, shape, s));
  }
  return out;
}

array atleast_1d(const array& a, StreamOrDevice s) { return a.ndim() == 0 ? reshape(a, {1}, s) : a; }
array atleast_2d(const array& a, StreamOrDevice s) {
  switch (a.ndim()) {
    case 0:
      return reshape(a, {1, 1}, s);
    case 1:
      return reshape(a, {1, a.shape(0)}, s);
    default:
      return a;
  }
}
array atleast_3d(const array& a, StreamOrDevice s) {
  switch (a.ndim()) {
    case 0:
      return reshape(a, {1, 1, 1}, s);
    case 1:
      return reshape(a, {1, a.shape(0), 1}, s);
    case 2:
      return reshape(a, {a.shape(0), a.shape(1), 1}, s);
    default:
      return a;
  }
}

namespace {
template <class Fn>
std::vector<array> map_arrays(const std::vector<array>& in, Fn fn, StreamOrDevice s) {
  std::vector<array> out;
  out.reserve(in.size());
  for (const auto& a : in) {
    out.push_back(fn(a, s));
  }
  return out;
}
}  // namespace

std::vector<array> atleast_1d(const std::vector<array>& a, StreamOrDevice s) {
  return map_arrays(
      a, [](const array& x, StreamOrDevice st) { return atleast_1d(x, st); }, s);
}
std::vector<array> atleast_2d(const std::vector<array>& a, StreamOrDevice s) {
  return map_arrays(
      a, [](const array& x, StreamOrDevice st) { return atleast_2d(x, st); }, s);
}
std::vector<array> atleast_3d(const std::vector<array>& a, StreamOrDevice s) {
  return map_arrays(
      a, [](const array& x, StreamOrDevice st) { return atleast_3d(x, st); }, s);
}

array slice(const array& a, Shape start, Shape stop, Shape strides, StreamOrDevice s) {
  if (start.size() != static_cast<size_t>(a.ndim()) || stop.size() != start.size() || strides.size() != start.size()) {
    throw_invalid("[slice] Invalid number of indices or strides for array with " + std::to_string(a.ndim()) +
                  " dimensions.");
  }
  Shape shape(a.ndim());
  bool whole = true;
  for (int i = 0; i < a.ndim(); ++i) {
    int32_t n = a.shape(i);
    int32_t step = strides[i];
    if (step == 0) {
      throw_invalid("[slice] Slice step cannot be zero (axis " + std::to_string(i) + ").");
    }
    // numpy's clipping of out-of-range bounds, for both directions.
    auto clip = [&](int32_t v, bool is_start) {
      if (v < 0) {
        v += n;
      }
      if (step > 0) {
        return std::clamp(v, 0, n);
      }
      (void)is_start;
      return std::clamp(v, -1, n - 1);
    };
    int32_t b = clip(start[i], true);
    int32_t e = clip(stop[i], false);
    int32_t count = step > 0 ? (e > b ? (e - b + step - 1) / step : 0) : (b > e ? (b - e - step - 1) / -step : 0);
    start[i] = count > 0 ? b : 0;
    shape[i] = count;
    whole = whole && step == 1 && start[i] == 0 && count == n;
  }
  if (whole) {
    return a;
  }
  return make_node(Slice{std::move(start), std::move(strides), std::move(shape)}, {a}, to_stream(s));
}

array slice(const array& a, Shape start, Shape stop, StreamOrDevice s) {
  return slice(a, std::move(start), std::move(stop), Shape(a.ndim(), 1), s);
}

array concatenate(std::vector<array> arrays, int axis, StreamOrDevice s) {
  if (arrays.empty()) {
    throw_invalid("[concatenate] No arrays provided for concatenation.");
  }
  const auto& first = arrays.front();
  int ax = normalize_axis(axis, first.ndim(), "concatenate");
  auto dtype = first.dtype();
  int64_t concat_size = 0;
  for (const auto& a : arrays) {
    if (a.ndim() != first.ndim()) {
      throw_invalid("[concatenate] All the input arrays must have the same number of dimensions; got shapes " +
                    shape_string(first.shape()) + " and " + shape_string(a.shape()) + ".");
    }
    for (int i = 0; i < a.ndim(); ++i) {
      if (i != ax && a.shape(i) != first.shape(i)) {
        throw_invalid(
            "[concatenate] All the input array dimensions must match exactly except for the "
            "concatenation axis; got shapes " +
            shape_string(first.shape()) + " and " + shape_string(a.shape()) + " on axis " + std::to_string(ax) + ".");
      }
    }
    concat_size += a.shape(ax);
    dtype = promote_types(dtype, a.dtype());
  }
  checked_dim(concat_size, "concatenate");
  if (arrays.size() == 1) {
    return astype(first, dtype, s);
  }
  for (auto& a : arrays) {
    a = astype(a, dtype, s);
  }
  return make_node(Concatenate{ax}, std::move(arrays), to_stream(s));
}

array concatenate(std::vector<array> arrays, StreamOrDevice s) {
  for (auto& a : arrays) {
    a = flatten(a, s);
  }
  return concatenate(std::move(arrays), 0, s);
}

array diagonal(const array& a, int offset, int axis1, int axis2, StreamOrDevice s) {
  if (a.ndim() < 2) {
    throw_invalid("[diagonal] Array must have at least two dimensions; got shape " + shape_string(a.shape()) + ".");
  }
  int x = normalize_axis(axis1, a.ndim(), "diagonal", ErrorKind::out_of_range);
  int y = normalize_axis(axis2, a.ndim(), "diagonal", ErrorKind::out_of_range);
  if (x == y) {
    throw_invalid("[diagonal] axis1 and axis2 cannot be the same axis (" + std::to_string(x) + ").");
  }
  return make_node(Diagonal{offset, x, y}, {a}, to_stream(s));
}

}  // namespace nuvec
