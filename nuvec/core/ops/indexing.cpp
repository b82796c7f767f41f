// Indexing: take, take_along_axis, put_along_axis, gather, the scatters, masked_scatter, slice_update and its
// reducing forms, and the dynamic slices. take and the *_along_axis ops are compositions over Gather, GatherAxis,
// Scatter and ScatterAxis.
//
// Choices where MLX and NumPy differ or say nothing (see docs/architecture.md):
// - indices may have any integer dtype (signed or unsigned); floats and bool are rejected. Index arrays of one op
//   are broadcast together but keep their own dtypes;
// - a negative index counts from the end once (-1 is the last). An index still out of range never reads or writes
//   out of bounds: gathers (take, take_along_axis, gather) clamp the start so the slice fits, scatters drop the
//   whole update slice whose start does not fit (JAX's rule);
// - scatter with duplicate indices keeps the last update in row-major order of the indices; the reducing scatters
//   combine all of them. Integer sums and products wrap;
// - dynamic slice starts are clamped so the slice fits (JAX's dynamic_slice); axes not listed start at 0;
// - take with an integer index checks the index (NumPy's IndexError) instead of clamping it;
// - masked_scatter writes the source elements in order at the true positions of the mask; positions past the end
//   of the source keep their values.

#include <algorithm>
#include <numeric>
#include <utility>

#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/output_shapes.h"

namespace nuvec {

using nuvec::detail::list_string;
using nuvec::detail::make_node;
using nuvec::detail::op_prefix;

namespace {

void check_indices(const array& indices, const char* op, const char* what = "Indices") {
  if (!is_integer(indices.dtype())) {
    throw_invalid(op_prefix(op) + what + " must have an integer dtype; got " +
                  std::string(dtype_name(indices.dtype())) + ".");
  }
}

/// Normalizes `axes` in their order (each pairs with an index array), rejecting repeats.
std::vector<int> checked_axes(const std::vector<int>& axes, int ndim, const char* op) {
  std::vector<int> out;
  std::vector<bool> seen(ndim, false);
  for (int axis : axes) {
    int ax = normalize_axis(axis, ndim, op);
    if (seen[ax]) {
      throw_invalid(op_prefix(op) + "Repeated axis " + std::to_string(axis) + " in axes " + list_string(axes) + ".");
    }
    seen[ax] = true;
    out.push_back(ax);
  }
  return out;
}

/// Broadcasts the index arrays together; returns their common shape.
Shape broadcast_indices(std::vector<array>& indices, const char* op, StreamOrDevice s) {
  Shape shape;
  for (const auto& idx : indices) {
    check_indices(idx, op);
    Shape next = shape;
    const bool ok = [&] {
      try {
        next = broadcast_shapes(shape, idx.shape());
        return true;
      } catch (const error&) {
        return false;
      }
    }();
    if (!ok) {
      throw_invalid(op_prefix(op) + "Index arrays of shapes " + shape_string(shape) + " and " +
                    shape_string(idx.shape()) + " cannot be broadcast together.");
    }
    shape = std::move(next);
  }
  for (auto& idx : indices) {
    idx = broadcast_to(idx, shape, s);
  }
  return shape;
}

/// Whether `from` broadcasts to exactly `to` (NumPy's rule, one way).
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) {
    return false;
  }
  const size_t diff = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != 1 && from[i] != to[diff + i]) {
      return false;
    }
  }
  return true;
}

array scatter_impl(const array& a, std::vector<array> indices, const array& updates, const std::vector<int>& axes,
                   ScatterType type, const char* op, StreamOrDevice s) {
  if (indices.size() != axes.size()) {
    throw_invalid(op_prefix(op) + "Got " + std::to_string(indices.size()) + " index arrays for " +
                  std::to_string(axes.size()) + " axes " + list_string(axes) + "; each axis needs one index array.");
  }
  auto ax = checked_axes(axes, a.ndim(), op);
  const Shape index_shape = broadcast_indices(indices, op, s);
  const auto index_ndim = static_cast<int>(index_shape.size());
  if (updates.ndim() != a.ndim() + index_ndim) {
    throw_invalid(op_prefix(op) + "Updates of shape " + shape_string(updates.shape()) + " must have " +
                  std::to_string(a.ndim() + index_ndim) + " dimensions: the indices' " + std::to_string(index_ndim) +
                  " then the array's " + std::to_string(a.ndim()) + ".");
  }
  for (int i = 0; i < index_ndim; ++i) {
    if (updates.shape(i) != index_shape[i]) {
      throw_invalid(op_prefix(op) + "Updates of shape " + shape_string(updates.shape()) +
                    " do not start with the broadcast index shape " + shape_string(index_shape) + ".");
    }
  }
  for (int i = 0; i < a.ndim(); ++i) {
    if (updates.shape(index_ndim + i) > a.shape(i)) {
      throw_invalid(op_prefix(op) + "Updates of shape " + shape_string(updates.shape()) +
                    " are too large for array with shape " + shape_string(a.shape()) + ".");
    }
  }
  std::vector<array> inputs{a};
  inputs.insert(inputs.end(), indices.begin(), indices.end());
  inputs.push_back(astype(updates, a.dtype(), s));
  return make_node(Scatter{type, std::move(ax)}, std::move(inputs), to_stream(s));
}

