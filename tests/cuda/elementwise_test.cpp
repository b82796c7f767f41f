// Element-wise kernels on the GPU against the CPU backend: every unary and binary op over dtypes and layouts
// (row-contiguous, transposed views, broadcasts, scalar operands, empty and large arrays), inputs on the host
// (uploaded) and on the GPU (the output of an earlier kernel), Select and conversions.

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nuvec/nuvec.h"
#include "tests/cuda/gpu_test_util.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using test::compare;
using test::same_values;

const Device gpu = Device::gpu;
const Device cpu = Device::cpu;

using UnaryFn = array (*)(const array&, StreamOrDevice);
using BinaryFn = array (*)(const array&, const array&, StreamOrDevice);

struct Named {
  const char* name;
  UnaryFn f;
};
struct NamedBinary {
  const char* name;
  BinaryFn f;
};

const std::vector<Named> unary_ops = {
    {"abs", abs},         {"negative", negative},   {"sign", sign},          {"floor", floor},
    {"ceil", ceil},       {"square", square},       {"sqrt", sqrt},          {"rsqrt", rsqrt},
    {"reciprocal", reciprocal}, {"exp", exp},       {"expm1", expm1},        {"log", log},
    {"log2", log2},       {"log10", log10},         {"log1p", log1p},        {"sin", sin},
    {"cos", cos},         {"tan", tan},             {"arcsin", arcsin},      {"arccos", arccos},
    {"arctan", arctan},   {"sinh", sinh},           {"cosh", cosh},          {"tanh", tanh},
    {"arcsinh", arcsinh}, {"arccosh", arccosh},     {"arctanh", arctanh},    {"sigmoid", sigmoid},
    {"erf", erf},         {"erfinv", erfinv},       {"logical_not", logical_not}, {"isnan", isnan},
    {"isinf", isinf},     {"bitwise_invert", bitwise_invert}};

const std::vector<NamedBinary> binary_ops = {
    {"add", add},           {"subtract", subtract},         {"multiply", multiply},   {"divide", divide},
    {"remainder", remainder}, {"power", power},             {"maximum", maximum},     {"minimum", minimum},
    {"logaddexp", logaddexp}, {"arctan2", arctan2},         {"equal", equal},         {"not_equal", not_equal},
    {"greater", greater},   {"greater_equal", greater_equal}, {"less", less},         {"less_equal", less_equal},
    {"logical_and", logical_and}, {"logical_or", logical_or}, {"bitwise_and", bitwise_and},
    {"bitwise_or", bitwise_or}, {"bitwise_xor", bitwise_xor}, {"left_shift", left_shift},
    {"right_shift", right_shift}};

const std::vector<Dtype> dtypes = {float32, float16, bfloat16, float64, int32, int64, uint8, int8, uint32, bool_};

TEST(CudaElementwise, UnaryOpsMatchTheCpuOverDtypesAndLayouts) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(11);
  for (Dtype d : dtypes) {
    auto a = test::random_array({37, 129}, d, rng, -0.95, 0.95);
    auto t = transpose(test::random_array({129, 37}, d, rng, -0.95, 0.95), cpu);
    auto empty = test::random_array({0, 5}, d, rng);
    for (const auto& [name, f] : unary_ops) {
      compare(std::string(name) + " contiguous", [&](Device dev) { return f(a, dev); }, d);
      compare(std::string(name) + " transposed", [&](Device dev) { return f(t, dev); }, d);
      compare(std::string(name) + " empty", [&](Device dev) { return f(empty, dev); }, d);
    }
  }
}

TEST(CudaElementwise, BinaryOpsMatchTheCpuOverDtypesAndBroadcasts) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(12);
  for (Dtype d : dtypes) {
    auto a = test::random_array({37, 129}, d, rng, 0.1, 3.0);
    auto b = test::random_array({37, 129}, d, rng, 0.1, 3.0);
    auto column = test::random_array({37, 1}, d, rng, 0.1, 3.0);
    auto row = test::random_array({129}, d, rng, 0.1, 3.0);
    auto scalar = test::random_array({}, d, rng, 0.1, 3.0);
    auto t = transpose(test::random_array({129, 37}, d, rng, 0.1, 3.0), cpu);
    for (const auto& [name, f] : binary_ops) {
      const std::string n(name);
      compare(n + " same shape", [&](Device dev) { return f(a, b, dev); }, d);
      compare(n + " column by row", [&](Device dev) { return f(column, row, dev); }, d);
      compare(n + " scalar operand", [&](Device dev) { return f(a, scalar, dev); }, d);
      compare(n + " scalar first", [&](Device dev) { return f(scalar, a, dev); }, d);
      compare(n + " transposed view", [&](Device dev) { return f(t, a, dev); }, d);
    }
  }
}

TEST(CudaElementwise, SpecialValuesPropagateAsOnTheCpu) {
  NUVEC_REQUIRE_GPU();
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  array x({0.0, -0.0, 1.0, -1.0, inf, -inf, nan, 1e-40, 3e38, -2.5, 2.5, 0.5});
  array y({nan, 2.0, -0.0, inf, 1.0, -inf, 0.5, 3e38, 1e-40, -2.5, 0.0, -1.0});
  for (const auto& [name, f] : unary_ops) {
    compare(std::string(name) + " special", [&](Device dev) { return f(x, dev); }, float32);
  }
  for (const auto& [name, f] : binary_ops) {
    compare(std::string(name) + " special", [&](Device dev) { return f(x, y, dev); }, float32);
  }
}

TEST(CudaElementwise, ChainsOfGpuResultsStayOnTheGpu) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(13);
  auto a = test::random_array({1000, 300}, float32, rng);
  auto b = test::random_array({300}, float32, rng);
  auto on = [&](Device dev) { return tanh(multiply(add(a, b, dev), exp(negative(a, dev), dev), dev), dev); };
  auto result = on(gpu);
  result.eval();
  EXPECT_EQ(result.data_device(), gpu);
  EXPECT_TRUE(same_values(result, on(cpu)));
}

TEST(CudaElementwise, LargeArraysUseEveryBlock) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(14);
  auto a = test::random_array({1 << 23}, float32, rng);
  auto b = test::random_array({1 << 23}, float32, rng);
  EXPECT_TRUE(same_values(add(a, b, gpu), add(a, b, cpu)));
  EXPECT_TRUE(same_values(maximum(a, array(0.0F), gpu), maximum(a, array(0.0F), cpu)));
}

TEST(CudaElementwise, SelectAndConversionsMatchTheCpu) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(15);
  for (Dtype d : dtypes) {
    auto c = test::random_array({40, 70}, bool_, rng);
    auto x = test::random_array({40, 70}, d, rng, -300.0, 300.0);
    auto y = test::random_array({70}, d, rng, -300.0, 300.0);
    compare("where", [&](Device dev) { return where(c, x, y, dev); }, d);
    for (Dtype to : dtypes) {
      compare(std::string("astype to ") + std::string(dtype_name(to)), [&](Device dev) { return astype(x, to, dev); },
              d);
    }
  }
}

TEST(CudaElementwise, ComplexOperandsRunOnTheHost) {
  NUVEC_REQUIRE_GPU();
  array z(std::vector<complex64_t>{{1, 2}, {3, -4}}.begin(), {2}, complex64);
  auto expected = multiply(z, z, cpu);
  auto actual = multiply(z, z, gpu);
  EXPECT_TRUE(array_equal(actual, expected, false, cpu).item<bool>());
}

}  // namespace
}  // namespace nuvec
