// Linear algebra against NumPy 1.24 (np.linalg, through the oracle in tests/support): every expected value is
// NumPy's unless a comment says otherwise. Factorizations without a unique answer (QR and SVD signs, LU of
// rectangular matrices, eigenvectors) are checked by reconstruction and orthogonality, with NumPy computing the
// products in float64/complex128 on nuvec's outputs. Covered: float32 and float64 (and complex64 for svd, eig and
// eigh), batches (broadcast in solve), 1x1 matrices, empty batches and empty matrices, transposed (non-contiguous)
// inputs, singular inputs failing at evaluation with a clear message, and argument errors.

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using test::matches;
using test::numpy_ref;

constexpr std::array<Dtype, 2> kFloats{float32, float64};
constexpr double kInf = std::numeric_limits<double>::infinity();

using test::error_of;

struct Tolerance {
  double rtol;
  double atol;
};

/// Small, well-conditioned matrices: float32 keeps about 5 digits through a factorization, float64 about 12.
Tolerance tolerance(Dtype dtype) { return dtype == float64 ? Tolerance{1e-9, 1e-10} : Tolerance{3e-4, 3e-4}; }

/// The dtype NumPy's result is cast to, so it compares with nuvec's output dtype.
std::string np_cast(Dtype dtype) { return ".astype(np." + std::string(dtype_name(dtype)) + ")"; }

class LinalgTest : public ::testing::Test {
 protected:
  std::mt19937 rng_{2024};

  array rand(const Shape& shape, Dtype dtype) { return test::random_array(shape, dtype, rng_, -1.0, 1.0); }

  /// A dominant diagonal: invertible and well conditioned.
  array well_conditioned(const Shape& shape, Dtype dtype) {
    const int n = shape.back();
    return add(rand(shape, dtype), multiply(eye(n, dtype), array(static_cast<double>(n), dtype)));
  }

  /// B B^T + n I: symmetric positive definite.
  array spd(const Shape& shape, Dtype dtype) {
    auto b = rand(shape, dtype);
    const int n = shape.back();
    return add(matmul(b, swapaxes(b, -1, -2)), multiply(eye(n, dtype), array(static_cast<double>(n), dtype)));
  }

  /// Expects nuvec's `actual` to match NumPy's `expr` (cast to actual's dtype).
  static void expect_numpy(const array& actual, const std::string& expr, const std::vector<array>& inputs) {
    const auto tol = tolerance(actual.dtype() == complex64 ? float32 : actual.dtype());
    EXPECT_TRUE(
        matches(actual, numpy_ref("np.asarray(" + expr + ")" + np_cast(actual.dtype()), inputs), tol.rtol, tol.atol))
        << expr;
  }

  /// Expects NumPy's float64 `expr` over nuvec's results to be (close to) zero: a residual.
  static void expect_small(const std::string& expr, const std::vector<array>& inputs, Dtype dtype) {
    auto out = numpy_ref("float(np.max(np.abs(" + expr + "), initial=0.0))", inputs);
    const double residual = test::as_doubles(out).at(0);
    EXPECT_LE(residual, dtype == float64 ? 1e-10 : 1e-4) << expr;
  }
};

/// The same values with column-major strides in the last two axes.
array transposed_layout(const array& a) {
  auto t = contiguous(swapaxes(a, -1, -2));
  t.eval();
  return swapaxes(t, -1, -2);
}

// ---------------------------------------------------------------- inverses

TEST_F(LinalgTest, InvMatchesNumpy) {
  for (auto dtype : kFloats) {
    SCOPED_TRACE(dtype_name(dtype));
    for (const Shape& shape : {Shape{1, 1}, Shape{4, 4}, Shape{3, 5, 5}, Shape{2, 1, 3, 3}, Shape{130, 130}}) {
      SCOPED_TRACE(shape_string(shape));
      auto a = well_conditioned(shape, dtype);
      auto out = linalg::inv(a);
      EXPECT_EQ(out.dtype(), dtype);
      expect_numpy(out, "np.linalg.inv(a)", {a});
      expect_numpy(linalg::inv(transposed_layout(a)), "np.linalg.inv(a)", {a});
    }
  }
}

TEST_F(LinalgTest, InvOfManySmallMatricesUsesEveryThread) {
  // 1000 matrices: the batch is split across the pool.
  auto a = well_conditioned({1000, 4, 4}, float32);
  expect_numpy(linalg::inv(a), "np.linalg.inv(a)", {a});
}

