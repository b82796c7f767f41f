// Row kernels on the GPU against the CPU backend: softmax and logsumexp, rms_norm and layer_norm, rope, and arange;
// float32, float16, bfloat16 and float64; rows of 1, 7, 1000 and 5000 elements (a warp per row) and of 20000 (a
// block of 1024 threads), empty rows and arrays, transposed inputs (copied to rows first), other axes, NaNs and
// infinities, weights and biases present, absent and broadcast, and rope's layouts and options.

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "nuvec/nuvec.h"
#include "tests/cuda/gpu_test_util.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using test::same_values;

const Device gpu = Device::gpu;
const Device cpu = Device::cpu;

const std::vector<Dtype> floats = {float32, float16, bfloat16, float64};

/// The tolerance of a row result of dtype d: the backends' exp, log, sin and cos differ by an ulp or two and they
/// sum rows in different orders, so float32 and float64 get more room than one rounding; the half floats' own
/// rounding dominates theirs.
double row_rtol(Dtype d) {
  if (d == float32) {
    return 2e-5;
  }
  if (d == float64) {
    return 1e-11;
  }
  return test::gpu_rtol(d);
}

/// The op on both backends with the rows' tolerance.
template <class F>
void compare(const std::string& what, F&& op, Dtype d, double atol = 1e-5) {
  test::compare(what, std::forward<F>(op), d, row_rtol(d), atol);
}

/// Inputs of dtype d: rows of every kernel's size, a transposed view, and empty arrays.
struct Rows {
  std::string name;
  array x;
};
std::vector<Rows> row_inputs(Dtype d, std::mt19937& rng) {
  auto r = [&](const Shape& shape) { return test::random_array(shape, d, rng, -3.0, 3.0); };
  return {
      {"rows of 1", r({13, 1})},
      {"rows of 7", r({13, 7})},
      {"rows of 1000", r({37, 1000})},
      {"rows of 5000", r({3, 5000})},
      {"rows of 20000", r({2, 20000})},
      {"three axes", r({3, 5, 33})},
      {"transposed", transpose(r({1000, 37}), cpu)},
      {"empty rows", r({4, 0})},
      {"no rows", r({0, 5})},
  };
}

TEST(CudaRows, SoftmaxAndLogsumexpMatchTheCpu) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(31);
  for (Dtype d : floats) {
    for (const auto& input : row_inputs(d, rng)) {
      const std::string& name = input.name;
      const array& x = input.x;
      for (bool precise : {false, true}) {
        compare(
            "softmax " + name + (precise ? " precise" : ""), [&](Device dev) { return softmax(x, -1, precise, dev); },
            d);
      }
      compare(
          "softmax axis 0 " + name, [&](Device dev) { return softmax(x, 0, false, dev); }, d);
      compare(
          "softmax all axes " + name, [&](Device dev) { return softmax(x, false, dev); }, d);
      for (bool keepdims : {false, true}) {
        compare(
            "logsumexp " + name, [&](Device dev) { return logsumexp(x, -1, keepdims, dev); }, d);
      }
      compare(
          "logsumexp axis 0 " + name, [&](Device dev) { return logsumexp(x, 0, false, dev); }, d);
      compare(
          "logsumexp all axes " + name, [&](Device dev) { return logsumexp(x, false, dev); }, d);
    }
  }
}

TEST(CudaRows, SoftmaxOfNanAndInfiniteRowsMatchesTheCpu) {
  NUVEC_REQUIRE_GPU();
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Rows: plain, a NaN, +inf, all -inf, one -inf, +inf and -inf together.
  const array x({0.5,  1.0,  -2.0, 3.0,   //
                 0.5,  nan,  -2.0, 3.0,   //
                 0.5,  inf,  -2.0, 3.0,   //
                 -inf, -inf, -inf, -inf,  //
                 0.5,  -inf, -2.0, 3.0,   //
                 inf,  -inf, 1.0,  2.0},
                {6, 4}, float64);
  for (Dtype d : floats) {
    auto xd = astype(x, d, cpu);
    compare(
        "softmax special", [&](Device dev) { return softmax(xd, -1, false, dev); }, d);
    compare(
        "logsumexp special", [&](Device dev) { return logsumexp(xd, -1, false, dev); }, d);
    // Long rows hold the specials among many finite values (a block per row).
    auto long_rows = concatenate({xd, broadcast_to(astype(array(0.25), d, cpu), {6, 3000}, cpu)}, 1, cpu);
    compare(
        "softmax special long", [&](Device dev) { return softmax(long_rows, -1, false, dev); }, d);
    compare(
        "logsumexp special long", [&](Device dev) { return logsumexp(long_rows, -1, false, dev); }, d);
  }
}

