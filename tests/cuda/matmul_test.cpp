// Matmul and AddMM on the GPU (cuBLASLt) against the CPU backend on the same random inputs: float32, float16 and
// bfloat16 (and float64), vector and odd shapes, batches with broadcast operands, transposed and sliced views,
// half-precision weights of a float32 product, K = 0 and empty outputs, and addmm's alpha, beta and broadcast c.
// Results are compared by relative Frobenius error: cuBLASLt and the CPU's BLAS sum in different orders.

#include "nuvec/cuda/matmul.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "nuvec/nuvec.h"
#include "tests/cuda/gpu_test_util.h"

namespace nuvec {
namespace {

const Device gpu = Device::gpu;
const Device cpu = Device::cpu;

/// Values uniform in [-1, 1), made on the host.
array input(const Shape& shape, Dtype dtype, uint64_t seed) {
  auto x = random::uniform(-1.F, 1.F, shape, dtype, random::key(seed), cpu);
  x.eval();
  return x;
}

/// float32 sums of products agree to a few ulps scaled by the length; float16 and bfloat16 results are both
/// rounded once from float32 sums, and may round apart.
double tolerance(Dtype dtype) {
  if (dtype == float64) {
    return 1e-12;
  }
  return dtype == float32 ? 1e-5 : 1e-2;
}

/// ||gpu - cpu|| / ||cpu|| in the Frobenius norm (||gpu - cpu|| where cpu is all zeros), within the dtype's
/// tolerance; NaNs fail.
::testing::AssertionResult close(const array& gpu_result, const array& cpu_result) {
  eval({gpu_result, cpu_result});
  if (gpu_result.shape() != cpu_result.shape() || gpu_result.dtype() != cpu_result.dtype()) {
    return ::testing::AssertionFailure() << "GPU " << shape_string(gpu_result.shape()) << " "
                                         << dtype_name(gpu_result.dtype()) << " against CPU "
                                         << shape_string(cpu_result.shape()) << " " << dtype_name(cpu_result.dtype());
  }
  auto g = astype(gpu_result, float64, cpu);
  auto c = astype(cpu_result, float64, cpu);
  const double diff = std::sqrt(sum(square(subtract(g, c, cpu), cpu), false, cpu).item<double>());
  const double norm = std::sqrt(sum(square(c, cpu), false, cpu).item<double>());
  const double error = norm > 0 ? diff / norm : diff;
  if (error <= tolerance(cpu_result.dtype())) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "relative Frobenius error " << error << " over "
                                       << tolerance(cpu_result.dtype()) << " for " << shape_string(cpu_result.shape())
                                       << " " << dtype_name(cpu_result.dtype());
}

::testing::AssertionResult same_product(const array& a, const array& b) {
  return close(matmul(a, b, gpu), matmul(a, b, cpu));
}

const std::vector<Dtype> dtypes = {float32, float16, bfloat16};

TEST(CudaMatmul, ResultStaysOnTheGpu) {
  NUVEC_REQUIRE_GPU();
  auto a = input({64, 32}, float32, 1);
  auto b = input({32, 48}, float32, 2);
  auto out = matmul(a, b, gpu);
  out.eval();
  EXPECT_TRUE(out.data_device() == Device::gpu);
  EXPECT_TRUE(close(out, matmul(a, b, cpu)));
}

TEST(CudaMatmul, VectorAndOddShapes) {
  NUVEC_REQUIRE_GPU();
  const std::vector<std::array<int, 3>> shapes = {{1, 64, 32}, {32, 64, 1}, {37, 53, 71},   {1, 1, 1},
                                                  {5, 1, 7},   {1, 300, 1}, {128, 256, 64}, {513, 1024, 257}};
  for (Dtype d : dtypes) {
    for (auto [m, k, n] : shapes) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " " + std::to_string(m) + "x" + std::to_string(k) + "x" +
                   std::to_string(n));
      EXPECT_TRUE(same_product(input({m, k}, d, 3), input({k, n}, d, 4)));
    }
    SCOPED_TRACE(dtype_name(d));
    // numpy's 1-d rules: a row vector on the left, a column on the right.
    EXPECT_TRUE(same_product(input({53}, d, 5), input({53, 71}, d, 6)));
    EXPECT_TRUE(same_product(input({37, 53}, d, 7), input({53}, d, 8)));
    EXPECT_TRUE(same_product(input({53}, d, 9), input({53}, d, 10)));
  }
}

