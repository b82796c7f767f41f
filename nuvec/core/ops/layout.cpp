// Layout ops composed from views, concatenation and padding: split, stack,
// repeat, tile, pad, roll, flip, diag, trace, and the graph utilities
// number_of_elements and depends.

#include <numeric>

#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/output_shapes.h"

namespace nuvec {

using nuvec::detail::all_axes;
using nuvec::detail::list_string;
using nuvec::detail::slice_axis;

namespace {

/// `a` padded along one axis with copies of its first and last slices.
array edge_pad_axis(const array& a, int axis, int low, int high, StreamOrDevice s) {
  const int n = a.shape(axis);
  if (n == 0) {
    throw_invalid("[pad] Cannot extend the empty axis " + std::to_string(axis) + " of shape " +
                  shape_string(a.shape()) + " with edge padding.");
  }
  std::vector<array> parts;
  auto edge = [&](int begin, int size) {
    auto shape = a.shape();
    shape[axis] = size;
    parts.push_back(broadcast_to(slice_axis(a, axis, begin, begin + 1, s), shape, s));
  };
  if (low > 0) {
    edge(0, low);
  }
  parts.push_back(a);
  if (high > 0) {
    edge(n - 1, high);
  }
  return concatenate(std::move(parts), axis, s);
}

/// `a` padded along one axis with its mirror image, as numpy.pad: "reflect" mirrors about the edge values (period
/// 2 (n - 1)), "symmetric" repeats them (period 2n); pads longer than the axis keep mirroring.
array mirror_pad_axis(const array& a, int axis, int low, int high, bool symmetric, StreamOrDevice s) {
  const int n = a.shape(axis);
  if (n == 0) {
    throw_invalid("[pad] Cannot pad the empty axis " + std::to_string(axis) + " of shape " + shape_string(a.shape()) +
                  " with mode '" + (symmetric ? "symmetric" : "reflect") + "'.");
  }
  const int64_t period = symmetric ? 2 * int64_t{n} : 2 * (int64_t{n} - 1);
  std::vector<int32_t> source;
  source.reserve(static_cast<size_t>(low) + n + high);
  for (int64_t j = -int64_t{low}; j < int64_t{n} + high; ++j) {
    if (period == 0) {  // reflect of a single element
      source.push_back(0);
      continue;
    }
    const int64_t m = ((j % period) + period) % period;
    source.push_back(static_cast<int32_t>(m < n ? m : (symmetric ? period - 1 - m : period - m)));
  }
  const auto count = static_cast<int32_t>(source.size());
  return take(a, array(source.begin(), Shape{count}, int32), axis, s);
}

}  // namespace

// ---------------------------------------------------------------- split and stack

std::vector<array> split(const array& a, const Shape& indices, int axis, StreamOrDevice s) {
  const int ax = normalize_axis(axis, a.ndim(), "split");
  std::vector<array> parts;
  parts.reserve(indices.size() + 1);
  int begin = 0;
  for (size_t i = 0; i <= indices.size(); ++i) {
    // numpy's rule: piece i is a[indices[i - 1]:indices[i]] with Python's
    // clipping of negative and out-of-range bounds.
    int end = i < indices.size() ? indices[i] : a.shape(ax);
    parts.push_back(slice_axis(a, ax, begin, end, s));
    begin = end;
  }
  return parts;
}

std::vector<array> split(const array& a, const Shape& indices, StreamOrDevice s) { return split(a, indices, 0, s); }

std::vector<array> split(const array& a, int num_splits, int axis, StreamOrDevice s) {
  const int ax = normalize_axis(axis, a.ndim(), "split");
  if (num_splits <= 0) {
    throw_invalid("[split] The number of splits must be positive; got " + std::to_string(num_splits) + ".");
  }
  const int n = a.shape(ax);
  if (n % num_splits != 0) {
    throw_invalid("[split] Array split does not result in sub arrays with equal size. Axis " + std::to_string(ax) +
                  " of shape " + shape_string(a.shape()) + " cannot be split into " + std::to_string(num_splits) +
                  " equal parts.");
  }
  Shape indices;
  for (int i = 1; i < num_splits; ++i) {
    indices.push_back(i * (n / num_splits));
  }
  return split(a, indices, ax, s);
}

std::vector<array> split(const array& a, int num_splits, StreamOrDevice s) { return split(a, num_splits, 0, s); }

array stack(const std::vector<array>& arrays, int axis, StreamOrDevice s) {
  if (arrays.empty()) {
    throw_invalid("[stack] No arrays provided for stacking.");
  }
  const auto& first = arrays.front();
  for (const auto& a : arrays) {
    if (a.shape() != first.shape()) {
      throw_invalid("[stack] All arrays must have the same shape; got " + shape_string(first.shape()) + " and " +
                    shape_string(a.shape()) + ".");
    }
  }
  const int ax = normalize_axis(axis, first.ndim() + 1, "stack");
  std::vector<array> expanded;
  expanded.reserve(arrays.size());
  for (const auto& a : arrays) {
    expanded.push_back(expand_dims(a, ax, s));
  }
  return concatenate(std::move(expanded), ax, s);
}

array stack(const std::vector<array>& arrays, StreamOrDevice s) { return stack(arrays, 0, s); }

std::vector<array> unstack(const array& a, int axis, StreamOrDevice s) {
  if (a.ndim() == 0) {
    throw_invalid("[unstack] Cannot unstack a scalar (0-d) array.");
  }
  const int ax = normalize_axis(axis, a.ndim(), "unstack");
  std::vector<array> parts;
  parts.reserve(a.shape(ax));
  for (int i = 0; i < a.shape(ax); ++i) {
    parts.push_back(squeeze(slice_axis(a, ax, i, i + 1, s), ax, s));
  }
  return parts;
}

// ---------------------------------------------------------------- repeat and tile

array repeat(const array& arr, int repeats, int axis, StreamOrDevice s) {
  const int ax = normalize_axis(axis, arr.ndim(), "repeat");
  if (repeats < 0) {
    throw_invalid("[repeat] Number of repeats cannot be negative; got " + std::to_string(repeats) + ".");
  }
  if (repeats == 1) {
    return arr;
  }
  // (..., n, ...) -> (..., n, 1, ...) -> broadcast (..., n, repeats, ...) -> (..., n * repeats, ...)
  auto shape = arr.shape();
  shape.insert(shape.begin() + ax + 1, repeats);
  auto out = broadcast_to(expand_dims(arr, ax + 1, s), shape, s);
  shape.erase(shape.begin() + ax + 1);
  shape[ax] = checked_dim(int64_t{shape[ax]} * repeats, "repeat");
  return reshape(out, std::move(shape), s);
}

array repeat(const array& arr, int repeats, StreamOrDevice s) { return repeat(flatten(arr, s), repeats, 0, s); }

array tile(const array& arr, std::vector<int> reps, StreamOrDevice s) {
  for (int r : reps) {
    if (r < 0) {
      throw_invalid("[tile] Repetitions must be non-negative; got " + list_string(reps) + ".");
    }
  }
  auto shape = arr.shape();
  if (reps.size() < shape.size()) {
    reps.insert(reps.begin(), shape.size() - reps.size(), 1);
  }
  if (shape.size() < reps.size()) {
    shape.insert(shape.begin(), reps.size() - shape.size(), 1);
  }
  // Each axis n with r repeats becomes (r, n), broadcast, then merged into r * n.
  Shape expanded;
  Shape broadcast;
  Shape final_shape;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (reps[i] != 1) {
      expanded.push_back(1);
      broadcast.push_back(reps[i]);
    }
    expanded.push_back(shape[i]);
    broadcast.push_back(shape[i]);
    final_shape.push_back(checked_dim(int64_t{reps[i]} * shape[i], "tile"));
  }
  auto out = broadcast_to(reshape(arr, std::move(expanded), s), broadcast, s);
  return reshape(out, std::move(final_shape), s);
}