TEST_F(LinalgTest, EmptyBatchesAndMatrices) {
  for (const Shape& shape : {Shape{0, 3, 3}, Shape{2, 0, 0}}) {
    SCOPED_TRACE(shape_string(shape));
    auto a = zeros(shape, float32);
    EXPECT_EQ(linalg::inv(a).shape(), shape);
    EXPECT_EQ(linalg::cholesky(a).shape(), shape);
    auto [q, r] = linalg::qr(a);
    EXPECT_EQ(q.shape(), shape);
    eval({q, r, linalg::inv(a), linalg::tri_inv(a), linalg::cholesky(a), linalg::eigvalsh(a), linalg::eigvals(a)});
    auto usv = linalg::svd(a);
    eval(usv);
    EXPECT_EQ(usv[1].shape(), (Shape{shape[0], shape[1]}));
    auto x = linalg::solve(a, zeros({shape[0], shape[1], 2}, float32));
    EXPECT_EQ(x.shape(), (Shape{shape[0], shape[1], 2}));
    x.eval();
    auto c = zeros(shape, complex64);
    auto complex_usv = linalg::svd(c);
    auto [w, v] = linalg::eigh(c);
    auto [ew, ev] = linalg::eig(c);
    eval({complex_usv[0], complex_usv[1], complex_usv[2], w, v, ew, ev});
    EXPECT_EQ(w.shape(), (Shape{shape[0], shape[1]}));
  }
  // The identity factors of an empty complex SVD.
  auto complex_wide = zeros({0, 3}, complex64);
  expect_numpy(linalg::svd(complex_wide)[2], "np.linalg.svd(a)[2]", {complex_wide});
  // Empty matrices: NumPy's det of a 0x0 matrix is 1, its SVD has identity factors.
  auto e = zeros({2, 0, 0}, float64);
  expect_numpy(linalg::det(e), "np.linalg.det(a)", {e});
  auto wide = zeros({0, 3}, float32);
  auto usv = linalg::svd(wide);
  expect_numpy(usv[2], "np.linalg.svd(a)[2]", {wide});
  EXPECT_EQ(linalg::pinv(wide).shape(), (Shape{3, 0}));
  auto plu = linalg::lu(wide);
  EXPECT_EQ(plu[1].shape(), (Shape{0, 0}));
  EXPECT_EQ(plu[2].shape(), (Shape{0, 3}));
  auto tall = zeros({3, 0}, float32);
  expect_numpy(linalg::lu(tall)[0], "np.arange(3)", {tall});
}

TEST_F(LinalgTest, TriInvReadsOneTriangle) {
  for (auto dtype : kFloats) {
    SCOPED_TRACE(dtype_name(dtype));
    for (const Shape& shape : {Shape{1, 1}, Shape{5, 5}, Shape{2, 3, 4, 4}}) {
      auto a = well_conditioned(shape, dtype);  // the other triangle holds values to ignore
      expect_numpy(linalg::tri_inv(a), "np.linalg.inv(np.tril(a))", {a});
      expect_numpy(linalg::tri_inv(a, true), "np.linalg.inv(np.triu(a))", {a});
      expect_numpy(linalg::tri_inv(transposed_layout(a), true), "np.linalg.inv(np.triu(a))", {a});
    }
  }
}

TEST_F(LinalgTest, CholeskyMatchesNumpy) {
  for (auto dtype : kFloats) {
    SCOPED_TRACE(dtype_name(dtype));
    for (const Shape& shape : {Shape{1, 1}, Shape{5, 5}, Shape{3, 4, 4}, Shape{120, 120}}) {
      SCOPED_TRACE(shape_string(shape));
      auto a = spd(shape, dtype);
      // NumPy reads the lower triangle: garbage above it must not matter, nor garbage below for upper = true.
      auto lower_only = add(tril(a), triu(rand(shape, dtype), 1));
      expect_numpy(linalg::cholesky(lower_only), "np.linalg.cholesky(a)", {lower_only});
      auto upper_only = add(triu(a), tril(rand(shape, dtype), -1));
      expect_numpy(linalg::cholesky(upper_only, true),
                   "np.swapaxes(np.linalg.cholesky(np.swapaxes(a, -1, -2)), -1, -2)", {upper_only});
      expect_numpy(linalg::cholesky(transposed_layout(a)), "np.linalg.cholesky(a)", {a});
    }
  }
}

TEST_F(LinalgTest, CholeskyInvMatchesNumpy) {
  for (auto dtype : kFloats) {
    SCOPED_TRACE(dtype_name(dtype));
    auto a = spd({2, 5, 5}, dtype);
    expect_numpy(linalg::cholesky_inv(linalg::cholesky(a)), "np.linalg.inv(a)", {a});
    expect_numpy(linalg::cholesky_inv(linalg::cholesky(a, true), true), "np.linalg.inv(a)", {a});
  }
}

TEST_F(LinalgTest, PinvMatchesNumpy) {
  for (auto dtype : kFloats) {
    SCOPED_TRACE(dtype_name(dtype));
    for (const Shape& shape : {Shape{4, 4}, Shape{6, 3}, Shape{3, 6}, Shape{2, 4, 3}}) {
      auto a = rand(shape, dtype);
      expect_numpy(linalg::pinv(a), "np.linalg.pinv(a)", {a});
    }
    // Rank 1: the zero singular values (rounding noise) are dropped; NumPy's default rcond of 1e-15 keeps them.
    auto v = rand({4, 1}, dtype);
    auto rank1 = matmul(v, swapaxes(v, 0, 1));
    expect_numpy(linalg::pinv(rank1), "np.linalg.pinv(a, rcond=4 * np.finfo(a.dtype).eps)", {rank1});
  }
}

