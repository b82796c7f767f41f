// kron, vecdot, block_masked_mm, gather_mm, segmented_mm and hadamard_transform against NumPy: np.kron; vecdot as
// sum(conj(a) * b) (NumPy 1.24 has no np.vecdot); block-masked products with the masks expanded to elements;
// gather_mm as indexed matmuls; segmented_mm as a loop over slices; the Hadamard matrix built by Sylvester's
// construction (Kronecker times Paley's second one for 12 times a power of two, Williamson's array for 20 and 28:
// MLX's matrices). Over
// float32/float64/bfloat16 (and integers where the op takes them), strided inputs, broadcast batches, empty operands
// and the error messages.

#include <gtest/gtest.h>

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

using test::error_of;

/// NumPy's name for the dtype a result is compared in (bfloat16 values travel as float32).
std::string np_type(Dtype d) {
  if (d == bool_) {
    return "np.bool_";
  }
  return "np." + std::string(d == bfloat16 ? "float32" : dtype_name(d));
}

/// The dtype NumPy computes a floating reference in.
std::string np_compute(Dtype d) { return d == float64 ? "np.float64" : "np.float32"; }

struct Tolerance {
  double rtol;
  double atol;
};

Tolerance tolerance(Dtype d) {
  if (d == bfloat16) {
    return {2e-2, 1e-1};
  }
  if (d == float16) {
    return {4e-3, 5e-2};
  }
  if (d == float64) {
    return {1e-12, 1e-11};
  }
  if (is_inexact(d)) {
    return {2e-5, 2e-4};
  }
  return {0, 0};
}

/// `slack` widens the tolerance where a computation rounds more often than a plain product does.
::testing::AssertionResult close_to(const array& out, const std::string& code, const std::vector<array>& inputs,
                                    double slack = 1) {
  const auto tol = tolerance(out.dtype());
  return matches(out, numpy_ref(code, inputs), slack * tol.rtol, slack * tol.atol, out.dtype() != bfloat16);
}

class SpecialProductsTest : public ::testing::Test {
 protected:
  std::mt19937 rng_{77};
  array rand(const Shape& shape, Dtype dtype) { return test::random_array(shape, dtype, rng_); }
  array ints(const Shape& shape, int high) {
    std::uniform_int_distribution<int32_t> pick(0, high - 1);
    std::vector<int32_t> values(shape_size(shape));
    for (auto& v : values) {
      v = pick(rng_);
    }
    return array(values.begin(), shape, int32);
  }
};

// ---------------------------------------------------------------- kron and vecdot

TEST_F(SpecialProductsTest, Kron) {
  for (auto dtype : {float32, float64, bfloat16, int32, int8, bool_}) {
    SCOPED_TRACE(dtype_name(dtype));
    const std::vector<std::pair<Shape, Shape>> shapes{{{2, 3}, {4, 5}}, {{3}, {2, 2}}, {{2, 1, 3}, {4}},
                                                      {{}, {3, 2}},     {{2, 2}, {}},  {{1, 3}, {3, 1}}};
    for (const auto& [sa, sb] : shapes) {
      SCOPED_TRACE(shape_string(sa) + " x " + shape_string(sb));
      auto a = rand(sa, dtype);
      auto b = rand(sb, dtype);
      auto out = kron(a, b);
      EXPECT_EQ(out.dtype(), dtype);
      EXPECT_TRUE(close_to(out, "np.kron(a, b).astype(" + np_type(dtype) + ")", {a, b}));
    }
  }
  // Strided operands and mixed dtypes.
  auto at = transpose(rand({3, 2}, float32));
  auto bs = slice(rand({4, 6}, int8), {0, 0}, {4, 6}, {2, 3});
  auto out = kron(at, bs);
  EXPECT_EQ(out.dtype(), float32);
  EXPECT_TRUE(close_to(out, "np.kron(a, b).astype(np.float32)", {at, bs}));
  EXPECT_EQ(error_of([] {
              kron(zeros({2, 0}), zeros({3}));
            }),
            "[kron] Input arrays cannot be empty; got shapes (2,0) and (3).");
}