// ---------------------------------------------------------------- pad

array pad(const array& a, const std::vector<int>& axes, const Shape& low_pad_size, const Shape& high_pad_size,
          const array& pad_value, const std::string& mode, StreamOrDevice s) {
  if (axes.size() != low_pad_size.size() || axes.size() != high_pad_size.size()) {
    throw_invalid("[pad] Invalid number of padding sizes passed to pad with axes of size " +
                  std::to_string(axes.size()) + "; got " + std::to_string(low_pad_size.size()) + " low and " +
                  std::to_string(high_pad_size.size()) + " high sizes for an array of shape " +
                  shape_string(a.shape()) + ".");
  }
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "symmetric") {
    throw_invalid("[pad] Invalid padding mode (" + mode +
                  ") passed to pad; expected \"constant\", \"edge\", \"reflect\" or \"symmetric\".");
  }
  if (pad_value.size() != 1) {
    throw_invalid("[pad] The padding value must be a single value; got shape " + shape_string(pad_value.shape()) + ".");
  }
  std::vector<int> normalized;
  std::vector<bool> seen(a.ndim(), false);
  bool any_padding = false;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int ax = normalize_axis(axes[i], a.ndim(), "pad");
    if (seen[ax]) {
      throw_invalid("[pad] Repeated axis " + std::to_string(axes[i]) + " in " + list_string(axes) + ".");
    }
    seen[ax] = true;
    for (auto [size, side] : {std::pair{low_pad_size[i], "low"}, std::pair{high_pad_size[i], "high"}}) {
      if (size < 0) {
        throw_invalid(std::string("[pad] Invalid ") + side + " padding size (" + std::to_string(size) +
                      ") passed to pad for axis " + std::to_string(axes[i]) + ". Padding sizes must be non-negative.");
      }
    }
    normalized.push_back(ax);
    checked_dim(int64_t{a.shape(ax)} + low_pad_size[i] + high_pad_size[i], "pad");
    any_padding = any_padding || low_pad_size[i] > 0 || high_pad_size[i] > 0;
  }
  if (!any_padding) {
    return a;
  }
  if (mode == "edge") {
    auto out = a;
    for (size_t i = 0; i < normalized.size(); ++i) {
      if (low_pad_size[i] > 0 || high_pad_size[i] > 0) {
        out = edge_pad_axis(out, normalized[i], low_pad_size[i], high_pad_size[i], s);
      }
    }
    return out;
  }
  if (mode == "reflect" || mode == "symmetric") {
    auto out = a;
    for (size_t i = 0; i < normalized.size(); ++i) {
      if (low_pad_size[i] > 0 || high_pad_size[i] > 0) {
        out = mirror_pad_axis(out, normalized[i], low_pad_size[i], high_pad_size[i], mode == "symmetric", s);
      }
    }
    return out;
  }
  auto value = reshape(astype(pad_value, a.dtype(), s), {}, s);
  return detail::make_node(Pad{std::move(normalized), low_pad_size, high_pad_size}, {a, value}, to_stream(s));
}

