// einsum and einsum_path against NumPy (np.einsum(..., optimize=True) and np.einsum_path(..., optimize='greedy')):
// explicit and implicit outputs, traces, diagonals, transposes, outer and batched products, ellipsis broadcasting,
// size-1 broadcasting, chains of several operands, float32/float64/bfloat16 and integer dtypes, strided inputs,
// empty operands, and the error messages. Expected values are NumPy's unless a comment says otherwise.

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using test::matches;
using test::numpy_ref;

using test::error_of;

class EinsumTest : public ::testing::Test {
 protected:
  std::mt19937 rng_{2024};
  array rand(const Shape& shape, Dtype dtype) { return test::random_array(shape, dtype, rng_); }

  /// np.einsum with optimize=True on the operands (bound to a, b, c, ...).
  static std::string np_einsum(const std::string& subscripts, size_t count) {
    std::string code = "np.einsum('" + subscripts + "'";
    for (size_t i = 0; i < count; ++i) {
      code += std::string(", ") + static_cast<char>('a' + i);
    }
    return code + ", optimize=True)";
  }

  ::testing::AssertionResult matches_numpy(const std::string& subscripts, const std::vector<array>& operands) {
    auto out = einsum(subscripts, operands);
    const Dtype dtype = out.dtype();
    if (dtype != result_type(operands)) {
      return ::testing::AssertionFailure() << "dtype " << dtype_name(dtype);
    }
    std::string code = np_einsum(subscripts, operands.size());
    if (dtype == bfloat16) {
      code += ".astype(np.float32)";
    }
    // bfloat16 rounds every intermediate; sums of a few dozen products of values in [-2, 2).
    const double rtol = dtype == bfloat16 ? 2e-2 : (dtype == float64 ? 1e-12 : 2e-5);
    const double atol = dtype == bfloat16 ? 1e-1 : (dtype == float64 ? 1e-11 : 1e-4);
    return matches(out, numpy_ref(code, operands), is_inexact(dtype) ? rtol : 0, is_inexact(dtype) ? atol : 0,
                   dtype != bfloat16);
  }
};

struct Case {
  std::string subscripts;
  std::vector<Shape> shapes;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all{
      {"ij,jk->ik", {{3, 4}, {4, 5}}},
      {"ij,jk", {{3, 4}, {4, 5}}},
      {"ij,kj->ik", {{3, 4}, {5, 4}}},
      {"ii->i", {{4, 4}}},
      {"ii", {{4, 4}}},
      {"ii->", {{4, 4}}},
      {"iij->ij", {{3, 3, 4}}},
      {"iji->j", {{3, 4, 3}}},
      {"iii->i", {{3, 3, 3}}},
      {"ij->ji", {{3, 4}}},
      {"ij->", {{3, 4}}},
      {"ijk->kij", {{2, 3, 4}}},
      {"i,j->ij", {{3}, {4}}},
      {"ij,kl->ijkl", {{2, 3}, {2, 2}}},
      {"i,i->", {{7}, {7}}},
      {"i,i", {{7}, {7}}},
      {"i,i,i->i", {{5}, {5}, {5}}},
      {",ij->ij", {{}, {3, 4}}},
      {"bij,bjk->bik", {{3, 4, 5}, {3, 5, 2}}},
      {"bhqd,bhkd->bhqk", {{2, 3, 4, 5}, {2, 3, 6, 5}}},
      {"bik,bjk->bij", {{2, 3, 4}, {2, 5, 4}}},
      {"ijk,jil->kl", {{3, 4, 5}, {4, 3, 2}}},
      {"abc,cd,de->abe", {{2, 3, 4}, {4, 5}, {5, 3}}},
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}},
      {"ab,bc,cd,da->", {{3, 4}, {4, 5}, {5, 2}, {2, 3}}},
      {"ab,cd,bc->ad", {{3, 4}, {5, 2}, {4, 5}}},
      {"Ab,bC->AC", {{3, 4}, {4, 2}}},
      {"ij,ij->ij", {{1, 4}, {3, 4}}},
      {"ij,jk->ik", {{3, 1}, {4, 5}}},
      {"...ij,...jk->...ik", {{2, 1, 3, 4}, {5, 4, 2}}},
      {"...i->...", {{2, 3, 4}}},
      {"...i->i", {{2, 3, 4}}},
      {"ba...,a", {{2, 3, 4}, {3}}},
      {"i...->...i", {{3, 2, 2}}},
      {"...,...->...", {{2, 3}, {3}}},
      {"ij...,jk...->ik...", {{2, 3, 4}, {3, 2, 1}}},
  };
  return all;
}

TEST_F(EinsumTest, MatchesNumpyOverSubscriptsAndDtypes) {
  for (auto dtype : {float32, float64, bfloat16, int32}) {
    SCOPED_TRACE(dtype_name(dtype));
    for (const auto& c : cases()) {
      SCOPED_TRACE(c.subscripts);
      std::vector<array> operands;
      for (const auto& shape : c.shapes) {
        operands.push_back(rand(shape, dtype));
      }
      EXPECT_TRUE(matches_numpy(c.subscripts, operands));
    }
  }
}