// ---------------------------------------------------------------- factorizations

TEST_F(LinalgTest, QrReconstructs) {
  for (auto dtype : kFloats) {
    SCOPED_TRACE(dtype_name(dtype));
    for (const Shape& shape : {Shape{1, 1}, Shape{4, 4}, Shape{6, 3}, Shape{3, 6}, Shape{2, 3, 5, 4}}) {
      SCOPED_TRACE(shape_string(shape));
      auto a = rand(shape, dtype);
      auto [q, r] = linalg::qr(transposed_layout(a));
      const int k = std::min(shape[shape.size() - 2], shape.back());
      EXPECT_EQ(q.shape(-1), k);
      EXPECT_EQ(r.shape(-2), k);
      EXPECT_EQ(q.dtype(), dtype);
      expect_small("b @ c - a", {a, q, r}, dtype);
      expect_small("np.swapaxes(a, -1, -2) @ a - np.eye(a.shape[-1])", {q}, dtype);
      expect_small("np.tril(a, -1)", {r}, dtype);
      // Householder QR is unique up to the signs of R's rows.
      expect_numpy(abs(r), "np.abs(np.linalg.qr(a)[1])", {a});
    }
  }
}

TEST_F(LinalgTest, SvdMatchesAndReconstructs) {
  for (auto dtype : kFloats) {
    SCOPED_TRACE(dtype_name(dtype));
    for (const Shape& shape : {Shape{1, 1}, Shape{4, 4}, Shape{5, 3}, Shape{3, 5}, Shape{2, 3, 4, 2}}) {
      SCOPED_TRACE(shape_string(shape));
      auto a = rand(shape, dtype);
      auto values = linalg::svd(a, false);
      ASSERT_EQ(values.size(), 1U);
      expect_numpy(values[0], "np.linalg.svd(a, compute_uv=False)", {a});
      auto usv = linalg::svd(transposed_layout(a));
      ASSERT_EQ(usv.size(), 3U);
      const int m = shape[shape.size() - 2];
      const int n = shape.back();
      EXPECT_EQ(usv[0].shape(-1), m);
      EXPECT_EQ(usv[2].shape(-1), n);
      expect_numpy(usv[1], "np.linalg.svd(a, compute_uv=False)", {a});
      const std::string k = std::to_string(std::min(m, n));
      expect_small("(b[..., :" + k + "] * c[..., None, :]) @ d[..., :" + k + ", :] - a", {a, usv[0], usv[1], usv[2]},
                   dtype);
      expect_small("np.swapaxes(a, -1, -2) @ a - np.eye(a.shape[-1])", {usv[0]}, dtype);
      expect_small("a @ np.swapaxes(a, -1, -2) - np.eye(a.shape[-1])", {usv[2]}, dtype);
    }
  }
}

TEST_F(LinalgTest, LuReconstructs) {
  for (auto dtype : kFloats) {
    SCOPED_TRACE(dtype_name(dtype));
    for (const Shape& shape : {Shape{1, 1}, Shape{4, 4}, Shape{5, 3}, Shape{3, 5}, Shape{2, 3, 4, 4}}) {
      SCOPED_TRACE(shape_string(shape));
      auto a = rand(shape, dtype);
      auto plu = linalg::lu(transposed_layout(a));
      ASSERT_EQ(plu.size(), 3U);
      EXPECT_EQ(plu[0].dtype(), uint32);
      // MLX's convention: a = L[P] @ U, P a row index per row of a.
      expect_small("np.take_along_axis(c, b[..., None].astype(np.int64), axis=-2) @ d - a", {a, plu[0], plu[1], plu[2]},
                   dtype);
      expect_small("np.triu(a) - np.eye(*a.shape[-2:])", {plu[1]}, dtype);
      expect_small("np.tril(a, -1)", {plu[2]}, dtype);
      expect_small("np.sort(a, axis=-1) - np.arange(a.shape[-1])", {plu[0]}, dtype);
    }
  }
}

/// Partial pivoting as LAPACK's getrf does it (first largest magnitude in the column), in float64.
constexpr const char* kNumpyLuFactor = R"(
lu = a.astype(np.float64).copy()
m, n = lu.shape
piv = np.zeros(min(m, n), dtype=np.uint32)
for j in range(min(m, n)):
    p = j + int(np.argmax(np.abs(lu[j:, j])))
    piv[j] = p
    lu[[j, p]] = lu[[p, j]]
    if lu[j, j] != 0:
        lu[j + 1:, j] /= lu[j, j]
    lu[j + 1:, j + 1:] -= np.outer(lu[j + 1:, j], lu[j, j + 1:])
out = (lu.astype(a.dtype), piv)
)";

