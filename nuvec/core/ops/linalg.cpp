// Linear algebra ops (nuvec::linalg): argument checks and the nodes of the LAPACK-backed primitives (QRF, SVD,
// Inverse, Cholesky, LUF, Solve, Eig, Eigh), and the compositions built on them (norm, pinv, cholesky_inv, lu, det,
// slogdet, cross).
//
// Choices where MLX and NumPy differ or say nothing:
// - the factorizations take float32 and float64 (MLX: float32 only on its CPU); eig and eigvals give complex64
//   for both, the one complex dtype (float64 eigenvalues are rounded to single precision);
// - svd, eig, eigvals, eigh and eigvalsh also take complex64 (NumPy's results: singular values and eigh's
//   eigenvalues are float32, the vectors complex64; eigh reads a Hermitian matrix from one triangle);
// - norms of complex64 are float32 (MLX casts some of them back to complex64); integer inputs give float32;
// - norm without ord and axes, with keepdims, keeps every axis with size 1 (NumPy's shape);
// - pinv treats singular values below max(M, N) * eps * max(S) as zero (the array API's default cutoff);
// - det and slogdet compose on lu_factor, as MLX's (ml-explore/mlx PR 3416) do; integer and bool inputs are computed
//   as float32, and a singular matrix gives det 0 and slogdet {0, -inf} (NumPy's results).

#include "nuvec/core/linalg.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/output_shapes.h"