TEST_F(SpecialProductsTest, Vecdot) {
  for (auto dtype : {float32, float64, bfloat16, complex64, int8, bool_}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto a = rand({3, 4}, dtype);
    auto b = rand({4}, dtype);
    auto c = rand({2, 3, 5}, dtype);
    auto d = rand({3, 5}, dtype);
    const std::string cast = ".astype(" + np_type(dtype) + ")";
    EXPECT_EQ(vecdot(a, b).dtype(), dtype);
    EXPECT_TRUE(close_to(vecdot(a, b), "np.sum(np.conj(a) * b, axis=-1)" + cast, {a, b}));
    EXPECT_TRUE(close_to(vecdot(c, d), "np.sum(np.conj(a) * b, axis=-1)" + cast, {c, d}));
    EXPECT_TRUE(close_to(vecdot(d, c, -2), "np.sum(np.conj(a) * b, axis=-2)" + cast, {d, c}));
    auto e = transpose(rand({4, 3}, dtype));
    EXPECT_TRUE(close_to(vecdot(e, a, 0), "np.sum(np.conj(a) * b, axis=0)" + cast, {e, a}));
  }
  // int8 sums of 64 products overflow and wrap as NumPy's int8 arithmetic does.
  auto x = rand({2, 64}, int8);
  auto y = rand({2, 64}, int8);
  EXPECT_TRUE(matches(vecdot(x, y), numpy_ref("np.sum(a * b, axis=-1, dtype=np.int8)", {x, y}), 0, 0));
  // Mixed dtypes promote; an empty core axis gives zeros.
  EXPECT_EQ(vecdot(rand({3}, int32), rand({3}, float32)).dtype(), float32);
  auto empty = vecdot(rand({2, 0}, float32), rand({2, 0}, float32));
  EXPECT_TRUE(matches(empty, numpy_ref("np.zeros(2, np.float32)", {})));
  EXPECT_EQ(error_of([] {
              vecdot(zeros({2, 3}), zeros({4}));
            }),
            "[vecdot] The inputs must have the same size along axis -1; got shapes (2,3) and (4).");
  EXPECT_EQ(error_of([] {
              vecdot(zeros({2, 3}), zeros({4, 3}));
            }),
            "[vecdot] The non-contracted axes of the inputs with shapes (2,3) and (4,3) cannot be broadcast.");
  EXPECT_EQ(error_of([] { vecdot(array(1.0F), zeros({4})); }),
            "[vecdot] Inputs must have at least one dimension; got shapes () and (4).");
}

// ---------------------------------------------------------------- block_masked_mm

/// NumPy's block-masked product: masks expanded to elements (np.repeat per tile, cropped), operands multiplied by
/// theirs, the product by the output's. Inputs a, b, then the masks that are given, named by `masks` (e.g. "olr").
std::string masked_reference(int block, const std::string& masks, Dtype dtype) {
  const std::string wide = np_compute(dtype);
  std::string code = "bs = " + std::to_string(block) +
                     "\n"
                     "def expand(m, rows, cols):\n"
                     "    return np.repeat(np.repeat(m, bs, axis=-2), bs, axis=-1)[..., :rows, :cols].astype(" +
                     wide +
                     ")\n"
                     "x = a.astype(" +
                     wide + ")\ny = b.astype(" + wide + ")\nrest = [" +
                     std::string("c, d, e").substr(0, 3 * masks.size()) + "]\n";
  for (size_t i = 0; i < masks.size(); ++i) {
    const std::string m = "rest[" + std::to_string(i) + "]";
    if (masks[i] == 'l') {
      code += "x = x * expand(" + m + ", x.shape[-2], x.shape[-1])\n";
    } else if (masks[i] == 'r') {
      code += "y = y * expand(" + m + ", y.shape[-2], y.shape[-1])\n";
    }
  }
  code += "out = x @ y\n";
  const auto o = masks.find('o');
  if (o != std::string::npos) {
    code += "out = out * expand(rest[" + std::to_string(o) + "], out.shape[-2], out.shape[-1])\n";
  }
  return code + "out = out.astype(" + np_type(dtype) + ")";
}