TEST_F(LinalgTest, LuFactorMatchesPartialPivoting) {
  for (auto dtype : kFloats) {
    SCOPED_TRACE(dtype_name(dtype));
    for (const Shape& shape : {Shape{1, 1}, Shape{5, 5}, Shape{6, 4}, Shape{4, 6}}) {
      SCOPED_TRACE(shape_string(shape));
      auto a = rand(shape, dtype);
      auto [lu_mat, pivots] = linalg::lu_factor(a);
      EXPECT_EQ(pivots.dtype(), uint32);
      auto expected = test::numpy(kNumpyLuFactor, {test::to_host(a)});
      const auto tol = tolerance(dtype);
      EXPECT_TRUE(matches(lu_mat, expected.at(0), tol.rtol, tol.atol));
      EXPECT_TRUE(matches(pivots, expected.at(1), 0, 0));
    }
  }
}

TEST_F(LinalgTest, OneOutputOfAFactorization) {
  // The other outputs are dropped before evaluation: their kernels write them to scratch, not to a placeholder.
  auto a = well_conditioned({3, 6, 6}, float64);
  auto r = linalg::qr(a).second;
  expect_numpy(abs(r), "np.abs(np.linalg.qr(a)[1])", {a});
  auto values = linalg::svd(a)[1];
  expect_numpy(values, "np.linalg.svd(a, compute_uv=False)", {a});
  auto pivots = linalg::lu_factor(a).second;
  auto l = linalg::lu(a)[1];
  auto w = linalg::eigh(a).first;
  auto v = linalg::eig(a).second;
  eval({pivots, l, w, v});
  expect_numpy(w, "np.linalg.eigvalsh(a)", {a});
  expect_small("np.linalg.norm(a, axis=-2) - 1", {v}, float32);
}

// ---------------------------------------------------------------- solvers

TEST_F(LinalgTest, SolveMatchesNumpy) {
  for (auto dtype : kFloats) {
    SCOPED_TRACE(dtype_name(dtype));
    auto a = well_conditioned({4, 4}, dtype);
    auto b = rand({4, 3}, dtype);
    expect_numpy(linalg::solve(a, b), "np.linalg.solve(a, b)", {a, b});
    expect_numpy(linalg::solve(transposed_layout(a), transposed_layout(b)), "np.linalg.solve(a, b)", {a, b});
    // A 1-d right-hand side is a vector (NumPy 2's rule; 1.24 needs the explicit axis).
    auto v = rand({4}, dtype);
    auto x = linalg::solve(a, v);
    EXPECT_EQ(x.shape(), (Shape{4}));
    expect_numpy(x, "np.linalg.solve(a, b[:, None])[:, 0]", {a, v});
    // Batch axes broadcast; an integer right-hand side promotes.
    auto batched = well_conditioned({2, 1, 4, 4}, dtype);
    auto rhs = rand({3, 4, 2}, int32);
    auto y = linalg::solve(batched, rhs);
    EXPECT_EQ(y.shape(), (Shape{2, 3, 4, 2}));
    EXPECT_EQ(y.dtype(), dtype);
    // NumPy 1.24 reads a b with one axis fewer than a as vectors: broadcast both explicitly.
    expect_numpy(y, "np.linalg.solve(np.broadcast_to(a, (2, 3, 4, 4)), np.broadcast_to(b, (2, 3, 4, 2)).astype(float))",
                 {batched, rhs});
    expect_numpy(linalg::solve(batched, v), "np.linalg.solve(a, b[:, None])[..., 0]", {batched, v});
    auto one = well_conditioned({1, 1}, dtype);
    auto rhs1 = rand({1, 5}, dtype);
    expect_numpy(linalg::solve(one, rhs1), "np.linalg.solve(a, b)", {one, rhs1});
  }
}

TEST_F(LinalgTest, SolveTriangularReadsOneTriangle) {
  for (auto dtype : kFloats) {
    SCOPED_TRACE(dtype_name(dtype));
    auto a = well_conditioned({2, 5, 5}, dtype);
    auto b = rand({2, 5, 3}, dtype);
    expect_numpy(linalg::solve_triangular(a, b), "np.linalg.solve(np.tril(a), b)", {a, b});
    expect_numpy(linalg::solve_triangular(transposed_layout(a), b, true), "np.linalg.solve(np.triu(a), b)", {a, b});
    auto v = rand({5}, dtype);
    expect_numpy(linalg::solve_triangular(a, v, true),
                 "np.linalg.solve(np.triu(a), np.broadcast_to(b[:, None], (2, 5, 1)))[..., 0]", {a, v});
  }
}

