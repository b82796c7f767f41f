// Scans (one Scan primitive along one axis) and diff (a composition of slices).
//
// Dtype rules (MLX's, CONFORMANCE.md): cumsum and cumprod keep the input dtype except bool, which gives int32
// (integer scans wrap on overflow, where NumPy would widen small integers to int64); cummax and cummin keep the
// dtype; logcumsumexp gives at least float32. float16/bfloat16 accumulate in float32 inside the kernel.
// The op hands the kernel an input already converted to the output dtype.

#include <string>

#include "nuvec/core/ops.h"
#include "nuvec/core/output_shapes.h"

namespace nuvec {

namespace {

array scan(const array& a, ScanType type, Dtype out_dtype, int axis, bool reverse, bool inclusive, const char* op,
           StreamOrDevice s) {
  int ax = normalize_axis(axis, a.ndim(), op);
  return detail::make_node(Scan{type, ax, reverse, inclusive}, {astype(a, out_dtype, s)}, to_stream(s));
}

Dtype sum_dtype(Dtype t) { return t == bool_ ? int32 : t; }

}  // namespace

array cumsum(const array& a, int axis, bool reverse, bool inclusive, std::optional<Dtype> dtype, StreamOrDevice s) {
  auto x = dtype ? astype(a, *dtype, s) : a;
  return scan(x, ScanType::sum, sum_dtype(x.dtype()), axis, reverse, inclusive, "cumsum", s);
}
array cumsum(const array& a, bool reverse, bool inclusive, std::optional<Dtype> dtype, StreamOrDevice s) {
  return cumsum(flatten(a, s), 0, reverse, inclusive, dtype, s);
}

array cumprod(const array& a, int axis, bool reverse, bool inclusive, std::optional<Dtype> dtype, StreamOrDevice s) {
  auto x = dtype ? astype(a, *dtype, s) : a;
  return scan(x, ScanType::prod, sum_dtype(x.dtype()), axis, reverse, inclusive, "cumprod", s);
}
array cumprod(const array& a, bool reverse, bool inclusive, std::optional<Dtype> dtype, StreamOrDevice s) {
  return cumprod(flatten(a, s), 0, reverse, inclusive, dtype, s);
}

array cummax(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {
  return scan(a, ScanType::max, a.dtype(), axis, reverse, inclusive, "cummax", s);
}
array cummax(const array& a, bool reverse, bool inclusive, StreamOrDevice s) {
  return cummax(flatten(a, s), 0, reverse, inclusive, s);
}

array cummin(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {
  return scan(a, ScanType::min, a.dtype(), axis, reverse, inclusive, "cummin", s);
}
array cummin(const array& a, bool reverse, bool inclusive, StreamOrDevice s) {
  return cummin(flatten(a, s), 0, reverse, inclusive, s);
}

array logcumsumexp(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {
  if (is_complex(a.dtype())) {
    throw_invalid("[logcumsumexp] Not supported for complex64 inputs.");
  }
  const Dtype dtype = is_inexact(a.dtype()) ? a.dtype() : float32;
  return scan(a, ScanType::logaddexp, dtype, axis, reverse, inclusive, "logcumsumexp", s);
}
array logcumsumexp(const array& a, bool reverse, bool inclusive, StreamOrDevice s) {
  return logcumsumexp(flatten(a, s), 0, reverse, inclusive, s);
}

array diff(const array& a, int n, int axis, StreamOrDevice s) {
  if (a.ndim() == 0) {
    throw_invalid("[diff] Expected an array with at least one dimension; got a scalar.");
  }
  if (n < 0) {
    throw_invalid("[diff] Expected a non-negative order n; got n=" + std::to_string(n) + ".");
  }
  int ax = normalize_axis(axis, a.ndim(), "diff");
  array out = a;
  for (int i = 0; i < n && out.shape(ax) > 0; ++i) {
    Shape start(out.ndim(), 0);
    Shape stop = out.shape();
    start[ax] = 1;
    auto later = slice(out, start, stop, s);
    start[ax] = 0;
    stop[ax] -= 1;
    auto earlier = slice(out, start, stop, s);
    out = out.dtype() == bool_ ? not_equal(later, earlier, s) : subtract(later, earlier, s);
  }
  return out;
}

}  // namespace nuvec
