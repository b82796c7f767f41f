#pragma once

// Linear algebra, mirroring MLX's linalg.h (namespace nuvec::linalg): same names, argument order, overloads and
// defaults. Matrices are the last two axes; leading axes are batches. The factorizations take float32 or float64
// and run LAPACK on the CPU; det and slogdet are NumPy's, built on lu_factor.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nuvec/core/array.h"

namespace nuvec::linalg {

/// Vector norm (one axis) or matrix norm (two axes) of order `ord`, as NumPy's: without axes, `a` must be 1-d or
/// 2-d. Matrix orders 2, -2 and "nuc" use the singular values.
array norm(const array& a, double ord, const std::optional<std::vector<int>>& axis = std::nullopt,
           bool keepdims = false, StreamOrDevice s = {});
inline array norm(const array& a, double ord, int axis, bool keepdims = false, StreamOrDevice s = {}) {
  return norm(a, ord, std::vector<int>{axis}, keepdims, s);
}
/// Matrix norm "fro" (or "f") or "nuc" over two axes.
array norm(const array& a, const std::string& ord, const std::optional<std::vector<int>>& axis = std::nullopt,
           bool keepdims = false, StreamOrDevice s = {});
inline array norm(const array& a, const std::string& ord, int axis, bool keepdims = false, StreamOrDevice s = {}) {
  return norm(a, ord, std::vector<int>{axis}, keepdims, s);
}
/// The 2-norm of the flattened array, or over one or two axes (Frobenius).
array norm(const array& a, const std::optional<std::vector<int>>& axis = std::nullopt, bool keepdims = false,
           StreamOrDevice s = {});
inline array norm(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {}) {
  return norm(a, std::vector<int>{axis}, keepdims, s);
}

/// Reduced QR: Q (..., M, K) with orthonormal columns and upper-triangular R (..., K, N), K = min(M, N).
std::pair<array, array> qr(const array& a, StreamOrDevice s = {});

/// {U (..., M, M), S (..., K), Vt (..., N, N)} with a = U[..., :K] diag(S) Vt[..., :K, :], or {S} alone; S is real.
std::vector<array> svd(const array& a, bool compute_uv, StreamOrDevice s = {});
inline std::vector<array> svd(const array& a, StreamOrDevice s = {}) { return svd(a, true, s); }

/// Inverse of square matrices; a singular matrix fails at evaluation.
array inv(const array& a, StreamOrDevice s = {});
/// Inverse of the triangular matrices held in the lower (or upper) triangle of `a`.
array tri_inv(const array& a, bool upper = false, StreamOrDevice s = {});

/// L with a = L L^T (or U with a = U^T U), reading the lower (or upper) triangle of a symmetric positive-definite
/// `a`; a matrix that is not positive definite fails at evaluation.
array cholesky(const array& a, bool upper = false, StreamOrDevice s = {});
/// Moore-Penrose pseudo-inverse (..., N, M), from the SVD; singular values below max(M, N) * eps * max(S) count
/// as zero.
array pinv(const array& a, StreamOrDevice s = {});
/// The inverse of a = L L^T (or U^T U) given its Cholesky factor L (or U).
array cholesky_inv(const array& a, bool upper = false, StreamOrDevice s = {});

/// {P, L, U} with a = L[P] @ U: P (..., M) uint32 row indices, L (..., M, K) unit lower, U (..., K, N) upper.
std::vector<array> lu(const array& a, StreamOrDevice s = {});
/// LU (..., M, N) holding L (below the diagonal, unit diagonal implied) and U, and the 0-based row swaps (..., K)
/// uint32 of partial pivoting (LAPACK's getrf).
std::pair<array, array> lu_factor(const array& a, StreamOrDevice s = {});

/// x with a @ x = b; b is (..., N) when 1-d, else (..., N, R); batch axes broadcast.
array solve(const array& a, const array& b, StreamOrDevice s = {});
/// solve() for a triangular `a`, reading only its lower (or upper) triangle.
array solve_triangular(const array& a, const array& b, bool upper = false, StreamOrDevice s = {});

/// Cross product of vectors of size 2 or 3 along `axis` (size-2 vectors have a zero third component).
array cross(const array& a, const array& b, int axis = -1, StreamOrDevice s = {});

/// Eigenvalues and unit eigenvectors (columns) of general square matrices, both complex64.
std::pair<array, array> eig(const array& a, StreamOrDevice s = {});
array eigvals(const array& a, StreamOrDevice s = {});
/// Ascending (real) eigenvalues of symmetric or Hermitian matrices read from the "L" or "U" triangle.
array eigvalsh(const array& a, std::string UPLO = "L", StreamOrDevice s = {});  // NOLINT(readability-identifier-naming)
/// Ascending eigenvalues and orthonormal (unitary) eigenvectors (columns) of symmetric or Hermitian matrices.
std::pair<array, array> eigh(const array& a, std::string UPLO = "L",  // NOLINT(readability-identifier-naming)
                             StreamOrDevice s = {});

/// Determinant (NumPy's det, via lu_factor); integer inputs give float32.
array det(const array& a, StreamOrDevice s = {});
/// {sign, log|det|} (NumPy's slogdet); a singular matrix gives {0, -inf}.
std::pair<array, array> slogdet(const array& a, StreamOrDevice s = {});

}  // namespace nuvec::linalg