TEST_F(LinalgTest, ComplexSvdMatchesAndReconstructs) {
  for (const Shape& shape : {Shape{1, 1}, Shape{4, 4}, Shape{5, 3}, Shape{3, 5}, Shape{2, 3, 4, 2}, Shape{100, 120}}) {
    SCOPED_TRACE(shape_string(shape));
    auto a = rand(shape, complex64);
    auto values = linalg::svd(a, false);
    ASSERT_EQ(values.size(), 1U);
    EXPECT_EQ(values[0].dtype(), float32);
    expect_numpy(values[0], "np.linalg.svd(a, compute_uv=False)", {a});
    auto usv = linalg::svd(transposed_layout(a));
    ASSERT_EQ(usv.size(), 3U);
    EXPECT_EQ(usv[0].dtype(), complex64);
    EXPECT_EQ(usv[1].dtype(), float32);
    EXPECT_EQ(usv[2].dtype(), complex64);
    expect_numpy(usv[1], "np.linalg.svd(a, compute_uv=False)", {a});
    const std::string k = std::to_string(std::min(shape[shape.size() - 2], shape.back()));
    const double scale = shape.back() > 10 ? 0.1 : 1.0;  // float32 residuals grow with n
    expect_small("((b[..., :" + k + "] * c[..., None, :]) @ d[..., :" + k + ", :] - a) * " + std::to_string(scale),
                 {a, usv[0], usv[1], usv[2]}, float32);
    // Unitary U and V^H.
    expect_small("(np.conj(np.swapaxes(a, -1, -2)) @ a - np.eye(a.shape[-1])) * " + std::to_string(scale), {usv[0]},
                 float32);
    expect_small("(a @ np.conj(np.swapaxes(a, -1, -2)) - np.eye(a.shape[-1])) * " + std::to_string(scale), {usv[2]},
                 float32);
  }
  // The matrix norms made of singular values take complex matrices too, as float32.
  auto m = rand({2, 4, 3}, complex64);
  for (double ord : {2.0, -2.0}) {
    auto norm = linalg::norm(m, ord, std::vector<int>{1, 2});
    EXPECT_EQ(norm.dtype(), float32);
    expect_numpy(norm, "np.linalg.norm(a, ord=" + std::to_string(ord) + ", axis=(1, 2))", {m});
  }
  expect_numpy(linalg::norm(m, "nuc", std::vector<int>{-1, -2}), "np.linalg.norm(a, ord='nuc', axis=(-1, -2))", {m});
}

// ---------------------------------------------------------------- eigenvalues

TEST_F(LinalgTest, EigMatchesNumpy) {
  for (auto dtype : {float32, float64, complex64}) {
    SCOPED_TRACE(dtype_name(dtype));
    for (const Shape& shape : {Shape{1, 1}, Shape{4, 4}, Shape{3, 5, 5}, Shape{100, 100}}) {
      SCOPED_TRACE(shape_string(shape));
      auto a = rand(shape, dtype);  // not symmetric: complex eigenvalues (in pairs, for real matrices)
      auto [w, v] = linalg::eig(transposed_layout(a));
      EXPECT_EQ(w.dtype(), complex64);
      EXPECT_EQ(v.dtype(), complex64);
      EXPECT_EQ(w.shape(), Shape(shape.begin(), shape.end() - 1));
      // The order is LAPACK's in both; compare sorted, as a different LAPACK build may order differently.
      auto sorted = test::from_host(numpy_ref("np.sort_complex(a)", {w}));
      expect_numpy(sorted, "np.sort_complex(np.linalg.eigvals(a))", {a});
      auto sorted_values = test::from_host(numpy_ref("np.sort_complex(a)", {linalg::eigvals(a)}));
      expect_numpy(sorted_values, "np.sort_complex(np.linalg.eigvals(a))", {a});
      // A v = v diag(w), unit columns; complex64 outputs limit float64 to single precision here, and float32
      // residuals grow with n.
      const std::string scale = shape.back() > 10 ? "0.1" : "1";
      expect_small("(a @ b - b * c[..., None, :]) * " + scale, {a, v, w}, float32);
      expect_small("np.linalg.norm(a, axis=-2) - 1", {v}, float32);
    }
  }
  auto rotation = array({0.0F, -1.0F, 1.0F, 0.0F}, {2, 2});
  expect_numpy(linalg::eigvals(rotation), "np.linalg.eigvals(a)", {rotation});
}

TEST_F(LinalgTest, ComplexEighMatchesNumpy) {
  for (const Shape& shape : {Shape{1, 1}, Shape{5, 5}, Shape{2, 3, 4, 4}, Shape{110, 110}}) {
    SCOPED_TRACE(shape_string(shape));
    auto a = rand(shape, complex64);  // not Hermitian: each UPLO reads its own triangle (and the diagonal's real part)
    for (const std::string uplo : {"L", "U"}) {
      auto [w, v] = linalg::eigh(transposed_layout(a), uplo);
      EXPECT_EQ(w.dtype(), float32);
      EXPECT_EQ(v.dtype(), complex64);
      expect_numpy(w, "np.linalg.eigvalsh(a, UPLO='" + uplo + "')", {a});
      auto values = linalg::eigvalsh(a, uplo);
      EXPECT_EQ(values.dtype(), float32);
      expect_numpy(values, "np.linalg.eigvalsh(a, UPLO='" + uplo + "')", {a});
      const std::string half = uplo == "L" ? "np.tril(a, -1)" : "np.triu(a, 1)";
      const std::string hermitian =
          "(" + half + " + np.conj(np.swapaxes(" + half + ", -1, -2)) + np.real(a) * np.eye(a.shape[-1]))";
      const double scale = shape.back() > 10 ? 0.1 : 1.0;
      expect_small("(" + hermitian + " @ b - b * c[..., None, :]) * " + std::to_string(scale), {a, v, w}, float32);
      expect_small("(np.conj(np.swapaxes(a, -1, -2)) @ a - np.eye(a.shape[-1])) * " + std::to_string(scale), {v},
                   float32);
    }
  }
}