array pad(const array& a, const std::vector<std::pair<int, int>>& pad_width, const array& pad_value,
          const std::string& mode, StreamOrDevice s) {
  Shape low;
  Shape high;
  for (const auto& [lo, hi] : pad_width) {
    low.push_back(lo);
    high.push_back(hi);
  }
  return pad(a, all_axes(a.ndim()), low, high, pad_value, mode, s);
}

array pad(const array& a, const std::pair<int, int>& pad_width, const array& pad_value, const std::string& mode,
          StreamOrDevice s) {
  return pad(a, std::vector<std::pair<int, int>>(a.ndim(), pad_width), pad_value, mode, s);
}

array pad(const array& a, int pad_width, const array& pad_value, const std::string& mode, StreamOrDevice s) {
  return pad(a, std::vector<std::pair<int, int>>(a.ndim(), {pad_width, pad_width}), pad_value, mode, s);
}

// ---------------------------------------------------------------- roll and flip

array roll(const array& a, const Shape& shift, const std::vector<int>& axes, StreamOrDevice s) {
  // numpy broadcasts the shifts against the axes (a single one pairs with each of
  // the other list, even an empty one); shifts of a repeated axis add up.
  size_t count = shift.size();
  if (shift.size() == 1) {
    count = axes.size();
  } else if (axes.size() != 1 && axes.size() != shift.size()) {
    throw_invalid("[roll] The shifts " + list_string(shift) + " and the axes " + list_string(axes) +
                  " cannot be broadcast together.");
  }
  std::vector<int64_t> total(a.ndim(), 0);
  for (size_t i = 0; i < count; ++i) {
    const int ax = normalize_axis(axes[axes.size() == 1 ? 0 : i], a.ndim(), "roll");
    total[ax] += shift[shift.size() == 1 ? 0 : i];
  }
  auto out = a;
  for (int ax = 0; ax < a.ndim(); ++ax) {
    const int64_t n = a.shape(ax);
    if (n == 0) {
      continue;
    }
    const auto r = static_cast<int>(((total[ax] % n) + n) % n);
    if (r == 0) {
      continue;
    }
    // The last r elements move to the front.
    auto head = slice_axis(out, ax, 0, static_cast<int>(n) - r, s);
    auto tail = slice_axis(out, ax, static_cast<int>(n) - r, static_cast<int>(n), s);
    out = concatenate({tail, head}, ax, s);
  }
  return out;
}