TEST_F(SpecialProductsTest, BlockMaskedMatchesExpandedMasks) {
  for (auto dtype : {float32, float64, bfloat16, float16}) {
    for (int block : {32, 64}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " block " + std::to_string(block));
      // Partial edge tiles in every dimension, and a broadcast batch.
      const int m = 70;
      const int k = 100;
      const int n = 40;
      auto t = [block](int size) { return (size + block - 1) / block; };
      auto a = rand({2, 1, m, k}, dtype);
      auto b = rand({3, k, n}, dtype);
      auto mo = rand({t(m), t(n)}, bool_);
      auto ml = rand({2, 3, t(m), t(k)}, bool_);
      auto mr = rand({t(k), t(n)}, bool_);
      auto out = block_masked_mm(a, b, block, mo, ml, mr);
      EXPECT_EQ(out.shape(), (Shape{2, 3, m, n}));
      EXPECT_EQ(out.dtype(), dtype);
      EXPECT_TRUE(close_to(out, masked_reference(block, "olr", dtype), {a, b, mo, ml, mr}));
      EXPECT_TRUE(close_to(block_masked_mm(a, b, block, mo), masked_reference(block, "o", dtype), {a, b, mo}));
      EXPECT_TRUE(
          close_to(block_masked_mm(a, b, block, std::nullopt, ml), masked_reference(block, "l", dtype), {a, b, ml}));
      EXPECT_TRUE(close_to(block_masked_mm(a, b, block, std::nullopt, std::nullopt, mr),
                           masked_reference(block, "r", dtype), {a, b, mr}));
      // Floating masks scale their tiles (in the product's dtype: each scaled element and the scaled result are
      // rounded once more than in a plain product).
      auto fo = rand({t(m), t(n)}, float32);
      auto fl = rand({t(m), t(k)}, dtype);
      EXPECT_TRUE(
          close_to(block_masked_mm(a, b, block, fo, fl), masked_reference(block, "ol", dtype), {a, b, fo, fl}, 3));
    }
  }
}

TEST_F(SpecialProductsTest, BlockMaskedLayoutsVectorsAndMaskedNaN) {
  // Strided operands (a transposed, b sliced) and an all-false output row band.
  auto a = transpose(rand({50, 40}, float32));  // (40, 50)
  auto b = slice(rand({50, 90}, float32), {0, 0}, {50, 90}, {1, 2});
  auto mo = array({false, false, true, false}, {2, 2});
  EXPECT_TRUE(close_to(block_masked_mm(a, b, 32, mo), masked_reference(32, "o", float32), {a, b, mo}));
  // A 1-d left operand is a row.
  auto v = rand({50}, float32);
  auto mv = rand({1, 2}, bool_);
  auto out = block_masked_mm(v, b, 32, mv);
  EXPECT_EQ(out.shape(), (Shape{45}));
  EXPECT_TRUE(
      close_to(out, masked_reference(32, "o", float32) + "\nout = out.reshape(-1)", {reshape(v, {1, 50}), b, mv}));
  // A NaN in a tile masked out on the left never reaches the result (the tile is skipped, as MLX does).
  std::vector<float> poison(40 * 50, 0.0F);
  poison[5 * 50 + 40] = std::numeric_limits<float>::quiet_NaN();  // row 5, column 40: tile (0, 1)
  auto dirty = add(a, array(poison.begin(), {40, 50}));
  auto ml = array({true, false, true, true}, {2, 2});
  auto clean = block_masked_mm(a, b, 32, std::nullopt, ml);
  EXPECT_TRUE(allclose(block_masked_mm(dirty, b, 32, std::nullopt, ml), clean).item<bool>());
  EXPECT_TRUE(close_to(clean, masked_reference(32, "l", float32), {a, b, ml}));
  // Without masks it is matmul; empty dimensions give an empty or zero result.
  EXPECT_TRUE(array_equal(block_masked_mm(a, b, 32), matmul(a, b)).item<bool>());
  auto z = block_masked_mm(rand({3, 0}, float32), rand({0, 4}, float32), 32, ones({1, 1}, bool_));
  EXPECT_TRUE(matches(z, numpy_ref("np.zeros((3, 4), np.float32)", {})));
  EXPECT_EQ(block_masked_mm(rand({0, 5}, float32), rand({5, 4}, float32), 32, zeros({0, 1}, bool_)).shape(),
            (Shape{0, 4}));
}