TEST_F(LinalgTest, EighMatchesNumpy) {
  for (auto dtype : kFloats) {
    SCOPED_TRACE(dtype_name(dtype));
    for (const Shape& shape : {Shape{1, 1}, Shape{5, 5}, Shape{2, 3, 4, 4}, Shape{110, 110}}) {
      SCOPED_TRACE(shape_string(shape));
      auto a = rand(shape, dtype);  // not symmetric: each UPLO reads its own triangle
      for (const std::string uplo : {"L", "U"}) {
        auto [w, v] = linalg::eigh(transposed_layout(a), uplo);
        EXPECT_EQ(w.dtype(), dtype);
        expect_numpy(w, "np.linalg.eigvalsh(a, UPLO='" + uplo + "')", {a});
        expect_numpy(linalg::eigvalsh(a, uplo), "np.linalg.eigvalsh(a, UPLO='" + uplo + "')", {a});
        const std::string sym = uplo == "L" ? "(np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2))"
                                            : "(np.triu(a) + np.swapaxes(np.triu(a, 1), -1, -2))";
        const double scale = dtype == float64 ? 1.0 : 0.1;  // float32 residuals grow with n
        expect_small("(" + sym + " @ b - b * c[..., None, :]) * " + std::to_string(scale), {a, v, w}, dtype);
        expect_small("(np.swapaxes(a, -1, -2) @ a - np.eye(a.shape[-1])) * " + std::to_string(scale), {v}, dtype);
      }
    }
  }
}

// ---------------------------------------------------------------- determinants

TEST_F(LinalgTest, DetAndSlogdetMatchNumpy) {
  for (auto dtype : kFloats) {
    SCOPED_TRACE(dtype_name(dtype));
    for (const Shape& shape : {Shape{1, 1}, Shape{3, 3}, Shape{6, 6}, Shape{2, 4, 4}}) {
      SCOPED_TRACE(shape_string(shape));
      auto a = rand(shape, dtype);  // random signs: both parities and negative pivots occur
      expect_numpy(linalg::det(a), "np.linalg.det(a)", {a});
      auto [sign, logabs] = linalg::slogdet(transposed_layout(a));
      expect_numpy(sign, "np.linalg.slogdet(a)[0]", {a});
      expect_numpy(logabs, "np.linalg.slogdet(a)[1]", {a});
    }
  }
  auto singular = array({1.0F, 2.0F, 2.0F, 4.0F}, {2, 2});
  expect_numpy(linalg::det(singular), "np.linalg.det(a)", {singular});
  auto [sign, logabs] = linalg::slogdet(singular);
  EXPECT_EQ(sign.item<float>(), 0.0F);
  EXPECT_EQ(logabs.item<float>(), -std::numeric_limits<float>::infinity());
  auto integers = array({2, 1, 0, 1, 3, 1, 0, 1, 4}, {3, 3});
  auto d = linalg::det(integers);
  EXPECT_EQ(d.dtype(), float32);
  EXPECT_NEAR(d.item<float>(), 18.0F, 1e-5);
}

// ---------------------------------------------------------------- norms and cross

TEST_F(LinalgTest, VectorNormsMatchNumpy) {
  for (auto dtype : {float32, float64, int32}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto v = rand({7}, dtype);
    auto x = rand({2, 3, 4}, dtype);
    const Dtype out_dtype = dtype == float64 ? float64 : float32;
    auto norm_v = linalg::norm(v);
    EXPECT_EQ(norm_v.dtype(), out_dtype);
    expect_numpy(norm_v, "np.linalg.norm(a)", {v});
    expect_numpy(linalg::norm(x), "np.linalg.norm(a)", {x});
    expect_numpy(linalg::norm(x, std::nullopt, true), "np.linalg.norm(a.ravel()).reshape(1, 1, 1)", {x});
    expect_numpy(linalg::norm(x, std::vector<int>{0, 2}), "np.linalg.norm(a, axis=(0, 2))", {x});
    expect_numpy(linalg::norm(x, -2, true), "np.linalg.norm(a, axis=-2, keepdims=True)", {x});
    for (double ord : {0.0, 1.0, 2.0, kInf, -kInf, 3.0, 0.5, -1.0}) {
      SCOPED_TRACE(ord);
      const std::string np_ord = std::isinf(ord) ? (ord > 0 ? "np.inf" : "-np.inf") : std::to_string(ord);
      expect_numpy(linalg::norm(v, ord), "np.linalg.norm(a, ord=" + np_ord + ")", {v});
      expect_numpy(linalg::norm(x, ord, -1), "np.linalg.norm(a, ord=" + np_ord + ", axis=-1)", {x});
      expect_numpy(linalg::norm(x, ord, 1, true), "np.linalg.norm(a, ord=" + np_ord + ", axis=1, keepdims=True)", {x});
    }
  }
  auto c = test::random_array({5}, complex64, rng_);
  auto norm_c = linalg::norm(c);
  EXPECT_EQ(norm_c.dtype(), float32);
  expect_numpy(norm_c, "np.linalg.norm(a)", {c});
  expect_numpy(linalg::norm(c, 1.0), "np.linalg.norm(a, ord=1)", {c});
}

