// Reductions on the GPU against the CPU backend: Reduce through sum, prod, max, min, all, any and mean (whose sums
// of half floats and integers accumulate into float32), ArgReduce through argmax and argmin; float32, float16,
// bfloat16, float64, int32, uint8 and bool inputs; rows of 1, 7, 1000 and 5000 elements (a thread, a warp and a
// block per row), columns, all axes, size-1 and negative axes, keepdims, transposed, permuted, broadcast and
// strided views, empty inputs, NaNs and infinities, and arrays long enough for rows and columns to be split into
// pieces that a second launch folds.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "nuvec/nuvec.h"
#include "tests/cuda/gpu_test_util.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using test::same_values;

const Device gpu = Device::gpu;
const Device cpu = Device::cpu;

using ReduceFn = array (*)(const array&, const std::vector<int>&, bool, StreamOrDevice);
struct NamedReduce {
  std::string name;
  ReduceFn f;
};
const std::vector<NamedReduce> reductions = {{"sum", sum}, {"prod", prod}, {"max", max},  {"min", min},
                                             {"all", all}, {"any", any},   {"mean", mean}};

const std::vector<Dtype> dtypes = {float32, float16, bfloat16, float64, int32, uint8, bool_};

/// An input and the axes lists to reduce it over.
struct Layout {
  std::string name;
  array x;
  std::vector<std::vector<int>> axes;
};

/// The sweep's inputs of dtype d with values in [low, high): the views are made on the host and read by the GPU.
std::vector<Layout> layouts(Dtype d, std::mt19937& rng, double low, double high) {
  auto r = [&](const Shape& shape) { return test::random_array(shape, d, rng, low, high); };
  return {
      {"rows of 1", r({13, 1}), {{1}, {0, 1}}},
      {"rows of 7", r({13, 7}), {{1}, {-1}, {0}}},
      {"rows of 1000", r({37, 1000}), {{1}, {0}, {0, 1}}},
      {"rows of 5000", r({3, 5000}), {{-1}, {0}}},
      {"size-1 axes", r({4, 1, 9}), {{1, 2}, {0, 1}, {0}}},
      {"three axes", r({6, 50, 7}), {{1}, {0, 2}, {0, 1}, {1, 2}, {-3, -1}}},
      {"four axes", r({2, 3, 4, 5}), {{0, 1, 2, 3}, {1, 3}, {-1}}},
      {"transposed", transpose(r({1000, 37}), cpu), {{1}, {0}, {0, 1}}},
      {"permuted", transpose(r({7, 6, 50}), {1, 2, 0}, cpu), {{1}, {0, 2}, {2}, {0, 1}}},
      {"broadcast", broadcast_to(r({1, 64}), {32, 64}, cpu), {{0}, {1}}},
      {"strided", slice(r({40, 90}), {0, 0}, {40, 90}, {1, 3}, cpu), {{1}, {0}}},
  };
}

/// The tolerance between the backends' results of reduction `name` of n elements: exact but for float sums and
/// products, which the backends take in different orders (a sum's rounding error grows about as sqrt(n) units of
/// the accumulator times the largest term, 2 here; a product's as n at worst).
std::pair<double, double> tolerance(const std::string& name, Dtype in, Dtype out, size_t n) {
  if (!issubdtype(out, inexact) || name == "max" || name == "min") {
    return {0.0, 0.0};
  }
  const double eps = in == float64 ? 2.3e-16 : 1.2e-7;
  if (name == "prod") {
    return {std::max(test::gpu_rtol(out), static_cast<double>(n) * eps), 1e-30};
  }
  return {test::gpu_rtol(out), 16 * eps * std::sqrt(static_cast<double>(n))};
}