TEST_F(SpecialProductsTest, BlockMaskedErrors) {
  auto a = zeros({40, 40});
  auto mask = ones({2, 2}, bool_);
  EXPECT_EQ(error_of([&] { block_masked_mm(a, a, 16, mask); }),
            "[block_masked_mm] Only block sizes 32 and 64 are supported; got block size 16.");
  EXPECT_EQ(error_of([&] {
              block_masked_mm(zeros({2, 2}, int32), zeros({2, 2}, int32), 32, mask);
            }),
            "[block_masked_mm] Only real floating point types are supported but int32 and int32 were provided which "
            "results in int32, which is not a real floating point type.");
  EXPECT_EQ(error_of([&] {
              block_masked_mm(zeros({40, 30}), a, 32, mask);
            }),
            "[block_masked_mm] Last dimension of first input with shape (40,30) must match second to last dimension "
            "of second input with shape (40,40).");
  EXPECT_EQ(error_of([&] {
              block_masked_mm(a, a, 32, ones({2, 3}, bool_));
            }),
            "[block_masked_mm] mask_out with shape (2,3) cannot be broadcast to the tile grid (2,2) of block size "
            "32.");
  EXPECT_EQ(error_of([&] {
              block_masked_mm(a, a, 32, std::nullopt, ones({3, 2, 2}, bool_));
            }),
            "[block_masked_mm] mask_lhs with shape (3,2,2) cannot be broadcast to the tile grid (2,2) of block size "
            "32.");
  EXPECT_EQ(error_of([&] { block_masked_mm(array(1.0F), a, 32, mask); }),
            "[block_masked_mm] Got 0 dimension input. Inputs must have at least one dimension.");
}

// ---------------------------------------------------------------- gather_mm

