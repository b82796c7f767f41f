#pragma once

// Discrete Fourier transforms (MLX's mlx/fft.h, NumPy's numpy.fft semantics and `norm` scalings, see FFTNorm).
// `n` gives the transform's length per axis: the input is
// cropped or zero-padded to it (for irfft*, `n` is the output length and the input's last transformed axis is
// cropped or padded to n/2 + 1). Axes default to the last one (1-d), the last two (2-d) or all (n-d).
//
// Dtypes: results are complex64, or float32 for irfft*. float64 inputs are transformed in double and the result
// rounded to complex64 (nuvec has no complex128); float32, complex64 and every other dtype (converted to float32)
// are transformed in float. rfft* of a complex64 input transforms its real part, as MLX does.
//
// An empty `axes` list returns the input unchanged (MLX's). Errors, thrown when the op is called: a 0-d input, an
// axis out of range or repeated, an `n` of another length than `axes` or with an entry below 1; fftfreq and rfftfreq
// need n >= 1 and d != 0.

#include <vector>

#include "nuvec/core/array.h"

namespace nuvec::fft {

/// Scaling of a transform pair over N points (NumPy's `norm`): Backward leaves the forward transform unscaled and
/// scales the inverse by 1/N, Ortho scales both by 1/sqrt(N), Forward scales the forward one by 1/N.
enum class FFTNorm { Backward, Ortho, Forward };

/// The n-dimensional transform over `axes`, each cropped or padded to the length in `n`.
array fftn(const array& a, const Shape& n, const std::vector<int>& axes, FFTNorm norm = FFTNorm::Backward,
           StreamOrDevice s = {});
array fftn(const array& a, const std::vector<int>& axes, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
/// Over every axis.
array fftn(const array& a, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});

/// The n-dimensional inverse transform, with fftn's overloads and defaults.
array ifftn(const array& a, const Shape& n, const std::vector<int>& axes, FFTNorm norm = FFTNorm::Backward,
            StreamOrDevice s = {});
array ifftn(const array& a, const std::vector<int>& axes, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
array ifftn(const array& a, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});

/// The 1-d transform along `axis` (of length n when given).
array fft(const array& a, int n, int axis, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
array fft(const array& a, int axis = -1, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
/// The 1-d inverse transform.
array ifft(const array& a, int n, int axis, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
array ifft(const array& a, int axis = -1, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});

/// The 2-d transform (the last two axes by default).
array fft2(const array& a, const Shape& n, const std::vector<int>& axes, FFTNorm norm = FFTNorm::Backward,
           StreamOrDevice s = {});
array fft2(const array& a, const std::vector<int>& axes = {-2, -1}, FFTNorm norm = FFTNorm::Backward,
           StreamOrDevice s = {});
/// The 2-d inverse transform.
array ifft2(const array& a, const Shape& n, const std::vector<int>& axes, FFTNorm norm = FFTNorm::Backward,
            StreamOrDevice s = {});
array ifft2(const array& a, const std::vector<int>& axes = {-2, -1}, FFTNorm norm = FFTNorm::Backward,
            StreamOrDevice s = {});

/// The n-dimensional transform of a real input: the last of `axes` keeps its n/2 + 1 non-negative frequencies.
array rfftn(const array& a, const Shape& n, const std::vector<int>& axes, FFTNorm norm = FFTNorm::Backward,
            StreamOrDevice s = {});
array rfftn(const array& a, const std::vector<int>& axes, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
array rfftn(const array& a, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});

/// The inverse of rfftn (float32); the last axis's output length defaults to 2 (m - 1) for an input of length m.
array irfftn(const array& a, const Shape& n, const std::vector<int>& axes, FFTNorm norm = FFTNorm::Backward,
             StreamOrDevice s = {});
array irfftn(const array& a, const std::vector<int>& axes, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
array irfftn(const array& a, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});

/// The 1-d transform of a real input.
array rfft(const array& a, int n, int axis, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
array rfft(const array& a, int axis = -1, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
/// The inverse of rfft (float32).
array irfft(const array& a, int n, int axis, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});
array irfft(const array& a, int axis = -1, FFTNorm norm = FFTNorm::Backward, StreamOrDevice s = {});

/// The 2-d transform of a real input.
array rfft2(const array& a, const Shape& n, const std::vector<int>& axes, FFTNorm norm = FFTNorm::Backward,
            StreamOrDevice s = {});
array rfft2(const array& a, const std::vector<int>& axes = {-2, -1}, FFTNorm norm = FFTNorm::Backward,
            StreamOrDevice s = {});
/// The inverse of rfft2 (float32).
array irfft2(const array& a, const Shape& n, const std::vector<int>& axes, FFTNorm norm = FFTNorm::Backward,
             StreamOrDevice s = {});
array irfft2(const array& a, const std::vector<int>& axes = {-2, -1}, FFTNorm norm = FFTNorm::Backward,
             StreamOrDevice s = {});

/// Moves the zero frequency to the centre: a roll by size / 2 along each axis (every axis by default).
array fftshift(const array& a, StreamOrDevice s = {});
array fftshift(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
/// The inverse of fftshift: a roll by (size + 1) / 2.
array ifftshift(const array& a, StreamOrDevice s = {});
array ifftshift(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});

/// The sample frequencies of fft(n) for a sample spacing d: [0, 1, ..., (n - 1) / 2, -(n / 2), ..., -1] / (d n),
/// float32 (NumPy's fftfreq).
array fftfreq(int n, double d = 1.0, StreamOrDevice s = {});
/// The sample frequencies of rfft(n): [0, 1, ..., n / 2] / (d n), float32 (NumPy's rfftfreq).
array rfftfreq(int n, double d = 1.0, StreamOrDevice s = {});

}  // namespace nuvec::fft