/// The reduction on both backends, or nothing when the op rejects the input (it throws on the CPU too).
void compare(const std::string& what, const NamedReduce& r, const array& x, const std::vector<int>& axes,
             bool keepdims) {
  array expected(0);
  try {
    expected = r.f(x, axes, keepdims, cpu);
    expected.eval();
  } catch (const nuvec::error&) {
    return;
  }
  auto actual = r.f(x, axes, keepdims, gpu);
  const size_t n = x.size() / std::max<size_t>(1, expected.size());
  auto [rtol, atol] = tolerance(r.name, x.dtype(), expected.dtype(), n);
  EXPECT_TRUE(same_values(actual, expected, rtol, atol)) << what;
}

std::string axes_name(const std::vector<int>& axes) {
  std::string text = "axes";
  for (int a : axes) {
    text += ' ';
    text += std::to_string(a);
  }
  return text;
}

TEST(CudaReduce, ReductionsMatchTheCpuOverDtypesLayoutsAndAxes) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(21);
  for (Dtype d : dtypes) {
    // Products of many terms stay finite and normal near 1.
    const auto wide = layouts(d, rng, -2.0, 2.0);
    const auto near_one = layouts(d, rng, 0.99, 1.01);
    for (const auto& r : reductions) {
      const auto& cases = r.name == "prod" && issubdtype(d, floating) ? near_one : wide;
      for (const auto& layout : cases) {
        for (const auto& axes : layout.axes) {
          for (bool keepdims : {false, true}) {
            compare(r.name + " " + std::string(dtype_name(d)) + " " + layout.name + " " + axes_name(axes) +
                        (keepdims ? " keepdims" : ""),
                    r, layout.x, axes, keepdims);
          }
        }
      }
    }
  }
}

TEST(CudaReduce, AllAxesAndLongReductionsSplitIntoPieces) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(22);
  for (Dtype d : {float32, bfloat16, int32, bool_}) {
    // One row of a million (pieces of a row), few long rows, and a tall column block (pieces of columns).
    const std::vector<Layout> cases = {
        {"one long row", test::random_array({1 << 20}, d, rng), {{0}}},
        {"few long rows", test::random_array({64, 70000}, d, rng), {{1}}},
        {"tall columns", test::random_array({100000, 3}, d, rng), {{0}}},
        {"tall wide columns", test::random_array({20000, 40}, d, rng), {{0}}},
        {"all axes", test::random_array({40, 30, 50}, d, rng), {{0, 1, 2}}},
    };
    for (const auto& r : reductions) {
      if (r.name == "prod" && issubdtype(d, floating)) {
        continue;  // products of this many terms leave float range
      }
      for (const auto& layout : cases) {
        compare(r.name + " " + std::string(dtype_name(d)) + " " + layout.name, r, layout.x, layout.axes[0], false);
      }
    }
  }
}

TEST(CudaReduce, EmptyReductionsGiveTheIdentity) {
  NUVEC_REQUIRE_GPU();
  for (Dtype d : {float32, float16, int32, bool_}) {
    auto x = zeros({0, 5}, d, cpu);
    for (const auto& r : reductions) {
      // max and min of nothing throw on both backends (compare skips them).
      for (const auto& axes : std::vector<std::vector<int>>{{0}, {1}, {0, 1}}) {
        compare(r.name + " empty " + std::string(dtype_name(d)) + " " + axes_name(axes), r, x, axes, false);
      }
    }
  }
}

/// An array of `shape` whose every `every`-th element is `special` (NaN or an infinity), the rest random near 1 (so
/// that products neither underflow nor overflow, which would make inf * 0 depend on the order of the factors).
array with_special(const Shape& shape, Dtype d, double special, size_t every, std::mt19937& rng) {
  auto values = test::random_array(shape, float64, rng, 0.99, 1.01);
  std::vector<double> data(values.data<double>(), values.data<double>() + values.size());
  for (size_t i = 3; i < data.size(); i += every) {
    data[i] = special;
  }
  return astype(array(data.begin(), shape, float64), d, cpu);
}