/// put_along_axis and scatter_add_axis.
array scatter_axis(const array& a, const array& indices, const array& values, int axis, ScatterType type,
                   const char* op, StreamOrDevice s) {
  int ax = normalize_axis(axis, a.ndim(), op);
  check_indices(indices, op);
  if (indices.ndim() != a.ndim()) {
    throw_invalid(op_prefix(op) + "Indices of shape " + shape_string(indices.shape()) +
                  " must have as many dimensions as " + "the array of shape " + shape_string(a.shape()) + ".");
  }
  Shape shape = a.shape();
  shape[ax] = indices.shape(ax);
  for (int i = 0; i < a.ndim(); ++i) {
    if (i != ax && indices.shape(i) != 1 && indices.shape(i) != a.shape(i)) {
      throw_invalid(op_prefix(op) + "Indices of shape " + shape_string(indices.shape()) +
                    " cannot be broadcast against the array of shape " + shape_string(a.shape()) + " off axis " +
                    std::to_string(ax) + ".");
    }
  }
  if (!broadcasts_to(values.shape(), shape)) {
    throw_invalid(op_prefix(op) + "Values of shape " + shape_string(values.shape()) +
                  " cannot be broadcast to the indices' shape " + shape_string(shape) + ".");
  }
  auto idx = broadcast_to(indices, shape, s);
  auto vals = broadcast_to(astype(values, a.dtype(), s), shape, s);
  return make_node(ScatterAxis{type, ax}, {a, idx, vals}, to_stream(s));
}

/// NumPy's slice bounds, as slice() normalizes them: start and strides in place; returns the slice's shape.
Shape normalize_slice(const Shape& shape, Shape& start, const Shape& stop, const Shape& strides, const char* op) {
  if (start.size() != shape.size() || stop.size() != shape.size() || strides.size() != shape.size()) {
    throw_invalid(op_prefix(op) + "Invalid number of indices or strides for array with " +
                  std::to_string(shape.size()) + " dimensions; got " + std::to_string(start.size()) + " start, " +
                  std::to_string(stop.size()) + " stop and " + std::to_string(strides.size()) + " strides.");
  }
  Shape out(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    const int32_t n = shape[i];
    const int32_t step = strides[i];
    if (step == 0) {
      throw_invalid(op_prefix(op) + "Slice step cannot be zero (axis " + std::to_string(i) + ").");
    }
    auto clip = [&](int32_t v) {
      v = v < 0 ? v + n : v;
      return step > 0 ? std::clamp(v, 0, n) : std::clamp(v, -1, n - 1);
    };
    const int32_t b = clip(start[i]);
    const int32_t e = clip(stop[i]);
    const int32_t count = step > 0 ? (e > b ? (e - b + step - 1) / step : 0) : (b > e ? (b - e - step - 1) / -step : 0);
    start[i] = count > 0 ? b : 0;
    out[i] = count;
  }
  return out;
}

array slice_update_impl(const array& src, const array& update, Shape start, const Shape& stop, Shape strides,
                        ScatterType type, const char* op, StreamOrDevice s) {
  const Shape shape = normalize_slice(src.shape(), start, stop, strides, op);
  if (!broadcasts_to(update.shape(), shape)) {
    throw_invalid(op_prefix(op) + "Update of shape " + shape_string(update.shape()) +
                  " cannot be broadcast to the slice's shape " + shape_string(shape) + ".");
  }
  auto upd = broadcast_to(astype(update, src.dtype(), s), shape, s);
  if (shape_size(shape) == 0) {
    return src;
  }
  bool whole = type == ScatterType::none && shape == src.shape();
  for (size_t i = 0; i < shape.size() && whole; ++i) {
    whole = start[i] == 0 && (strides[i] == 1 || shape[i] == 1);
  }
  if (whole) {
    return upd;
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    strides[i] = shape[i] == 1 ? 1 : strides[i];
  }
  return make_node(SliceUpdate{std::move(start), std::move(strides), type}, {src, upd}, to_stream(s));
}

