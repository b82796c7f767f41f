// Sorting and selection: sort, argsort, partition, argpartition (one primitive each, along one axis), topk and
// median (compositions over partition), searchsorted (its own primitive; NumPy's, not in MLX).
//
// Choices where MLX and NumPy differ or say nothing:
// - NaNs sort last, as in NumPy; argsort and argpartition return uint32 indices, as MLX's;
// - topk returns the k largest values in partition's order (unsorted), as MLX does; k may be 0 (an empty result);
// - searchsorted returns int64 (NumPy's index type) and accepts a sorted `a` with NaNs at the end, as NumPy does;
// - median of an empty reduction is NaN (NumPy's value, without its warning); complex64 is rejected.

#include <algorithm>
#include <limits>
#include <numeric>

#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/output_shapes.h"

namespace nuvec {

using nuvec::detail::make_node;
using nuvec::detail::op_prefix;
using nuvec::detail::slice_axis;

namespace {

/// The normalized kth of a partition along axis `ax`.
int check_kth(const array& a, int kth, int ax, const char* op) {
  const int n = a.shape(ax);
  if (kth < -n || kth >= n) {
    throw_invalid(op_prefix(op) + "Expected kth in [" + std::to_string(-n) + ", " + std::to_string(n) +
                  ") along axis " + std::to_string(ax) + "; got kth=" + std::to_string(kth) +
                  " for an array of shape " + shape_string(a.shape()) + ".");
  }
  return kth < 0 ? kth + n : kth;
}

/// The median of each row (the last axis, not empty) of `rows` in `compute`, kept with size 1.
array median_of_rows(const array& rows, Dtype compute, StreamOrDevice s) {
  const int last = rows.ndim() - 1;
  const int n = rows.shape(last);
  const int mid = n / 2;
  auto arranged = partition(rows, mid, last, s);
  auto value = astype(slice_axis(arranged, last, mid, mid + 1, s), compute, s);
  if (n % 2 == 0) {
    // The lower middle value is the largest of those partition put before `mid`.
    auto lower = astype(max(slice_axis(arranged, last, 0, mid, s), last, true, s), compute, s);
    value = multiply(add(lower, value, s), array(0.5, compute), s);
  }
  if (is_inexact(rows.dtype())) {
    value = where(any(isnan(rows, s), last, true, s), array(std::numeric_limits<double>::quiet_NaN(), compute), value,
                  s);
  }
  return value;
}

}  // namespace

// ---------------------------------------------------------------- sort and argsort

array sort(const array& a, int axis, StreamOrDevice s) {
  int ax = normalize_axis(axis, a.ndim(), "sort");
  return make_node(Sort{ax}, {a}, to_stream(s));
}
array sort(const array& a, StreamOrDevice s) { return sort(flatten(a, s), 0, s); }

array argsort(const array& a, int axis, StreamOrDevice s) {
  int ax = normalize_axis(axis, a.ndim(), "argsort");
  return make_node(ArgSort{ax}, {a}, to_stream(s));
}
array argsort(const array& a, StreamOrDevice s) { return argsort(flatten(a, s), 0, s); }

// ---------------------------------------------------------------- partition, argpartition and topk

array partition(const array& a, int kth, int axis, StreamOrDevice s) {
  int ax = normalize_axis(axis, a.ndim(), "partition");
  int k = check_kth(a, kth, ax, "partition");
  return make_node(Partition{k, ax}, {a}, to_stream(s));
}
array partition(const array& a, int kth, StreamOrDevice s) { return partition(flatten(a, s), kth, 0, s); }

array argpartition(const array& a, int kth, int axis, StreamOrDevice s) {
  int ax = normalize_axis(axis, a.ndim(), "argpartition");
  int k = check_kth(a, kth, ax, "argpartition");
  return make_node(ArgPartition{k, ax}, {a}, to_stream(s));
}
array argpartition(const array& a, int kth, StreamOrDevice s) { return argpartition(flatten(a, s), kth, 0, s); }

array topk(const array& a, int k, int axis, StreamOrDevice s) {
  int ax = normalize_axis(axis, a.ndim(), "topk");
  const int n = a.shape(ax);
  if (k < 0 || k > n) {
    throw_invalid(op_prefix("topk") + "Expected k in [0, " + std::to_string(n) + "] along axis " + std::to_string(ax) +
                  "; got k=" + std::to_string(k) + " for an array of shape " + shape_string(a.shape()) + ".");
  }
  if (k == 0) {
    return slice_axis(a, ax, n, n, s);
  }
  return slice_axis(partition(a, n - k, ax, s), ax, n - k, n, s);
}
array topk(const array& a, int k, StreamOrDevice s) { return topk(flatten(a, s), k, 0, s); }

// ---------------------------------------------------------------- searchsorted

array searchsorted(const array& a, const array& v, bool right, StreamOrDevice s) {
  if (a.ndim() != 1) {
    throw_invalid(op_prefix("searchsorted") + "Expected a sorted 1-d array to search; got an array of shape " +
                  shape_string(a.shape()) + ".");
  }
  const Dtype dtype = promote_types(a.dtype(), v.dtype());
  return make_node(SearchSorted{right}, {astype(a, dtype, s), astype(v, dtype, s)}, to_stream(s));
}

// ---------------------------------------------------------------- median

array median(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  if (is_complex(a.dtype())) {
    throw_invalid(op_prefix("median") + "Not supported for complex64 inputs.");
  }
  auto sorted_axes = normalize_axes(axes, a.ndim(), "median");
  const Dtype out_dtype = is_inexact(a.dtype()) ? a.dtype() : float32;
  const Dtype compute = out_dtype == float16 || out_dtype == bfloat16 ? float32 : out_dtype;
  // Move the reduced axes last and flatten them into one row per output.
  std::vector<int> perm;
  Shape kept_shape;  // the output with keepdims: reduced axes as size 1
  Shape rows_shape;
  for (int i = 0; i < a.ndim(); ++i) {
    const bool reduced = std::binary_search(sorted_axes.begin(), sorted_axes.end(), i);
    kept_shape.push_back(reduced ? 1 : a.shape(i));
    if (!reduced) {
      perm.push_back(i);
      rows_shape.push_back(a.shape(i));
    }
  }
  int n = 1;
  for (int axis : sorted_axes) {
    perm.push_back(axis);
    n *= a.shape(axis);
  }
  rows_shape.push_back(n);
  auto rows = reshape(transpose(a, perm, s), rows_shape, s);
  auto value = n == 0 ? full(kept_shape, array(std::numeric_limits<float>::quiet_NaN(), out_dtype), s)
                      : astype(median_of_rows(rows, compute, s), out_dtype, s);
  value = reshape(value, kept_shape, s);
  return keepdims ? value : squeeze(value, sorted_axes, s);
}

array median(const array& a, bool keepdims, StreamOrDevice s) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  return median(a, axes, keepdims, s);
}

array median(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return median(a, std::vector<int>{axis}, keepdims, s);
}

}  // namespace nuvec