TEST_F(LinalgTest, MatrixNormsMatchNumpy) {
  for (auto dtype : {float32, float64, int32}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto m = rand({4, 3}, dtype);
    auto x = rand({2, 3, 4}, dtype);
    for (double ord : {1.0, -1.0, 2.0, -2.0, kInf, -kInf}) {
      SCOPED_TRACE(ord);
      const std::string np_ord = std::isinf(ord) ? (ord > 0 ? "np.inf" : "-np.inf") : std::to_string(ord);
      expect_numpy(linalg::norm(m, ord), "np.linalg.norm(a, ord=" + np_ord + ")", {m});
      for (auto axes : {std::vector<int>{1, 2}, std::vector<int>{-1, 0}, std::vector<int>{2, 0}}) {
        std::string np_axes = std::to_string(axes[0]) + ", " + std::to_string(axes[1]);
        np_axes = "(" + np_axes + ")";
        expect_numpy(linalg::norm(x, ord, axes), "np.linalg.norm(a, ord=" + np_ord + ", axis=" + np_axes + ")", {x});
        expect_numpy(linalg::norm(x, ord, axes, true),
                     "np.linalg.norm(a, ord=" + np_ord + ", axis=" + np_axes + ", keepdims=True)", {x});
      }
    }
    for (const std::string ord : {"fro", "nuc"}) {
      expect_numpy(linalg::norm(m, ord), "np.linalg.norm(a, ord='" + ord + "')", {m});
      expect_numpy(linalg::norm(x, ord, std::vector<int>{0, -1}, true),
                   "np.linalg.norm(a, ord='" + ord +
                       "', axis=(0, -1), "
                       "keepdims=True)",
                   {x});
    }
  }
}

TEST_F(LinalgTest, CrossMatchesNumpy) {
  for (auto dtype : {float32, float64, int32}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto a = rand({4, 3}, dtype);
    auto b = rand({3}, dtype);
    auto out = linalg::cross(a, b);
    EXPECT_EQ(out.dtype(), dtype);
    expect_numpy(out, "np.cross(a, b)", {a, b});
    auto c = rand({3, 5}, dtype);
    auto d = rand({2, 3, 5}, dtype);
    expect_numpy(linalg::cross(c, d, 0), "np.cross(a, b, axis=0)", {c, d});
    expect_numpy(linalg::cross(d, c, -2), "np.cross(a, b, axis=-2)", {d, c});
    // Size-2 vectors have z = 0; MLX keeps three components where NumPy 1.24 gives the z alone for two 2-vectors.
    auto e = rand({4, 2}, dtype);
    expect_numpy(linalg::cross(e, a), "np.cross(a, b)", {e, a});
    expect_numpy(linalg::cross(a, e), "np.cross(a, b)", {a, e});
    expect_numpy(linalg::cross(e, e), "np.zeros((4, 3))", {e});
  }
}

// ---------------------------------------------------------------- errors

TEST_F(LinalgTest, SingularInputsFailAtEvaluation) {
  auto singular = array({1.0F, 2.0F, 2.0F, 4.0F}, {2, 2});
  auto x = linalg::inv(singular);  // the op cannot know: only the kernel's LU finds the zero pivot
  EXPECT_EQ(error_of([&] { x.eval(); }),
            "[linalg::inv] The matrix is singular: U[1, 1] of its LU factorization is zero.");
  EXPECT_EQ(x.status(), Status::failed);
  auto good = well_conditioned({2, 2}, float32);
  auto batch = stack({good, singular, good});
  EXPECT_EQ(error_of([&] { linalg::inv(batch).eval(); }),
            "[linalg::inv] The matrix is singular: U[1, 1] of its LU factorization is zero (matrix 1 of the batch).");
  EXPECT_EQ(error_of([&] {
              linalg::solve(singular, array({1.0F, 1.0F})).eval();
            }),
            "[linalg::solve] The matrix is singular: U[1, 1] of its LU factorization is zero.");
  auto zero_diagonal = array({1.0F, 0.0F, 3.0F, 0.0F}, {2, 2});
  EXPECT_EQ(error_of([&] { linalg::tri_inv(zero_diagonal).eval(); }),
            "[linalg::tri_inv] The matrix is singular: diagonal element 1 is zero.");
  EXPECT_EQ(error_of([&] {
              linalg::solve_triangular(zero_diagonal, array({1.0F, 1.0F})).eval();
            }),
            "[linalg::solve_triangular] The matrix is singular: diagonal element 1 is zero.");
  auto indefinite = array({1.0, 2.0, 2.0, 1.0}, {2, 2}, float64);
  EXPECT_EQ(error_of([&] { linalg::cholesky(indefinite).eval(); }),
            "[linalg::cholesky] The matrix is not positive definite: its leading minor of order 2 is not positive.");
  // A consumer inherits the failure; an unrelated array still evaluates.
  auto consumer = add(linalg::inv(singular), array(1.0F));
  EXPECT_NE(error_of([&] { consumer.eval(); }).find("singular"), std::string::npos);
  expect_numpy(linalg::inv(good), "np.linalg.inv(a)", {good});
}