/// Checks a dynamic start and its axes; returns the normalized axes and the start as a 1-d array.
std::pair<std::vector<int>, array> dynamic_start(const array& a, const array& start, const std::vector<int>& axes,
                                                 const char* op, StreamOrDevice s) {
  check_indices(start, op, "Start indices");
  if (start.ndim() > 1) {
    throw_invalid(op_prefix(op) + "Start indices must be a scalar or a 1-d array; got shape " +
                  shape_string(start.shape()) + ".");
  }
  if (start.size() != axes.size()) {
    throw_invalid(op_prefix(op) + "Got " + std::to_string(start.size()) + " start indices for " +
                  std::to_string(axes.size()) + " axes " + list_string(axes) + ".");
  }
  return {checked_axes(axes, a.ndim(), op), reshape(start, {static_cast<int32_t>(axes.size())}, s)};
}

}  // namespace

// ---------------------------------------------------------------- slices

array slice(const array& a, const array& start, std::vector<int> axes, Shape slice_size, StreamOrDevice s) {
  auto [ax, begin] = dynamic_start(a, start, axes, "slice", s);
  if (slice_size.size() != static_cast<size_t>(a.ndim())) {
    throw_invalid("[slice] Got slice_size " + shape_string(slice_size) + " for array of shape " +
                  shape_string(a.shape()) + "; it needs one size per dimension.");
  }
  for (int i = 0; i < a.ndim(); ++i) {
    if (slice_size[i] < 0 || slice_size[i] > a.shape(i)) {
      throw_invalid("[slice] Slice size " + shape_string(slice_size) + " does not fit array of shape " +
                    shape_string(a.shape()) + ".");
    }
  }
  return make_node(DynamicSlice{std::move(ax), std::move(slice_size)}, {a, begin}, to_stream(s));
}

array slice_update(const array& src, const array& update, Shape start, Shape stop, Shape strides, StreamOrDevice s) {
  return slice_update_impl(src, update, std::move(start), stop, std::move(strides), ScatterType::none, "slice_update",
                           s);
}
array slice_update(const array& src, const array& update, Shape start, Shape stop, StreamOrDevice s) {
  Shape strides(src.ndim(), 1);
  return slice_update(src, update, std::move(start), std::move(stop), std::move(strides), s);
}

array slice_update(const array& src, const array& update, const array& start, std::vector<int> axes, StreamOrDevice s) {
  auto [ax, begin] = dynamic_start(src, start, axes, "slice_update", s);
  if (update.ndim() > src.ndim()) {
    throw_invalid("[slice_update] Update of shape " + shape_string(update.shape()) +
                  " has more dimensions than the array of shape " + shape_string(src.shape()) + ".");
  }
  // Missing leading axes broadcast over the array, or have size 1 where a start places them.
  const auto missing = static_cast<size_t>(src.ndim() - update.ndim());
  Shape shape(src.shape().begin(), src.shape().begin() + static_cast<int64_t>(missing));
  shape.insert(shape.end(), update.shape().begin(), update.shape().end());
  for (int axis : ax) {
    if (static_cast<size_t>(axis) < missing) {
      shape[axis] = 1;
    }
  }
  for (int i = 0; i < src.ndim(); ++i) {
    if (shape[i] > src.shape(i)) {
      throw_invalid("[slice_update] Update of shape " + shape_string(update.shape()) + " does not fit array of shape " +
                    shape_string(src.shape()) + ".");
    }
  }
  auto upd = broadcast_to(astype(update, src.dtype(), s), shape, s);
  return make_node(DynamicSliceUpdate{std::move(ax)}, {src, upd, begin}, to_stream(s));
}

