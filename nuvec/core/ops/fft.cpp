// Fourier transforms: argument checks, the dtype rules, n's crop or zero padding (slice and pad nodes around one
// FFT node), and the compositions (fftshift and ifftshift are rolls, fftfreq and rfftfreq scaled ranges).
//
// Choices where MLX and NumPy differ or say nothing (MLX's behaviour unless noted):
// - an empty `axes` list returns the input unchanged;
// - rfft* of complex64 transforms the real part (NumPy refuses complex input);
// - float64 inputs are transformed in double, the result rounded to complex64 (MLX rounds the input to complex64);
// - fftfreq and rfftfreq (NumPy's, not in MLX's C++ API) give float32 values computed in double.

#include "nuvec/core/fft.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/output_shapes.h"

namespace nuvec::fft {

using nuvec::detail::all_axes;
using nuvec::detail::list_string;
using nuvec::detail::op_prefix;

namespace {

void check_not_scalar(const array& a, const char* op) {
  if (a.ndim() < 1) {
    throw_invalid(op_prefix(op) + "Expected an array with at least one dimension; got shape " +
                  shape_string(a.shape()) + ".");
  }
}

/// Normalized axes, in the caller's order (for real transforms the last one is the real axis).
std::vector<int> checked_axes(const array& a, const std::vector<int>& axes, const char* op) {
  std::vector<int> out;
  out.reserve(axes.size());
  for (int axis : axes) {
    out.push_back(normalize_axis(axis, a.ndim(), op));
  }
  auto sorted = out;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw_invalid(op_prefix(op) + "Expected distinct axes; got " + list_string(axes) + ".");
  }
  return out;
}

/// The dtype the FFT node reads: float32, float64 or complex64.
Dtype input_dtype(Dtype t, bool real, bool inverse) {
  if (real) {
    return inverse ? complex64 : (t == float64 ? float64 : float32);
  }
  return t == float64 || t == complex64 ? t : float32;
}

/// Rescales a transform computed with the Backward norm (the kernel's) to `norm` over the lengths `n`.
array apply_norm(const array& out, const Shape& n, bool inverse, FFTNorm norm, StreamOrDevice s) {
  double points = 1.0;
  for (auto len : n) {
    points *= len;
  }
  double scale = 1.0;
  switch (norm) {
    case FFTNorm::Backward:
      return out;
    case FFTNorm::Ortho:
      scale = inverse ? std::sqrt(points) : 1.0 / std::sqrt(points);
      break;
    case FFTNorm::Forward:
      scale = inverse ? points : 1.0 / points;
      break;
  }
  return multiply(out, array(scale, float32), s);
}

array fft_impl(const array& a, const Shape& n, const std::vector<int>& axes, bool real, bool inverse, const char* op,
               FFTNorm norm, StreamOrDevice s) {
  check_not_scalar(a, op);
  if (n.size() != axes.size()) {
    throw_invalid(op_prefix(op) + "Expected one length per axis; got n = " + shape_string(n) + " and axes " +
                  list_string(axes) + ".");
  }
  if (axes.empty()) {
    return a;
  }
  const auto ax = checked_axes(a, axes, op);
  if (std::any_of(n.begin(), n.end(), [](int32_t len) { return len <= 0; })) {
    throw_invalid(op_prefix(op) + "Expected positive transform lengths; got n = " + shape_string(n) + " for axes " +
                  list_string(axes) + " of shape " + shape_string(a.shape()) + ".");
  }

  // The input's shape after cropping or padding; real inverse transforms read n/2 + 1 frequencies on the real axis.
  Shape in_shape = a.shape();
  for (size_t i = 0; i < ax.size(); ++i) {
    in_shape[ax[i]] = n[i];
  }
  if (real && inverse) {
    in_shape[ax.back()] = n.back() / 2 + 1;
  }
  Shape crop = a.shape();
  std::vector<int> pad_axes;
  Shape low;
  Shape high;
  for (int i = 0; i < a.ndim(); ++i) {
    if (in_shape[i] < crop[i]) {
      crop[i] = in_shape[i];
    } else if (in_shape[i] > crop[i]) {
      pad_axes.push_back(i);
      low.push_back(0);
      high.push_back(in_shape[i] - crop[i]);
    }
  }
  auto in = crop == a.shape() ? a : slice(a, Shape(a.ndim(), 0), crop, s);
  const Dtype in_dtype = input_dtype(a.dtype(), real, inverse);
  in = astype(in, in_dtype, s);
  if (!pad_axes.empty()) {
    in = pad(in, pad_axes, low, high, array(0, in_dtype), "constant", s);
  }

  const int real_length = real && inverse ? n.back() : 0;
  return apply_norm(nuvec::detail::make_node(FFT{ax, inverse, real, real_length}, {in}, to_stream(s)), n, inverse,
                    norm, s);
}

/// The transform over `axes` at their current lengths (the real inverse's output length 2 (m - 1)).
array fft_axes(const array& a, const std::vector<int>& axes, bool real, bool inverse, const char* op, FFTNorm norm,
               StreamOrDevice s) {
  check_not_scalar(a, op);
  if (axes.empty()) {
    return a;
  }
  Shape n;
  for (int axis : checked_axes(a, axes, op)) {
    n.push_back(a.shape(axis));
  }
  if (real && inverse) {
    n.back() = 2 * (n.back() - 1);
  }
  return fft_impl(a, n, axes, real, inverse, op, norm, s);
}

/// The transform over every axis.
array fft_all(const array& a, bool real, bool inverse, const char* op, FFTNorm norm, StreamOrDevice s) {
  check_not_scalar(a, op);
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  return fft_axes(a, axes, real, inverse, op, norm, s);
}

/// A roll of each axis by shift(size).
template <class Shift>
array shift_impl(const array& a, const std::vector<int>& axes, Shift shift, const char* op, StreamOrDevice s) {
  if (axes.empty()) {
    return a;
  }
  Shape shifts;
  for (int axis : axes) {
    shifts.push_back(shift(a.shape(normalize_axis(axis, a.ndim(), op))));
  }
  return roll(a, shifts, axes, s);
}

/// values / (d n) as float32, computed in double.
array frequencies(const array& values, int n, double d, StreamOrDevice s) {
  return astype(divide(astype(values, float64, s), array(d * n, float64), s), float32, s);
}

void check_frequency_args(int n, double d, const char* op) {
  if (n < 1) {
    throw_invalid(op_prefix(op) + "Expected a window length n >= 1; got " + std::to_string(n) + ".");
  }
  if (d == 0.0) {
    throw_invalid(op_prefix(op) + "Expected a non-zero sample spacing d; got 0.");
  }
}

}  // namespace