TEST_F(LinalgTest, ArgumentErrors) {
  auto vec = zeros({3}, float32);
  auto rect = zeros({2, 3}, float32);
  auto ints = zeros({3, 3}, int32);
  EXPECT_EQ(error_of([&] { linalg::inv(vec); }),
            "[linalg::inv] Arrays must have at least 2 dimensions; got shape (3).");
  EXPECT_EQ(error_of([&] { linalg::inv(rect); }), "[linalg::inv] Only defined for square matrices; got shape (2,3).");
  EXPECT_EQ(error_of([&] { linalg::inv(ints); }), "[linalg::inv] Arrays must have type float32 or float64; got int32.");
  EXPECT_EQ(error_of([&] { linalg::cholesky(rect); }),
            "[linalg::cholesky] Only defined for square matrices; got shape (2,3).");
  EXPECT_EQ(error_of([&] {
              linalg::qr(zeros({3, 3}, float16));
            }),
            "[linalg::qr] Arrays must have type float32 or float64; got float16.");
  EXPECT_EQ(error_of([&] { linalg::svd(vec); }),
            "[linalg::svd] Arrays must have at least 2 dimensions; got shape (3).");
  EXPECT_EQ(error_of([&] { linalg::lu(ints); }), "[linalg::lu] Arrays must have type float32 or float64; got int32.");
  EXPECT_EQ(error_of([&] { linalg::eig(rect); }), "[linalg::eig] Only defined for square matrices; got shape (2,3).");
  EXPECT_EQ(error_of([&] { linalg::eigvalsh(ints); }),
            "[linalg::eigvalsh] Arrays must have type float32, float64 or complex64; got int32.");
  EXPECT_EQ(error_of([&] {
              linalg::svd(zeros({2, 2}, float16));
            }),
            "[linalg::svd] Arrays must have type float32, float64 or complex64; got float16.");
  EXPECT_EQ(error_of([&] {
              linalg::inv(zeros({2, 2}, complex64));
            }),
            "[linalg::inv] Arrays must have type float32 or float64; got complex64.");
  EXPECT_EQ(error_of([&] { linalg::eigh(zeros({3, 3}), "X"); }), "[linalg::eigh] UPLO must be 'L' or 'U'; got 'X'.");
  EXPECT_EQ(error_of([&] {
              linalg::det(zeros({3, 3}, complex64));
            }),
            "[linalg::det] Arrays must have type float32, float64 or an integer type; got complex64.");
  EXPECT_EQ(error_of([&] {
              linalg::solve(zeros({3, 3}), zeros({2}));
            }),
            "[linalg::solve] The last dimension of the first input with shape (3,3) must match the size of the second "
            "input with shape (2).");
  EXPECT_EQ(error_of([&] { linalg::solve(ints, ints); }),
            "[linalg::solve] The inputs must promote to float32 or float64; got int32 and int32.");
  EXPECT_EQ(error_of([&] {
              linalg::solve(zeros({2, 3, 3}), zeros({4, 3, 1}));
            }),
            "[linalg::solve] The batch dimensions of the inputs with shapes (2,3,3) and (4,3,1) cannot be broadcast.");
  EXPECT_EQ(error_of([&] { linalg::norm(rect, 3.0); }),
            "[linalg::norm] Invalid ord 3.000000 for a matrix norm; expected 1, -1, 2, -2, inf, -inf, 'fro' or 'nuc'.");
  EXPECT_EQ(error_of([&] { linalg::norm(rect, "abc"); }),
            "[linalg::norm] Invalid ord 'abc' for a matrix norm; expected 'fro' or 'nuc'.");
  EXPECT_EQ(error_of([&] { linalg::norm(vec, "fro"); }),
            "[linalg::norm] Norm 'fro' is only defined for matrices (two axes); got 1 axes.");
  EXPECT_EQ(error_of([&] {
              linalg::norm(zeros({2, 2, 2}), 2.0);
            }),
            "[linalg::norm] Expected one axis (vector norm) or two (matrix norm); got 3.");
  EXPECT_EQ(error_of([&] {
              linalg::norm(rect, 2.0, std::vector<int>{1, -1});
            }),
            "[linalg::norm] The two axes of a matrix norm must differ; got 1 and -1.");
  EXPECT_EQ(error_of([&] { linalg::cross(zeros({4}), zeros({3})); }),
            "[linalg::cross] The vectors along axis -1 must have size 2 or 3; got an input with shape (4).");
  EXPECT_EQ(error_of([&] { linalg::cross(zeros({3}), zeros({3}), 1); }),
            "[linalg::cross] Axis 1 is out of bounds for an input with shape (3).");
}

}  // namespace
}  // namespace nuvec