#define NUVEC_DEFINE_SLICE_UPDATE(name, type)                                                                   \
  array name(const array& src, const array& update, Shape start, Shape stop, Shape strides, StreamOrDevice s) { \
    return slice_update_impl(src, update, std::move(start), stop, std::move(strides), type, #name, s);          \
  }                                                                                                             \
  array name(const array& src, const array& update, Shape start, Shape stop, StreamOrDevice s) {                \
    Shape strides(src.ndim(), 1);                                                                               \
    return slice_update_impl(src, update, std::move(start), stop, std::move(strides), type, #name, s);          \
  }

NUVEC_DEFINE_SLICE_UPDATE(slice_update_add, ScatterType::sum)
NUVEC_DEFINE_SLICE_UPDATE(slice_update_prod, ScatterType::prod)
NUVEC_DEFINE_SLICE_UPDATE(slice_update_max, ScatterType::max)
NUVEC_DEFINE_SLICE_UPDATE(slice_update_min, ScatterType::min)

#undef NUVEC_DEFINE_SLICE_UPDATE

// ---------------------------------------------------------------- gather and take

array gather(const array& a, const std::vector<array>& indices, const std::vector<int>& axes, const Shape& slice_sizes,
             StreamOrDevice s) {
  if (indices.size() != axes.size()) {
    throw_invalid("[gather] Got " + std::to_string(indices.size()) + " index arrays for " +
                  std::to_string(axes.size()) + " axes " + list_string(axes) + "; each axis needs one index array.");
  }
  auto ax = checked_axes(axes, a.ndim(), "gather");
  if (slice_sizes.size() != static_cast<size_t>(a.ndim())) {
    throw_invalid("[gather] Got slice_sizes " + shape_string(slice_sizes) + " for array of shape " +
                  shape_string(a.shape()) + "; it needs one size per dimension.");
  }
  for (int i = 0; i < a.ndim(); ++i) {
    if (slice_sizes[i] < 0 || slice_sizes[i] > a.shape(i)) {
      throw_invalid("[gather] Slice sizes must be in [0, a.shape(i)]; got " + shape_string(slice_sizes) +
                    " for array of shape " + shape_string(a.shape()) + ".");
    }
  }
  std::vector<array> inputs = indices;
  broadcast_indices(inputs, "gather", s);
  inputs.insert(inputs.begin(), a);
  return make_node(Gather{std::move(ax), slice_sizes}, std::move(inputs), to_stream(s));
}

array take(const array& a, const array& indices, int axis, StreamOrDevice s) {
  const int ax = normalize_axis(axis, a.ndim(), "take");
  check_indices(indices, "take");
  Shape shape(a.shape().begin(), a.shape().begin() + ax);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), a.shape().begin() + ax + 1, a.shape().end());
  if (a.shape(ax) == 0 && indices.size() > 0) {
    throw_invalid("[take] Cannot do a non-empty take from an empty axis; got axis " + std::to_string(axis) +
                  " of an array of shape " + shape_string(a.shape()) + ".");
  }
  if (a.shape(ax) == 0) {
    return zeros(shape, a.dtype(), s);
  }
  Shape slice_sizes = a.shape();
  slice_sizes[ax] = 1;
  // Gather gives (indices..., a's axes with size 1 at ax): drop that axis and move the index axes to ax.
  const int index_ndim = indices.ndim();
  auto out = squeeze(gather(a, std::vector<array>{indices}, std::vector<int>{ax}, slice_sizes, s), index_ndim + ax, s);
  std::vector<int> perm(out.ndim());
  std::iota(perm.begin(), perm.begin() + ax, index_ndim);
  std::iota(perm.begin() + ax, perm.begin() + ax + index_ndim, 0);
  std::iota(perm.begin() + ax + index_ndim, perm.end(), index_ndim + ax);
  return transpose(out, std::move(perm), s);
}

array take(const array& a, int index, int axis, StreamOrDevice s) {
  const int ax = normalize_axis(axis, a.ndim(), "take");
  const int n = a.shape(ax);
  if (index < -n || index >= n) {
    throw_invalid("[take] Index " + std::to_string(index) + " is out of bounds for axis " + std::to_string(axis) +
                  " with size " + std::to_string(n) + ".");
  }
  Shape start(a.ndim(), 0);
  Shape stop = a.shape();
  start[ax] = index < 0 ? index + n : index;
  stop[ax] = start[ax] + 1;
  return squeeze(slice(a, std::move(start), std::move(stop), s), ax, s);
}

array take(const array& a, const array& indices, StreamOrDevice s) { return take(flatten(a, s), indices, 0, s); }

array take(const array& a, int index, StreamOrDevice s) { return take(flatten(a, s), index, 0, s); }