TEST_F(SpecialProductsTest, GatherMatchesIndexedMatmuls) {
  const std::string code =
      "x = a.reshape((-1,) + a.shape[-2:]).astype(np.float64)\n"
      "y = b.reshape((-1,) + b.shape[-2:]).astype(np.float64)\n"
      "out = x[c] @ y[d]\n";
  for (auto dtype : {float32, float64, bfloat16, float16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const std::string cast = "out = out.astype(" + np_type(dtype) + ")";
    auto a = rand({4, 3, 5}, dtype);
    auto b = rand({2, 3, 5, 6}, dtype);
    auto li = ints({7}, 4);
    auto ri = ints({7}, 6);
    auto out = gather_mm(a, b, li, ri);
    EXPECT_EQ(out.shape(), (Shape{7, 3, 6}));
    EXPECT_TRUE(close_to(out, code + cast, {a, b, li, ri}));
    // Indices broadcast together; absent left indices count a's matrices.
    auto lb = ints({3, 1}, 4);
    auto rb = ints({4}, 6);
    EXPECT_TRUE(close_to(gather_mm(a, b, lb, rb), code + cast, {a, b, lb, rb}));
    auto own = arange(4.0, uint32);
    auto r4 = ints({4}, 6);
    EXPECT_TRUE(close_to(gather_mm(a, b, std::nullopt, r4), code + cast, {a, b, own, r4}));
  }
}

TEST_F(SpecialProductsTest, GatherSortedRunsStridedAndVectors) {
  const std::string code =
      "x = a.reshape((-1,) + a.shape[-2:])\ny = b.reshape((-1,) + b.shape[-2:])\nout = x[c] @ y[d]\n";
  // Mixture-of-experts shape: one row per token, sorted expert indices (runs share a right matrix).
  auto tokens = rand({12, 1, 16}, float32);
  auto experts = rand({4, 16, 8}, float32);
  std::vector<int32_t> order{3, 0, 7, 1, 11, 2, 5, 4, 10, 6, 9, 8};
  std::vector<int32_t> expert{0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 3, 3};
  auto lhs = array(order.begin(), {12}, int32);
  auto rhs = array(expert.begin(), {12}, int32);
  EXPECT_TRUE(close_to(gather_mm(tokens, experts, lhs, rhs, true), code, {tokens, experts, lhs, rhs}));
  // Consecutive left matrices under one right one (stacked in place), and a transposed a (gathered).
  auto in_order = arange(12.0, int32);
  EXPECT_TRUE(close_to(gather_mm(tokens, experts, in_order, rhs, true), code, {tokens, experts, in_order, rhs}));
  auto at = swapaxes(rand({6, 16, 3}, float32), 1, 2);  // (6, 3, 16), column-major matrices
  auto li = ints({9}, 6);
  std::vector<int32_t> same(9, 2);
  auto ri = array(same.begin(), {9}, int32);
  EXPECT_TRUE(close_to(gather_mm(at, experts, li, ri), code, {at, experts, li, ri}));
  // A 1-d a is a row (removed again); uint8 indices work.
  auto v = rand({16}, float32);
  auto ru = astype(ints({5}, 4), uint8);
  auto out = gather_mm(v, experts, std::nullopt, ru);
  EXPECT_EQ(out.shape(), (Shape{5, 8}));
  EXPECT_TRUE(close_to(out, "out = (a[None] @ b[c.astype(np.int64)]).reshape(5, 8)", {v, experts, ru}));
  // Empty index arrays give an empty result; no indices is matmul.
  auto first = reshape(slice(experts, {0, 0, 0}, {1, 16, 8}), {16, 8});
  EXPECT_EQ(gather_mm(tokens, experts, zeros({0}, int32), zeros({0}, int32)).shape(), (Shape{0, 1, 8}));
  EXPECT_TRUE(array_equal(gather_mm(tokens, first), matmul(tokens, first)).item<bool>());
}

TEST_F(SpecialProductsTest, GatherErrors) {
  auto a = zeros({4, 3, 5});
  auto b = zeros({2, 5, 6});
  EXPECT_EQ(error_of([&] { gather_mm(a, b, zeros({2}), zeros({2}, int32)); }),
            "[gather_mm] Got lhs_indices with invalid dtype float32. Indices must be integral.");
  EXPECT_EQ(error_of([&] {
              gather_mm(zeros({4, 3, 5}, int32), zeros({2, 5, 6}, int32), zeros({2}, int32));
            }),
            "[gather_mm] Only real floating point types are supported but int32 and int32 were provided which "
            "results in int32, which is not a real floating point type.");
  EXPECT_EQ(error_of([&] {
              gather_mm(a, zeros({2, 4, 6}), zeros({2}, int32));
            }),
            "[gather_mm] Last dimension of first input with shape (4,3,5) must match second to last dimension of "
            "second input with shape (2,4,6).");
  EXPECT_EQ(error_of([&] { gather_mm(a, b, zeros({3}, int32), zeros({2}, int32)); }),
            "[gather_mm] The index arrays with shapes (3) and (2) cannot be broadcast.");
  // Indices are data: a bad one fails the evaluation.
  EXPECT_EQ(error_of([&] {
              gather_mm(a, b, array({0, 4}), array({0, 1})).eval();
            }),
            "[gather_mm] lhs_indices holds index 4, out of range for 4 matrices.");
  EXPECT_EQ(error_of([&] {
              gather_mm(a, b, array({0, 1}), array({0, -1})).eval();
            }),
            "[gather_mm] rhs_indices holds index 4294967295, out of range for 2 matrices.");
}

// ---------------------------------------------------------------- segmented_mm

TEST_F(SpecialProductsTest, SegmentedMatchesLoop) {
  const std::string code =
      "x = a.astype(np.float64)\ny = b.astype(np.float64)\nsegs = c.reshape(-1, 2)\n"
      "out = np.stack([x[:, s:e] @ y[s:e] for s, e in segs]) if len(segs) else np.zeros((0, x.shape[0], y.shape[1]))\n"
      "out = out.reshape(c.shape[:-1] + (x.shape[0], y.shape[1]))\n";
  for (auto dtype : {float32, float64, bfloat16, float16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const std::string cast = "out = out.astype(" + np_type(dtype) + ")";
    auto a = rand({6, 20}, dtype);
    auto b = rand({20, 7}, dtype);
    // Ordinary segments, an empty one and a reversed one (both zeros), the whole range.
    auto segments = array({0, 5, 5, 20, 3, 3, 10, 4, 0, 20, 19, 20}, {3, 2, 2});
    auto out = segmented_mm(a, b, segments);
    EXPECT_EQ(out.shape(), (Shape{3, 2, 6, 7}));
    EXPECT_TRUE(close_to(out, code + cast, {a, b, segments}));
  }
  // Strided operands, uint8 segments, mixed dtypes, and no segments at all.
  auto at = transpose(rand({20, 6}, float32));
  auto bs = slice(rand({40, 7}, float64), {0, 0}, {40, 7}, {2, 1});
  auto seg = astype(array({2, 9, 9, 17}, {2, 2}), uint8);
  auto out = segmented_mm(at, bs, seg);
  EXPECT_EQ(out.dtype(), float64);
  EXPECT_TRUE(close_to(out, code, {at, bs, seg}));
  EXPECT_EQ(segmented_mm(at, bs, zeros({0, 2}, int32)).shape(), (Shape{0, 6, 7}));
}

TEST_F(SpecialProductsTest, SegmentedErrors) {
  auto a = zeros({3, 8});
  auto b = zeros({8, 2});
  EXPECT_EQ(error_of([&] {
              segmented_mm(zeros({2, 3, 8}), b, array({0, 8}));
            }),
            "[segmented_mm] Batched matmul not supported; the inputs must be matrices but have shapes (2,3,8) and "
            "(8,2).");
  EXPECT_EQ(error_of([&] {
              segmented_mm(a, b, array({0, 4, 8}));
            }),
            "[segmented_mm] The segments should have shape (..., 2); got shape (3).");
  EXPECT_EQ(error_of([&] {
              segmented_mm(a, b, array({0.0F, 8.0F}));
            }),
            "[segmented_mm] The segments must be integers; got float32.");
  EXPECT_EQ(error_of([&] {
              segmented_mm(a, zeros({7, 2}), array({0, 7}));
            }),
            "[segmented_mm] Last dimension of first input with shape (3,8) must match second to last dimension of "
            "second input with shape (7,2).");
  EXPECT_EQ(error_of([&] {
              segmented_mm(a, b, array({0, 4, 6, 9}, {2, 2})).eval();
            }),
            "[segmented_mm] Segment (6, 9) is out of range for an inner dimension of 8.");
}

// ---------------------------------------------------------------- hadamard_transform

/// scale * x @ H_n with H_n from Sylvester's construction (symmetric), in float64, cast to `dtype`.
std::string hadamard_reference(int n, const std::string& scale, Dtype dtype) {
  return "h = np.ones((1, 1))\nwhile h.shape[0] < " + std::to_string(n) +
         ":\n    h = np.block([[h, h], [h, -h]])\n"
         "out = (a.astype(np.float64) @ h * " +
         scale + ").astype(" + np_type(dtype) + ")";
}

TEST_F(SpecialProductsTest, HadamardMatchesSylvester) {
  for (auto dtype : {float32, float64, bfloat16, float16}) {
    for (int n : {1, 2, 4, 8, 16, 64, 512}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " n=" + std::to_string(n));
      auto a = rand({3, n}, dtype);
      auto out = hadamard_transform(a);
      EXPECT_EQ(out.dtype(), dtype);
      // The scale is a float (MLX's API), so float64 results use 1/sqrt(n) rounded to float32.
      const std::string scale = "np.float64(np.float32(1 / np.sqrt(" + std::to_string(n) + ")))";
      EXPECT_TRUE(close_to(out, hadamard_reference(n, scale, dtype), {a}));
      EXPECT_TRUE(close_to(hadamard_transform(a, 0.5F), hadamard_reference(n, "0.5", dtype), {a}));
    }
  }
  // Integers become float32; a 1-d input, a batch, a strided input, and enough rows to be split across threads.
  auto i = rand({2, 8}, int32);
  EXPECT_EQ(hadamard_transform(i).dtype(), float32);
  EXPECT_TRUE(close_to(hadamard_transform(i, 1.0F), hadamard_reference(8, "1", float32), {i}));
  auto v = rand({32}, float32);
  EXPECT_TRUE(close_to(hadamard_transform(v), hadamard_reference(32, "(1 / np.sqrt(32))", float32), {v}));
  auto t = transpose(rand({16, 2, 5}, float64), {1, 2, 0});
  EXPECT_TRUE(close_to(hadamard_transform(t, 2.0F), hadamard_reference(16, "2", float64), {t}));
  auto many = rand({700, 128}, float32);
  EXPECT_TRUE(close_to(hadamard_transform(many), hadamard_reference(128, "(1 / np.sqrt(128))", float32), {many}));
  auto s = array(3.0F);
  EXPECT_TRUE(close_to(hadamard_transform(s, 2.0F), "np.float32(6)", {}));
  // Applying the orthonormal transform twice gives the input back.
  auto x = rand({4, 256}, float32);
  EXPECT_TRUE(allclose(hadamard_transform(hadamard_transform(x)), x, 1e-5, 1e-5).item<bool>());
}

/// scale * x @ (H_m (x) H_p).T (or without the transpose) for n = m * p, in float64, cast to `dtype`. H_p from
/// Sylvester's construction; H_12 from Paley's second over GF(5); H_20 and H_28, MLX's (Sloane's) matrices, from
/// Williamson's array of the symmetric circulants with the first rows below.
std::string hadamard_m_reference(int m, int p, const std::string& scale, Dtype dtype, bool transposed = true) {
  return "m = " + std::to_string(m) + "\np = " + std::to_string(p) + "\nscale = " + scale + "\n" +
         "def circulant(row):\n"
         "    v = np.array([1 if ch == '+' else -1 for ch in row])\n"
         "    return np.array([np.roll(v, i) for i in range(len(v))])\n"
         "if m == 12:\n"
         "    sq = {(x * x) % 5 for x in range(1, 5)}\n"
         "    conf = np.ones((6, 6))\n"
         "    for i in range(6):\n"
         "        for j in range(6):\n"
         "            if i == j:\n"
         "                conf[i, j] = 0\n"
         "            elif i > 0 and j > 0:\n"
         "                conf[i, j] = 1 if (i - j) % 5 in sq else -1\n"
         "    hm = np.kron(conf, [[1, 1], [1, -1]]) + np.kron(np.eye(6), [[1, -1], [-1, -1]])\n"
         "else:\n"
         "    rows = {20: ['+----', '+----', '++--+', '+-++-'],\n"
         "            28: ['+------', '++----+', '+-+--+-', '+--++--']}[m]\n"
         "    wa, wb, wc, wd = (circulant(r) for r in rows)\n"
         "    hm = np.block([[wa, wb, wc, wd], [-wb, wa, -wd, wc], [-wc, wd, wa, -wb], [-wd, -wc, wb, wa]])\n"
         "assert (hm @ hm.T == m * np.eye(m)).all()\n"
         "hp = np.ones((1, 1))\n"
         "while hp.shape[0] < p:\n"
         "    hp = np.block([[hp, hp], [hp, -hp]])\n"
         "k = np.kron(hm, hp)\n"
         "out = (a.astype(np.float64) @ (" +
         (transposed ? "k.T" : "k") + ") * scale).astype(" + np_type(dtype) + ")";
}

TEST_F(SpecialProductsTest, HadamardSizesTimesTwelveTwentyTwentyEight) {
  for (int m : {12, 20, 28}) {
    for (int p : {1, 2, 4, 32}) {
      const int n = m * p;
      // The transform of the identity (scale 1) is the matrix's transpose: entries +-1, H H^T = n I; symmetric for
      // m = 12 only (MLX's H_20 and H_28 are not).
      auto h = hadamard_transform(eye(n), 1.0F);
      EXPECT_TRUE(array_equal(abs(h), ones({n, n})).item<bool>()) << "n=" << n;
      EXPECT_EQ(array_equal(h, transpose(h)).item<bool>(), m == 12) << "n=" << n;
      EXPECT_TRUE(array_equal(matmul(h, transpose(h)), multiply(eye(n), array(static_cast<float>(n)))).item<bool>())
          << "n=" << n;
      for (auto dtype : {float32, float64, bfloat16}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " n=" + std::to_string(n));
        auto a = rand({3, n}, dtype);
        // The default scale is computed in float32: 1 / sqrt(n), each step rounded.
        const std::string scale = "np.float64(np.float32(1) / np.sqrt(np.float32(" + std::to_string(n) + ")))";
        EXPECT_TRUE(close_to(hadamard_transform(a), hadamard_m_reference(m, p, scale, dtype), {a}));
      }
    }
  }
  // A batch split across threads, a strided input, and the orthonormal transform of 12 * 2^k applied twice.
  auto many = rand({300, 40}, float32);
  EXPECT_TRUE(close_to(hadamard_transform(many, 0.5F), hadamard_m_reference(20, 2, "0.5", float32), {many}));
  auto t = transpose(rand({56, 3}, float32));
  EXPECT_TRUE(close_to(hadamard_transform(t), hadamard_m_reference(28, 2, "(1 / np.sqrt(56))", float32), {t}));
  auto x = rand({4, 96}, float32);
  EXPECT_TRUE(allclose(hadamard_transform(hadamard_transform(x)), x, 1e-5, 1e-5).item<bool>());
  // The gradient multiplies by the transpose: c @ (H_m (x) H_p), for the symmetric H_12 and the others, in float32
  // and bfloat16, with batch axes.
  for (int m : {12, 20, 28}) {
    for (auto dtype : {float32, bfloat16}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " m=" + std::to_string(m));
      auto c = rand({2, 3, m * 4}, dtype);
      auto grad = vjp([](const array& v) { return hadamard_transform(v, 2.0F); }, rand({2, 3, m * 4}, dtype), c).second;
      EXPECT_TRUE(close_to(grad, hadamard_m_reference(m, 4, "2", dtype, false), {c}));
    }
  }
}

TEST_F(SpecialProductsTest, HadamardErrors) {
  for (int n : {3, 36, 44, 60, 24 * 3}) {
    EXPECT_EQ(error_of([n] {
                hadamard_transform(zeros({2, n}));
              }),
              "[hadamard_transform] The last dimension must be m * 2^k with m 1, 12, 20 or 28; got shape (2," +
                  std::to_string(n) + ").");
  }
  EXPECT_EQ(error_of([] {
              hadamard_transform(zeros({2, 0}));
            }),
            "[hadamard_transform] Does not support empty arrays; got shape (2,0).");
}

}  // namespace
}  // namespace nuvec