TEST(CudaMatmul, BatchesWithBroadcastOperands) {
  NUVEC_REQUIRE_GPU();
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{4, 37, 53}, {4, 53, 71}},        // one strided batch
      {{4, 37, 53}, {53, 71}},           // a batch of a against one b (the op folds it into one product)
      {{4, 37, 53}, {1, 53, 71}},        // the same with b broadcast along a batch axis (stride 0)
      {{1, 37, 53}, {4, 53, 71}},        // a broadcast against a batch of b
      {{2, 3, 37, 53}, {2, 1, 53, 71}},  // batch axes that do not merge: a loop over the outer one
      {{3, 1, 37, 53}, {1, 4, 53, 71}},  // both broadcast
      {{2, 3, 1, 53}, {2, 3, 53, 1}}};   // batches of dot products
  for (Dtype d : dtypes) {
    for (const auto& [a_shape, b_shape] : shapes) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " " + shape_string(a_shape) + " @ " + shape_string(b_shape));
      EXPECT_TRUE(same_product(input(a_shape, d, 11), input(b_shape, d, 12)));
    }
  }
}

TEST(CudaMatmul, TransposedAndSlicedViewsAreReadInPlace) {
  NUVEC_REQUIRE_GPU();
  for (Dtype d : dtypes) {
    SCOPED_TRACE(dtype_name(d));
    auto a = input({37, 53}, d, 13);
    auto b = input({53, 71}, d, 14);
    auto at = transpose(input({53, 37}, d, 15), cpu);  // column-major (37, 53)
    auto bt = transpose(input({71, 53}, d, 16), cpu);  // column-major (53, 71)
    EXPECT_TRUE(cuda::gemm_operand_ok(at) && cuda::gemm_operand_ok(bt));
    EXPECT_TRUE(same_product(at, b));
    EXPECT_TRUE(same_product(a, bt));
    EXPECT_TRUE(same_product(at, bt));
    // Batched transposes, one broadcast.
    auto batch_t = transpose(input({4, 53, 37}, d, 17), {0, 2, 1}, cpu);
    EXPECT_TRUE(same_product(batch_t, bt));
    EXPECT_TRUE(same_product(batch_t, transpose(input({4, 71, 53}, d, 18), {0, 2, 1}, cpu)));
    // Rows further apart than their length, and a first element off cuBLASLt's default 256-byte alignment.
    auto wide = input({40, 64}, d, 19);
    EXPECT_TRUE(same_product(slice(wide, {0, 0}, {37, 53}, cpu), b));
    EXPECT_TRUE(same_product(slice(wide, {1, 3}, {38, 56}, cpu), b));
    EXPECT_TRUE(same_product(a, slice(input({60, 80}, d, 20), {5, 1}, {58, 72}, cpu)));
  }
}

TEST(CudaMatmul, OperandsNeitherAxisContiguousAreCopiedFirst) {
  NUVEC_REQUIRE_GPU();
  // Every other column: not a layout cuBLASLt reads, so evaluation hands the kernel a row-contiguous copy.
  auto a = slice(input({37, 106}, float32, 21), {0, 0}, {37, 106}, {1, 2}, cpu);
  EXPECT_FALSE(cuda::gemm_operand_ok(a));
  EXPECT_TRUE(same_product(a, input({53, 71}, float32, 22)));
}