TEST_F(EinsumTest, IntegersWrapAndMixedDtypesPromote) {
  // int8 sums of 40 products of values up to 20 overflow; NumPy's einsum wraps in int8 too.
  auto a = rand({3, 40}, int8);
  auto b = rand({40, 2}, int8);
  EXPECT_TRUE(matches_numpy("ij,jk->ik", {a, b}));
  auto flags = rand({4, 5}, bool_);
  auto more = rand({5, 3}, bool_);
  EXPECT_TRUE(matches_numpy("ij,jk->ik", {flags, more}));
  EXPECT_TRUE(matches_numpy("ij,jk,ki->i", {rand({3, 4}, int16), rand({4, 5}, int16), rand({5, 3}, int16)}));
  auto out = einsum("ij,jk->ik", {rand({3, 4}, int32), rand({4, 2}, float32)});
  EXPECT_EQ(out.dtype(), float32);
  auto c = rand({3, 4}, float16);
  auto d = rand({4}, float32);
  EXPECT_TRUE(matches_numpy("ij,j->i", {c, d}));
}

TEST_F(EinsumTest, StridedOperands) {
  for (auto dtype : {float32, float64, bfloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto xt = transpose(rand({5, 4}, dtype));                          // (4, 5), column-major
    auto sliced = slice(rand({6, 10}, dtype), {0, 1}, {6, 10}, {2, 2});  // (3, 5)
    auto flipped = slice(rand({5, 3}, dtype), {4, 0}, {-6, 3}, {-1, 1});
    auto batch_t = transpose(rand({4, 2, 3}, dtype), {1, 2, 0});  // (2, 3, 4)
    EXPECT_TRUE(matches_numpy("ij,kj->ik", {xt, sliced}));
    EXPECT_TRUE(matches_numpy("ij,jk->ik", {sliced, flipped}));
    EXPECT_TRUE(matches_numpy("bij,jk->bik", {batch_t, rand({4, 3}, dtype)}));
    EXPECT_TRUE(matches_numpy("ii->i", {slice(rand({8, 8}, dtype), {0, 0}, {8, 8}, {2, 2})}));
    EXPECT_TRUE(matches_numpy("bij,bkj->bki", {batch_t, transpose(rand({4, 5, 2}, dtype), {2, 1, 0})}));
    EXPECT_TRUE(matches_numpy("i,j->ij", {broadcast_to(rand({1}, dtype), {3}), rand({4}, dtype)}));
  }
}

TEST_F(EinsumTest, EmptyOperands) {
  for (auto dtype : {float32, int32}) {
    SCOPED_TRACE(dtype_name(dtype));
    EXPECT_TRUE(matches_numpy("ij,jk->ik", {rand({2, 0}, dtype), rand({0, 3}, dtype)}));
    EXPECT_TRUE(matches_numpy("ij,jk->ik", {rand({0, 3}, dtype), rand({3, 4}, dtype)}));
    EXPECT_TRUE(matches_numpy("i->", {rand({0}, dtype)}));
    EXPECT_TRUE(matches_numpy("ii->i", {rand({0, 0}, dtype)}));
    EXPECT_TRUE(matches_numpy("bij,bjk->bik", {rand({0, 2, 3}, dtype), rand({0, 3, 4}, dtype)}));
    EXPECT_TRUE(matches_numpy("ij,j->i", {rand({3, 4}, dtype), rand({1}, dtype)}));
  }
}

TEST_F(EinsumTest, LargerProductsTakeOneMatmul) {
  // Sizes past the GEMM's blocking, in the two shapes of the benchmark.
  auto q = rand({2, 4, 70, 32}, float32);
  auto k = rand({2, 4, 90, 32}, float32);
  EXPECT_TRUE(matches_numpy("bhqd,bhkd->bhqk", {q, k}));
  auto x = rand({3, 65, 130}, float32);
  auto y = rand({3, 130, 33}, float32);
  EXPECT_TRUE(matches_numpy("bij,bjk->bik", {x, y}));
  auto e = einsum("bij,bjk->bik", {x, y});
  EXPECT_TRUE(allclose(e, matmul(x, y), 1e-5, 1e-5).item<bool>());
}

/// NumPy's greedy path as a flat list of positions, with -1 closing each contraction.
std::vector<int> flat_path(const std::vector<std::vector<int>>& path) {
  std::vector<int> flat;
  for (const auto& step : path) {
    flat.insert(flat.end(), step.begin(), step.end());
    flat.push_back(-1);
  }
  return flat;
}

TEST_F(EinsumTest, PathMatchesNumpyGreedy) {
  const std::vector<Case> chains{
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}},
      {"ij,jk,kl->il", {{20, 3}, {3, 40}, {40, 5}}},
      {"ab,bc,cd,de->ae", {{8, 2}, {2, 8}, {8, 2}, {2, 8}}},
      {"ijk,kl,jl->i", {{3, 4, 5}, {5, 6}, {4, 6}}},
      {"ea,fb,abcd,gc,hd->efgh", {{4, 5}, {4, 5}, {5, 5, 5, 5}, {4, 5}, {4, 5}}},
      {"i,j,ij->", {{6}, {7}, {6, 7}}},
      {"ii->i", {{4, 4}}},
      {"ij,jk", {{3, 4}, {4, 5}}},
  };
  for (const auto& c : chains) {
    SCOPED_TRACE(c.subscripts);
    std::vector<array> operands;
    for (const auto& shape : c.shapes) {
      operands.push_back(rand(shape, float32));
    }
    auto [path, description] = einsum_path(c.subscripts, operands);
    std::string code = "p = np.einsum_path('" + c.subscripts + "'";
    for (size_t i = 0; i < operands.size(); ++i) {
      code += std::string(", ") + static_cast<char>('a' + i);
    }
    code += ", optimize='greedy')[0][1:]\nout = np.array([x for t in p for x in list(t) + [-1]], dtype=np.int32)";
    auto flat = flat_path(path);
    EXPECT_TRUE(matches(array(flat.begin(), {static_cast<int32_t>(flat.size())}, int32), numpy_ref(code, operands)));
    EXPECT_NE(description.find("Complete contraction:  " + c.subscripts), std::string::npos) << description;
    EXPECT_TRUE(matches_numpy(c.subscripts, operands));
  }
  auto [path, description] = einsum_path("ij,jk,kl->il", {rand({2, 3}, float32), rand({3, 4}, float32),
                                                          rand({4, 5}, float32)});
  // NumPy's report for these shapes: 360 operations naively, 181 in this order, a largest intermediate of 15.
  EXPECT_NE(description.find("Naive FLOP count:  3.600e+02"), std::string::npos) << description;
  EXPECT_NE(description.find("Optimized FLOP count:  1.810e+02"), std::string::npos) << description;
  EXPECT_NE(description.find("Largest intermediate:  1.500e+01 elements"), std::string::npos) << description;
  EXPECT_NE(description.find("kl,jk->jl"), std::string::npos) << description;
}

