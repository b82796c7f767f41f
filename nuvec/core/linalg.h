#pragma once

// Linear algebra, mirroring MLX's linalg.h (namespace nuvec::linalg): same names, argument order, overloads and
// defaults. Matrices are the last two axes; leading axes are batches. The factorizations take float32 or float64
// (svd and the eigen ops also complex64) and run LAPACK on the CPU; det and slogdet follow NumPy, built on
// lu_factor. Argument errors (dtype, shape, axes) throw nuvec::error when the op is called; what LAPACK finds (a
// singular or non positive definite matrix, no convergence) fails the outputs at evaluation, naming the matrix.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nuvec/core/array.h"

namespace nuvec::linalg {

/// Vector norm (one axis) or matrix norm (two axes) of order `ord`, as NumPy's: without axes, `a` must be 1-d or
/// 2-d. Vector orders: any p (0 counts non-zeros, +-inf take max/min |x|); matrix orders 1, -1, inf, -inf, 2 and -2
/// (2 and -2 from the singular values). Integer inputs give float32, complex64 gives float32. Throws for other
/// axis counts, equal matrix axes or another matrix order.
array norm(const array& a, double ord, const std::optional<std::vector<int>>& axis = std::nullopt,
           bool keepdims = false, StreamOrDevice s = {});
inline array norm(const array& a, double ord, int axis, bool keepdims = false, StreamOrDevice s = {}) {
  return norm(a, ord, std::vector<int>{axis}, keepdims, s);
}
/// Matrix norm "fro" (or "f") or "nuc" (sum of singular values) over two axes (all of a 2-d `a` without axes);
/// other orders or axis counts throw.
array norm(const array& a, const std::string& ord, const std::optional<std::vector<int>>& axis = std::nullopt,
           bool keepdims = false, StreamOrDevice s = {});
inline array norm(const array& a, const std::string& ord, int axis, bool keepdims = false, StreamOrDevice s = {}) {
  return norm(a, ord, std::vector<int>{axis}, keepdims, s);
}
/// The 2-norm of the whole array without axes (any rank), or over one axis or two (Frobenius); more axes throw.
array norm(const array& a, const std::optional<std::vector<int>>& axis = std::nullopt, bool keepdims = false,
           StreamOrDevice s = {});
inline array norm(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {}) {
  return norm(a, std::vector<int>{axis}, keepdims, s);
}

/// Reduced QR of float32/float64 matrices: Q (..., M, K) with orthonormal columns and upper-triangular R (..., K, N),
/// K = min(M, N).
std::pair<array, array> qr(const array& a, StreamOrDevice s = {});

/// Full SVD {U (..., M, M), S (..., K), Vt (..., N, N)} with a = U[..., :, :K] diag(S) Vt[..., :K, :], K = min(M, N),
/// S descending, or {S} alone when compute_uv is false (default true). Takes float32, float64 and complex64; S is
/// real (float32 for complex64).
std::vector<array> svd(const array& a, bool compute_uv, StreamOrDevice s = {});
inline std::vector<array> svd(const array& a, StreamOrDevice s = {}) { return svd(a, true, s); }

/// Inverse of square float32/float64 matrices; a singular matrix fails at evaluation.
array inv(const array& a, StreamOrDevice s = {});
/// Inverse of the triangular matrices held in the lower (default) or upper triangle of square `a`; the other
/// triangle is not read.
array tri_inv(const array& a, bool upper = false, StreamOrDevice s = {});

/// L with a = L L^T (or U with a = U^T U when upper), reading the lower (or upper) triangle of a symmetric
/// positive-definite float32/float64 `a`; a matrix that is not positive definite fails at evaluation.
array cholesky(const array& a, bool upper = false, StreamOrDevice s = {});
/// Moore-Penrose pseudo-inverse (..., N, M) of float32/float64 (..., M, N), from the SVD; singular values below
/// max(M, N) * eps * max(S) count as zero.
array pinv(const array& a, StreamOrDevice s = {});
/// The inverse of the matrix whose Cholesky factor is `a`: L (lower, the default) with L L^T, or U with U^T U.
array cholesky_inv(const array& a, bool upper = false, StreamOrDevice s = {});

/// LU with partial pivoting of float32/float64 (..., M, N): {P, L, U} with a = L[P] @ U (rows of L taken in P's
/// order), P (..., M) uint32, L (..., M, K) unit lower, U (..., K, N) upper, K = min(M, N).
std::vector<array> lu(const array& a, StreamOrDevice s = {});
/// LU (..., M, N) holding L (below the diagonal, unit diagonal implied) and U, and the 0-based row swaps (..., K)
/// uint32 of partial pivoting (LAPACK's getrf: row i was swapped with row pivots[i]).
std::pair<array, array> lu_factor(const array& a, StreamOrDevice s = {});

/// x with a @ x = b for square `a` (..., N, N); b is a vector (N) or matrices (..., N, R), and batch axes
/// broadcast. The inputs must promote to float32 or float64 (the result's dtype); a singular `a` fails at
/// evaluation. Throws for mismatched sizes or batch axes that do not broadcast.
array solve(const array& a, const array& b, StreamOrDevice s = {});
/// solve() for a triangular `a`, reading only its lower (default) or upper triangle.
array solve_triangular(const array& a, const array& b, bool upper = false, StreamOrDevice s = {});

/// Cross product of vectors of size 2 or 3 along `axis` of each input (size-2 vectors get a zero third component),
/// as NumPy's: the other axes broadcast, the result has size 3 on `axis` and the inputs' promoted dtype. Throws for
/// an axis out of range or another vector size.
array cross(const array& a, const array& b, int axis = -1, StreamOrDevice s = {});

/// Eigenvalues (..., N) and unit eigenvectors (columns, (..., N, N)) of general square float32, float64 or
/// complex64 matrices, both complex64 (float64 results are rounded to single precision).
std::pair<array, array> eig(const array& a, StreamOrDevice s = {});
/// The eigenvalues of eig() alone.
array eigvals(const array& a, StreamOrDevice s = {});
/// Ascending real eigenvalues (float32 for complex64) of symmetric or Hermitian matrices read from the "L"
/// (default) or "U" triangle; another UPLO throws.
array eigvalsh(const array& a, std::string UPLO = "L", StreamOrDevice s = {});  // NOLINT(readability-identifier-naming)
/// eigvalsh() and the orthonormal (unitary) eigenvectors (columns, in a's dtype) of symmetric or Hermitian matrices.
std::pair<array, array> eigh(const array& a, std::string UPLO = "L",  // NOLINT(readability-identifier-naming)
                             StreamOrDevice s = {});

/// Determinant of square float32, float64, integer or bool matrices (NumPy's det, via lu_factor); integer and bool
/// inputs give float32.
array det(const array& a, StreamOrDevice s = {});
/// {sign, log|det|} (NumPy's slogdet), dtypes as det(); a singular matrix gives {0, -inf}.
std::pair<array, array> slogdet(const array& a, StreamOrDevice s = {});

}  // namespace nuvec::linalg