TEST(CudaMatmul, HalfPrecisionWeightsOfAFloat32Product) {
  NUVEC_REQUIRE_GPU();
  auto x = input({37, 53}, float32, 23);
  for (Dtype w : {float16, bfloat16}) {
    SCOPED_TRACE(dtype_name(w));
    EXPECT_TRUE(same_product(x, input({53, 71}, w, 24)));
    EXPECT_TRUE(same_product(x, transpose(input({71, 53}, w, 25), cpu)));  // a linear layer's (out, in) weight
    EXPECT_TRUE(same_product(input({4, 37, 53}, float32, 26), input({1, 53, 71}, w, 27)));
    EXPECT_TRUE(same_product(input({53, 37}, w, 28), input({37, 71}, float32, 29)));
  }
  // float16 @ bfloat16 is a float32 product of both widened.
  EXPECT_TRUE(same_product(input({37, 53}, float16, 30), input({53, 71}, bfloat16, 31)));
}

TEST(CudaMatmul, EmptyOutputsAndEmptySums) {
  NUVEC_REQUIRE_GPU();
  for (Dtype d : dtypes) {
    SCOPED_TRACE(dtype_name(d));
    EXPECT_TRUE(same_product(input({0, 5}, d, 32), input({5, 7}, d, 33)));
    EXPECT_TRUE(same_product(input({4, 0}, d, 34), input({0, 7}, d, 35)));  // K = 0: zeros
    EXPECT_TRUE(same_product(input({0, 3, 4}, d, 36), input({0, 4, 5}, d, 37)));
    EXPECT_TRUE(same_product(input({2, 3, 0}, d, 38), input({2, 0, 5}, d, 39)));
  }
}

TEST(CudaMatmul, ProductsOfGpuResults) {
  NUVEC_REQUIRE_GPU();
  // The second product reads the first one's GPU buffer (no upload), transposed.
  auto a = input({37, 53}, bfloat16, 40);
  auto b = input({53, 71}, bfloat16, 41);
  auto c = input({37, 29}, bfloat16, 42);
  auto on_gpu = matmul(transpose(matmul(a, b, gpu), gpu), c, gpu);
  auto on_cpu = matmul(transpose(matmul(a, b, cpu), cpu), c, cpu);
  EXPECT_TRUE(close(on_gpu, on_cpu));
}

TEST(CudaMatmul, Float64) {
  NUVEC_REQUIRE_GPU();
  EXPECT_TRUE(same_product(input({37, 53}, float64, 43), input({53, 71}, float64, 44)));
  EXPECT_TRUE(
      same_product(input({3, 37, 53}, float64, 45), transpose(input({3, 71, 53}, float64, 46), {0, 2, 1}, cpu)));
}

TEST(CudaMatmul, SupportedDtypesAndReadableLayouts) {
  // Needs no GPU: which inputs the kernel takes as they are.
  for (Dtype d : {float32, float16, bfloat16, float64}) {
    EXPECT_TRUE(cuda::gemm_supported(d)) << dtype_name(d);
  }
  for (Dtype d : {int32, int64, uint8, bool_, complex64}) {
    EXPECT_FALSE(cuda::gemm_supported(d)) << dtype_name(d);
  }
  // The layout of an evaluated array: a lazy view has no strides yet.
  auto readable = [](array view) {
    view.eval();
    return cuda::gemm_operand_ok(view);
  };
  auto x = input({6, 8}, float32, 47);
  EXPECT_TRUE(readable(x));
  EXPECT_TRUE(readable(transpose(x, cpu)));
  EXPECT_TRUE(readable(slice(x, {1, 2}, {5, 7}, cpu)));
  EXPECT_TRUE(readable(broadcast_to(x, {3, 6, 8}, cpu)));
  EXPECT_FALSE(readable(slice(x, {0, 0}, {6, 8}, {1, 2}, cpu)));  // neither axis contiguous
  EXPECT_FALSE(readable(broadcast_to(input({1, 8}, float32, 48), {6, 8}, cpu)));  // rows overlap
  EXPECT_FALSE(cuda::gemm_operand_ok(input({8}, float32, 49)));
}

// ---------------------------------------------------------------- addmm