array take_along_axis(const array& a, const array& indices, int axis, StreamOrDevice s) {
  const int ax = normalize_axis(axis, a.ndim(), "take_along_axis");
  check_indices(indices, "take_along_axis");
  if (indices.ndim() != a.ndim()) {
    throw_invalid("[take_along_axis] Indices of shape " + shape_string(indices.shape()) +
                  " must have as many dimensions as the array of shape " + shape_string(a.shape()) + ".");
  }
  Shape shape(a.ndim());
  for (int i = 0; i < a.ndim(); ++i) {
    const int32_t x = a.shape(i);
    const int32_t y = indices.shape(i);
    if (i != ax && x != y && x != 1 && y != 1) {
      throw_invalid("[take_along_axis] Indices of shape " + shape_string(indices.shape()) +
                    " cannot be broadcast against the array of shape " + shape_string(a.shape()) + " off axis " +
                    std::to_string(ax) + ".");
    }
    shape[i] = i == ax ? y : (x == 1 ? y : x);
  }
  if (a.shape(ax) == 0 && shape_size(shape) > 0) {
    throw_invalid("[take_along_axis] Cannot do a non-empty take from an empty axis; got axis " + std::to_string(axis) +
                  " of an array of shape " + shape_string(a.shape()) + ".");
  }
  if (shape_size(shape) == 0) {
    return zeros(shape, a.dtype(), s);
  }
  Shape source_shape = shape;
  source_shape[ax] = a.shape(ax);
  auto source = broadcast_to(a, source_shape, s);
  return make_node(GatherAxis{ax}, {source, broadcast_to(indices, shape, s)}, to_stream(s));
}

// ---------------------------------------------------------------- scatter

array put_along_axis(const array& a, const array& indices, const array& values, int axis, StreamOrDevice s) {
  return scatter_axis(a, indices, values, axis, ScatterType::none, "put_along_axis", s);
}

array scatter_add_axis(const array& a, const array& indices, const array& values, int axis, StreamOrDevice s) {
  return scatter_axis(a, indices, values, axis, ScatterType::sum, "scatter_add_axis", s);
}

array scatter(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes,
              StreamOrDevice s) {
  return scatter_impl(a, indices, updates, axes, ScatterType::none, "scatter", s);
}
array scatter_add(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes,
                  StreamOrDevice s) {
  return scatter_impl(a, indices, updates, axes, ScatterType::sum, "scatter_add", s);
}
array scatter_prod(const array& a, const std::vector<array>& indices, const array& updates,
                   const std::vector<int>& axes, StreamOrDevice s) {
  return scatter_impl(a, indices, updates, axes, ScatterType::prod, "scatter_prod", s);
}
array scatter_max(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes,
                  StreamOrDevice s) {
  return scatter_impl(a, indices, updates, axes, ScatterType::max, "scatter_max", s);
}
array scatter_min(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes,
                  StreamOrDevice s) {
  return scatter_impl(a, indices, updates, axes, ScatterType::min, "scatter_min", s);
}

array masked_scatter(const array& a, const array& mask, const array& src, StreamOrDevice s) {
  if (mask.dtype() != bool_) {
    throw_invalid("[masked_scatter] The mask must be bool; got " + std::string(dtype_name(mask.dtype())) + ".");
  }
  // As MLX, a mask of fewer dimensions covers the leading axes of `a` (numpy's a[mask] = src): it is extended with
  // trailing axes of size 1 before broadcasting, so a 1-d mask selects whole rows.
  if (mask.ndim() > a.ndim()) {
    throw_invalid("[masked_scatter] The mask of shape " + shape_string(mask.shape()) +
                  " cannot have more dimensions than the array of shape " + shape_string(a.shape()) + ".");
  }
  auto mask_shape = mask.shape();
  mask_shape.resize(a.ndim(), 1);
  if (!broadcasts_to(mask_shape, a.shape())) {
    throw_invalid("[masked_scatter] Mask of shape " + shape_string(mask.shape()) +
                  " does not match the leading axes of the array's shape " + shape_string(a.shape()) + ".");
  }
  auto m = broadcast_to(reshape(mask, mask_shape, s), a.shape(), s);
  // A source of at most 1 + (the axes the mask leaves out) dimensions is broadcast, as MLX's, to one slice of those
  // axes per mask element; a larger one is read flat, in order.
  const int unmasked = a.ndim() - mask.ndim();
  auto source = astype(src, a.dtype(), s);
  if (source.ndim() <= unmasked + 1) {
    Shape slices(a.shape().end() - unmasked, a.shape().end());
    slices.insert(slices.begin(), source.ndim() == unmasked + 1 ? source.shape(0) : static_cast<int32_t>(mask.size()));
    Shape padded = source.shape();
    padded.insert(padded.begin(), unmasked + 1 - source.ndim(), 1);
    if (broadcasts_to(padded, slices)) {
      source = broadcast_to(reshape(source, padded, s), slices, s);
    }
  }
  return make_node(MaskedScatter{}, {a, m, flatten(source, s)}, to_stream(s));
}

}  // namespace nuvec