array fftn(const array& a, const Shape& n, const std::vector<int>& axes, FFTNorm norm, StreamOrDevice s) {
  return fft_impl(a, n, axes, false, false, "fftn", norm, s);
}
array fftn(const array& a, const std::vector<int>& axes, FFTNorm norm, StreamOrDevice s) {
  return fft_axes(a, axes, false, false, "fftn", norm, s);
}
array fftn(const array& a, FFTNorm norm, StreamOrDevice s) { return fft_all(a, false, false, "fftn", norm, s); }

array ifftn(const array& a, const Shape& n, const std::vector<int>& axes, FFTNorm norm, StreamOrDevice s) {
  return fft_impl(a, n, axes, false, true, "ifftn", norm, s);
}
array ifftn(const array& a, const std::vector<int>& axes, FFTNorm norm, StreamOrDevice s) {
  return fft_axes(a, axes, false, true, "ifftn", norm, s);
}
array ifftn(const array& a, FFTNorm norm, StreamOrDevice s) { return fft_all(a, false, true, "ifftn", norm, s); }

array fft(const array& a, int n, int axis, FFTNorm norm, StreamOrDevice s) {
  return fft_impl(a, {n}, {axis}, false, false, "fft", norm, s);
}
array fft(const array& a, int axis, FFTNorm norm, StreamOrDevice s) {
  return fft_axes(a, {axis}, false, false, "fft", norm, s);
}
array ifft(const array& a, int n, int axis, FFTNorm norm, StreamOrDevice s) {
  return fft_impl(a, {n}, {axis}, false, true, "ifft", norm, s);
}
array ifft(const array& a, int axis, FFTNorm norm, StreamOrDevice s) {
  return fft_axes(a, {axis}, false, true, "ifft", norm, s);
}

