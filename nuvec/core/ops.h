#pragma once

// The functional API, mirroring MLX's ops.h: same names, argument order,
// overloads and defaults, each ending with a StreamOrDevice. Every op checks
// its arguments when it is called and builds a lazy node.

#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "nuvec/core/array.h"

namespace nuvec {

// ---------------------------------------------------------------- creation

/// Values in [start, stop) spaced by step: ceil((stop - start) / step) of them (none when that is not positive),
/// float32 by default and int32 for the int overloads. A zero or NaN step, a NaN or infinite bound, bool, or more
/// than INT32_MAX values throw.
array arange(double start, double stop, double step, Dtype dtype, StreamOrDevice s = {});
array arange(double start, double stop, double step, StreamOrDevice s = {});
array arange(double start, double stop, Dtype dtype, StreamOrDevice s = {});
array arange(double start, double stop, StreamOrDevice s = {});
array arange(double stop, Dtype dtype, StreamOrDevice s = {});
array arange(double stop, StreamOrDevice s = {});
array arange(int start, int stop, int step, StreamOrDevice s = {});
array arange(int start, int stop, StreamOrDevice s = {});
array arange(int stop, StreamOrDevice s = {});

/// `num` evenly spaced values from start to stop (inclusive when `endpoint`), computed in float64 and rounded once to
/// `dtype` (integers truncate); num < 0 throws.
array linspace(double start, double stop, int num, bool endpoint, Dtype dtype = float32, StreamOrDevice s = {});
inline array linspace(double start, double stop, int num = 50, Dtype dtype = float32, StreamOrDevice s = {}) {
  return linspace(start, stop, num, true, dtype, s);
}

/// A dense, row-contiguous array of `shape` filled with `vals` (broadcast, converted to `dtype`, else kept in its
/// own), as MLX's: its own buffer, so it can be donated and written in place. Negative dimensions throw.
array full(Shape shape, array vals, Dtype dtype, StreamOrDevice s = {});
array full(Shape shape, array vals, StreamOrDevice s = {});
template <class T>
array full(Shape shape, T val, Dtype dtype, StreamOrDevice s = {}) {
  return full(std::move(shape), array(val, dtype), s);
}
template <class T>
array full(Shape shape, T val, StreamOrDevice s = {}) {
  return full(std::move(shape), array(val), s);
}
/// An array of a's shape filled with `vals`, of `dtype` (a's dtype when not given).
array full_like(const array& a, const array& vals, Dtype dtype, StreamOrDevice s = {});
array full_like(const array& a, const array& vals, StreamOrDevice s = {});
template <class T>
array full_like(const array& a, T val, Dtype dtype, StreamOrDevice s = {}) {
  return full_like(a, array(val, dtype), dtype, s);
}
template <class T>
array full_like(const array& a, T val, StreamOrDevice s = {}) {
  return full_like(a, array(val, a.dtype()), s);
}
/// Dense arrays of zeros or ones, float32 by default; the _like forms take a's shape and, unless given, its dtype.
array zeros(const Shape& shape, Dtype dtype, StreamOrDevice s = {});
inline array zeros(const Shape& shape, StreamOrDevice s = {}) { return zeros(shape, float32, s); }
array zeros_like(const array& a, StreamOrDevice s = {});
array zeros_like(const array& a, Dtype dtype, StreamOrDevice s = {});
array ones(const Shape& shape, Dtype dtype, StreamOrDevice s = {});
inline array ones(const Shape& shape, StreamOrDevice s = {}) { return ones(shape, float32, s); }
array ones_like(const array& a, StreamOrDevice s = {});
array ones_like(const array& a, Dtype dtype, StreamOrDevice s = {});

/// Ones on the k-th diagonal (k > 0 above the main one) of an n x m matrix (m = n by default), float32 by default;
/// a negative n or m throws. identity(n) is eye(n).
array eye(int n, int m, int k, Dtype dtype, StreamOrDevice s = {});
inline array eye(int n, Dtype dtype, StreamOrDevice s = {}) { return eye(n, n, 0, dtype, s); }
inline array eye(int n, int m, StreamOrDevice s = {}) { return eye(n, m, 0, float32, s); }
inline array eye(int n, int m, int k, StreamOrDevice s = {}) { return eye(n, m, k, float32, s); }
inline array eye(int n, StreamOrDevice s = {}) { return eye(n, n, 0, float32, s); }
array identity(int n, Dtype dtype, StreamOrDevice s = {});
inline array identity(int n, StreamOrDevice s = {}) { return identity(n, float32, s); }

/// Ones at and below the k-th diagonal of an n x m matrix, zeros above.
array tri(int n, int m, int k, Dtype type, StreamOrDevice s = {});
inline array tri(int n, Dtype type, StreamOrDevice s = {}) { return tri(n, n, 0, type, s); }
/// x with the elements above (tril) or below (triu) the k-th diagonal of its last two axes set to zero; x needs at
/// least 2 axes.
array tril(array x, int k = 0, StreamOrDevice s = {});
array triu(array x, int k = 0, StreamOrDevice s = {});

/// Coordinate grids from 1-d coordinate arrays (each flattened), numpy's meshgrid: "xy" (Cartesian) indexing swaps
/// the first two output axes, "ij" (matrix) does not, other values throw; `sparse` gives broadcastable outputs with
/// size-1 axes instead of full grids.
std::vector<array> meshgrid(const std::vector<array>& arrays, bool sparse = false, const std::string& indexing = "xy",
                            StreamOrDevice s = {});

/// Window functions (numpy's definitions), computed in float64 and rounded to float32; M < 1 gives an empty array
/// and M = 1 gives [1].
array bartlett(int M, StreamOrDevice s = {});
array blackman(int M, StreamOrDevice s = {});
array hamming(int M, StreamOrDevice s = {});
array hanning(int M, StreamOrDevice s = {});

// ---------------------------------------------------------------- conversion and copies

/// `a` converted to `dtype` (`a` itself when it has it), as numpy's casts: floats to integers truncate toward
/// zero and integers wrap into narrower types (nuvec/core/scalar_math.h).
array astype(array a, Dtype dtype, StreamOrDevice s = {});
/// Reinterprets the bytes as another dtype; the last axis is rescaled.
array view(const array& a, const Dtype& dtype, StreamOrDevice s = {});
/// A view of a's row-contiguous elements with `shape`, `strides` (in elements) and `offset`. As MLX's, only the
/// lengths and sizes are checked, not that the strides and offset stay within a's elements: the caller keeps them so.
array as_strided(array a, Shape shape, Strides strides, size_t offset, StreamOrDevice s = {});
/// a's values in a buffer of their own.
array copy(array a, StreamOrDevice s = {});
/// `a` itself when already row-contiguous (or column-contiguous if allowed), else a copy.
array contiguous(const array& a, bool allow_col_major = false, StreamOrDevice s = {});
/// `a`, seen by the transforms as a constant: no derivative flows through it.
array stop_gradient(const array& a, StreamOrDevice s = {});

// ---------------------------------------------------------------- shape and layout

/// `a` with another shape of the same size; one entry may be -1 (inferred). Several -1s, other negative sizes or a
/// different size throw.
array reshape(const array& a, Shape shape, StreamOrDevice s = {});
/// Axes start_axis through end_axis merged into one (every axis by default; a 0-d array gives shape (1)). As MLX's,
/// the axes are clamped into the array; a start after the end throws.
array flatten(const array& a, int start_axis, int end_axis = -1, StreamOrDevice s = {});
array flatten(const array& a, StreamOrDevice s = {});
/// `axis` split into the axes of `shape` (one entry may be -1), whose sizes must multiply to the axis's size.
array unflatten(const array& a, int axis, Shape shape, StreamOrDevice s = {});
/// `a` without the given size-1 axes (every size-1 axis by default); an axis of another size throws.
array squeeze(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array squeeze(const array& a, int axis, StreamOrDevice s = {});
array squeeze(const array& a, StreamOrDevice s = {});
/// `a` with size-1 axes inserted; `axes` are positions in the result (negative ones count from its end).
array expand_dims(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array expand_dims(const array& a, int axis, StreamOrDevice s = {});
/// The axes permuted: the result's axis i is a's axis axes[i] (reversed by default); a repeated axis or a list of
/// the wrong length throws.
array transpose(const array& a, std::vector<int> axes, StreamOrDevice s = {});
inline array transpose(const array& a, std::initializer_list<int> axes, StreamOrDevice s = {}) {
  return transpose(a, std::vector<int>(axes), s);
}
array transpose(const array& a, StreamOrDevice s = {});
/// Two axes exchanged, or one axis moved to `destination` with the others keeping their order.
array swapaxes(const array& a, int axis1, int axis2, StreamOrDevice s = {});
array moveaxis(const array& a, int source, int destination, StreamOrDevice s = {});
/// numpy's broadcasting: `a` viewed as `shape` (size-1 and missing leading axes repeat), or every input viewed as
/// their common shape; shapes that do not broadcast throw.
array broadcast_to(const array& a, const Shape& shape, StreamOrDevice s = {});
std::vector<array> broadcast_arrays(const std::vector<array>& inputs, StreamOrDevice s = {});
/// `a` with size-1 axes added up to 1, 2 or 3 dimensions, numpy's placement: (N) becomes (1, N) and (1, N, 1),
/// (M, N) becomes (M, N, 1).
array atleast_1d(const array& a, StreamOrDevice s = {});
std::vector<array> atleast_1d(const std::vector<array>& a, StreamOrDevice s = {});
array atleast_2d(const array& a, StreamOrDevice s = {});
std::vector<array> atleast_2d(const std::vector<array>& a, StreamOrDevice s = {});
array atleast_3d(const array& a, StreamOrDevice s = {});
std::vector<array> atleast_3d(const std::vector<array>& a, StreamOrDevice s = {});

/// a[start:stop:strides] per axis; out-of-range bounds are clipped as in numpy.
array slice(const array& a, Shape start, Shape stop, Shape strides, StreamOrDevice s = {});
array slice(const array& a, Shape start, Shape stop, StreamOrDevice s = {});
/// Braced starts pick the static slice over the dynamic one below (an initializer list also converts to an array).
inline array slice(const array& a, std::initializer_list<int> start, Shape stop, Shape strides, StreamOrDevice s = {}) {
  return slice(a, Shape(start), std::move(stop), std::move(strides), s);
}
/// A slice of `slice_size` whose start on `axes` is read from the integer array `start` (one entry per axis; the
/// other axes start at 0). Negative starts count from the end; the start is then clamped so the slice fits.
array slice(const array& a, const array& start, std::vector<int> axes, Shape slice_size, StreamOrDevice s = {});

/// `src` with src[start:stop:strides] replaced by `update` (broadcast to the slice's shape, cast to src's dtype).
array slice_update(const array& src, const array& update, Shape start, Shape stop, Shape strides,
                   StreamOrDevice s = {});
array slice_update(const array& src, const array& update, Shape start, Shape stop, StreamOrDevice s = {});
inline array slice_update(const array& src, const array& update, std::initializer_list<int> start, Shape stop,
                          Shape strides, StreamOrDevice s = {}) {
  return slice_update(src, update, Shape(start), std::move(stop), std::move(strides), s);
}
inline array slice_update(const array& src, const array& update, std::initializer_list<int> start, Shape stop,
                          StreamOrDevice s = {}) {
  return slice_update(src, update, Shape(start), std::move(stop), s);
}
/// `src` with `update` written at a start on `axes` read from the integer array `start` (clamped so it fits); the
/// other axes start at 0, and missing leading axes of `update` broadcast.
array slice_update(const array& src, const array& update, const array& start, std::vector<int> axes,
                   StreamOrDevice s = {});
/// As slice_update, combining the update with the slice's values: add, multiply, maximum, minimum.
array slice_update_add(const array& src, const array& update, Shape start, Shape stop, Shape strides,
                       StreamOrDevice s = {});
array slice_update_add(const array& src, const array& update, Shape start, Shape stop, StreamOrDevice s = {});
array slice_update_prod(const array& src, const array& update, Shape start, Shape stop, Shape strides,
                        StreamOrDevice s = {});
array slice_update_prod(const array& src, const array& update, Shape start, Shape stop, StreamOrDevice s = {});
array slice_update_max(const array& src, const array& update, Shape start, Shape stop, Shape strides,
                       StreamOrDevice s = {});
array slice_update_max(const array& src, const array& update, Shape start, Shape stop, StreamOrDevice s = {});
array slice_update_min(const array& src, const array& update, Shape start, Shape stop, Shape strides,
                       StreamOrDevice s = {});
array slice_update_min(const array& src, const array& update, Shape start, Shape stop, StreamOrDevice s = {});

/// `a` cut along `axis` (0 by default) into `num_splits` equal parts (an axis they do not divide throws), or at
/// `indices` (numpy's bounds: piece i is a[indices[i - 1]:indices[i]], clipped).
std::vector<array> split(const array& a, int num_splits, int axis, StreamOrDevice s = {});
std::vector<array> split(const array& a, int num_splits, StreamOrDevice s = {});
std::vector<array> split(const array& a, const Shape& indices, int axis, StreamOrDevice s = {});
std::vector<array> split(const array& a, const Shape& indices, StreamOrDevice s = {});
/// The arrays joined along `axis` (flattened and joined without one), promoted to one dtype; their other axes must
/// match and an empty list throws.
array concatenate(std::vector<array> arrays, int axis, StreamOrDevice s = {});
array concatenate(std::vector<array> arrays, StreamOrDevice s = {});
/// Arrays of one shape joined along a new axis `axis` (0 by default); unstack gives the slices along `axis` back,
/// without that axis (a 0-d array throws).
array stack(const std::vector<array>& arrays, int axis, StreamOrDevice s = {});
array stack(const std::vector<array>& arrays, StreamOrDevice s = {});
std::vector<array> unstack(const array& a, int axis = 0, StreamOrDevice s = {});
/// Each element repeated `repeats` times along `axis` (of the flattened array without one); negative repeats throw.
array repeat(const array& arr, int repeats, int axis, StreamOrDevice s = {});
array repeat(const array& arr, int repeats, StreamOrDevice s = {});
/// `arr` repeated reps[i] times along each axis (numpy's tile: the shorter of reps and arr's shape gets leading 1s);
/// negative repetitions throw.
array tile(const array& arr, std::vector<int> reps, StreamOrDevice s = {});

/// Pads with pad_value ("constant"), the edge values ("edge"), or a mirror of the array without ("reflect") or with
/// ("symmetric") its edge values, as numpy.pad.
array pad(const array& a, const std::vector<int>& axes, const Shape& low_pad_size, const Shape& high_pad_size,
          const array& pad_value = array(0), const std::string& mode = "constant", StreamOrDevice s = {});
/// pad with one (low, high) pair per axis, one pair for every axis, or one width for both sides of every axis.
array pad(const array& a, const std::vector<std::pair<int, int>>& pad_width, const array& pad_value = array(0),
          const std::string& mode = "constant", StreamOrDevice s = {});
array pad(const array& a, const std::pair<int, int>& pad_width, const array& pad_value = array(0),
          const std::string& mode = "constant", StreamOrDevice s = {});
array pad(const array& a, int pad_width, const array& pad_value = array(0), const std::string& mode = "constant",
          StreamOrDevice s = {});

/// Elements shifted by `shift` along `axes`, those leaving one end entering at the other (numpy's roll: the
/// flattened array without axes; a single shift or axis pairs with each entry of the other list, shifts of a
/// repeated axis add up).
array roll(const array& a, int shift, StreamOrDevice s = {});
array roll(const array& a, const Shape& shift, StreamOrDevice s = {});
array roll(const array& a, int shift, int axis, StreamOrDevice s = {});
array roll(const array& a, int shift, const std::vector<int>& axes, StreamOrDevice s = {});
array roll(const array& a, const Shape& shift, int axis, StreamOrDevice s = {});
array roll(const array& a, const Shape& shift, const std::vector<int>& axes, StreamOrDevice s = {});
/// `a` reversed along `axes` (every axis by default).
array flip(const array& a, const std::vector<int>& axes, StreamOrDevice s = {});
array flip(const array& a, int axis, StreamOrDevice s = {});
array flip(const array& a, StreamOrDevice s = {});

/// The diagonal at `offset` of the matrices on axis1 and axis2 (numpy's diagonal): those axes are removed and the
/// diagonal becomes the last axis. Needs 2 axes, distinct.
array diagonal(const array& a, int offset = 0, int axis1 = 0, int axis2 = 1, StreamOrDevice s = {});
/// The k-th diagonal of a matrix, or a matrix with a vector on its k-th diagonal.
array diag(const array& a, int k = 0, StreamOrDevice s = {});
/// The sum of diagonal(a, offset, axis1, axis2), in `dtype` when given, else with sum's dtype rule.
array trace(const array& a, int offset, int axis1, int axis2, Dtype dtype, StreamOrDevice s = {});
array trace(const array& a, int offset, int axis1, int axis2, StreamOrDevice s = {});
array trace(const array& a, StreamOrDevice s = {});

/// The product of the sizes of `axes` (or its inverse), as a scalar of `dtype`.
array number_of_elements(const array& a, std::vector<int> axes, bool inverted, Dtype dtype = int32,
                         StreamOrDevice s = {});
/// `inputs`, made to depend on `dependencies` (they are evaluated first).
std::vector<array> depends(const std::vector<array>& inputs, const std::vector<array>& dependencies);

// ---------------------------------------------------------------- unary

// Element-wise, the result of a's shape. The functions from sqrt to sigmoid, erf, erfinv, degrees and radians
// compute in at least float: integer and bool inputs give float32, other dtypes keep theirs. Out-of-domain inputs
// give NaN or infinities as IEEE does (sqrt(-1) is NaN, log(0) is -inf); nothing throws for a value.

/// |a|; complex64 gives its modulus as float32, unsigned and bool inputs come back unchanged.
array abs(const array& a, StreamOrDevice s = {});
/// -a (integers wrap); bool throws (use logical_not). positive returns `a`.
array negative(const array& a, StreamOrDevice s = {});
array positive(const array& a, StreamOrDevice s = {});
/// -1, 0 or 1 in a's dtype for real inputs; bool comes back unchanged.
array sign(const array& a, StreamOrDevice s = {});
/// Rounded down, up, toward zero, or to `decimals` places with halves to even (numpy's round; negative decimals
/// round to tens, hundreds, ...). Integer and bool inputs come back unchanged (round with negative decimals rounds
/// them too); complex64 throws.
array floor(const array& a, StreamOrDevice s = {});
array ceil(const array& a, StreamOrDevice s = {});
array trunc(const array& a, StreamOrDevice s = {});
array round(const array& a, int decimals, StreamOrDevice s = {});
inline array round(const array& a, StreamOrDevice s = {}) { return round(a, 0, s); }
/// a * a, in a's dtype.
array square(const array& a, StreamOrDevice s = {});
/// Roots, reciprocal, exponentials, logarithms, trigonometric and hyperbolic functions and their inverses, and the
/// logistic sigmoid 1 / (1 + exp(-a)), in at least float.
array sqrt(const array& a, StreamOrDevice s = {});
array rsqrt(const array& a, StreamOrDevice s = {});
array reciprocal(const array& a, StreamOrDevice s = {});
array exp(const array& a, StreamOrDevice s = {});
array expm1(const array& a, StreamOrDevice s = {});
array log(const array& a, StreamOrDevice s = {});
array log2(const array& a, StreamOrDevice s = {});
array log10(const array& a, StreamOrDevice s = {});
array log1p(const array& a, StreamOrDevice s = {});
array sin(const array& a, StreamOrDevice s = {});
array cos(const array& a, StreamOrDevice s = {});
array tan(const array& a, StreamOrDevice s = {});
array arcsin(const array& a, StreamOrDevice s = {});
array arccos(const array& a, StreamOrDevice s = {});
array arctan(const array& a, StreamOrDevice s = {});
array sinh(const array& a, StreamOrDevice s = {});
array cosh(const array& a, StreamOrDevice s = {});
array tanh(const array& a, StreamOrDevice s = {});
array arcsinh(const array& a, StreamOrDevice s = {});
array arccosh(const array& a, StreamOrDevice s = {});
array arctanh(const array& a, StreamOrDevice s = {});
array sigmoid(const array& a, StreamOrDevice s = {});
/// The error function and its inverse, in at least float; complex64 throws.
array erf(const array& a, StreamOrDevice s = {});
array erfinv(const array& a, StreamOrDevice s = {});
/// Radians to degrees and degrees to radians, in at least float.
array degrees(const array& a, StreamOrDevice s = {});
array radians(const array& a, StreamOrDevice s = {});
/// The conjugate, real part and imaginary part (float32) of complex64. A real input comes back unchanged from
/// conjugate and real; imag gives its zeros.
array conjugate(const array& a, StreamOrDevice s = {});
array real(const array& a, StreamOrDevice s = {});
array imag(const array& a, StreamOrDevice s = {});
/// Classification as bool. Integer and bool inputs are never NaN or infinite; isposinf and isneginf reject complex64.
array isnan(const array& a, StreamOrDevice s = {});
array isinf(const array& a, StreamOrDevice s = {});
array isfinite(const array& a, StreamOrDevice s = {});
array isposinf(const array& a, StreamOrDevice s = {});
array isneginf(const array& a, StreamOrDevice s = {});
/// NaN replaced by `nan`, +inf by `posinf` and -inf by `neginf` (by default the dtype's largest and lowest finite
/// values). Non-floating inputs, complex64 included, come back unchanged (numpy also replaces complex parts).
array nan_to_num(const array& a, float nan = 0.0F, std::optional<float> posinf = std::nullopt,
                 std::optional<float> neginf = std::nullopt, StreamOrDevice s = {});
/// Logical not of `a` cast to bool; bitwise_invert is ~a for integers and logical_not for bool (other dtypes throw).
array logical_not(const array& a, StreamOrDevice s = {});
array bitwise_invert(const array& a, StreamOrDevice s = {});
/// maximum(a, a_min) then minimum(that, a_max), with those ops' broadcasting and promotion (NaN propagates); one
/// bound may be absent, not both.
array clip(const array& a, const std::optional<array>& a_min = std::nullopt,
           const std::optional<array>& a_max = std::nullopt, StreamOrDevice s = {});

// ---------------------------------------------------------------- binary

// Binary ops broadcast their operands (numpy's rules) and promote them to one dtype (promote_types); integer
// arithmetic wraps.

/// a + b, a - b and a * b in the promoted dtype.
array add(const array& a, const array& b, StreamOrDevice s = {});
array subtract(const array& a, const array& b, StreamOrDevice s = {});
array multiply(const array& a, const array& b, StreamOrDevice s = {});
/// True division, in at least float (integer operands give float32).
array divide(const array& a, const array& b, StreamOrDevice s = {});
/// numpy's //: integers stay integers, rounded toward negative infinity (x // 0 is 0); floats give floor(a / b);
/// complex64 throws.
array floor_divide(const array& a, const array& b, StreamOrDevice s = {});
/// numpy's %: the result has the divisor's sign (integer x % 0 is 0); complex64 throws.
array remainder(const array& a, const array& b, StreamOrDevice s = {});
/// {floor_divide(a, b), remainder(a, b)}.
std::vector<array> divmod(const array& a, const array& b, StreamOrDevice s = {});
/// a ** b in the promoted dtype; integer powers wrap and a negative integer exponent gives 0 (MLX's; numpy throws).
array power(const array& a, const array& b, StreamOrDevice s = {});
/// The larger or smaller of a and b; a NaN on either side wins.
array maximum(const array& a, const array& b, StreamOrDevice s = {});
array minimum(const array& a, const array& b, StreamOrDevice s = {});
/// log(exp(a) + exp(b)) without overflow, in at least float.
array logaddexp(const array& a, const array& b, StreamOrDevice s = {});
/// The angle of the point x = b, y = a, in [-pi, pi] and at least float; complex64 throws.
array arctan2(const array& a, const array& b, StreamOrDevice s = {});
/// Comparisons in the promoted dtype, giving bool; NaN equals nothing (not even itself).
array equal(const array& a, const array& b, StreamOrDevice s = {});
array not_equal(const array& a, const array& b, StreamOrDevice s = {});
array greater(const array& a, const array& b, StreamOrDevice s = {});
array greater_equal(const array& a, const array& b, StreamOrDevice s = {});
array less(const array& a, const array& b, StreamOrDevice s = {});
array less_equal(const array& a, const array& b, StreamOrDevice s = {});
/// numpy's isclose: |a - b| <= atol + rtol * |b| in at least float (not symmetric in a and b); equal infinities are
/// close, NaNs only with equal_nan. allclose is all(isclose(...)), a bool scalar.
array isclose(const array& a, const array& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false,
              StreamOrDevice s = {});
array allclose(const array& a, const array& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false,
               StreamOrDevice s = {});
/// Whether a and b have one shape and equal values (a bool scalar; dtypes may differ); NaNs are equal only with
/// equal_nan.
array array_equal(const array& a, const array& b, bool equal_nan, StreamOrDevice s = {});
inline array array_equal(const array& a, const array& b, StreamOrDevice s = {}) { return array_equal(a, b, false, s); }
/// Logical and, or and xor of the operands cast to bool.
array logical_and(const array& a, const array& b, StreamOrDevice s = {});
array logical_or(const array& a, const array& b, StreamOrDevice s = {});
array logical_xor(const array& a, const array& b, StreamOrDevice s = {});
/// Bitwise and, or and xor of integers or bool; other dtypes throw.
array bitwise_and(const array& a, const array& b, StreamOrDevice s = {});
array bitwise_or(const array& a, const array& b, StreamOrDevice s = {});
array bitwise_xor(const array& a, const array& b, StreamOrDevice s = {});
/// a << b and a >> b for integers (arithmetic for signed types); counts outside [0, bits) give 0, or -1 when a
/// negative a shifts right. bool operands shift as uint8 (MLX's); floating ones throw.
array left_shift(const array& a, const array& b, StreamOrDevice s = {});
array right_shift(const array& a, const array& b, StreamOrDevice s = {});
/// condition ? x : y, broadcast together.
array where(const array& condition, const array& x, const array& y, StreamOrDevice s = {});

// ---------------------------------------------------------------- reductions

// Each reduction takes (a, keepdims), (a, axes, keepdims) or (a, axis, keepdims), as in MLX.
/// Whether every element is true.
array all(const array& a, bool keepdims, StreamOrDevice s = {});
inline array all(const array& a, StreamOrDevice s = {}) { return all(a, false, s); }
array all(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array all(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
/// Whether any element is true.
array any(const array& a, bool keepdims, StreamOrDevice s = {});
inline array any(const array& a, StreamOrDevice s = {}) { return any(a, false, s); }
array any(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array any(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
/// Sum (bool and small integers give int32/uint32).
array sum(const array& a, bool keepdims, StreamOrDevice s = {});
inline array sum(const array& a, StreamOrDevice s = {}) { return sum(a, false, s); }
array sum(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array sum(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
/// Product (same dtype rule as sum).
array prod(const array& a, bool keepdims, StreamOrDevice s = {});
inline array prod(const array& a, StreamOrDevice s = {}) { return prod(a, false, s); }
array prod(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array prod(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
/// Maximum (NaN propagates).
array max(const array& a, bool keepdims, StreamOrDevice s = {});
inline array max(const array& a, StreamOrDevice s = {}) { return max(a, false, s); }
array max(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array max(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
/// Minimum (NaN propagates).
array min(const array& a, bool keepdims, StreamOrDevice s = {});
inline array min(const array& a, StreamOrDevice s = {}) { return min(a, false, s); }
array min(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array min(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
/// Arithmetic mean, at least float.
array mean(const array& a, bool keepdims, StreamOrDevice s = {});
inline array mean(const array& a, StreamOrDevice s = {}) { return mean(a, false, s); }
array mean(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array mean(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
/// log(sum(exp(a))), computed without overflow.
array logsumexp(const array& a, bool keepdims, StreamOrDevice s = {});
inline array logsumexp(const array& a, StreamOrDevice s = {}) { return logsumexp(a, false, s); }
array logsumexp(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array logsumexp(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
/// Number of non-zero elements (int32).
array count_nonzero(const array& a, bool keepdims, StreamOrDevice s = {});
inline array count_nonzero(const array& a, StreamOrDevice s = {}) { return count_nonzero(a, false, s); }
array count_nonzero(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array count_nonzero(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

/// Variance and standard deviation: the sum of squared deviations from the mean over max(N - ddof, 0), computed
/// in two passes; at least float, and complex64 gives float32 (numpy's).
array var(const array& a, bool keepdims, int ddof = 0, StreamOrDevice s = {});
inline array var(const array& a, StreamOrDevice s = {}) { return var(a, false, 0, s); }
array var(const array& a, const std::vector<int>& axes, bool keepdims = false, int ddof = 0, StreamOrDevice s = {});
array var(const array& a, int axis, bool keepdims = false, int ddof = 0, StreamOrDevice s = {});
array std(const array& a, bool keepdims, int ddof = 0, StreamOrDevice s = {});
inline array std(const array& a, StreamOrDevice s = {}) { return nuvec::std(a, false, 0, s); }
array std(const array& a, const std::vector<int>& axes, bool keepdims = false, int ddof = 0, StreamOrDevice s = {});
array std(const array& a, int axis, bool keepdims = false, int ddof = 0, StreamOrDevice s = {});

/// Index (uint32) of the first maximum / minimum, along `axis` or over the flattened array; reducing over no
/// elements throws, unless the result is empty too.
array argmax(const array& a, bool keepdims, StreamOrDevice s = {});
inline array argmax(const array& a, StreamOrDevice s = {}) { return argmax(a, false, s); }
array argmax(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});
array argmin(const array& a, bool keepdims, StreamOrDevice s = {});
inline array argmin(const array& a, StreamOrDevice s = {}) { return argmin(a, false, s); }
array argmin(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

/// exp(a - max) / sum over `axes` (every axis by default), in at least float; complex64 throws. `precise` is MLX's
/// flag for float32 accumulation of half inputs, which the CPU always does.
array softmax(const array& a, const std::vector<int>& axes, bool precise = false, StreamOrDevice s = {});
array softmax(const array& a, bool precise = false, StreamOrDevice s = {});
array softmax(const array& a, int axis, bool precise = false, StreamOrDevice s = {});

// ---------------------------------------------------------------- sorting and selection

// NaNs sort last (NumPy's order); index results are uint32, as MLX's. The overloads without an axis work on the
// flattened array.
/// Values sorted ascending along `axis`.
array sort(const array& a, int axis, StreamOrDevice s = {});
array sort(const array& a, StreamOrDevice s = {});
/// Indices that sort `a` along `axis`; stable (equal values keep their order).
array argsort(const array& a, int axis, StreamOrDevice s = {});
array argsort(const array& a, StreamOrDevice s = {});
/// `a` rearranged along `axis` so index kth (negative counts from the end) holds the value a sort would put there,
/// smaller-or-equal values before it and greater-or-equal ones after it.
array partition(const array& a, int kth, int axis, StreamOrDevice s = {});
array partition(const array& a, int kth, StreamOrDevice s = {});
/// The indices of partition's arrangement.
array argpartition(const array& a, int kth, int axis, StreamOrDevice s = {});
array argpartition(const array& a, int kth, StreamOrDevice s = {});
/// The k largest values along `axis`, in no particular order (as MLX).
array topk(const array& a, int k, int axis, StreamOrDevice s = {});
array topk(const array& a, int k, StreamOrDevice s = {});
/// Not in MLX; NumPy's np.searchsorted(a, v, side): where each value of `v` would be inserted into the sorted 1-d
/// `a` to keep it sorted (the first such place, or the last when `right`), as int64 (NumPy's index type). Both are
/// promoted to one dtype first.
array searchsorted(const array& a, const array& v, bool right = false, StreamOrDevice s = {});
/// The median (the mean of the two middle values for even counts; NaN if any value is NaN), at least float.
array median(const array& a, bool keepdims, StreamOrDevice s = {});
inline array median(const array& a, StreamOrDevice s = {}) { return median(a, false, s); }
array median(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array median(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

// ---------------------------------------------------------------- scans

// Running reductions along `axis` (the flattened array without one); `reverse` scans from the end, and an exclusive
// scan leaves out the current element (starting from the identity). cumsum and cumprod keep the dtype except bool,
// which gives int32 (MLX's rule); logcumsumexp gives at least float.
/// Running sum and product; `dtype`, when given, converts the input first (MLX's).
array cumsum(const array& a, bool reverse = false, bool inclusive = true, std::optional<Dtype> dtype = std::nullopt,
             StreamOrDevice s = {});
inline array cumsum(const array& a, bool reverse, bool inclusive, StreamOrDevice s) {
  return cumsum(a, reverse, inclusive, std::nullopt, s);
}
array cumsum(const array& a, int axis, bool reverse = false, bool inclusive = true,
             std::optional<Dtype> dtype = std::nullopt, StreamOrDevice s = {});
inline array cumsum(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {
  return cumsum(a, axis, reverse, inclusive, std::nullopt, s);
}
array cumprod(const array& a, bool reverse = false, bool inclusive = true, std::optional<Dtype> dtype = std::nullopt,
              StreamOrDevice s = {});
inline array cumprod(const array& a, bool reverse, bool inclusive, StreamOrDevice s) {
  return cumprod(a, reverse, inclusive, std::nullopt, s);
}
array cumprod(const array& a, int axis, bool reverse = false, bool inclusive = true,
              std::optional<Dtype> dtype = std::nullopt, StreamOrDevice s = {});
inline array cumprod(const array& a, int axis, bool reverse, bool inclusive, StreamOrDevice s) {
  return cumprod(a, axis, reverse, inclusive, std::nullopt, s);
}
/// Running maximum / minimum (NaN propagates).
array cummax(const array& a, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});
array cummax(const array& a, int axis, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});
array cummin(const array& a, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});
array cummin(const array& a, int axis, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});
/// Running log(sum(exp(a))), computed without overflow.
array logcumsumexp(const array& a, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});
array logcumsumexp(const array& a, int axis, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});
/// Not in MLX; NumPy's np.diff: the n-th discrete difference a[1:] - a[:-1] along `axis` (not_equal for bool).
array diff(const array& a, int n = 1, int axis = -1, StreamOrDevice s = {});

// ---------------------------------------------------------------- products

/// Matrix product with numpy's rules: 1-d operands are promoted and the batch axes broadcast.
array matmul(const array& a, const array& b, StreamOrDevice s = {});
/// alpha * (a @ b) + beta * c.
array addmm(array c, array a, array b, const float& alpha = 1.F, const float& beta = 1.F, StreamOrDevice s = {});
/// numpy's inner: sums over the last axes of a and b, giving a.shape[:-1] + b.shape[:-1]; a 0-d operand scales the
/// other.
array inner(const array& a, const array& b, StreamOrDevice s = {});
/// The outer product of a and b, both flattened: shape (a.size, b.size).
array outer(const array& a, const array& b, StreamOrDevice s = {});
/// Sums of products over axes_a of a paired in order with axes_b of b, or over a's last `axis` axes and b's first;
/// the result has a's remaining axes, then b's. Paired axes must have one size.
array tensordot(const array& a, const array& b, int axis = 2, StreamOrDevice s = {});
array tensordot(const array& a, const array& b, const std::vector<int>& axes_a, const std::vector<int>& axes_b,
                StreamOrDevice s = {});
/// The Kronecker product; the operand with fewer axes gets leading size-1 axes.
array kron(const array& a, const array& b, StreamOrDevice s = {});
/// sum(conj(a) * b) over `axis` (numpy's vecdot), the other axes broadcast.
array vecdot(const array& a, const array& b, int axis = -1, StreamOrDevice s = {});

/// a @ b where blocks of block_size x block_size tiles are masked: mask_out (..., ceil(M/bs), ceil(N/bs)) masks the
/// result, mask_lhs (..., ceil(M/bs), ceil(K/bs)) and mask_rhs (..., ceil(K/bs), ceil(N/bs)) the operands. A bool
/// mask zeroes the tiles it marks false; a floating mask scales them.
array block_masked_mm(array a, array b, int block_size, std::optional<array> mask_out = std::nullopt,
                      std::optional<array> mask_lhs = std::nullopt, std::optional<array> mask_rhs = std::nullopt,
                      StreamOrDevice s = {});
/// Matrix products of gathered matrices: out[i] = a[lhs_indices[i]] @ b[rhs_indices[i]], each index counting the
/// matrices of its operand's batch axes in row-major order (absent indices: every matrix in turn).
array gather_mm(array a, array b, std::optional<array> lhs_indices = std::nullopt,
                std::optional<array> rhs_indices = std::nullopt, bool sorted_indices = false, StreamOrDevice s = {});
/// For each (start, end) pair in segments (..., 2): a[:, start:end] @ b[start:end, :], giving (..., M, N).
array segmented_mm(array a, array b, array segments, StreamOrDevice s = {});

/// The Hadamard transform along the last axis (n = m * 2^k, m 1, 12, 20 or 28), times scale (default 1/sqrt(n)).
array hadamard_transform(const array& a, std::optional<float> scale = std::nullopt, StreamOrDevice s = {});

/// Einstein summation (numpy's subscripts: implicit or explicit output, ellipsis, repeated indices), computed as a
/// chain of pairwise products in the order einsum_path gives.
array einsum(const std::string& subscripts, const std::vector<array>& operands, StreamOrDevice s = {});
/// The greedy contraction order of an einsum (pairs of positions in the current operand list, each result appended
/// at the end) and a description of its cost.
std::pair<std::vector<std::vector<int>>, std::string> einsum_path(const std::string& subscripts,
                                                                  const std::vector<array>& operands);

// ---------------------------------------------------------------- quantization

/// Quantization of the last axis in groups: "affine" (CONFORMANCE.md; group_size 64, bits 4 by default) gives
/// {w_q (uint32), scales, biases}; "mxfp4", "mxfp8" and "nvfp4" (quantization_mode.h; their group size and bits are
/// fixed) give {w_q, scales (uint8)}, nvfp4 optionally with a float32 `global_scale`.
std::vector<array> quantize(const array& w, std::optional<int> group_size = std::nullopt,
                            std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                            const std::optional<array>& global_scale = std::nullopt, StreamOrDevice s = {});
/// scale * q + bias, in `dtype` (default: the scales' dtype); microscaled modes: value * scale (default bfloat16).
array dequantize(const array& w, const array& scales, const std::optional<array>& biases = std::nullopt,
                 std::optional<int> group_size = std::nullopt, std::optional<int> bits = std::nullopt,
                 const std::string& mode = "affine", const std::optional<array>& global_scale = std::nullopt,
                 std::optional<Dtype> dtype = std::nullopt, StreamOrDevice s = {});
/// x @ dequantize(w).T (transpose) or x @ dequantize(w), without materializing the dequantized weight.
array quantized_matmul(array x, array w, array scales, std::optional<array> biases = std::nullopt,
                       bool transpose = true, std::optional<int> group_size = std::nullopt,
                       std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                       StreamOrDevice s = {});
/// quantized_matmul with x and w picked from their batches by index (mixture-of-experts layers).
array gather_qmm(const array& x, const array& w, const array& scales, const std::optional<array>& biases = std::nullopt,
                 std::optional<array> lhs_indices = std::nullopt, std::optional<array> rhs_indices = std::nullopt,
                 bool transpose = true, std::optional<int> group_size = std::nullopt,
                 std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                 bool sorted_indices = false, StreamOrDevice s = {});
/// x @ w.T with both operands quantized in `mode` along K: x (..., K) is quantized on the fly, w (N, K) too when it
/// is floating (a uint32 w is taken as already quantized, with `scales_w`). The result has x's dtype. Gradients are
/// qqmm's of the cotangent, as MLX defines them. Modes as quantize; an "affine" w must be floating (its quantized
/// form needs biases, which qqmm does not take). nvfp4 takes both global scales or neither.
array qqmm(const array& x, const array& w, const std::optional<array>& w_scales = std::nullopt,
           std::optional<int> group_size = std::nullopt, std::optional<int> bits = std::nullopt,
           const std::string& mode = "nvfp4", const std::optional<array>& global_scale_x = std::nullopt,
           const std::optional<array>& global_scale_w = std::nullopt, StreamOrDevice s = {});
/// qqmm with x and w picked from their batches by index, as gather_mm: (lhs_indices shape..., M, N).
array gather_qqmm(const array& x, const array& w, const std::optional<array>& scales_w = std::nullopt,
                  const std::optional<array>& lhs_indices = std::nullopt,
                  const std::optional<array>& rhs_indices = std::nullopt, std::optional<int> group_size = std::nullopt,
                  std::optional<int> bits = std::nullopt, const std::string& mode = "nvfp4",
                  const std::optional<array>& global_scale_x = std::nullopt,
                  const std::optional<array>& global_scale_w = std::nullopt, bool sorted_indices = false,
                  StreamOrDevice s = {});
/// x @ dequantize(w, mode).T for w in one of GGML's block formats ("q4_0", "q8_0", "q4_k", "q6_k"; or "q4_0x8",
/// q4_0 with its rows interleaved in eights, "q4_0x16", "q8_0x16", "q4_kx16" and "q6_kx16", q4_0's, q8_0's, q4_k's
/// and q6_k's in sixteens; quantization_mode.h): w (N, K / values per block * bytes per block) uint8, rows of blocks as
/// GGUF files hold them, computed from the blocks themselves. nuvec's addition to MLX's API.
array quantized_matmul(array x, array w, const std::string& mode, StreamOrDevice s = {});
/// The values of w (..., N, K) in one of GGML's block formats, in `dtype` (default float32). nuvec's addition.
array dequantize(const array& w, const std::string& mode, std::optional<Dtype> dtype = std::nullopt,
                 StreamOrDevice s = {});
/// The blocks of w rewritten from one layout of a block format to another, value for value: "q4_0" to "q4_0x8" or
/// "q4_0x16", "q8_0" to "q8_0x16", "q4_k" to "q4_kx16" and "q6_k" to "q6_kx16" (the CPU's kernels read a group of
/// rows as one stream), back, and between two grouped layouts; the same mode gives w. w's rows must be a multiple of
/// the grouped layouts' (8, 16). nuvec's addition.
array repack_blocks(const array& w, const std::string& from, const std::string& to, StreamOrDevice s = {});
/// Float to FP8 E4M3 codes (uint8), rounding to nearest even and saturating at +-448.
array to_fp8(array x, StreamOrDevice s = {});
/// FP8 E4M3 codes (uint8) to a floating dtype.
array from_fp8(array x, Dtype dtype, StreamOrDevice s = {});
// ---------------------------------------------------------------- convolution

// Channels last, as MLX: input (N, spatial..., C_in), weight (C_out, kernel..., C_in / groups), output
// (N, spatial..., C_out). Integer and bool weights are promoted to the input's floating dtype.

/// General N-d convolution (1 to 3 spatial axes). Each vector holds one value per spatial axis, or one value
/// for all, or none (the default); negative padding crops the input. `input_dilation` spreads the input's
/// elements apart (a transposed convolution); `flip` flips the kernel (a true convolution, not a correlation).
array conv_general(array input, array weight, std::vector<int> stride = {}, std::vector<int> padding_lo = {},
                   std::vector<int> padding_hi = {}, std::vector<int> kernel_dilation = {},
                   std::vector<int> input_dilation = {}, int groups = 1, bool flip = false, StreamOrDevice s = {});
/// conv_general with the same padding on both sides of each axis.
// NOLINTBEGIN(performance-unnecessary-value-param): MLX's signature; padding goes to both sides
inline array conv_general(const array& input, const array& weight, std::vector<int> stride = {},
                          std::vector<int> padding = {}, std::vector<int> kernel_dilation = {},
                          std::vector<int> input_dilation = {}, int groups = 1, bool flip = false,
                          StreamOrDevice s = {}) {
  return conv_general(input, weight, std::move(stride), padding, padding, std::move(kernel_dilation),
                      std::move(input_dilation), groups, flip, s);
}
// NOLINTEND(performance-unnecessary-value-param)
/// 1-d convolution of (N, W, C_in) with (C_out, K, C_in / groups).
array conv1d(const array& input, const array& weight, int stride = 1, int padding = 0, int dilation = 1, int groups = 1,
             StreamOrDevice s = {});
/// 2-d convolution of (N, H, W, C_in) with (C_out, KH, KW, C_in / groups).
array conv2d(const array& input, const array& weight, const std::pair<int, int>& stride = {1, 1},
             const std::pair<int, int>& padding = {0, 0}, const std::pair<int, int>& dilation = {1, 1}, int groups = 1,
             StreamOrDevice s = {});
/// 3-d convolution of (N, D, H, W, C_in) with (C_out, KD, KH, KW, C_in / groups).
array conv3d(const array& input, const array& weight, const std::tuple<int, int, int>& stride = {1, 1, 1},
             const std::tuple<int, int, int>& padding = {0, 0, 0},
             const std::tuple<int, int, int>& dilation = {1, 1, 1}, int groups = 1, StreamOrDevice s = {});
/// Transposed convolutions (the gradient of conv1d/2d/3d with respect to its input), weight
/// (C_out, kernel..., C_in / groups); output_padding adds rows at the high end of each axis.
array conv_transpose1d(const array& input, const array& weight, int stride = 1, int padding = 0, int dilation = 1,
                       int output_padding = 0, int groups = 1, StreamOrDevice s = {});
array conv_transpose2d(const array& input, const array& weight, const std::pair<int, int>& stride = {1, 1},
                       const std::pair<int, int>& padding = {0, 0}, const std::pair<int, int>& dilation = {1, 1},
                       const std::pair<int, int>& output_padding = {0, 0}, int groups = 1, StreamOrDevice s = {});
array conv_transpose3d(const array& input, const array& weight, const std::tuple<int, int, int>& stride = {1, 1, 1},
                       const std::tuple<int, int, int>& padding = {0, 0, 0},
                       const std::tuple<int, int, int>& dilation = {1, 1, 1},
                       const std::tuple<int, int, int>& output_padding = {0, 0, 0}, int groups = 1,
                       StreamOrDevice s = {});
// ---------------------------------------------------------------- indexing

// Indices may have any integer dtype. A negative index counts from the end once; an index still out of range never
// reads or writes out of bounds: gathers clamp it (the slice's start is clamped so the slice fits) and scatters drop
// that update (JAX's rule). Among duplicate indices, scatter keeps the last update in row-major order of the
// indices; the reducing scatters combine all of them.

/// Slices of `slice_sizes` (one size per axis of a) starting at the indices on `axes` and at 0 elsewhere. The index
/// arrays broadcast together to a shape I; the result has shape I + slice_sizes.
array gather(const array& a, const std::vector<array>& indices, const std::vector<int>& axes, const Shape& slice_sizes,
             StreamOrDevice s = {});
inline array gather(const array& a, const array& indices, int axis, const Shape& slice_sizes, StreamOrDevice s = {}) {
  return gather(a, {indices}, std::vector<int>{axis}, slice_sizes, s);
}

/// The entries of `a` at `indices` along `axis` (np.take): the axis is replaced by the indices' axes.
array take(const array& a, const array& indices, int axis, StreamOrDevice s = {});
/// The slice at one index along `axis` (an out-of-range index is an error, as NumPy's).
array take(const array& a, int index, int axis, StreamOrDevice s = {});
/// take on the flattened array.
array take(const array& a, const array& indices, StreamOrDevice s = {});
array take(const array& a, int index, StreamOrDevice s = {});

/// out[..., i, ...] = a[..., indices[..., i, ...], ...] along `axis` (np.take_along_axis); the other axes broadcast.
array take_along_axis(const array& a, const array& indices, int axis, StreamOrDevice s = {});
/// `a` with `values` written at `indices` along `axis` (np.put_along_axis).
array put_along_axis(const array& a, const array& indices, const array& values, int axis, StreamOrDevice s = {});
/// `a` with `values` added at `indices` along `axis`, duplicates summed.
array scatter_add_axis(const array& a, const array& indices, const array& values, int axis, StreamOrDevice s = {});

/// `a` with the slices of `updates` written at the indices on `axes` (0 on the other axes). The index arrays
/// broadcast to a shape I; `updates` has shape I + (one size per axis of a, each at most a's).
array scatter(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes,
              StreamOrDevice s = {});
inline array scatter(const array& a, const array& indices, const array& updates, int axis, StreamOrDevice s = {}) {
  return scatter(a, {indices}, updates, std::vector<int>{axis}, s);
}
/// scatter, adding the updates to the values there (np.add.at).
array scatter_add(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes,
                  StreamOrDevice s = {});
inline array scatter_add(const array& a, const array& indices, const array& updates, int axis, StreamOrDevice s = {}) {
  return scatter_add(a, {indices}, updates, std::vector<int>{axis}, s);
}
/// scatter, multiplying the values there by the updates (np.multiply.at).
array scatter_prod(const array& a, const std::vector<array>& indices, const array& updates,
                   const std::vector<int>& axes, StreamOrDevice s = {});
inline array scatter_prod(const array& a, const array& indices, const array& updates, int axis, StreamOrDevice s = {}) {
  return scatter_prod(a, {indices}, updates, std::vector<int>{axis}, s);
}
/// scatter, keeping the maximum (np.maximum.at: NaN propagates).
array scatter_max(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes,
                  StreamOrDevice s = {});
inline array scatter_max(const array& a, const array& indices, const array& updates, int axis, StreamOrDevice s = {}) {
  return scatter_max(a, {indices}, updates, std::vector<int>{axis}, s);
}
/// scatter, keeping the minimum (np.minimum.at: NaN propagates).
array scatter_min(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes,
                  StreamOrDevice s = {});
inline array scatter_min(const array& a, const array& indices, const array& updates, int axis, StreamOrDevice s = {}) {
  return scatter_min(a, {indices}, updates, std::vector<int>{axis}, s);
}

/// `a` with the elements of `src` (flattened, in order) written where `mask` (bool) is true; true positions past the
/// end of `src` keep a's values. As MLX's, a mask of fewer dimensions covers a's leading axes (a 1-d mask selects
/// whole rows) and a source of one slice per mask element is broadcast.
array masked_scatter(const array& a, const array& mask, const array& src, StreamOrDevice s = {});

// ---------------------------------------------------------------- utilities

/// The dtype all `arrays` promote to.
Dtype result_type(const std::vector<array>& arrays);
template <class... Arrays>
Dtype result_type(const Arrays&... arrays) {
  return result_type(std::vector<array>{arrays...});
}

/// Limits of a floating dtype (numpy's finfo).
struct finfo {
  explicit finfo(Dtype dtype);
  Dtype dtype;
  double min;
  double max;
  double eps;
};
/// Limits of an integer dtype (numpy's iinfo).
struct iinfo {
  explicit iinfo(Dtype dtype);
  Dtype dtype;
  int64_t min;
  uint64_t max;
};

// ---------------------------------------------------------------- operators

/// negative, logical_not and bitwise_invert.
array operator-(const array& a);
array operator!(const array& a);
array operator~(const array& a);

// Each binary operator takes two arrays, or an array and a C++ scalar (whose dtype counts fully): + - * are add,
// subtract, multiply; / is divide (true division) and % remainder; && || are logical, & | ^ << >> bitwise.
array operator+(const array& a, const array& b);
template <ScalarValue T>
array operator+(const array& a, T b) {
  return operator+(a, array(b));
}
template <ScalarValue T>
array operator+(T a, const array& b) {
  return operator+(array(a), b);
}
array operator-(const array& a, const array& b);
template <ScalarValue T>
array operator-(const array& a, T b) {
  return operator-(a, array(b));
}
template <ScalarValue T>
array operator-(T a, const array& b) {
  return operator-(array(a), b);
}
array operator*(const array& a, const array& b);
template <ScalarValue T>
array operator*(const array& a, T b) {
  return operator*(a, array(b));
}
template <ScalarValue T>
array operator*(T a, const array& b) {
  return operator*(array(a), b);
}
array operator/(const array& a, const array& b);
template <ScalarValue T>
array operator/(const array& a, T b) {
  return operator/(a, array(b));
}
template <ScalarValue T>
array operator/(T a, const array& b) {
  return operator/(array(a), b);
}
array operator%(const array& a, const array& b);
template <ScalarValue T>
array operator%(const array& a, T b) {
  return operator%(a, array(b));
}
template <ScalarValue T>
array operator%(T a, const array& b) {
  return operator%(array(a), b);
}
array operator==(const array& a, const array& b);
template <ScalarValue T>
array operator==(const array& a, T b) {
  return operator==(a, array(b));
}
template <ScalarValue T>
array operator==(T a, const array& b) {
  return operator==(array(a), b);
}
array operator!=(const array& a, const array& b);
template <ScalarValue T>
array operator!=(const array& a, T b) {
  return operator!=(a, array(b));
}
template <ScalarValue T>
array operator!=(T a, const array& b) {
  return operator!=(array(a), b);
}
array operator<(const array& a, const array& b);
template <ScalarValue T>
array operator<(const array& a, T b) {
  return operator<(a, array(b));
}
template <ScalarValue T>
array operator<(T a, const array& b) {
  return operator<(array(a), b);
}
array operator<=(const array& a, const array& b);
template <ScalarValue T>
array operator<=(const array& a, T b) {
  return operator<=(a, array(b));
}
template <ScalarValue T>
array operator<=(T a, const array& b) {
  return operator<=(array(a), b);
}
array operator>(const array& a, const array& b);
template <ScalarValue T>
array operator>(const array& a, T b) {
  return operator>(a, array(b));
}
template <ScalarValue T>
array operator>(T a, const array& b) {
  return operator>(array(a), b);
}
array operator>=(const array& a, const array& b);
template <ScalarValue T>
array operator>=(const array& a, T b) {
  return operator>=(a, array(b));
}
template <ScalarValue T>
array operator>=(T a, const array& b) {
  return operator>=(array(a), b);
}
array operator&&(const array& a, const array& b);
template <ScalarValue T>
array operator&&(const array& a, T b) {
  return operator&&(a, array(b));
}
template <ScalarValue T>
array operator&&(T a, const array& b) {
  return operator&&(array(a), b);
}
array operator||(const array& a, const array& b);
template <ScalarValue T>
array operator||(const array& a, T b) {
  return operator||(a, array(b));
}
template <ScalarValue T>
array operator||(T a, const array& b) {
  return operator||(array(a), b);
}
array operator&(const array& a, const array& b);
template <ScalarValue T>
array operator&(const array& a, T b) {
  return operator&(a, array(b));
}
template <ScalarValue T>
array operator&(T a, const array& b) {
  return operator&(array(a), b);
}
array operator|(const array& a, const array& b);
template <ScalarValue T>
array operator|(const array& a, T b) {
  return operator|(a, array(b));
}
template <ScalarValue T>
array operator|(T a, const array& b) {
  return operator|(array(a), b);
}
array operator^(const array& a, const array& b);
template <ScalarValue T>
array operator^(const array& a, T b) {
  return operator^(a, array(b));
}
template <ScalarValue T>
array operator^(T a, const array& b) {
  return operator^(array(a), b);
}
array operator<<(const array& a, const array& b);
template <ScalarValue T>
array operator<<(const array& a, T b) {
  return operator<<(a, array(b));
}
template <ScalarValue T>
array operator<<(T a, const array& b) {
  return operator<<(array(a), b);
}
array operator>>(const array& a, const array& b);
template <ScalarValue T>
array operator>>(const array& a, T b) {
  return operator>>(a, array(b));
}
template <ScalarValue T>
array operator>>(T a, const array& b) {
  return operator>>(array(a), b);
}

}  // namespace nuvec