TEST(CudaRows, NormsMatchTheCpuWithAndWithoutParameters) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(32);
  for (Dtype d : floats) {
    for (const auto& input : row_inputs(d, rng)) {
      const std::string& name = input.name;
      const array& x = input.x;
      const int n = x.shape(-1);
      const auto w = test::random_array({n}, d, rng, 0.5, 1.5);
      const auto b = test::random_array({n}, d, rng, -1.0, 1.0);
      // A weight read with stride 0: one value broadcast over the row.
      const auto flat_w = broadcast_to(astype(array(1.25), d, cpu), {n}, cpu);
      for (const auto& weight : {std::optional<array>(), std::optional<array>(w), std::optional<array>(flat_w)}) {
        const std::string which = weight ? " weight" : "";
        compare(
            "rms_norm " + name + which, [&](Device dev) { return fast::rms_norm(x, weight, 1e-5F, dev); }, d);
        for (const auto& bias : {std::optional<array>(), std::optional<array>(b)}) {
          compare(
              "layer_norm " + name + which + (bias ? " bias" : ""),
              [&](Device dev) { return fast::layer_norm(x, weight, bias, 1e-5F, dev); }, d);
        }
      }
    }
  }
}

TEST(CudaRows, NormResultsStayOnTheGpuAndLargeMeansStayAccurate) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(33);
  // Rows with a large mean: the two-pass variance keeps layer_norm accurate.
  auto x = add(test::random_array({16, 4096}, float32, rng), array(1000.0F), cpu);
  auto y = fast::layer_norm(x, std::nullopt, std::nullopt, 1e-5F, gpu);
  y.eval();
  EXPECT_EQ(y.data_device(), gpu);
  EXPECT_TRUE(same_values(y, fast::layer_norm(x, std::nullopt, std::nullopt, 1e-5F, cpu), 1e-3, 1e-3));
}

TEST(CudaRows, RopeMatchesTheCpuOverLayoutsAndOptions) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(34);
  for (Dtype d : floats) {
    const std::vector<Rows> inputs = {
        {"one head", test::random_array({1, 1, 7, 8}, d, rng)},
        {"heads", test::random_array({2, 3, 5, 64}, d, rng)},
        // (B, L, H, D) read as (B, H, L, D): strided, read in place.
        {"transposed heads", transpose(test::random_array({2, 5, 3, 64}, d, rng), {0, 2, 1, 3}, cpu)},
        {"two middle axes", test::random_array({2, 2, 3, 5, 16}, d, rng)},
        // Middle axes that do not merge: copied first.
        {"swapped middle axes", transpose(test::random_array({2, 3, 2, 5, 16}, d, rng), {0, 2, 1, 3, 4}, cpu)},
        {"three axes", test::random_array({4, 9, 32}, d, rng)},
        {"empty", test::random_array({2, 3, 0, 16}, d, rng)},
    };
    const auto offsets = array({3, 11}, int32);
    for (const auto& input : inputs) {
      const std::string& name = input.name;
      const array& x = input.x;
      const int features = x.shape(-1);
      for (int dims : {features, features / 2}) {
        for (bool traditional : {false, true}) {
          const std::string what =
              "rope " + name + " dims " + std::to_string(dims) + (traditional ? " traditional" : "");
          compare(
              what, [&](Device dev) { return fast::rope(x, dims, traditional, 10000.0F, 1.0F, 0, std::nullopt, dev); },
              d);
          compare(
              what + " scaled offset 5",
              [&](Device dev) { return fast::rope(x, dims, traditional, 500.0F, 0.5F, 5, std::nullopt, dev); }, d);
          if (x.shape(0) == 2) {
            compare(
                what + " offsets per batch",
                [&](Device dev) {
                  return fast::rope(x, dims, traditional, 10000.0F, 1.0F, offsets, std::nullopt, dev);
                },
                d);
          }
          const auto freqs = test::random_array({dims / 2}, float32, rng, 1.0, 100.0);
          compare(
              what + " freqs",
              [&](Device dev) { return fast::rope(x, dims, traditional, std::nullopt, 1.0F, 2, freqs, dev); }, d);
        }
      }
    }
  }
}

TEST(CudaRows, ArangeMatchesTheCpu) {
  NUVEC_REQUIRE_GPU();
  for (Dtype d : {float32, float16, bfloat16, float64, int32, int64, uint8, int8, uint32, bool_}) {
    compare(
        "arange 0.5 5 0.7", [&](Device dev) { return arange(0.5, 5.0, 0.7, d, dev); }, d, 0.0);
    compare(
        "arange -3 1000 1.5", [&](Device dev) { return arange(-3.0, 1000.0, 1.5, d, dev); }, d, 0.0);
    compare(
        "arange 10 -10 -0.3", [&](Device dev) { return arange(10.0, -10.0, -0.3, d, dev); }, d, 0.0);
    compare(
        "arange 0 2^20", [&](Device dev) { return arange(0.0, 1048576.0, 1.0, d, dev); }, d, 0.0);
    compare(
        "arange empty", [&](Device dev) { return arange(3.0, 3.0, 1.0, d, dev); }, d, 0.0);
  }
  auto a = arange(0.0, 100.0, 0.1, float32, gpu);
  a.eval();
  EXPECT_EQ(a.data_device(), gpu);
}

}  // namespace
}  // namespace nuvec