array fft2(const array& a, const Shape& n, const std::vector<int>& axes, FFTNorm norm, StreamOrDevice s) {
  return fft_impl(a, n, axes, false, false, "fft2", norm, s);
}
array fft2(const array& a, const std::vector<int>& axes, FFTNorm norm, StreamOrDevice s) {
  return fft_axes(a, axes, false, false, "fft2", norm, s);
}
array ifft2(const array& a, const Shape& n, const std::vector<int>& axes, FFTNorm norm, StreamOrDevice s) {
  return fft_impl(a, n, axes, false, true, "ifft2", norm, s);
}
array ifft2(const array& a, const std::vector<int>& axes, FFTNorm norm, StreamOrDevice s) {
  return fft_axes(a, axes, false, true, "ifft2", norm, s);
}

array rfftn(const array& a, const Shape& n, const std::vector<int>& axes, FFTNorm norm, StreamOrDevice s) {
  return fft_impl(a, n, axes, true, false, "rfftn", norm, s);
}
array rfftn(const array& a, const std::vector<int>& axes, FFTNorm norm, StreamOrDevice s) {
  return fft_axes(a, axes, true, false, "rfftn", norm, s);
}
array rfftn(const array& a, FFTNorm norm, StreamOrDevice s) { return fft_all(a, true, false, "rfftn", norm, s); }

array irfftn(const array& a, const Shape& n, const std::vector<int>& axes, FFTNorm norm, StreamOrDevice s) {
  return fft_impl(a, n, axes, true, true, "irfftn", norm, s);
}
array irfftn(const array& a, const std::vector<int>& axes, FFTNorm norm, StreamOrDevice s) {
  return fft_axes(a, axes, true, true, "irfftn", norm, s);
}
array irfftn(const array& a, FFTNorm norm, StreamOrDevice s) { return fft_all(a, true, true, "irfftn", norm, s); }

array rfft(const array& a, int n, int axis, FFTNorm norm, StreamOrDevice s) {
  return fft_impl(a, {n}, {axis}, true, false, "rfft", norm, s);
}
array rfft(const array& a, int axis, FFTNorm norm, StreamOrDevice s) {
  return fft_axes(a, {axis}, true, false, "rfft", norm, s);
}
array irfft(const array& a, int n, int axis, FFTNorm norm, StreamOrDevice s) {
  return fft_impl(a, {n}, {axis}, true, true, "irfft", norm, s);
}
array irfft(const array& a, int axis, FFTNorm norm, StreamOrDevice s) {
  return fft_axes(a, {axis}, true, true, "irfft", norm, s);
}

array rfft2(const array& a, const Shape& n, const std::vector<int>& axes, FFTNorm norm, StreamOrDevice s) {
  return fft_impl(a, n, axes, true, false, "rfft2", norm, s);
}
array rfft2(const array& a, const std::vector<int>& axes, FFTNorm norm, StreamOrDevice s) {
  return fft_axes(a, axes, true, false, "rfft2", norm, s);
}
array irfft2(const array& a, const Shape& n, const std::vector<int>& axes, FFTNorm norm, StreamOrDevice s) {
  return fft_impl(a, n, axes, true, true, "irfft2", norm, s);
}
array irfft2(const array& a, const std::vector<int>& axes, FFTNorm norm, StreamOrDevice s) {
  return fft_axes(a, axes, true, true, "irfft2", norm, s);
}

array fftshift(const array& a, const std::vector<int>& axes, StreamOrDevice s) {
  return shift_impl(
      a, axes, [](int size) { return size / 2; }, "fftshift", s);
}
array fftshift(const array& a, StreamOrDevice s) { return fftshift(a, all_axes(a.ndim()), s); }
array ifftshift(const array& a, const std::vector<int>& axes, StreamOrDevice s) {
  return shift_impl(
      a, axes, [](int size) { return (size + 1) / 2; }, "ifftshift", s);
}
array ifftshift(const array& a, StreamOrDevice s) { return ifftshift(a, all_axes(a.ndim()), s); }

array fftfreq(int n, double d, StreamOrDevice s) {
  check_frequency_args(n, d, "fftfreq");
  auto k = arange(0, n, s);
  return frequencies(where(less(k, array((n + 1) / 2), s), k, subtract(k, array(n), s), s), n, d, s);
}

array rfftfreq(int n, double d, StreamOrDevice s) {
  check_frequency_args(n, d, "rfftfreq");
  return frequencies(arange(0, n / 2 + 1, s), n, d, s);
}

}  // namespace nuvec::fft
