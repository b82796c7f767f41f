// MLX's linalg.h, called as MLX code calls it (norm's order forms and axes, defaults, trailing streams): a
// declaration that changes or goes missing fails to compile here. Results are checked against hand-computed values.

#include <gtest/gtest.h>

#include <cmath>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

bool close(const array& a, const array& b) { return allclose(a, b, 1e-4, 1e-5).item<bool>(); }

TEST(MlxApiLinalg, Norms) {
  const Stream s = default_stream(Device::cpu);
  auto a = array({3.0F, 4.0F, 0.0F, 0.0F}, {2, 2});
  EXPECT_FLOAT_EQ(take(linalg::norm(a, 2.0, std::vector<int>{1}, false, s), 0).item<float>(), 5.0F);
  EXPECT_EQ(linalg::norm(a, 1.0, 0, true, s).shape(), (Shape{1, 2}));
  EXPECT_FLOAT_EQ(linalg::norm(a, 1.0).item<float>(), 4.0F);  // 2-d: the largest column sum
  EXPECT_FLOAT_EQ(linalg::norm(a, "fro", std::nullopt, false, s).item<float>(), 5.0F);
  EXPECT_EQ(linalg::norm(ones({2, 3, 3}), "nuc", std::vector<int>{1, 2}).shape(), Shape{2});
  EXPECT_EQ(linalg::norm(a, "fro", std::vector<int>{0, 1}, true).shape(), (Shape{1, 1}));
  // String orders are matrix norms: one axis throws, in MLX too.
  EXPECT_THROW((void)linalg::norm(ones({2, 3}), std::string("fro"), -1, false, s), std::invalid_argument);
  EXPECT_FLOAT_EQ(linalg::norm(a).item<float>(), 5.0F);
  EXPECT_EQ(linalg::norm(a, std::vector<int>{0}, true, s).shape(), (Shape{1, 2}));
  EXPECT_EQ(linalg::norm(a, 1).shape(), Shape{2});
  EXPECT_EQ(linalg::norm(a, 1, true, s).shape(), (Shape{2, 1}));
}

TEST(MlxApiLinalg, Factorizations) {
  const Stream s = default_stream(Device::cpu);
  auto a = array({4.0F, 2.0F, 2.0F, 3.0F}, {2, 2});
  auto [q, r] = linalg::qr(a, s);
  EXPECT_TRUE(close(matmul(q, r), a));
  auto usv = linalg::svd(a, true, s);
  ASSERT_EQ(usv.size(), 3U);
  EXPECT_TRUE(close(matmul(usv[0] * usv[1], usv[2]), a));
  EXPECT_EQ(linalg::svd(a, false, s).size(), 1U);
  EXPECT_EQ(linalg::svd(a).size(), 3U);
  auto inverse = array({3.0F / 8.0F, -2.0F / 8.0F, -2.0F / 8.0F, 4.0F / 8.0F}, {2, 2});  // adj(a) / det(a)
  EXPECT_TRUE(close(linalg::inv(a, s), inverse));
  EXPECT_TRUE(close(linalg::pinv(a, s), inverse));
  auto lower = array({2.0F, 0.0F, 1.0F, std::sqrt(2.0F)}, {2, 2});  // cholesky(a) by hand
  EXPECT_TRUE(close(linalg::cholesky(a, false, s), lower));
  EXPECT_TRUE(close(linalg::cholesky(a, true), transpose(lower)));
  EXPECT_TRUE(close(linalg::cholesky_inv(lower, false, s), inverse));
  EXPECT_TRUE(close(linalg::cholesky_inv(transpose(lower), true), inverse));
  EXPECT_TRUE(close(matmul(linalg::tri_inv(lower, false, s), lower), eye(2)));
  EXPECT_TRUE(close(matmul(linalg::tri_inv(transpose(lower), true), transpose(lower)), eye(2)));
  auto plu = linalg::lu(a, s);  // a = L[p] @ U, p a row permutation
  ASSERT_EQ(plu.size(), 3U);
  EXPECT_TRUE(close(matmul(take(plu[1], plu[0], 0), plu[2]), a));
  auto [lu, pivots] = linalg::lu_factor(a, s);
  EXPECT_EQ(lu.shape(), a.shape());
  EXPECT_EQ(pivots.shape(), Shape{2});
}

TEST(MlxApiLinalg, SolversAndSpectra) {
  const Stream s = default_stream(Device::cpu);
  auto a = array({4.0F, 2.0F, 2.0F, 3.0F}, {2, 2});
  auto b = array({2.0F, 1.0F});
  EXPECT_TRUE(close(matmul(a, linalg::solve(a, b, s)), b));
  auto lower = array({2.0F, 0.0F, 1.0F, 1.0F}, {2, 2});
  EXPECT_TRUE(close(linalg::solve_triangular(lower, b, false, s), array({1.0F, 0.0F})));
  EXPECT_TRUE(close(linalg::solve_triangular(transpose(lower), b, true), array({0.5F, 1.0F})));
  auto x = array({1.0F, 0.0F, 0.0F});
  auto y = array({0.0F, 1.0F, 0.0F});
  EXPECT_TRUE(close(linalg::cross(x, y, -1, s), array({0.0F, 0.0F, 1.0F})));
  EXPECT_TRUE(close(linalg::cross(x, y), array({0.0F, 0.0F, 1.0F})));
  // a's eigenvalues are (7 -+ sqrt(17)) / 2.
  const float root = std::sqrt(17.0F);
  auto expected = array({(7.0F - root) / 2.0F, (7.0F + root) / 2.0F});
  EXPECT_TRUE(close(linalg::eigvalsh(a, "L", s), expected));
  EXPECT_TRUE(close(linalg::eigvalsh(a), expected));
  auto [w, v] = linalg::eigh(a, "U", s);
  EXPECT_TRUE(close(w, expected));
  EXPECT_TRUE(close(matmul(a, v), v * w));
  EXPECT_EQ(linalg::eigh(a).first.shape(), Shape{2});
  auto [cw, cv] = linalg::eig(a, s);
  EXPECT_EQ(cw.dtype(), complex64);
  EXPECT_EQ(cv.shape(), (Shape{2, 2}));
  EXPECT_TRUE(close(sort(real(linalg::eigvals(a, s))), expected));
  EXPECT_FLOAT_EQ(linalg::det(a, s).item<float>(), 8.0F);
  auto [sign, logabs] = linalg::slogdet(a, s);
  EXPECT_FLOAT_EQ(sign.item<float>(), 1.0F);
  EXPECT_NEAR(logabs.item<float>(), std::log(8.0F), 1e-5);
}

}  // namespace
}  // namespace nuvec