TEST(CudaReduce, NanAndInfinitiesPropagateAsOnTheCpu) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(23);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (Dtype d : {float32, float16, bfloat16}) {
    for (double special : {nan, inf, -inf}) {
      // Rows of 7 and 1000 with a special value in some rows only, and columns.
      for (const Shape& shape : {Shape{13, 7}, Shape{37, 1000}, Shape{3, 5000}}) {
        auto x = with_special(shape, d, special, 97, rng);
        for (const auto& r : reductions) {
          for (const auto& axes : std::vector<std::vector<int>>{{1}, {0}, {0, 1}}) {
            compare(r.name + " special " + std::to_string(special) + " " + std::string(dtype_name(d)) + " " +
                        axes_name(axes),
                    r, x, axes, false);
          }
        }
      }
    }
  }
}

TEST(CudaReduce, ResultsStayOnTheGpu) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(24);
  auto x = test::random_array({37, 1000}, float32, rng);
  auto total = sum(exp(x, gpu), {1}, false, gpu);
  total.eval();
  EXPECT_EQ(total.data_device(), gpu);
  EXPECT_TRUE(same_values(total, sum(exp(x, cpu), {1}, false, cpu), 2e-6, 1e-4));
  auto index = argmax(x, 1, false, gpu);
  index.eval();
  EXPECT_EQ(index.data_device(), gpu);
}

// ---------------------------------------------------------------- argmax and argmin

using ArgFn = array (*)(const array&, int, bool, StreamOrDevice);
struct NamedArg {
  std::string name;
  ArgFn f;
};
const std::vector<NamedArg> arg_reductions = {{"argmax", argmax}, {"argmin", argmin}};

void compare_arg(const std::string& what, const NamedArg& r, const array& x, int axis, bool keepdims) {
  array expected(0);
  try {
    expected = r.f(x, axis, keepdims, cpu);
    expected.eval();
  } catch (const nuvec::error&) {
    return;
  }
  EXPECT_TRUE(same_values(r.f(x, axis, keepdims, gpu), expected)) << what;
}

TEST(CudaReduce, ArgReductionsPickTheFirstExtremeAsTheCpu) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(25);
  // Small integers, bools and half floats have many ties: the first index must win.
  for (Dtype d : dtypes) {
    for (const auto& layout : layouts(d, rng, -2.0, 2.0)) {
      for (const auto& r : arg_reductions) {
        for (int axis = -layout.x.ndim(); axis < layout.x.ndim(); ++axis) {
          for (bool keepdims : {false, true}) {
            compare_arg(r.name + " " + std::string(dtype_name(d)) + " " + layout.name + " axis " +
                            std::to_string(axis) + (keepdims ? " keepdims" : ""),
                        r, layout.x, axis, keepdims);
          }
        }
        // Over all axes: the flattened array.
        auto expected = r.name == "argmax" ? argmax(layout.x, false, cpu) : argmin(layout.x, false, cpu);
        auto actual = r.name == "argmax" ? argmax(layout.x, false, gpu) : argmin(layout.x, false, gpu);
        EXPECT_TRUE(same_values(actual, expected)) << r.name << " all " << dtype_name(d) << " " << layout.name;
      }
    }
  }
}

TEST(CudaReduce, ArgReductionsOfLongRowsAndNans) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(26);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (Dtype d : {float32, bfloat16, int32}) {
    auto row = test::random_array({1 << 20}, d, rng);
    auto columns = test::random_array({100000, 3}, d, rng);
    for (const auto& r : arg_reductions) {
      compare_arg(r.name + " long row " + std::string(dtype_name(d)), r, row, 0, false);
      compare_arg(r.name + " tall columns " + std::string(dtype_name(d)), r, columns, 0, false);
    }
  }
  for (Dtype d : {float32, float16}) {
    for (const Shape& shape : {Shape{13, 7}, Shape{37, 1000}, Shape{3, 5000}}) {
      auto x = with_special(shape, d, nan, 97, rng);
      for (const auto& r : arg_reductions) {
        for (int axis : {0, 1}) {
          compare_arg(r.name + " nan " + std::string(dtype_name(d)) + " axis " + std::to_string(axis), r, x, axis,
                      false);
        }
      }
    }
  }
}

}  // namespace
}  // namespace nuvec