namespace nuvec::linalg {

using nuvec::detail::make_node;
using nuvec::detail::make_nodes;
using nuvec::detail::op_prefix;

namespace {

std::string tag(const char* op) { return op_prefix(std::string("linalg::").append(op)); }

void check_float(Dtype dtype, const char* op) {
  if (dtype != float32 && dtype != float64) {
    throw_invalid(tag(op) + "Arrays must have type float32 or float64; got " + std::string(dtype_name(dtype)) + ".");
  }
}

/// svd and the eigenvalue ops also take complex64 (LAPACK's c* routines).
void check_float_or_complex(Dtype dtype, const char* op) {
  if (dtype != float32 && dtype != float64 && dtype != complex64) {
    throw_invalid(tag(op) + "Arrays must have type float32, float64 or complex64; got " +
                  std::string(dtype_name(dtype)) + ".");
  }
}

/// The dtype of singular values and of eigh's eigenvalues: real.
Dtype real_of(Dtype dtype) { return dtype == complex64 ? float32 : dtype; }

void check_matrix(const array& a, const char* op) {
  if (a.ndim() < 2) {
    throw_invalid(tag(op) + "Arrays must have at least 2 dimensions; got shape " + shape_string(a.shape()) + ".");
  }
}

void check_square(const array& a, const char* op) {
  check_matrix(a, op);
  if (a.shape(-1) != a.shape(-2)) {
    throw_invalid(tag(op) + "Only defined for square matrices; got shape " + shape_string(a.shape()) + ".");
  }
}

/// Checks for the square float matrices of inv, cholesky, eig...
void check_square_float(const array& a, const char* op) {
  check_square(a, op);
  check_float(a.dtype(), op);
}

Shape batch_shape(const array& a) { return {a.shape().begin(), a.shape().end() - 2}; }

Shape with_last(Shape shape, std::initializer_list<int32_t> last) {
  shape.insert(shape.end(), last);
  return shape;
}

Dtype at_least_float(Dtype t) { return is_inexact(t) ? t : float32; }

/// sqrt(sum(|x|^2)) over `axes`.
array l2_norm(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  auto squares = is_complex(a.dtype()) ? square(abs(a, s), s) : square(a, s);
  return sqrt(sum(squares, axes, keepdims, s), s);
}

array vector_norm(const array& a, double ord, int axis, bool keepdims, StreamOrDevice s) {
  const std::vector<int> axes{axis};
  if (ord == 2.0) {
    return l2_norm(a, axes, keepdims, s);
  }
  const Dtype real = is_complex(a.dtype()) ? float32 : a.dtype();
  if (ord == 0.0) {
    return astype(sum(not_equal(a, array(0, a.dtype()), s), axes, keepdims, s), real, s);
  }
  auto m = abs(a, s);
  if (ord == 1.0) {
    return sum(m, axes, keepdims, s);
  }
  if (ord == std::numeric_limits<double>::infinity()) {
    return max(m, axes, keepdims, s);
  }
  if (ord == -std::numeric_limits<double>::infinity()) {
    return min(m, axes, keepdims, s);
  }
  auto powered = sum(power(m, array(ord, real), s), axes, keepdims, s);
  return power(powered, array(1.0 / ord, real), s);
}

/// The two normalized matrix axes of a norm.
std::pair<int, int> matrix_axes(const array& a, const std::vector<int>& axes) {
  int row = normalize_axis(axes[0], a.ndim(), "linalg::norm");
  int col = normalize_axis(axes[1], a.ndim(), "linalg::norm");
  if (row == col) {
    throw_invalid(tag("norm") + "The two axes of a matrix norm must differ; got " + std::to_string(axes[0]) + " and " +
                  std::to_string(axes[1]) + ".");
  }
  return {row, col};
}

/// Reduces over `first` (a sum of magnitudes) then `second` (max or min), keeping both axes until the end.
array induced_norm(const array& a, int first, int second, bool take_max, bool keepdims, StreamOrDevice s) {
  auto sums = sum(abs(a, s), first, true, s);
  auto out = take_max ? max(sums, second, true, s) : min(sums, second, true, s);
  return keepdims ? out : squeeze(out, {first, second}, s);
}

/// Singular values of the matrices in axes (row, col), moved last; reduced by `reduce` over them.
array singular_value_norm(const array& a, int row, int col, const std::string& reduce, bool keepdims,
                          StreamOrDevice s) {
  std::vector<int> perm;
  for (int i = 0; i < a.ndim(); ++i) {
    if (i != row && i != col) {
      perm.push_back(i);
    }
  }
  perm.push_back(row);
  perm.push_back(col);
  const Dtype compute = is_complex(a.dtype()) ? complex64 : (a.dtype() == float64 ? float64 : float32);
  auto values = svd(astype(transpose(a, perm, s), compute, s), false, s)[0];
  array out = reduce == "max" ? max(values, -1, false, s)
                              : (reduce == "min" ? min(values, -1, false, s) : sum(values, -1, false, s));
  if (keepdims) {
    out = expand_dims(out, {std::min(row, col), std::max(row, col)}, s);
  }
  return astype(out, real_of(a.dtype()), s);
}

array matrix_norm(const array& a, double ord, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  auto [row, col] = matrix_axes(a, axes);
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (ord == 1.0 || ord == -1.0) {
    return induced_norm(a, row, col, ord > 0, keepdims, s);
  }
  if (ord == inf || ord == -inf) {
    return induced_norm(a, col, row, ord > 0, keepdims, s);
  }
  if (ord == 2.0 || ord == -2.0) {
    return singular_value_norm(a, row, col, ord > 0 ? "max" : "min", keepdims, s);
  }
  throw_invalid(tag("norm") + "Invalid ord " + std::to_string(ord) + " for a matrix norm; expected 1, -1, 2, -2, " +
                "inf, -inf, 'fro' or 'nuc'.");
}

/// The axes a norm reduces: all of them when `axis` is absent.
std::vector<int> norm_axes(const array& a, const std::optional<std::vector<int>>& axis) {
  if (axis) {
    return *axis;
  }
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

std::string axes_count_error(size_t count) {
  return tag("norm") + "Expected one axis (vector norm) or two (matrix norm); got " + std::to_string(count) + ".";
}

}  // namespace

// ---------------------------------------------------------------- norms

array norm(const array& a, double ord, const std::optional<std::vector<int>>& axis, bool keepdims, StreamOrDevice s) {
  auto axes = norm_axes(a, axis);
  auto x = astype(a, at_least_float(a.dtype()), s);
  if (axes.size() == 1) {
    return vector_norm(x, ord, normalize_axis(axes[0], a.ndim(), "linalg::norm"), keepdims, s);
  }
  if (axes.size() == 2) {
    return matrix_norm(x, ord, axes, keepdims, s);
  }
  throw_invalid(axes_count_error(axes.size()));
}

array norm(const array& a, const std::string& ord, const std::optional<std::vector<int>>& axis, bool keepdims,
           StreamOrDevice s) {
  auto axes = norm_axes(a, axis);
  if (axes.size() != 2) {
    throw_invalid(tag("norm") + "Norm '" + ord + "' is only defined for matrices (two axes); got " +
                  std::to_string(axes.size()) + " axes.");
  }
  auto x = astype(a, at_least_float(a.dtype()), s);
  auto [row, col] = matrix_axes(x, axes);
  if (ord == "fro" || ord == "f") {
    return l2_norm(x, {row, col}, keepdims, s);
  }
  if (ord == "nuc") {
    return singular_value_norm(x, row, col, "sum", keepdims, s);
  }
  throw_invalid(tag("norm") + "Invalid ord '" + ord + "' for a matrix norm; expected 'fro' or 'nuc'.");
}

array norm(const array& a, const std::optional<std::vector<int>>& axis, bool keepdims, StreamOrDevice s) {
  auto x = astype(a, at_least_float(a.dtype()), s);
  if (!axis) {
    return l2_norm(x, norm_axes(x, axis), keepdims, s);
  }
  if (axis->empty() || axis->size() > 2) {
    throw_invalid(axes_count_error(axis->size()));
  }
  return l2_norm(x, *axis, keepdims, s);
}

// ---------------------------------------------------------------- factorizations

std::pair<array, array> qr(const array& a, StreamOrDevice s) {
  check_matrix(a, "qr");
  check_float(a.dtype(), "qr");
  auto out = make_nodes(QRF{}, {a}, to_stream(s));
  return {out[0], out[1]};
}

std::vector<array> svd(const array& a, bool compute_uv, StreamOrDevice s) {
  check_matrix(a, "svd");
  check_float_or_complex(a.dtype(), "svd");
  return make_nodes(SVD{compute_uv}, {a}, to_stream(s));
}

array inv(const array& a, StreamOrDevice s) {
  check_square_float(a, "inv");
  return make_node(Inverse{false, false}, {a}, to_stream(s));
}

array tri_inv(const array& a, bool upper, StreamOrDevice s) {
  check_square_float(a, "tri_inv");
  return make_node(Inverse{true, upper}, {a}, to_stream(s));
}

array cholesky(const array& a, bool upper, StreamOrDevice s) {
  check_square_float(a, "cholesky");
  return make_node(Cholesky{upper}, {a}, to_stream(s));
}

array cholesky_inv(const array& a, bool upper, StreamOrDevice s) {
  check_square_float(a, "cholesky_inv");
  // a = L L^T gives a^-1 = L^-T L^-1; a = U^T U gives U^-1 U^-T.
  auto factor_inv = tri_inv(a, upper, s);
  auto factor_inv_t = swapaxes(factor_inv, -1, -2, s);
  return upper ? matmul(factor_inv, factor_inv_t, s) : matmul(factor_inv_t, factor_inv, s);
}

array pinv(const array& a, StreamOrDevice s) {
  check_matrix(a, "pinv");
  check_float(a.dtype(), "pinv");
  const int32_t m = a.shape(-2);
  const int32_t n = a.shape(-1);
  const int32_t k = std::min(m, n);
  auto batch = batch_shape(a);
  if (k == 0) {
    return zeros(with_last(batch, {n, m}), a.dtype(), s);
  }
  auto usv = svd(a, true, s);
  Shape start(a.ndim(), 0);
  // pinv = V[:, :K] diag(1 / S) U[:, :K]^T, dropping the singular values below the cutoff.
  auto u = slice(usv[0], start, with_last(batch, {m, k}), s);
  auto vt = slice(usv[2], start, with_last(batch, {k, n}), s);
  auto values = expand_dims(usv[1], -2, s);
  auto cutoff = multiply(array(std::max(m, n) * finfo(a.dtype()).eps, a.dtype()), max(values, -1, true, s), s);
  auto inverse = where(greater(values, cutoff, s), reciprocal(values, s), array(0, a.dtype()), s);
  return matmul(multiply(swapaxes(vt, -1, -2, s), inverse, s), swapaxes(u, -1, -2, s), s);
}

namespace {

std::vector<array> lu_outputs(const array& a, const char* op, StreamOrDevice s) {
  check_matrix(a, op);
  check_float(a.dtype(), op);
  return make_nodes(LUF{}, {a}, to_stream(s));
}

}  // namespace

std::vector<array> lu(const array& a, StreamOrDevice s) {
  auto out = lu_outputs(a, "lu", s);
  const int32_t m = a.shape(-2);
  const int32_t n = a.shape(-1);
  const int32_t k = std::min(m, n);
  auto batch = batch_shape(a);
  Shape start(a.ndim(), 0);
  auto l = slice(tril(out[0], -1, s), start, with_last(batch, {m, k}), s);
  auto u = slice(triu(out[0], 0, s), start, with_last(batch, {k, n}), s);
  return {out[2], add(l, eye(m, k, 0, a.dtype(), s), s), u};
}

std::pair<array, array> lu_factor(const array& a, StreamOrDevice s) {
  auto out = lu_outputs(a, "lu_factor", s);
  return {out[0], out[1]};
}

// ---------------------------------------------------------------- solvers

namespace {

array solve_impl(const array& a, const array& b, bool triangular, bool upper, const char* op, StreamOrDevice s) {
  check_square(a, op);
  if (b.ndim() < 1) {
    throw_invalid(tag(op) + "The second input must have at least 1 dimension; got a scalar.");
  }
  const bool vector = b.ndim() == 1;
  const int32_t n = a.shape(-1);
  if (b.shape(vector ? -1 : -2) != n) {
    throw_invalid(tag(op) + "The last dimension of the first input with shape " + shape_string(a.shape()) +
                  " must match the " + (vector ? "size" : "second to last dimension") +
                  " of the second input with shape " + shape_string(b.shape()) + ".");
  }
  const Dtype dtype = promote_types(a.dtype(), b.dtype());
  if (dtype != float32 && dtype != float64) {
    throw_invalid(tag(op) + "The inputs must promote to float32 or float64; got " + std::string(dtype_name(a.dtype())) +
                  " and " + std::string(dtype_name(b.dtype())) + ".");
  }
  auto rhs = vector ? reshape(b, {n, 1}, s) : b;
  Shape batch;
  try {
    batch = broadcast_shapes(batch_shape(a), batch_shape(rhs));
  } catch (const error&) {
    throw_invalid(tag(op) + "The batch dimensions of the inputs with shapes " + shape_string(a.shape()) + " and " +
                  shape_string(b.shape()) + " cannot be broadcast.");
  }
  const int32_t r = rhs.shape(-1);
  auto lhs = broadcast_to(astype(a, dtype, s), with_last(batch, {n, n}), s);
  rhs = broadcast_to(astype(rhs, dtype, s), with_last(batch, {n, r}), s);
  auto out = make_node(Solve{triangular, upper}, {lhs, rhs}, to_stream(s));
  return vector ? reshape(out, with_last(batch, {n}), s) : out;
}

}  // namespace

array solve(const array& a, const array& b, StreamOrDevice s) { return solve_impl(a, b, false, false, "solve", s); }

array solve_triangular(const array& a, const array& b, bool upper, StreamOrDevice s) {
  return solve_impl(a, b, true, upper, "solve_triangular", s);
}

// ---------------------------------------------------------------- cross product

array cross(const array& a, const array& b, int axis, StreamOrDevice s) {
  for (const auto* x : {&a, &b}) {
    if (axis < -x->ndim() || axis >= x->ndim()) {
      throw_invalid(tag("cross") + "Axis " + std::to_string(axis) + " is out of bounds for an input with shape " +
                    shape_string(x->shape()) + ".");
    }
    if (x->shape(axis) != 2 && x->shape(axis) != 3) {
      throw_invalid(tag("cross") + "The vectors along axis " + std::to_string(axis) +
                    " must have size 2 or 3; got an input with shape " + shape_string(x->shape()) + ".");
    }
  }
  // As NumPy: the vector axis of each input moves last (size-2 vectors gain a zero z), the others broadcast, and
  // the result's vector axis goes to `axis`.
  const Dtype dtype = promote_types(a.dtype(), b.dtype());
  auto last3 = [&](const array& x) {
    auto y = moveaxis(astype(x, dtype, s), axis, -1, s);
    return y.shape(-1) == 3 ? y : pad(y, {y.ndim() - 1}, {0}, {1}, array(0, dtype), "constant", s);
  };
  auto a3 = last3(a);
  auto b3 = last3(b);
  Shape shape;
  try {
    shape = broadcast_shapes(a3.shape(), b3.shape());
  } catch (const error&) {
    throw_invalid(tag("cross") + "The inputs with shapes " + shape_string(a.shape()) + " and " +
                  shape_string(b.shape()) + " cannot be broadcast once their vector axes are aligned.");
  }
  auto x = split(broadcast_to(a3, shape, s), 3, -1, s);
  auto y = split(broadcast_to(b3, shape, s), 3, -1, s);
  auto out = concatenate({subtract(multiply(x[1], y[2], s), multiply(x[2], y[1], s), s),
                          subtract(multiply(x[2], y[0], s), multiply(x[0], y[2], s), s),
                          subtract(multiply(x[0], y[1], s), multiply(x[1], y[0], s), s)},
                         -1, s);
  return moveaxis(out, -1, normalize_axis(axis, out.ndim(), "linalg::cross"), s);
}

// ---------------------------------------------------------------- eigenvalues

namespace {

bool uplo_is_upper(const std::string& uplo, const char* op) {
  if (uplo != "L" && uplo != "U") {
    throw_invalid(tag(op) + "UPLO must be 'L' or 'U'; got '" + uplo + "'.");
  }
  return uplo == "U";
}

}  // namespace

std::pair<array, array> eig(const array& a, StreamOrDevice s) {
  check_square(a, "eig");
  check_float_or_complex(a.dtype(), "eig");
  auto out = make_nodes(Eig{true}, {a}, to_stream(s));
  return {out[0], out[1]};
}

array eigvals(const array& a, StreamOrDevice s) {
  check_square(a, "eigvals");
  check_float_or_complex(a.dtype(), "eigvals");
  return make_node(Eig{false}, {a}, to_stream(s));
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): MLX's signature
array eigvalsh(const array& a, std::string UPLO, StreamOrDevice s) {  // NOLINT(readability-identifier-naming)
  check_square(a, "eigvalsh");
  check_float_or_complex(a.dtype(), "eigvalsh");
  const bool upper = uplo_is_upper(UPLO, "eigvalsh");
  return make_node(Eigh{upper, false}, {a}, to_stream(s));
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): MLX's signature
std::pair<array, array> eigh(const array& a, std::string UPLO, StreamOrDevice s) {  // NOLINT
  check_square(a, "eigh");
  check_float_or_complex(a.dtype(), "eigh");
  const bool upper = uplo_is_upper(UPLO, "eigh");
  auto out = make_nodes(Eigh{upper, true}, {a}, to_stream(s));
  return {out[0], out[1]};
}

// ---------------------------------------------------------------- determinants

namespace {

/// The LU factorization of a det/slogdet input, its diagonal, and the sign (+1 or -1) of its row permutation.
struct LuParts {
  array diag;
  array permutation_sign;
};

LuParts det_parts(const array& a, const char* op, StreamOrDevice s) {
  check_square(a, op);
  if (!is_integer(a.dtype()) && a.dtype() != bool_ && a.dtype() != float32 && a.dtype() != float64) {
    throw_invalid(tag(op) + "Arrays must have type float32, float64 or an integer type; got " +
                  std::string(dtype_name(a.dtype())) + ".");
  }
  const Dtype dtype = at_least_float(a.dtype());
  auto [lu_mat, pivots] = lu_factor(astype(a, dtype, s), s);
  // Each pivot that moved a row is one transposition of the permutation.
  auto swaps = sum(not_equal(pivots, arange(0.0, a.shape(-1), uint32, s), s), -1, false, s);
  auto sign = subtract(array(1, int32), multiply(array(2, int32), remainder(swaps, array(2, int32), s), s), s);
  return {diagonal(lu_mat, 0, -2, -1, s), astype(sign, dtype, s)};
}

}  // namespace

array det(const array& a, StreamOrDevice s) {
  auto parts = det_parts(a, "det", s);
  return multiply(parts.permutation_sign, prod(parts.diag, -1, false, s), s);
}

std::pair<array, array> slogdet(const array& a, StreamOrDevice s) {
  auto parts = det_parts(a, "slogdet", s);
  // A zero on U's diagonal gives sign 0 and log 0 = -inf, NumPy's result for a singular matrix.
  auto sign_out = multiply(parts.permutation_sign, prod(sign(parts.diag, s), -1, false, s), s);
  auto logabs = sum(log(abs(parts.diag, s), s), -1, false, s);
  return {sign_out, logabs};
}

}  // namespace nuvec::linalg