TEST_F(EinsumTest, ErrorMessages) {
  auto m = zeros({2, 3});
  auto n = zeros({4, 5});
  EXPECT_EQ(error_of([&] { einsum("ij,jk", {m}); }),
            "[einsum] The subscripts \"ij,jk\" name 2 operands but 1 were given.");
  EXPECT_EQ(error_of([&] { einsum("i$", {m}); }),
            "[einsum] Invalid character '$' in subscripts \"i$\"; labels are letters a-z and A-Z.");
  EXPECT_EQ(error_of([&] { einsum("ij,jk->ik", {m, n}); }),
            "[einsum] Size of label 'j' for operand 1 with shape (4,5) (4) does not match previous terms (3).");
  EXPECT_EQ(error_of([&] { einsum("...i,...i", {zeros({2, 3}), zeros({4, 3})}); }),
            "[einsum] Size of the ellipsis dimensions for operand 1 with shape (4,3) (4) does not match previous "
            "terms (2).");
  EXPECT_EQ(error_of([&] { einsum("ijk", {m}); }),
            "[einsum] Operand 0 with shape (2,3) has 2 dimensions but its subscripts \"ijk\" name 3.");
  EXPECT_EQ(error_of([&] { einsum("i", {m}); }),
            "[einsum] Operand 0 with shape (2,3) has 2 dimensions but its subscripts \"i\" name 1.");
  EXPECT_EQ(error_of([&] { einsum("ij->k", {m}); }),
            "[einsum] Output subscript 'k' does not appear in the input subscripts \"ij\".");
  EXPECT_EQ(error_of([&] { einsum("ij->ii", {m}); }), "[einsum] Output subscript 'i' appears more than once.");
  EXPECT_EQ(error_of([&] { einsum("i...j...", {m}); }),
            "[einsum] Invalid ellipsis in subscripts \"i...j...\": each term takes at most one \"...\".");
  EXPECT_EQ(error_of([&] { einsum("i..j", {m}); }),
            "[einsum] Invalid ellipsis in subscripts \"i..j\": each term takes at most one \"...\".");
  EXPECT_EQ(error_of([&] { einsum("ij->i->j", {m}); }),
            "[einsum] Invalid subscripts \"ij->i->j\": expected terms separated by ',' and at most one \"->\".");
  EXPECT_EQ(error_of([&] { einsum("", {}); }), "[einsum] At least one operand is required.");
  EXPECT_EQ(error_of([&] { einsum_path("ij,jk->ik", {m, n}); }),
            "[einsum] Size of label 'j' for operand 1 with shape (4,5) (4) does not match previous terms (3).");
}

}  // namespace
}  // namespace nuvec