::testing::AssertionResult same_addmm(const array& c, const array& a, const array& b, float alpha, float beta) {
  return close(addmm(c, a, b, alpha, beta, gpu), addmm(c, a, b, alpha, beta, cpu));
}

TEST(CudaAddmm, AlphaBetaAndBroadcastC) {
  NUVEC_REQUIRE_GPU();
  for (Dtype d : dtypes) {
    SCOPED_TRACE(dtype_name(d));
    auto a = input({37, 53}, d, 50);
    auto b = input({53, 71}, d, 51);
    for (auto [alpha, beta] : {std::pair{1.F, 1.F}, std::pair{0.5F, 2.F}, std::pair{-1.F, 0.25F}}) {
      SCOPED_TRACE(std::to_string(alpha) + ", " + std::to_string(beta));
      EXPECT_TRUE(same_addmm(input({37, 71}, d, 52), a, b, alpha, beta));
      EXPECT_TRUE(same_addmm(input({71}, d, 53), a, b, alpha, beta));     // a bias, broadcast over rows
      EXPECT_TRUE(same_addmm(input({37, 1}, d, 54), a, b, alpha, beta));  // broadcast over columns
      EXPECT_TRUE(same_addmm(input({1}, d, 55), a, b, alpha, beta));      // one value
      EXPECT_TRUE(same_addmm(transpose(input({71, 37}, d, 56), cpu), a, b, alpha, beta));
      EXPECT_TRUE(same_addmm(input({71}, d, 57), transpose(input({53, 37}, d, 58), cpu), b, alpha, beta));
    }
    // Batches: c broadcast over the batch and within it.
    auto a3 = input({4, 37, 53}, d, 59);
    auto b3 = input({4, 53, 71}, d, 60);
    EXPECT_TRUE(same_addmm(input({4, 37, 71}, d, 61), a3, b3, 1.F, 1.F));
    EXPECT_TRUE(same_addmm(input({71}, d, 62), a3, b3, 0.5F, 1.5F));
    EXPECT_TRUE(same_addmm(input({4, 1, 71}, d, 63), a3, input({53, 71}, d, 64), 2.F, -1.F));
  }
}

TEST(CudaAddmm, BetaZeroIgnoresC) {
  NUVEC_REQUIRE_GPU();
  // As BLAS: with beta == 0 the product does not read c, so its NaNs do not reach the result.
  auto c = full({37, 71}, std::numeric_limits<float>::quiet_NaN(), cpu);
  auto out = addmm(c, input({37, 53}, float32, 65), input({53, 71}, float32, 66), 1.F, 0.F, gpu);
  EXPECT_FALSE(any(isnan(out, cpu), cpu).item<bool>());
  EXPECT_TRUE(same_addmm(c, input({37, 53}, float32, 65), input({53, 71}, float32, 66), 0.5F, 0.F));
}

TEST(CudaAddmm, EmptySumsAndEmptyOutputs) {
  NUVEC_REQUIRE_GPU();
  for (Dtype d : dtypes) {
    SCOPED_TRACE(dtype_name(d));
    auto a = input({5, 0}, d, 67);
    auto b = input({0, 7}, d, 68);
    // K = 0: beta * c, zeros for beta == 0, c itself for beta == 1, and c scaled (on the host) otherwise.
    for (float beta : {0.F, 1.F, 2.5F}) {
      SCOPED_TRACE(beta);
      EXPECT_TRUE(same_addmm(input({5, 7}, d, 69), a, b, 1.F, beta));
      EXPECT_TRUE(same_addmm(input({7}, d, 70), a, b, 3.F, beta));
    }
    EXPECT_TRUE(same_addmm(input({0, 7}, d, 71), input({0, 5}, d, 72), input({5, 7}, d, 73), 1.F, 1.F));
  }
}

TEST(CudaAddmm, Float64) {
  NUVEC_REQUIRE_GPU();
  EXPECT_TRUE(
      same_addmm(input({71}, float64, 74), input({37, 53}, float64, 75), input({53, 71}, float64, 76), 0.5F, 2.F));
}

}  // namespace
}  // namespace nuvec
