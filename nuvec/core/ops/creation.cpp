// Creation ops: ranges, filled arrays, diagonal and triangular masks, grids and
// window functions. Filled arrays are broadcast views of one scalar, so they
// cost no buffer per element.

#include <algorithm>
#include <climits>
#include <cmath>
#include <numbers>
#include <sstream>

#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/output_shapes.h"

namespace nuvec {

using nuvec::detail::make_node;
using nuvec::detail::op_prefix;

namespace {

std::string format_number(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

void check_shape(const Shape& shape, const char* op) {
  for (auto dim : shape) {
    if (dim < 0) {
      throw_invalid(op_prefix(op) + "Negative dimensions not allowed; got shape " + shape_string(shape) + ".");
    }
  }
}

/// An n x m matrix whose element (i, j) is w[n - 1 - i + j]: each row is a window
/// of `w` (length n + m - 1) one element further left than the row above. With
/// a one-hot or a step function as `w` this is eye or tri in O(n + m) memory: a
/// view with a negative row stride that later kernels read like any other.
array sliding_rows(const array& w, int n, int m, StreamOrDevice s) {
  return make_node(AsStrided{{n, m}, Strides{-1, 1}, static_cast<size_t>(n - 1)}, {w}, to_stream(s));
}

/// `count` ones followed by zeros up to `length`, built by one Pad kernel (row-contiguous).
array ones_then_zeros(int low, int count, int length, Dtype dtype, StreamOrDevice s) {
  return pad(ones({count}, dtype, s), {0}, {low}, {length - low - count}, array(0, dtype), "constant", s);
}

/// numpy's window argument: 1 - M, 3 - M, ..., M - 1 (float64).
array window_points(int M, StreamOrDevice s) { return arange(1.0 - M, static_cast<double>(M), 2.0, float64, s); }

/// A window sum_k coeffs[k] * cos(k * pi * n / (M - 1)), computed in float64 and rounded to float32 once.
array cosine_window(int M, std::initializer_list<double> coeffs, StreamOrDevice s) {
  if (M < 1) {
    return zeros({0}, float32, s);
  }
  if (M == 1) {
    return ones({1}, float32, s);
  }
  auto phase = multiply(window_points(M, s), array(std::numbers::pi / (M - 1), float64), s);
  array out = array(0.0, float64);
  int k = 0;
  for (double c : coeffs) {
    auto term =
        k == 0 ? array(c, float64)
               : multiply(array(c, float64), cos(multiply(phase, array(static_cast<double>(k), float64), s), s), s);
    out = add(out, term, s);
    ++k;
  }
  return astype(out, float32, s);
}

}  // namespace

// ---------------------------------------------------------------- ranges

array arange(double start, double stop, double step, Dtype dtype, StreamOrDevice s) {
  if (dtype == bool_) {
    throw_invalid("[arange] bool is not supported for arange; use an integer or floating dtype.");
  }
  if (std::isnan(start) || std::isnan(stop) || std::isnan(step) || std::isinf(start) || std::isinf(stop) ||
      step == 0.0) {
    throw_invalid("[arange] Cannot compute length. Got start " + format_number(start) + ", stop " +
                  format_number(stop) + " and step " + format_number(step) + ".");
  }
  double length = 0.0;
  if (std::isinf(step)) {
    // One element when the range is not empty; the step is never used then.
    length = (step > 0) == (start < stop) && start != stop ? 1.0 : 0.0;
    step = 1.0;
  } else {
    length = std::ceil((stop - start) / step);
  }
  if (length > static_cast<double>(INT32_MAX)) {
    throw_invalid("[arange] Maximum size exceeded: " + format_number(length) + " elements from start " +
                  format_number(start) + ", stop " + format_number(stop) + " and step " + format_number(step) + ".");
  }
  const int size = std::max(static_cast<int>(length), 0);
  return make_node(Arange{start, stop, step, size, dtype}, {}, to_stream(s));
}

array arange(double start, double stop, double step, StreamOrDevice s) { return arange(start, stop, step, float32, s); }
array arange(double start, double stop, Dtype dtype, StreamOrDevice s) { return arange(start, stop, 1.0, dtype, s); }
array arange(double start, double stop, StreamOrDevice s) { return arange(start, stop, 1.0, float32, s); }
array arange(double stop, Dtype dtype, StreamOrDevice s) { return arange(0.0, stop, 1.0, dtype, s); }
array arange(double stop, StreamOrDevice s) { return arange(0.0, stop, 1.0, float32, s); }
array arange(int start, int stop, int step, StreamOrDevice s) {
  return arange(static_cast<double>(start), static_cast<double>(stop), static_cast<double>(step), int32, s);
}
array arange(int start, int stop, StreamOrDevice s) { return arange(start, stop, 1, s); }
array arange(int stop, StreamOrDevice s) { return arange(0, stop, 1, s); }

array linspace(double start, double stop, int num, bool endpoint, Dtype dtype, StreamOrDevice s) {
  if (num < 0) {
    throw_invalid("[linspace] number of samples, " + std::to_string(num) + ", must be non-negative.");
  }
  if (num <= 1) {
    return astype(full({num}, array(start, float64), s), dtype, s);
  }
  // numpy's recipe: start + i * step in float64, the last value exactly stop (with endpoint),
  // then one rounding to the dtype (integers truncate).
  if (!endpoint) {
    double step = (stop - start) / num;
    return astype(make_node(Arange{start, stop, step, num, float64}, {}, to_stream(s)), dtype, s);
  }
  double step = (stop - start) / (num - 1);
  const array body = make_node(Arange{start, stop, step, num - 1, float64}, {}, to_stream(s));
  auto last = full({1}, array(stop, float64), s);
  return astype(concatenate({body, last}, 0, s), dtype, s);
}

// ---------------------------------------------------------------- filled arrays

array full(Shape shape, array vals, Dtype dtype, StreamOrDevice s) {
  check_shape(shape, "full");
  // A copy of the broadcast value: MLX's full owns a dense buffer, which later kernels read contiguously and may
  // donate, where a stride-0 view would take strided paths and could not be written in place.
  return copy(broadcast_to(astype(std::move(vals), dtype, s), shape, s), s);
}

array full(Shape shape, array vals, StreamOrDevice s) {
  auto dtype = vals.dtype();
  return full(std::move(shape), std::move(vals), dtype, s);
}

array full_like(const array& a, const array& vals, Dtype dtype, StreamOrDevice s) {
  return full(a.shape(), vals, dtype, s);
}
array full_like(const array& a, const array& vals, StreamOrDevice s) { return full(a.shape(), vals, a.dtype(), s); }

array zeros(const Shape& shape, Dtype dtype, StreamOrDevice s) { return full(shape, array(0, dtype), s); }
array zeros_like(const array& a, StreamOrDevice s) { return zeros(a.shape(), a.dtype(), s); }
array zeros_like(const array& a, Dtype dtype, StreamOrDevice s) { return zeros(a.shape(), dtype, s); }
array ones(const Shape& shape, Dtype dtype, StreamOrDevice s) { return full(shape, array(1, dtype), s); }
array ones_like(const array& a, StreamOrDevice s) { return ones(a.shape(), a.dtype(), s); }
array ones_like(const array& a, Dtype dtype, StreamOrDevice s) { return ones(a.shape(), dtype, s); }

// ---------------------------------------------------------------- diagonal and triangular

array eye(int n, int m, int k, Dtype dtype, StreamOrDevice s) {
  if (n < 0 || m < 0) {
    throw_invalid("[eye] N and M must be non-negative; got N = " + std::to_string(n) + " and M = " + std::to_string(m) +
                  ".");
  }
  // Element (i, j) is w[n - 1 - i + j]: the one sits where j - i == k.
  int64_t one = static_cast<int64_t>(n) - 1 + k;
  int64_t length = static_cast<int64_t>(n) + m - 1;
  if (n == 0 || m == 0 || one < 0 || one >= length) {
    return zeros({n, m}, dtype, s);
  }
  auto w = ones_then_zeros(static_cast<int>(one), 1, static_cast<int>(length), dtype, s);
  return sliding_rows(w, n, m, s);
}

array identity(int n, Dtype dtype, StreamOrDevice s) {
  if (n < 0) {
    throw_invalid("[identity] N must be non-negative; got " + std::to_string(n) + ".");
  }
  return eye(n, n, 0, dtype, s);
}

array tri(int n, int m, int k, Dtype type, StreamOrDevice s) {
  if (n < 0 || m < 0) {
    throw_invalid("[tri] N and M must be non-negative; got N = " + std::to_string(n) + " and M = " + std::to_string(m) +
                  ".");
  }
  // Element (i, j) is w[n - 1 - i + j]: one wherever j - i <= k.
  int64_t length = static_cast<int64_t>(n) + m - 1;
  int64_t count = std::clamp<int64_t>(static_cast<int64_t>(n) + k, 0, std::max<int64_t>(length, 0));
  if (n == 0 || m == 0 || count == 0) {
    return zeros({n, m}, type, s);
  }
  if (count == length) {
    return ones({n, m}, type, s);
  }
  auto w = ones_then_zeros(0, static_cast<int>(count), static_cast<int>(length), type, s);
  return sliding_rows(w, n, m, s);
}

array tril(array x, int k, StreamOrDevice s) {
  if (x.ndim() < 2) {
    throw_invalid("[tril] array must be at least 2-D; got shape " + shape_string(x.shape()) + ".");
  }
  auto mask = tri(x.shape(-2), x.shape(-1), k, bool_, s);
  return where(mask, x, array(0, x.dtype()), s);
}

array triu(array x, int k, StreamOrDevice s) {
  if (x.ndim() < 2) {
    throw_invalid("[triu] array must be at least 2-D; got shape " + shape_string(x.shape()) + ".");
  }
  auto mask = tri(x.shape(-2), x.shape(-1), k - 1, bool_, s);
  return where(mask, array(0, x.dtype()), x, s);
}

// ---------------------------------------------------------------- grids

std::vector<array> meshgrid(const std::vector<array>& arrays, bool sparse, const std::string& indexing,
                            StreamOrDevice s) {
  if (indexing != "xy" && indexing != "ij") {
    throw_invalid("[meshgrid] Invalid indexing value '" + indexing + "'. Valid values are 'xy' and 'ij'.");
  }
  const int ndim = static_cast<int>(arrays.size());
  // Input i (flattened) runs along output axis i; "xy" swaps the first two.
  std::vector<array> outputs;
  outputs.reserve(arrays.size());
  for (int i = 0; i < ndim; ++i) {
    int axis = i;
    if (indexing == "xy" && ndim > 1 && i < 2) {
      axis = 1 - i;
    }
    Shape shape(ndim, 1);
    shape[axis] = static_cast<int32_t>(arrays[i].size());
    outputs.push_back(reshape(arrays[i], std::move(shape), s));
  }
  if (!sparse) {
    outputs = broadcast_arrays(outputs, s);
  }
  return outputs;
}

// ---------------------------------------------------------------- windows

array bartlett(int M, StreamOrDevice s) {
  if (M < 1) {
    return zeros({0}, float32, s);
  }
  if (M == 1) {
    return ones({1}, float32, s);
  }
  // 1 - |n| / (M - 1), numpy's two branches in one formula.
  auto ramp = divide(abs(window_points(M, s), s), array(static_cast<double>(M - 1), float64), s);
  return astype(subtract(array(1.0, float64), ramp, s), float32, s);
}

array blackman(int M, StreamOrDevice s) { return cosine_window(M, {0.42, 0.5, 0.08}, s); }
array hamming(int M, StreamOrDevice s) { return cosine_window(M, {0.54, 0.46}, s); }
array hanning(int M, StreamOrDevice s) { return cosine_window(M, {0.5, 0.5}, s); }

}  // namespace nuvec
