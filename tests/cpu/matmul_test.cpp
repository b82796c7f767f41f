// Matrix products against NumPy (the oracle in tests/support): matmul for every dtype and
// layout, addmm, inner, outer and tensordot. Every expected value is NumPy's unless a
// comment says otherwise.

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <tuple>

#include "nuvec/cpu/gemm.h"
#include "nuvec/cpu/thread_pool.h"
#include "tests/support/reference.h"

namespace nuvec::test {
namespace {

/// NumPy's product for the dtype pair: integers and bool as NumPy computes them (wrapping in
/// the output type), floats in float32 or float64 and rounded once to the result dtype (bf16
/// arrives at NumPy widened to float32), which is what nuvec computes.
std::string product_code(Dtype out, const std::string& expr = "a @ b") {
  if (is_integer(out) || out == bool_) {
    return "(" + expr + ").astype('" + std::string(dtype_name(out)) + "')";
  }
  std::string wide = out == float64 ? "np.float64" : (out == complex64 ? "np.complex64" : "np.float32");
  std::string code = "a = a.astype(" + wide + ")\nb = b.astype(" + wide + ")\nout = (" + expr + ")";
  if (out == float16) {
    code += ".astype(np.float16)";
  }
  return code;
}

struct Tolerance {
  double rtol;
  double atol;
};

/// Sums of up to a few hundred products of values in [-2, 2).
Tolerance tolerance(Dtype dtype) {
  if (dtype == bfloat16) {
    return {8e-3, 2e-2};
  }
  if (dtype == float16) {
    return {2e-3, 2e-2};
  }
  if (dtype == float64) {
    return {1e-12, 1e-11};
  }
  if (is_inexact(dtype)) {
    return {1e-5, 2e-4};
  }
  return {0, 0};
}

::testing::AssertionResult matches_product(const array& out, const std::vector<array>& inputs,
                                           const std::string& expr = "a @ b") {
  auto expected = numpy_ref(product_code(out.dtype(), expr), inputs);
  auto tol = tolerance(out.dtype());
  return matches(out, expected, tol.rtol, tol.atol, /*check_dtype=*/out.dtype() != bfloat16);
}

class MatmulTest : public ::testing::Test {
 protected:
  std::mt19937 rng_{1234};
  array rand(const Shape& shape, Dtype dtype) { return random_array(shape, dtype, rng_); }
};

TEST_F(MatmulTest, EveryDtype) {
  // Sizes past the integer kernel's 256 blocks in k and n, and odd edges everywhere.
  for (auto dtype : all_dtypes) {
    SCOPED_TRACE(dtype_name(dtype));
    for (auto [m, k, n] : {std::tuple{5, 7, 3}, std::tuple{37, 300, 261}}) {
      auto a = rand({m, k}, dtype);
      auto b = rand({k, n}, dtype);
      auto out = matmul(a, b);
      EXPECT_EQ(out.dtype(), dtype);
      EXPECT_EQ(out.shape(), (Shape{m, n}));
      EXPECT_TRUE(matches_product(out, {a, b}));
    }
  }
}

TEST_F(MatmulTest, Float32ThroughEitherLibrary) {
  // The float32 library is a choice made in gemm.cpp; both must give NumPy's result, batched too.
  auto a = rand({3, 17, 33}, float32);
  auto b = rand({33, 9}, float32);
  auto bt = transpose(rand({3, 9, 33}, float32), {0, 2, 1});
  const auto chosen = cpu::get_sgemm_backend();
  for (auto backend : {cpu::Sgemm::openblas, cpu::Sgemm::onednn}) {
    cpu::set_sgemm_backend(backend);
    EXPECT_TRUE(matches_product(matmul(a, b), {a, b}));
    EXPECT_TRUE(matches_product(matmul(a, bt), {a, bt}));
  }
  cpu::set_sgemm_backend(chosen);
}

TEST_F(MatmulTest, IntegersWrapLikeNumpy) {
  // int8 sums of 64 products of values up to 20 overflow; so do int32 products of values near 2^20.
  auto a8 = rand({6, 64}, int8);
  auto b8 = rand({64, 5}, int8);
  EXPECT_TRUE(matches(matmul(a8, b8), numpy_ref("a @ b", {a8, b8}), 0, 0));
  std::vector<int32_t> values(16 * 3);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<int32_t>((i * 2654435761U) % 2000000U) - 1000000;
  }
  auto b32 = array(values.begin(), {16, 3}, int32);
  auto c32 = array(values.begin(), {3, 16}, int32);
  EXPECT_TRUE(matches(matmul(c32, b32), numpy_ref("a @ b", {c32, b32}), 0, 0));
  auto u64 = array(values.begin(), {3, 16}, uint64);
  auto v64 = array(values.begin(), {16, 3}, uint64);
  EXPECT_TRUE(matches(matmul(u64, v64), numpy_ref("a @ b", {u64, v64}), 0, 0));
}

TEST_F(MatmulTest, Float32SplitsOnThePool) {
  // gemm.cpp splits float32 products across nuvec's threads by rows, columns, sub-batches or (small c, long k)
  // ranges of k added afterwards; every split must give NumPy's result, whatever the thread count.
  const int before = cpu::num_threads();
  for (int threads : {1, 2, 3}) {
    cpu::set_num_threads(threads);
    SCOPED_TRACE(std::to_string(threads) + " threads");
    for (auto [m, k, n] : {std::tuple{300, 1100, 37}, std::tuple{20, 900, 700}, std::tuple{6, 9000, 11}}) {
      auto a = rand({m, k}, float32);
      auto b = rand({k, n}, float32);
      auto at = transpose(rand({k, m}, float32));
      auto bt = transpose(rand({n, k}, float32));
      auto c = rand({m, n}, float32);
      auto loose = [](const array& out, const std::vector<array>& in, const std::string& expr) {
        return matches(out, numpy_ref(product_code(float32, expr), in), 1e-4, 2e-3);
      };
      EXPECT_TRUE(loose(matmul(a, b), {a, b}, "a @ b"));
      EXPECT_TRUE(loose(matmul(at, bt), {at, bt}, "a @ b"));
      EXPECT_TRUE(loose(addmm(c, a, b, 0.5F, 2.0F), {a, b, c}, "0.5 * (a @ b) + 2 * c"));
    }
    auto batch_a = rand({5, 40, 64}, float32);
    auto batch_b = rand({5, 64, 48}, float32);
    EXPECT_TRUE(matches_product(matmul(batch_a, batch_b), {batch_a, batch_b}));
  }
  cpu::set_num_threads(before);
}

TEST_F(MatmulTest, Bfloat16SplitsOnThePool) {
  // oneDNN's bf16 matmul (f32 accumulation, one rounding to bf16) runs one single-threaded primitive per block of
  // rows of c, or per sub-batch: against float64 products of the same bf16 values, with bf16's rounding as tolerance.
  const int before = cpu::num_threads();
  auto exact = [](const array& out, const std::vector<array>& in, const std::string& expr) {
    // bf16 reaches NumPy widened to float32, exactly; c, where there is one, then promotes to float64.
    const auto code = std::string("a = a.astype(np.float64)\nb = b.astype(np.float64)\nout = ").append(expr);
    return matches(out, numpy_ref(code, in), 8e-3, 1e-2, /*check_dtype=*/false);
  };
  for (int threads : {1, 2, 3}) {
    cpu::set_num_threads(threads);
    SCOPED_TRACE(std::to_string(threads) + " threads");
    for (auto [m, k, n] : {std::tuple{300, 1100, 37}, std::tuple{65, 257, 129}, std::tuple{131, 70, 301}}) {
      auto a = rand({m, k}, bfloat16);
      auto b = rand({k, n}, bfloat16);
      auto at = transpose(rand({k, m}, bfloat16));
      auto bt = transpose(rand({n, k}, bfloat16));
      auto wide = rand({m, k + 9}, bfloat16);
      auto sliced = slice(wide, {0, 3}, {m, k + 3});
      auto c = rand({m, n}, bfloat16);
      EXPECT_EQ(matmul(a, b).dtype(), bfloat16);
      EXPECT_TRUE(exact(matmul(a, b), {a, b}, "a @ b"));
      EXPECT_TRUE(exact(matmul(at, bt), {at, bt}, "a @ b"));
      EXPECT_TRUE(exact(matmul(sliced, b), {sliced, b}, "a @ b"));
      EXPECT_TRUE(exact(addmm(c, a, b, 0.5F, 2.0F), {a, b, c}, "0.5 * (a @ b) + 2 * c"));
    }
    // A batch against one matrix (folded into the rows of one product) and a batch of pairs.
    auto batch_a = rand({3, 45, 64}, bfloat16);
    auto batch_b = rand({3, 64, 33}, bfloat16);
    auto shared_b = rand({64, 33}, bfloat16);
    EXPECT_TRUE(exact(matmul(batch_a, batch_b), {batch_a, batch_b}, "a @ b"));
    EXPECT_TRUE(exact(matmul(batch_a, shared_b), {batch_a, shared_b}, "a @ b"));
  }
  cpu::set_num_threads(before);
}

TEST_F(MatmulTest, MixedDtypesPromote) {
  struct Case {
    Dtype a, b, out;
  };
  for (auto c : {Case{int8, uint8, int16}, Case{bool_, int32, int32}, Case{float16, bfloat16, float32},
                 Case{int32, float16, float16}, Case{uint64, int8, float32}, Case{float32, complex64, complex64},
                 Case{bfloat16, float64, float64}}) {
    SCOPED_TRACE(std::string(dtype_name(c.a)) + " @ " + std::string(dtype_name(c.b)));
    auto a = rand({4, 6}, c.a);
    auto b = rand({6, 3}, c.b);
    auto out = matmul(a, b);
    EXPECT_EQ(out.dtype(), c.out);
    EXPECT_TRUE(matches_product(out, {a, b}));
  }
}

TEST_F(MatmulTest, HalfPrecisionWeightsMeetFloat32Rows) {
  // A float32 product keeps its float16 or bfloat16 operand as it is (no widened copy in the graph): few rows against
  // a transposed (n, k) weight stream it through the half-precision GEMV, other shapes widen it. Every row count
  // around the GEMV's limit (its rows of x four at a time, then one: 5), row lengths off the vector width and its
  // unrolled step (300), rows too long for L1 (4133: eight rows of w at a time, then the 7 left), batches, and both
  // operand orders, against NumPy.
  for (Dtype half : {float16, bfloat16}) {
    for (int m : {1, 3, 5, 8, 9, 40}) {
      for (int k : {16, 37, 300, 4133}) {
        SCOPED_TRACE(std::string(dtype_name(half)) + " m=" + std::to_string(m) + " k=" + std::to_string(k));
        auto x = rand({2, m, k}, float32);
        auto w = rand({23, k}, half);
        auto out = matmul(x, transpose(w));
        EXPECT_EQ(out.dtype(), float32);
        EXPECT_TRUE(matches_product(out, {x, transpose(w)}));
        EXPECT_TRUE(matches_product(matmul(w, swapaxes(x, -1, -2)), {w, swapaxes(x, -1, -2)}));
        auto plain = rand({k, 5}, half);  // (k, n) row-major: widened
        EXPECT_TRUE(matches_product(matmul(x, plain), {x, plain}));
      }
    }
    // Half-precision rows of a half-precision model take the GEMV too, rounded once to the dtype.
    auto xh = rand({3, 64}, half);
    auto wh = rand({40, 64}, half);
    EXPECT_TRUE(matches_product(matmul(xh, transpose(wh)), {xh, transpose(wh)}));
  }
  // The weight's cotangent comes back in the weight's dtype.
  auto x = rand({2, 8}, float32);
  auto w = rand({5, 8}, float16);
  auto grads = vjp([](const std::vector<array>& in) { return std::vector<array>{matmul(in[0], transpose(in[1]))}; },
                   {x, w}, {ones({2, 5})})
                   .second;
  EXPECT_EQ(grads[0].dtype(), float32);
  EXPECT_EQ(grads[1].dtype(), float16);
  EXPECT_TRUE(allclose(astype(grads[1], float32), matmul(ones({5, 2}), x), 1e-2, 1e-2).item<bool>());
}

TEST_F(MatmulTest, VectorOperands) {
  for (auto dtype : {float32, bfloat16, int32, float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto v = rand({7}, dtype);
    auto w = rand({7}, dtype);
    auto m = rand({7, 4}, dtype);
    auto mt = rand({3, 7}, dtype);
    auto batch = rand({2, 3, 7, 5}, dtype);
    auto batch_left = rand({2, 4, 7}, dtype);

    auto dot = matmul(v, w);
    EXPECT_EQ(dot.shape(), Shape{});
    EXPECT_TRUE(matches_product(dot, {v, w}));
    EXPECT_EQ(matmul(v, m).shape(), Shape{4});
    EXPECT_TRUE(matches_product(matmul(v, m), {v, m}));
    EXPECT_EQ(matmul(mt, v).shape(), Shape{3});
    EXPECT_TRUE(matches_product(matmul(mt, v), {mt, v}));
    EXPECT_EQ(matmul(v, batch).shape(), (Shape{2, 3, 5}));
    EXPECT_TRUE(matches_product(matmul(v, batch), {v, batch}));
    EXPECT_EQ(matmul(batch_left, v).shape(), (Shape{2, 4}));
    EXPECT_TRUE(matches_product(matmul(batch_left, v), {batch_left, v}));
  }
}

TEST_F(MatmulTest, BatchBroadcasting) {
  for (auto dtype : {float32, bfloat16, float16, int16, complex64, float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto a = rand({2, 1, 3, 4}, dtype);
    auto b = rand({5, 4, 6}, dtype);
    auto out = matmul(a, b);
    EXPECT_EQ(out.shape(), (Shape{2, 5, 3, 6}));
    EXPECT_TRUE(matches_product(out, {a, b}));
    // A shared right operand (folded into one large product) and a shared left one.
    auto x = rand({3, 5, 8}, dtype);
    auto w = rand({8, 2}, dtype);
    EXPECT_TRUE(matches_product(matmul(x, w), {x, w}));
    auto y = rand({4, 8}, dtype);
    auto z = rand({3, 8, 6}, dtype);
    EXPECT_TRUE(matches_product(matmul(y, z), {y, z}));
  }
  EXPECT_THROW(matmul(rand({2, 3, 4}, float32), rand({3, 4, 5}, float32)), std::invalid_argument);
}

TEST_F(MatmulTest, TransposedSlicedAndFlippedOperands) {
  for (auto dtype : {float32, float64, complex64, bfloat16, float16, int32, bool_}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto x = rand({9, 12}, dtype);
    auto y = rand({12, 10}, dtype);
    // Column-major through transposes: read by BLAS transpose flags.
    auto xt = transpose(rand({12, 9}, dtype));
    auto yt = transpose(rand({10, 12}, dtype));
    EXPECT_TRUE(matches_product(matmul(xt, y), {xt, y}));
    EXPECT_TRUE(matches_product(matmul(x, yt), {x, yt}));
    EXPECT_TRUE(matches_product(matmul(xt, yt), {xt, yt}));
    // Row slices keep unit column stride (leading dimension > k); strided columns need a copy.
    auto rows = slice(rand({9, 20}, dtype), {0, 3}, {9, 15});
    EXPECT_TRUE(matches_product(matmul(rows, y), {rows, y}));
    auto cols = slice(rand({18, 24}, dtype), {0, 0}, {18, 24}, {2, 2});
    EXPECT_TRUE(matches_product(matmul(cols, y), {cols, y}));
    auto flipped = slice(y, {11, 9}, {-13, -11}, {-1, -1});
    EXPECT_TRUE(matches_product(matmul(x, flipped), {x, flipped}));
    // Batched transposes of the last two axes, and a transposed batch axis.
    auto bt = swapaxes(rand({3, 6, 5}, dtype), 1, 2);
    auto bb = rand({3, 6, 4}, dtype);
    EXPECT_TRUE(matches_product(matmul(bt, bb), {bt, bb}));
    auto perm = transpose(rand({5, 3, 6}, dtype), {1, 0, 2});
    EXPECT_TRUE(matches_product(matmul(perm, bb), {perm, bb}));
    auto reversed = slice(bb, {2, 0, 0}, {-4, 6, 4}, {-1, 1, 1});
    EXPECT_TRUE(matches_product(matmul(perm, reversed), {perm, reversed}));
  }
}

TEST_F(MatmulTest, EmptyDimensions) {
  for (auto dtype : {float32, bfloat16, float16, int32, bool_, complex64, float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    // k = 0: a sum of nothing is zero.
    auto a = rand({3, 0}, dtype);
    auto b = rand({0, 4}, dtype);
    auto out = matmul(a, b);
    EXPECT_EQ(out.shape(), (Shape{3, 4}));
    EXPECT_TRUE(matches_product(out, {a, b}));
    EXPECT_EQ(matmul(rand({0, 5}, dtype), rand({5, 4}, dtype)).shape(), (Shape{0, 4}));
    EXPECT_EQ(matmul(rand({3, 5}, dtype), rand({5, 0}, dtype)).shape(), (Shape{3, 0}));
    auto empty_batch = matmul(rand({0, 3, 5}, dtype), rand({5, 2}, dtype));
    empty_batch.eval();
    EXPECT_EQ(empty_batch.shape(), (Shape{0, 3, 2}));
    auto v = rand({0}, dtype);
    EXPECT_TRUE(matches_product(matmul(v, v), {v, v}));
  }
}

TEST_F(MatmulTest, ErrorMessages) {
  auto expect_message = [](auto fn, const std::string& message) {
    try {
      fn();
      ADD_FAILURE() << "expected: " << message;
    } catch (const error& e) {
      EXPECT_EQ(e.what(), message);
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    }
  };
  expect_message(
      [] {
        return matmul(zeros({2, 3}), zeros({4, 5}));
      },
      "[matmul] Last dimension of first input with shape (2,3) must match second to last dimension of "
      "second input with shape (4,5).");
  expect_message([] { return matmul(zeros({3}), zeros({4})); },
                 "[matmul] Last dimension of first input with shape (1,3) must match second to last dimension of "
                 "second input with shape (4,1).");
  expect_message([] { return matmul(array(1.0F), zeros({4})); },
                 "[matmul] Got 0 dimension input. Inputs must have at least one dimension.");
  expect_message(
      [] {
        return matmul(zeros({2, 3, 4}), zeros({3, 4, 5}));
      },
      "[matmul] The batch dimensions of the inputs with shapes (2,3,4) and (3,4,5) cannot be broadcast.");
  expect_message(
      [] {
        return addmm(zeros({2, 2}, int32), zeros({2, 2}, int32), zeros({2, 2}, int8));
      },
      "[addmm] Only floating point and complex types are supported but int32, int32 and int8 were "
      "provided which results in int32.");
  expect_message(
      [] {
        return addmm(zeros({3, 2}), zeros({2, 3}), zeros({3, 2}));
      },
      "[addmm] The input c with shape (3,2) cannot be broadcast to the shape of the product (2,2).");
  expect_message(
      [] {
        return tensordot(zeros({2, 3}), zeros({4, 5}), 1);
      },
      "[tensordot] a and b must have the same shape on the contracted axes; got axis 1 of (2,3) and "
      "axis 0 of (4,5).");
  expect_message(
      [] {
        return inner(zeros({2, 3}), zeros({4}));
      },
      "[inner] Last dimension of first input with shape (2,3) must match last dimension of second input "
      "with shape (4).");
}

TEST_F(MatmulTest, AddmmAlphaBetaAndBroadcastC) {
  for (auto dtype : {float32, float64, bfloat16, float16, complex64}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto a = rand({5, 7}, dtype);
    auto b = rand({7, 6}, dtype);
    for (const Shape& c_shape : {Shape{5, 6}, Shape{6}, Shape{}, Shape{5, 1}}) {
      SCOPED_TRACE(shape_string(c_shape));
      auto c = rand(c_shape, dtype);
      auto out = addmm(c, a, b, 0.5F, -2.0F);
      EXPECT_EQ(out.shape(), (Shape{5, 6}));
      EXPECT_TRUE(matches_product(out, {a, b, c}, "np.float32(0.5) * (a @ b) - 2 * c.astype(a.dtype)"));
    }
    // Batched with a 2-d c, and vector operands.
    auto x = rand({3, 5, 7}, dtype);
    auto c = rand({5, 6}, dtype);
    EXPECT_TRUE(matches_product(addmm(c, x, b, 1.0F, 1.0F), {x, b, c}, "a @ b + c.astype(a.dtype)"));
    auto v = rand({7}, dtype);
    auto cv = rand({6}, dtype);
    EXPECT_TRUE(matches_product(addmm(cv, v, b, 2.0F, 0.25F), {v, b, cv},
                                "np.float32(2) * (a @ b) + np.float32(0.25) * c.astype(a.dtype)"));
  }
  // Promotion: an integer c joins a float product. Only the AddMM node holds c's conversion, so the kernel
  // accumulates into that buffer in place.
  auto a = rand({4, 3}, float32);
  auto b = rand({3, 2}, float32);
  auto c = rand({4, 2}, int32);
  auto out = addmm(c, a, b, 1.0F, 1.0F);
  EXPECT_EQ(out.dtype(), float32);
  EXPECT_TRUE(matches_product(out, {a, b, c}, "a @ b + c.astype(np.float32)"));
  // k = 0: only beta * c remains.
  auto e = addmm(c, rand({4, 0}, float32), rand({0, 2}, float32), 1.0F, 2.0F);
  EXPECT_TRUE(matches(e, numpy_ref("(2 * a).astype(np.float32)", {c}), 0, 0));
}

TEST_F(MatmulTest, InnerAndOuter) {
  for (auto dtype : {float32, int32, bool_, bfloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto a = rand({2, 3, 5}, dtype);
    auto b = rand({4, 5}, dtype);
    auto in = inner(a, b);
    EXPECT_EQ(in.shape(), (Shape{2, 3, 4}));
    EXPECT_TRUE(matches_product(in, {a, b}, "np.inner(a, b)"));
    auto v = rand({5}, dtype);
    EXPECT_TRUE(matches_product(inner(v, v), {v, v}, "np.inner(a, b)"));
    auto s = rand({}, dtype);
    EXPECT_TRUE(matches_product(inner(s, a), {s, a}, "np.inner(a, b)"));
    EXPECT_TRUE(matches_product(inner(a, s), {a, s}, "np.inner(a, b)"));
    auto o = outer(v, rand({2, 3}, dtype));
    EXPECT_EQ(o.shape(), (Shape{5, 6}));
    auto w = rand({2, 3}, dtype);
    EXPECT_TRUE(matches_product(outer(a, w), {a, w}, "np.outer(a, b)"));
  }
}

TEST_F(MatmulTest, Tensordot) {
  for (auto dtype : {float32, int64, float16}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto a = rand({3, 4, 5}, dtype);
    auto b = rand({4, 5, 6}, dtype);
    auto c = rand({5, 6, 2}, dtype);
    for (int axis : {0, 1, 2}) {
      SCOPED_TRACE(axis);
      auto& rhs = axis == 1 ? c : b;
      EXPECT_TRUE(
          matches_product(tensordot(a, rhs, axis), {a, rhs}, "np.tensordot(a, b, " + std::to_string(axis) + ")"));
    }
    // Axes lists: contracted axes leading in a and trailing in b (views), out of order (copies), negative.
    auto d = rand({5, 3, 7}, dtype);
    EXPECT_TRUE(matches_product(tensordot(a, d, {0, 2}, {1, 0}), {a, d}, "np.tensordot(a, b, ([0, 2], [1, 0]))"));
    auto e = rand({3, 4, 2}, dtype);
    EXPECT_TRUE(matches_product(tensordot(a, e, {0, 1}, {0, 1}), {a, e}, "np.tensordot(a, b, ([0, 1], [0, 1]))"));
    auto f = rand({6, 4, 5}, dtype);
    EXPECT_TRUE(matches_product(tensordot(a, f, {1, 2}, {1, 2}), {a, f}, "np.tensordot(a, b, ([1, 2], [1, 2]))"));
    EXPECT_TRUE(
        matches_product(tensordot(a, f, {-1, -2}, {-1, -2}), {a, f}, "np.tensordot(a, b, ([-1, -2], [-1, -2]))"));
  }
  EXPECT_THROW(tensordot(zeros({2, 3}), zeros({3, 2}), 3), std::invalid_argument);
  EXPECT_THROW(tensordot(zeros({2, 3}), zeros({3, 2}), {0}, {0, 1}), std::invalid_argument);
}

}  // namespace
}  // namespace nuvec::test

namespace nuvec {
namespace {

TEST(MatmulRegression, SizeOneOperandMadeByADonatingElementwiseOp) {
  // random::normal({1, 1}) ends in an element-wise op that may donate its scalar operand's buffer; the output
  // must still carry two strides for the product's kernel.
  for (const auto& [m, k, n] : std::vector<std::tuple<int, int, int>>{{1, 1, 3}, {1, 1, 1}, {3, 1, 1}}) {
    auto a = random::normal({m, k});
    auto b = random::normal({k, n});
    auto expected = sum(expand_dims(a, -1) * expand_dims(b, 0), 1);
    EXPECT_TRUE(allclose(matmul(a, b), expected).item<bool>()) << m << "x" << k << " @ " << k << "x" << n;
  }
}

}  // namespace
}  // namespace nuvec