array roll(const array& a, const Shape& shift, int axis, StreamOrDevice s) {
  return roll(a, shift, std::vector<int>{axis}, s);
}
array roll(const array& a, int shift, const std::vector<int>& axes, StreamOrDevice s) {
  return roll(a, Shape{shift}, axes, s);
}
array roll(const array& a, int shift, int axis, StreamOrDevice s) {
  return roll(a, Shape{shift}, std::vector<int>{axis}, s);
}
array roll(const array& a, const Shape& shift, StreamOrDevice s) {
  // Without axes numpy rolls the flattened array.
  return reshape(roll(flatten(a, s), shift, std::vector<int>{0}, s), a.shape(), s);
}
array roll(const array& a, int shift, StreamOrDevice s) { return roll(a, Shape{shift}, s); }

array flip(const array& a, const std::vector<int>& axes, StreamOrDevice s) {
  auto sorted = normalize_axes(axes, a.ndim(), "flip");
  Shape start(a.ndim(), 0);
  Shape stop = a.shape();
  Shape strides(a.ndim(), 1);
  for (int ax : sorted) {
    // a[::-1]: from the last element down past the first.
    start[ax] = -1;
    stop[ax] = -a.shape(ax) - 1;
    strides[ax] = -1;
  }
  return slice(a, std::move(start), std::move(stop), std::move(strides), s);
}

array flip(const array& a, int axis, StreamOrDevice s) { return flip(a, std::vector<int>{axis}, s); }
array flip(const array& a, StreamOrDevice s) { return flip(a, all_axes(a.ndim()), s); }

// ---------------------------------------------------------------- diagonals

array diag(const array& a, int k, StreamOrDevice s) {
  if (a.ndim() == 1) {
    // The diagonal element of row i is a[i] when k >= 0, that of column j is a[j]
    // when k < 0: a, padded to n, broadcast along the other axis and masked by eye.
    const int n = checked_dim(int64_t{a.shape(0)} + std::abs(int64_t{k}), "diag");
    auto values = pad(a, std::vector<int>{0}, Shape{0}, Shape{std::abs(k)}, array(0, a.dtype()), "constant", s);
    values = reshape(values, k >= 0 ? Shape{n, 1} : Shape{1, n}, s);
    return where(eye(n, n, k, bool_, s), values, array(0, a.dtype()), s);
  }
  if (a.ndim() == 2) {
    return diagonal(a, k, 0, 1, s);
  }
  throw_invalid("[diag] array must be 1-D or 2-D; got shape " + shape_string(a.shape()) + ".");
}

array trace(const array& a, int offset, int axis1, int axis2, Dtype dtype, StreamOrDevice s) {
  if (a.ndim() < 2) {
    throw_invalid("[trace] Array must have at least two dimensions; got shape " + shape_string(a.shape()) + ".");
  }
  // Sum in the requested dtype, and keep it (sum alone would widen small integers).
  auto d = astype(diagonal(a, offset, axis1, axis2, s), dtype, s);
  return astype(sum(d, -1, false, s), dtype, s);
}

array trace(const array& a, int offset, int axis1, int axis2, StreamOrDevice s) {
  if (a.ndim() < 2) {
    throw_invalid("[trace] Array must have at least two dimensions; got shape " + shape_string(a.shape()) + ".");
  }
  // The dtype follows sum's rules (small integers and bool give int32).
  return sum(diagonal(a, offset, axis1, axis2, s), -1, false, s);
}

array trace(const array& a, StreamOrDevice s) { return trace(a, 0, 0, 1, s); }

// ---------------------------------------------------------------- graph utilities

array number_of_elements(const array& a, std::vector<int> axes, bool inverted, Dtype dtype, StreamOrDevice) {
  double count = 1.0;
  for (int axis : axes) {
    count *= a.shape(normalize_axis(axis, a.ndim(), "number_of_elements"));
  }
  return array(inverted ? 1.0 / count : count, dtype);
}

std::vector<array> depends(const std::vector<array>& inputs, const std::vector<array>& dependencies) {
  if (inputs.empty()) {
    return {};
  }
  // Only the first inputs are outputs, so the shapes and dtypes are given here rather than by the rules (which
  // give one per input).
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (const auto& in : inputs) {
    shapes.push_back(in.shape());
    dtypes.push_back(in.dtype());
  }
  std::vector<array> all = inputs;
  all.insert(all.end(), dependencies.begin(), dependencies.end());
  return array::make_arrays(std::move(shapes), dtypes, Depends{}, std::move(all), inputs.front().stream());
}

}  // namespace nuvec
