// Reductions against NumPy (expected values come from the NumPy oracle, computed in float64/int64 and cast to the
// dtype nuvec promises, unless a test says otherwise): sum, prod, max, min, all, any, mean, var, std, count_nonzero,
// logsumexp, argmax, argmin and softmax, over every dtype, every set of axes (negative ones included), keepdims both
// ways, strided inputs, empty arrays, non-finite values, sizes that take the threaded and chunked paths; plus the
// dtype rules of CONFORMANCE.md and the error messages.

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nuvec/cpu/softmax_row.h"
#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using test::matches;
using test::numpy_ref;
using test::random_array;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

using test::error_of;

/// A Python tuple of axes, or None for "all axes".
std::string py_axes(const std::vector<int>* axes) {
  if (axes == nullptr) {
    return "None";
  }
  std::string s = "(";
  for (size_t i = 0; i < axes->size(); ++i) {
    s += std::to_string((*axes)[i]) + ",";
  }
  return s + ")";
}

/// NumPy's name for the dtype a result is compared in (bfloat16 values travel as float32).
std::string np_type(Dtype d) { return "np." + std::string(d == bfloat16 ? "float32" : dtype_name(d)); }

/// A float64 (or int64 / uint64 / complex128) type to compute the reference in.
std::string np_wide(Dtype d) {
  if (d == bool_ || is_signed_integer(d)) {
    return "np.int64";
  }
  if (is_unsigned(d)) {
    return "np.uint64";
  }
  return is_complex(d) ? "np.complex128" : "np.float64";
}

/// Every subset of the axes of an ndim array, each written with a random mix of negative and positive axes.
std::vector<std::vector<int>> axis_sets(int ndim, std::mt19937& rng) {
  std::vector<std::vector<int>> sets;
  std::bernoulli_distribution negative(0.5);
  for (int mask = 0; mask < (1 << ndim); ++mask) {
    std::vector<int> axes;
    for (int i = 0; i < ndim; ++i) {
      if ((mask >> i) & 1) {
        axes.push_back(negative(rng) ? i - ndim : i);
      }
    }
    if (axes.size() > 1 && negative(rng)) {
      std::swap(axes.front(), axes.back());  // order must not matter
    }
    sets.push_back(axes);
  }
  return sets;
}

/// Accumulation error allowance for float results: |x| <= 2 summed over up to `n` terms.
double sum_atol(Dtype out, size_t n) {
  if (is_integer(out) || out == bool_) {
    return 0.0;
  }
  return (out == float64 ? 1e-13 : 1e-6) * static_cast<double>(std::max<size_t>(n, 1));
}

double rtol_of(Dtype out) { return (is_integer(out) || out == bool_) ? 0.0 : test::default_rtol(out) * 4; }

using AxesOp = std::function<array(const array&, const std::vector<int>&, bool)>;
using AllOp = std::function<array(const array&, bool)>;

struct Reduction {
  std::string name;
  AxesOp with_axes;
  AllOp over_all;
  /// NumPy code computing the expected result, with {axes} and {keep} to fill in; `a` is the input.
  std::function<std::string(Dtype in)> reference;
  std::function<Dtype(Dtype in)> out_dtype;
};

std::string fill(std::string code, const std::string& axes, bool keepdims) {
  auto replace = [&](const std::string& key, const std::string& value) {
    for (size_t at = code.find(key); at != std::string::npos; at = code.find(key, at + value.size())) {
      code.replace(at, key.size(), value);
    }
  };
  replace("{axes}", axes);
  replace("{keep}", keepdims ? "True" : "False");
  return code;
}

size_t reduced_count(const array& x, const std::vector<int>* axes) {
  if (axes == nullptr) {
    return x.size();
  }
  size_t n = 1;
  for (int axis : *axes) {
    n *= static_cast<size_t>(x.shape(axis));
  }
  return n;
}

/// Checks one reduction of `x` over `axes` (nullptr: the overload without axes) against NumPy.
void check(const Reduction& r, const array& x, const std::vector<int>* axes, bool keepdims) {
  SCOPED_TRACE(r.name + " of " + std::string(dtype_name(x.dtype())) + shape_string(x.shape()) +
               " axis=" + py_axes(axes) + " keepdims=" + (keepdims ? "true" : "false"));
  auto out = axes != nullptr ? r.with_axes(x, *axes, keepdims) : r.over_all(x, keepdims);
  const Dtype expected_dtype = r.out_dtype(x.dtype());
  EXPECT_EQ(out.dtype(), expected_dtype);
  auto expected = numpy_ref(fill(r.reference(x.dtype()), py_axes(axes), keepdims), {x});
  EXPECT_TRUE(matches(out, expected, rtol_of(expected_dtype), sum_atol(expected_dtype, reduced_count(x, axes)), false));
}

Dtype sum_rule(Dtype d) {
  // CONFORMANCE.md: bool and signed integers of 32 bits or fewer give int32, unsigned ones uint32.
  if (d == bool_ || d == int8 || d == int16 || d == int32) {
    return int32;
  }
  if (d == uint8 || d == uint16 || d == uint32) {
    return uint32;
  }
  return d;
}
Dtype float_rule(Dtype d) { return is_inexact(d) ? d : float32; }

std::vector<Reduction> basic_reductions() {
  return {
      {"sum", [](const array& a, const std::vector<int>& ax, bool k) { return sum(a, ax, k); },
       [](const array& a, bool k) { return sum(a, k); },
       [](Dtype d) {
         return "np.sum(a.astype(" + np_wide(d) + "), axis={axes}, keepdims={keep}).astype(" + np_type(sum_rule(d)) +
                ")";
       },
       sum_rule},
      {"prod", [](const array& a, const std::vector<int>& ax, bool k) { return prod(a, ax, k); },
       [](const array& a, bool k) { return prod(a, k); },
       [](Dtype d) {
         return "np.prod(a.astype(" + np_wide(d) + "), axis={axes}, keepdims={keep}).astype(" + np_type(sum_rule(d)) +
                ")";
       },
       sum_rule},
      {"max", [](const array& a, const std::vector<int>& ax, bool k) { return max(a, ax, k); },
       [](const array& a, bool k) { return max(a, k); },
       [](Dtype) { return std::string("np.max(a, axis={axes}, keepdims={keep})"); }, [](Dtype d) { return d; }},
      {"min", [](const array& a, const std::vector<int>& ax, bool k) { return min(a, ax, k); },
       [](const array& a, bool k) { return min(a, k); },
       [](Dtype) { return std::string("np.min(a, axis={axes}, keepdims={keep})"); }, [](Dtype d) { return d; }},
      {"all", [](const array& a, const std::vector<int>& ax, bool k) { return all(a, ax, k); },
       [](const array& a, bool k) { return all(a, k); },
       [](Dtype) { return std::string("np.all(a, axis={axes}, keepdims={keep})"); }, [](Dtype) { return bool_; }},
      {"any", [](const array& a, const std::vector<int>& ax, bool k) { return any(a, ax, k); },
       [](const array& a, bool k) { return any(a, k); },
       [](Dtype) { return std::string("np.any(a, axis={axes}, keepdims={keep})"); }, [](Dtype) { return bool_; }},
      {"count_nonzero", [](const array& a, const std::vector<int>& ax, bool k) { return count_nonzero(a, ax, k); },
       [](const array& a, bool k) { return count_nonzero(a, k); },
       [](Dtype) {
         return std::string("np.asarray(np.count_nonzero(a, axis={axes}, keepdims={keep})).astype(np.int32)");
       },
       [](Dtype) { return int32; }},
  };
}

/// Reductions composed from element-wise ops (mean divides, var subtracts, ...).
std::vector<Reduction> composed_reductions() {
  return {
      {"mean", [](const array& a, const std::vector<int>& ax, bool k) { return mean(a, ax, k); },
       [](const array& a, bool k) { return mean(a, k); },
       [](Dtype d) {
         return "np.mean(a.astype(" + np_wide(is_inexact(d) ? d : float64) +
                "), axis={axes}, keepdims={keep}).astype(" + np_type(float_rule(d)) + ")";
       },
       float_rule},
      {"var(ddof=1)", [](const array& a, const std::vector<int>& ax, bool k) { return var(a, ax, k, 1); },
       [](const array& a, bool k) { return var(a, k, 1); },
       [](Dtype d) {  // NumPy warns when a count is at most ddof (the result is NaN, as nuvec's)
         return "import warnings\nwith warnings.catch_warnings():\n  warnings.simplefilter('ignore')\n"
                "  out = np.var(a.astype(" +
                np_wide(is_inexact(d) ? d : float64) + "), axis={axes}, keepdims={keep}, ddof=1).astype(" +
                np_type(is_complex(d) ? float32 : float_rule(d)) + ")";
       },
       [](Dtype d) { return is_complex(d) ? float32 : float_rule(d); }},
      {"std", [](const array& a, const std::vector<int>& ax, bool k) { return nuvec::std(a, ax, k); },
       [](const array& a, bool k) { return nuvec::std(a, k); },
       [](Dtype d) {
         return "np.std(a.astype(" + np_wide(is_inexact(d) ? d : float64) + "), axis={axes}, keepdims={keep}).astype(" +
                np_type(is_complex(d) ? float32 : float_rule(d)) + ")";
       },
       [](Dtype d) { return is_complex(d) ? float32 : float_rule(d); }},
  };
}

Reduction logsumexp_reduction() {
  return {"logsumexp", [](const array& a, const std::vector<int>& ax, bool k) { return logsumexp(a, ax, k); },
          [](const array& a, bool k) { return logsumexp(a, k); },
          [](Dtype d) {
            // scipy's formula: shift by the max where it is finite.
            return "x = a.astype(np.float64)\n"
                   "m = np.max(x, axis={axes}, keepdims=True) if x.size else np.zeros([1] * x.ndim)\n"
                   "m = np.where(np.isfinite(m), m, 0)\n"
                   "out = (np.log(np.sum(np.exp(x - m), axis={axes}, keepdims=True)) + m)\n"
                   "out = out if {keep} else np.squeeze(out, axis={axes})\n"
                   "out = np.asarray(out).astype(" +
                   np_type(float_rule(d)) + ")";
          },
          float_rule};
}

/// Sweeps one reduction over shapes of 0 to 4 dimensions, every axis subset and both keepdims.
void sweep(const Reduction& r, const std::vector<Dtype>& dtypes, std::mt19937& rng, int max_dim = 4) {
  for (auto dtype : dtypes) {
    for (int ndim = 0; ndim <= 4; ++ndim) {
      auto x = random_array(test::random_shape(ndim, rng, max_dim), dtype, rng);
      for (const auto& axes : axis_sets(ndim, rng)) {
        for (bool keepdims : {false, true}) {
          check(r, x, &axes, keepdims);
        }
      }
      check(r, x, nullptr, ndim % 2 == 1);
    }
  }
}

std::vector<Dtype> every_dtype() { return {std::begin(all_dtypes), std::end(all_dtypes)}; }
std::vector<Dtype> real_dtypes() {
  std::vector<Dtype> out;
  for (auto d : all_dtypes) {
    if (!is_complex(d)) {
      out.push_back(d);
    }
  }
  return out;
}
std::vector<Dtype> float_dtypes() { return {float16, float32, float64, bfloat16}; }

/// An evaluated float32 array holding `values` (NaN and infinities included).
array floats(const std::vector<double>& values, const Shape& shape, Dtype dtype = float32) {
  auto a = astype(array(values.begin(), shape, float64), dtype);
  a.eval();
  return a;
}

// ---------------------------------------------------------------- sweeps over dtypes and axes

TEST(ReduceSweep, BasicReductionsEveryDtypeAndAxes) {
  std::mt19937 rng(1);
  for (const auto& r : basic_reductions()) {
    // NumPy's max of complex compares lexicographically, as nuvec does.
    sweep(r, every_dtype(), rng);
  }
}

TEST(ReduceSweep, ComposedReductionsEveryDtypeAndAxes) {
  std::mt19937 rng(2);
  for (const auto& r : composed_reductions()) {
    sweep(r, every_dtype(), rng);
  }
}

TEST(ReduceSweep, LogSumExpEveryRealDtypeAndAxes) {
  std::mt19937 rng(3);
  std::vector<Dtype> dtypes = real_dtypes();
  sweep(logsumexp_reduction(), dtypes, rng);
}

TEST(ReduceSweep, ArgMaxArgMinEveryDtypeAndAxis) {
  std::mt19937 rng(4);
  for (auto dtype : every_dtype()) {
    for (int ndim = 0; ndim <= 4; ++ndim) {
      // Few distinct values, so ties are common and the first index must win.
      auto x = random_array(test::random_shape(ndim, rng), dtype, rng, -2, 2);
      if (is_floating(dtype)) {
        x = floor(multiply(x, array(2.0F, dtype)));
      }
      for (const char* op : {"argmax", "argmin"}) {
        const bool is_max = std::string(op) == "argmax";
        for (int axis = -ndim; axis < ndim; ++axis) {
          for (bool keepdims : {false, true}) {
            SCOPED_TRACE(std::string(op) + " of " + std::string(dtype_name(dtype)) + shape_string(x.shape()) +
                         " axis " + std::to_string(axis));
            auto out = is_max ? argmax(x, axis, keepdims) : argmin(x, axis, keepdims);
            EXPECT_EQ(out.dtype(), uint32);
            auto code = std::string("np.") + op + "(a, axis=" + std::to_string(axis) +
                        ", keepdims=" + (keepdims ? "True" : "False") + ").astype(np.uint32)";
            EXPECT_TRUE(matches(out, numpy_ref(code, {x}), 0, 0));
          }
        }
        for (bool keepdims : {false, true}) {
          SCOPED_TRACE(std::string(op) + " over all of " + shape_string(x.shape()));
          auto out = is_max ? argmax(x, keepdims) : argmin(x, keepdims);
          auto code = std::string("np.asarray(np.") + op + "(a, keepdims=" + (keepdims ? "True" : "False") +
                      ")).astype(np.uint32)";
          EXPECT_TRUE(matches(out, numpy_ref(code, {x}), 0, 0));
        }
      }
    }
  }
}

TEST(ReduceSweep, SoftmaxEveryFloatDtypeAndAxes) {
  std::mt19937 rng(5);
  for (auto dtype : {float16, float32, float64, bfloat16, int32, bool_}) {
    for (int ndim = 0; ndim <= 4; ++ndim) {
      auto x = random_array(test::random_shape(ndim, rng), dtype, rng, -5, 5);
      for (const auto& axes : axis_sets(ndim, rng)) {
        SCOPED_TRACE("softmax of " + std::string(dtype_name(dtype)) + shape_string(x.shape()) +
                     " axis=" + py_axes(&axes));
        for (bool precise : {false, true}) {
          auto out = softmax(x, axes, precise);
          EXPECT_EQ(out.dtype(), float_rule(dtype));
          auto code = "x = a.astype(np.float64)\ne = np.exp(x - np.max(x, axis=" + py_axes(&axes) +
                      ", keepdims=True))\nout = (e / np.sum(e, axis=" + py_axes(&axes) + ", keepdims=True)).astype(" +
                      np_type(float_rule(dtype)) + ")";
          EXPECT_TRUE(matches(out, numpy_ref(code, {x}), rtol_of(float_rule(dtype)), 1e-7, false));
        }
      }
    }
  }
  // The overloads without axes (all axes) and with one int axis.
  auto x = random_array({3, 4, 5}, float32, rng);
  EXPECT_TRUE(matches(softmax(x), numpy_ref("e = np.exp(a - a.max())\nout = e / e.sum()", {x}), 1e-5, 1e-7));
  EXPECT_TRUE(matches(softmax(x, 1),
                      numpy_ref("e = np.exp(a - a.max(1, keepdims=True))\n"
                                "out = e / e.sum(1, keepdims=True)",
                                {x}),
                      1e-5, 1e-7));
}

// ---------------------------------------------------------------- layouts and sizes

/// The same values as a dense array, a transposed view, a strided slice (negative steps too) and a broadcast.
std::vector<array> strided_inputs(Dtype dtype, std::mt19937& rng) {
  auto base = random_array({6, 5, 8}, dtype, rng);
  return {
      transpose(random_array({8, 6, 5}, dtype, rng), {1, 2, 0}),
      transpose(base, {2, 0, 1}),
      slice(base, {1, 0, 7}, {6, 5, 0}, {2, 1, -2}),
      slice(base, {0, 1, 0}, {6, 4, 8}, {1, 1, 3}),
      broadcast_to(random_array({1, 5, 1}, dtype, rng), {3, 5, 4}),
      broadcast_to(random_array({6, 1, 8}, dtype, rng), {6, 7, 8}),
  };
}

TEST(ReduceLayout, StridedInputs) {
  std::mt19937 rng(6);
  auto reductions = basic_reductions();
  reductions.push_back(logsumexp_reduction());
  for (auto dtype : {float32, int32, float16, uint8, bool_, float64}) {
    for (const auto& x : strided_inputs(dtype, rng)) {
      for (const auto& r : reductions) {
        if (r.name == "logsumexp" && dtype == bool_) {
          continue;
        }
        for (const auto& axes : axis_sets(3, rng)) {
          check(r, x, &axes, axes.size() % 2 == 0);
        }
      }
      for (int axis = 0; axis < 3; ++axis) {
        SCOPED_TRACE("arg reductions of a strided " + std::string(dtype_name(dtype)) + " axis " + std::to_string(axis));
        EXPECT_TRUE(matches(argmax(x, axis),
                            numpy_ref("np.argmax(a, " + std::to_string(axis) + ").astype(np.uint32)", {x}), 0, 0));
        EXPECT_TRUE(matches(argmin(x, axis),
                            numpy_ref("np.argmin(a, " + std::to_string(axis) + ").astype(np.uint32)", {x}), 0, 0));
      }
      if (is_floating(dtype)) {
        for (int axis = 0; axis < 3; ++axis) {
          auto code = "x = a.astype(np.float64)\ne = np.exp(x - x.max(" + std::to_string(axis) +
                      ", keepdims=True))\nout = (e / e.sum(" + std::to_string(axis) + ", keepdims=True)).astype(" +
                      np_type(dtype) + ")";
          EXPECT_TRUE(matches(softmax(x, axis), numpy_ref(code, {x}), rtol_of(dtype), 1e-7, false));
        }
      }
    }
  }
}

TEST(ReduceLayout, LargeInputsTakeThreadedAndChunkedPaths) {
  std::mt19937 rng(7);
  // Long rows (chunked all-reduce and row reduce), a tall thin column reduce (split rows), a wide column reduce,
  // many short rows, and reductions over outer and middle axes; last, column sums whose rows meet in registers eight at
  // a time over three column blocks (the last a partial vector) and chunks of 167 rows (a last group of 7 rows,
  // pairwise blocks of 128 and 39).
  struct Case {
    Shape shape;
    std::vector<int> axes;
  };
  const std::vector<Case> cases = {
      {{3, 300001}, {0, 1}},  {{3, 300001}, {1}},  {{100003, 20}, {0}},     {{257, 3000}, {0}},  {{20000, 37}, {1}},
      {{40, 50, 61}, {0, 2}}, {{40, 50, 61}, {1}}, {{64, 2, 4096}, {0, 2}}, {{1001, 2100}, {0}},
  };
  for (const auto& c : cases) {
    // One random draw per shape, converted to each dtype (int16 gets small integers, so ties are common).
    // bfloat16 stands for the half types here: NumPy's float16 reductions are too slow at these sizes.
    auto base = random_array(c.shape, float64, rng, -20, 20);
    for (auto dtype : {float32, bfloat16, int16, float64}) {
      auto x = astype(base, dtype);
      SCOPED_TRACE(std::string(dtype_name(dtype)) + shape_string(c.shape) + " axis=" + py_axes(&c.axes));
      // One oracle call per input: the transfer dominates at these sizes.
      std::vector<array> actual = {sum(x, c.axes), max(x, c.axes), min(x, c.axes),
                                   all(x, c.axes), any(x, c.axes), count_nonzero(x, c.axes)};
      std::string code = "ax = " + py_axes(&c.axes) + "\nout = [np.sum(a.astype(" + np_wide(dtype) +
                         "), axis=ax).astype(" + np_type(sum_rule(dtype)) +
                         "), np.max(a, axis=ax), np.min(a, axis=ax), np.all(a, axis=ax), np.any(a, axis=ax), "
                         "np.count_nonzero(a, axis=ax).astype(np.int32)]";
      if (c.axes.size() == 1) {
        actual.push_back(argmax(x, c.axes[0]));
        actual.push_back(argmin(x, c.axes[0]));
        code += "\nout += [np.argmax(a, ax[0]).astype(np.uint32), np.argmin(a, ax[0]).astype(np.uint32)]";
      }
      auto expected = test::numpy(code, {test::to_host(x)});
      ASSERT_EQ(expected.size(), actual.size());
      for (size_t i = 0; i < actual.size(); ++i) {
        SCOPED_TRACE("result " + std::to_string(i));
        EXPECT_TRUE(matches(actual[i], expected[i], rtol_of(actual[i].dtype()),
                            10 * sum_atol(actual[i].dtype(), x.size()), false));
      }
    }
  }
  auto x = random_array({2, 400000}, float32, rng);
  EXPECT_TRUE(matches(argmax(x), numpy_ref("np.asarray(np.argmax(a)).astype(np.uint32)", {x}), 0, 0));
  EXPECT_TRUE(matches(argmin(transpose(x)), numpy_ref("np.asarray(np.argmin(a.T)).astype(np.uint32)", {x}), 0, 0));
}

TEST(ReduceLayout, SumOfManyFloatsStaysAccurate) {
  // 2^24 + 2^20 ones sum exactly (a naive float32 loop stops at 2^24); 4e6 values of 0.1 stay within 1e-6
  // relative, along a row and down columns.
  auto ones_sum = sum(copy(broadcast_to(array(1.0F), {(1 << 12) + (1 << 8), 1 << 12})));
  EXPECT_EQ(ones_sum.item<float>(), static_cast<float>((1 << 24) + (1 << 20)));
  auto tenths = copy(broadcast_to(array(0.1F), {4000000}));
  EXPECT_NEAR(sum(tenths).item<double>(), 4e5, 0.4);
  auto column = copy(broadcast_to(array(0.1F), {1000000, 8}));
  auto col_sums = sum(column, 0);
  col_sums.eval();
  for (int j = 0; j < 8; ++j) {
    EXPECT_NEAR(col_sums.data<float>()[j], 1e5, 0.1);
  }
}

TEST(ReduceLayout, SoftmaxAndLogSumExpRows) {
  std::mt19937 rng(8);
  for (auto dtype : {float32, float16, bfloat16, float64}) {
    for (int n : {1, 7, 16, 33, 1000, 4099}) {
      auto x = random_array({5, n}, dtype, rng, -20, 20);
      SCOPED_TRACE("rows of " + std::to_string(n) + " " + std::string(dtype_name(dtype)));
      auto code =
          "x = a.astype(np.float64)\ne = np.exp(x - x.max(-1, keepdims=True))\n"
          "out = (e / e.sum(-1, keepdims=True)).astype(" +
          np_type(dtype) + ")";
      EXPECT_TRUE(matches(softmax(x, -1), numpy_ref(code, {x}), rtol_of(dtype), 1e-7, false));
      auto lse =
          "x = a.astype(np.float64)\nm = x.max(-1)\n"
          "out = (np.log(np.exp(x - m[:, None]).sum(-1)) + m).astype(" +
          np_type(dtype) + ")";
      EXPECT_TRUE(matches(logsumexp(x, -1), numpy_ref(lse, {x}), rtol_of(dtype), 1e-6, false));
    }
  }
}

TEST(ReduceLayout, LargeSoftmaxRowsInterleavedMatchNumpy) {
  // Outputs of 16 MiB or more are streamed, and rows whose length fills whole vectors have their passes interleaved
  // (softmax.cpp): rows of NaN, +inf, all -inf and some -inf among them, one long row per thread chunk, a length that
  // does not fill vectors, and a strided input.
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> uniform(-20.0F, 20.0F);
  const std::string code =
      "x = a.astype(np.float64)\ne = np.exp(x - x.max(-1, keepdims=True))\n"
      "out = (e / e.sum(-1, keepdims=True)).astype(np.float32)";
  for (const Shape& shape : {Shape{1024, 4096}, Shape{64, 65536}, Shape{4099, 1024}, Shape{1003, 4200}}) {
    std::vector<float> v(shape_size(shape));
    for (auto& e : v) {
      e = uniform(rng);
    }
    const auto n = static_cast<size_t>(shape[1]);
    v[3] = NAN;
    v[n + 5] = INFINITY;
    std::fill(v.begin() + static_cast<int64_t>(2 * n), v.begin() + static_cast<int64_t>(3 * n), -INFINITY);
    v[3 * n + 1] = -INFINITY;
    v[v.size() - 1] = NAN;  // the last row, the last one a thread streams
    auto x = array(v.begin(), shape, float32);
    SCOPED_TRACE(shape_string(shape));
    EXPECT_TRUE(matches(softmax(x, -1), numpy_ref(code, {x}), 1e-5, 1e-7, false));
  }
  auto wide = random_array({1024, 8192}, float32, rng, -20, 20);
  auto strided = slice(wide, {0, 0}, {1024, 8192}, {1, 2});
  EXPECT_TRUE(matches(softmax(strided, -1), numpy_ref(code, {strided}), 1e-5, 1e-7, false));
}

TEST(ReduceLayout, SoftmaxAndLogSumExpOverOuterAxes) {
  // Outer axes reach the kernels as rows stored side by side (a transposed layout), handled a vector of rows at a
  // time; widths that are not a multiple of the vector width leave rows for the one-row path.
  std::mt19937 rng(11);
  struct Case {
    Shape shape;
    std::vector<int> axes;
  };
  const std::vector<Case> cases = {
      {{37, 50}, {0}}, {{300, 64}, {0}}, {{3, 20, 33}, {1}}, {{5, 7, 40}, {0, 1}}, {{4, 9, 17, 3}, {1}},
  };
  for (auto dtype : {float32, float64}) {
    for (const auto& c : cases) {
      auto x = random_array(c.shape, dtype, rng, -30, 30);
      if (c.shape[0] == 37) {
        // Non-finite values in a few columns: NaN, +inf, and a column of -inf.
        std::vector<double> v(static_cast<size_t>(37 * 50));
        auto h = test::to_host(astype(x, float64));
        std::memcpy(v.data(), h.bytes.data(), v.size() * sizeof(double));
        v[5 * 50 + 3] = kNaN;
        v[9 * 50 + 20] = kInf;
        for (int i = 0; i < 37; ++i) {
          v[static_cast<size_t>(i * 50 + 40)] = -kInf;
        }
        v[2 * 50 + 41] = -kInf;
        x = floats(v, c.shape, dtype);
      }
      const auto ax = py_axes(&c.axes);
      SCOPED_TRACE(std::string(dtype_name(dtype)) + shape_string(c.shape) + " axis=" + ax);
      auto sm = "x = a.astype(np.float64)\ne = np.exp(x - x.max(" + ax + ", keepdims=True))\n" + "out = (e / e.sum(" +
                ax + ", keepdims=True)).astype(a.dtype)";
      EXPECT_TRUE(matches(softmax(x, c.axes), numpy_ref(sm, {x}), rtol_of(dtype), 1e-7));
      auto lse = "x = a.astype(np.float64)\nm = x.max(" + ax +
                 ", keepdims=True)\nm = np.where(np.isfinite(m), m, 0)\n" + "out = (np.log(np.exp(x - m).sum(" + ax +
                 ", keepdims=True)) + m).astype(a.dtype)";
      for (bool keepdims : {false, true}) {
        auto expected = numpy_ref(keepdims ? lse : lse + "\nout = np.squeeze(out, " + ax + ")", {x});
        EXPECT_TRUE(matches(logsumexp(x, c.axes, keepdims), expected, rtol_of(dtype), 1e-6));
      }
    }
  }
}

// ---------------------------------------------------------------- special values

TEST(ReduceSpecial, NaNPropagatesAsNumPy) {
  // Rows: NaN first, NaN last, NaN in the middle of a long row, no NaN.
  std::vector<double> v(4 * 40, 1.0);
  v[0] = kNaN;
  v[40 + 39] = kNaN;
  v[80 + 20] = kNaN;
  v[80 + 21] = 7.0;
  v[120 + 5] = 9.0;
  for (auto dtype : float_dtypes()) {
    auto x = floats(v, {4, 40}, dtype);
    for (int axis : {0, 1}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " axis " + std::to_string(axis));
      auto ax = std::to_string(axis);
      EXPECT_TRUE(matches(max(x, axis), numpy_ref("np.max(a, " + ax + ")", {x}), 0, 0, false));
      EXPECT_TRUE(matches(min(x, axis), numpy_ref("np.min(a, " + ax + ")", {x}), 0, 0, false));
      EXPECT_TRUE(matches(argmax(x, axis), numpy_ref("np.argmax(a, " + ax + ").astype(np.uint32)", {x}), 0, 0));
      EXPECT_TRUE(matches(argmin(x, axis), numpy_ref("np.argmin(a, " + ax + ").astype(np.uint32)", {x}), 0, 0));
      EXPECT_TRUE(matches(sum(x, axis), numpy_ref("np.sum(a, " + ax + ")", {x}), 1e-2, 0, false));
      EXPECT_TRUE(matches(any(x, axis), numpy_ref("np.any(a, " + ax + ")", {x}), 0, 0));
      EXPECT_TRUE(matches(all(x, axis), numpy_ref("np.all(a, " + ax + ")", {x}), 0, 0));
    }
    EXPECT_TRUE(std::isnan(max(x).item<float>()));
    EXPECT_EQ(argmax(x).item<uint32_t>(), 0U);
    EXPECT_EQ(argmin(x).item<uint32_t>(), 0U);
  }
}

TEST(ReduceSpecial, InfinitiesInLogSumExpAndSoftmax) {
  const std::vector<double> v = {
      -kInf,  -kInf,  -kInf, -kInf,    // all -inf: logsumexp -inf, softmax NaN
      -kInf,  0.0,    1.0,   -kInf,    // some -inf: those get probability 0
      kInf,   1.0,    2.0,   3.0,      // +inf: logsumexp +inf, softmax NaN (NumPy's formula)
      1000.0, 1000.0, 999.0, -1000.0,  // large values: no overflow
      kNaN,   1.0,    2.0,   3.0,      // NaN: NaN
      -1e30,  1e30,   0.0,   5.0,
  };
  for (auto dtype : {float32, float64}) {
    auto x = floats(v, {6, 4}, dtype);
    SCOPED_TRACE(dtype_name(dtype));
    auto lse = logsumexp(x, -1);
    EXPECT_TRUE(matches(lse,
                        numpy_ref("x = a.astype(np.float64)\nm = x.max(-1, keepdims=True)\n"
                                  "m = np.where(np.isfinite(m), m, 0)\n"
                                  "out = (np.log(np.exp(x - m).sum(-1)) + m[:, 0]).astype(a.dtype)",
                                  {x}),
                        1e-6, 1e-6));
    EXPECT_TRUE(matches(softmax(x, -1),
                        numpy_ref("x = a.astype(np.float64)\ne = np.exp(x - x.max(-1, keepdims=True))\n"
                                  "out = (e / e.sum(-1, keepdims=True)).astype(a.dtype)",
                                  {x}),
                        1e-6, 1e-7));
    // The same over axis 0 (the composed path through transposes).
    auto xt = transpose(x);
    EXPECT_TRUE(matches(logsumexp(xt, 0),
                        numpy_ref("x = a.astype(np.float64)\nm = x.max(0, keepdims=True)\n"
                                  "m = np.where(np.isfinite(m), m, 0)\n"
                                  "out = (np.log(np.exp(x - m).sum(0)) + m[0]).astype(a.dtype)",
                                  {xt}),
                        1e-6, 1e-6));
  }
  EXPECT_EQ(logsumexp(floats({-kInf, -kInf}, {2})).item<float>(), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(logsumexp(floats({kInf, 1.0}, {2})).item<float>(), std::numeric_limits<float>::infinity());
  EXPECT_NEAR(logsumexp(floats({1000.0, 1000.0}, {2})).item<float>(), 1000.0F + std::log(2.0F), 1e-3);
}

TEST(ReduceSpecial, VarianceOfDataWithALargeMean) {
  // A naive E[x^2] - E[x]^2 in float32 loses every digit here; the two-pass form keeps them.
  std::mt19937 rng(9);
  auto noise = random_array({1000, 64}, float64, rng, -1, 1);
  auto x = astype(add(noise, array(1e4, float64)), float32);
  x.eval();
  for (int ddof : {0, 1, 5}) {
    auto ref = "np.var(a.astype(np.float64), axis=0, ddof=" + std::to_string(ddof) + ").astype(np.float32)";
    EXPECT_TRUE(matches(var(x, 0, false, ddof), numpy_ref(ref, {x}), 1e-4, 0));
    auto ref_all = "np.asarray(np.std(a.astype(np.float64), ddof=" + std::to_string(ddof) + ")).astype(np.float32)";
    EXPECT_TRUE(matches(nuvec::std(x, false, ddof), numpy_ref(ref_all, {x}), 1e-4, 0));
  }
  // ddof at or beyond the count: NumPy divides by max(n - ddof, 0), giving inf or NaN.
  auto small = floats({1.0, 2.0, 4.0}, {3});
  EXPECT_TRUE(std::isinf(var(small, false, 3).item<float>()));
  EXPECT_TRUE(std::isnan(var(floats({2.0}, {1}), false, 1).item<float>()));
}

// ---------------------------------------------------------------- empty arrays and trivial axes

TEST(ReduceEmpty, IdentitiesAndErrors) {
  for (auto dtype : {float32, int32, bool_, float16, uint8}) {
    auto e = zeros({0, 3}, dtype);
    SCOPED_TRACE(dtype_name(dtype));
    for (const auto& r : basic_reductions()) {
      if (r.name == "max" || r.name == "min") {
        continue;
      }
      std::vector<int> ax0{0};
      std::vector<int> ax1{1};
      check(r, e, &ax0, false);
      check(r, e, &ax1, true);
      check(r, e, nullptr, false);
    }
    // max/min of an empty reduction raise; reducing a non-empty axis of an empty array gives an empty array.
    EXPECT_NE(error_of([&] { max(e); }).find("[max] Cannot max reduce zero size array"), std::string::npos);
    EXPECT_NE(error_of([&] { min(e, 0); }).find("[min] Cannot min reduce zero size array"), std::string::npos);
    EXPECT_NE(error_of([&] { argmax(e); }).find("[argmax] Cannot argmax reduce zero size array"), std::string::npos);
    EXPECT_NE(error_of([&] { argmin(e, 0); }).find("[argmin] Cannot argmin reduce zero size array"), std::string::npos);
    EXPECT_EQ(max(e, 1).shape(), Shape{0});
    EXPECT_EQ(argmax(e, 1).shape(), Shape{0});
  }
  EXPECT_EQ(sum(zeros({0}, float32)).item<float>(), 0.0F);
  EXPECT_EQ(prod(zeros({0}, int8)).item<int32_t>(), 1);
  EXPECT_TRUE(all(zeros({0}, bool_)).item<bool>());
  EXPECT_FALSE(any(zeros({0}, bool_)).item<bool>());
  EXPECT_EQ(logsumexp(zeros({2, 0}, float32), 1).shape(), Shape{2});
  EXPECT_EQ(logsumexp(zeros({2, 0}, float32), 1).dtype(), float32);
  auto empty_softmax = softmax(zeros({0, 4}, float32), -1);
  EXPECT_EQ(empty_softmax.shape(), (Shape{0, 4}));
  empty_softmax.eval();
}

TEST(ReduceEmpty, EmptyAxesAndSizeOneAxes) {
  std::mt19937 rng(10);
  auto x = random_array({3, 1, 4}, int8, rng);
  // No axes: the op's dtype rule alone.
  auto s = sum(x, std::vector<int>{});
  EXPECT_EQ(s.dtype(), int32);
  EXPECT_EQ(s.shape(), (Shape{3, 1, 4}));
  EXPECT_TRUE(matches(s, numpy_ref("a.astype(np.int32)", {x}), 0, 0));
  EXPECT_EQ(mean(x, std::vector<int>{}).dtype(), float32);
  EXPECT_EQ(max(x, std::vector<int>{}).dtype(), int8);
  EXPECT_EQ(all(x, std::vector<int>{}).dtype(), bool_);
  // A size-1 axis: squeezed, values unchanged.
  auto s1 = sum(x, 1);
  EXPECT_EQ(s1.shape(), (Shape{3, 4}));
  EXPECT_TRUE(matches(s1, numpy_ref("a[:, 0, :].astype(np.int32)", {x}), 0, 0));
  EXPECT_TRUE(matches(argmax(x, 1), numpy_ref("np.zeros((3, 4), np.uint32)", {}), 0, 0));
  // A scalar.
  auto scalar = array(3.5F);
  EXPECT_EQ(sum(scalar).item<float>(), 3.5F);
  EXPECT_EQ(argmax(scalar).item<uint32_t>(), 0U);
  EXPECT_EQ(argmax(scalar, true).shape(), Shape{});
  EXPECT_EQ(softmax(scalar).item<float>(), 1.0F);
  EXPECT_EQ(logsumexp(scalar).item<float>(), 3.5F);
  EXPECT_EQ(argmax(random_array({2, 3}, float32, rng), true).shape(), (Shape{1, 1}));
}

// ---------------------------------------------------------------- dtype rules and errors

TEST(ReduceDtypes, RulesOfConformance) {
  // CONFORMANCE.md, written out per dtype (not derived from the code under test).
  struct Row {
    Dtype in;
    Dtype sum;
    Dtype mean;
  };
  const std::vector<Row> rows = {
      {bool_, int32, float32},        {uint8, uint32, float32},          {uint16, uint32, float32},
      {uint32, uint32, float32},      {uint64, uint64, float32},         {int8, int32, float32},
      {int16, int32, float32},        {int32, int32, float32},           {int64, int64, float32},
      {float16, float16, float16},    {float32, float32, float32},       {float64, float64, float64},
      {bfloat16, bfloat16, bfloat16}, {complex64, complex64, complex64},
  };
  for (const auto& r : rows) {
    auto x = zeros({2, 3}, r.in);
    SCOPED_TRACE(dtype_name(r.in));
    EXPECT_EQ(sum(x).dtype(), r.sum);
    EXPECT_EQ(sum(x, 0).dtype(), r.sum);
    EXPECT_EQ(prod(x, 1).dtype(), r.sum);
    EXPECT_EQ(mean(x).dtype(), r.mean);
    EXPECT_EQ(var(x, 0).dtype(), is_complex(r.in) ? float32 : r.mean);
    EXPECT_EQ(nuvec::std(x).dtype(), is_complex(r.in) ? float32 : r.mean);
    EXPECT_EQ(max(x, 0).dtype(), r.in);
    EXPECT_EQ(min(x).dtype(), r.in);
    EXPECT_EQ(all(x).dtype(), bool_);
    EXPECT_EQ(any(x, 1).dtype(), bool_);
    EXPECT_EQ(argmax(x, 1).dtype(), uint32);
    EXPECT_EQ(argmin(x).dtype(), uint32);
    EXPECT_EQ(count_nonzero(x).dtype(), int32);
    if (!is_complex(r.in)) {
      EXPECT_EQ(logsumexp(x).dtype(), r.mean);
      EXPECT_EQ(softmax(x).dtype(), r.mean);
    }
  }
  // Overflow wraps in the result type: 200 + 100 in uint8 gives 300 as uint32, 2^31 in int32 wraps.
  EXPECT_EQ(sum(array({200, 100}, uint8)).item<uint32_t>(), 300U);
  EXPECT_EQ(sum(array({2147483647, 1}, int32)).item<int32_t>(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(sum(array({true, true, false, true})).item<int32_t>(), 3);
  // Shapes for keepdims and the overloads.
  auto x = zeros({2, 3, 4}, float32);
  EXPECT_EQ(sum(x, true).shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(sum(x).shape(), Shape{});
  EXPECT_EQ(sum(x, {0, 2}, true).shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(sum(x, -1).shape(), (Shape{2, 3}));
  EXPECT_EQ(var(x, {0, -1}, true).shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(argmax(x, -2, true).shape(), (Shape{2, 1, 4}));
}

TEST(ReduceErrors, BadAxesNameTheOp) {
  auto x = zeros({2, 3}, float32);
  EXPECT_EQ(error_of([&] { sum(x, 3); }), "[sum] Axis 3 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { max(x, -3); }), "[max] Axis -3 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { mean(x, {0, 2}); }), "[mean] Axis 2 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { var(x, 5); }), "[var] Axis 5 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { logsumexp(x, 2); }), "[logsumexp] Axis 2 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { count_nonzero(x, 2); }),
            "[count_nonzero] Axis 2 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { argmax(x, 2); }), "[argmax] Axis 2 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { softmax(x, -3); }), "[softmax] Axis -3 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { sum(x, {0, -2}); }), "[sum] Received duplicate axes.");
  EXPECT_EQ(error_of([&] { prod(x, {1, 1}); }), "[prod] Received duplicate axes.");
  EXPECT_EQ(error_of([&] { argmin(array(1.0F), 0); }), "[argmin] Axis 0 is out of bounds for array with 0 dimensions.");
  auto c = zeros({2}, complex64);
  EXPECT_EQ(error_of([&] { logsumexp(c); }), "[logsumexp] Not supported for complex64 inputs.");
  EXPECT_EQ(error_of([&] { softmax(c); }), "[softmax] Not supported for complex64 inputs.");
}

TEST(ReduceSpecial, SoftmaxExpIsWithinOneUlpOverItsRange) {
  // The exp softmax and attention take of x - max <= 0 (cpu/softmax_row.h), against the float nearest e^x: every
  // 61st float in [-104, 0] (denormal results below -87.3 included), then the edges.
  namespace hn = cpu::hn;
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  std::vector<float> x;
  for (uint32_t bits = 0x80000000U; bits <= std::bit_cast<uint32_t>(-104.0F); bits += 61) {
    x.push_back(std::bit_cast<float>(bits));
  }
  x.insert(x.end(), {-104.0F, -103.97F, -87.34F, -87.33F, -1e-30F, -0.0F, 0.0F});
  x.resize((x.size() + lanes - 1) / lanes * lanes, -1.0F);
  std::vector<float> e(x.size());
  for (size_t i = 0; i < x.size(); i += lanes) {
    hn::StoreU(cpu::exp_nonpositive(d, hn::LoadU(d, x.data() + i)), d, e.data() + i);
  }
  auto ulps = [](float a, float b) {
    return std::abs(static_cast<int64_t>(std::bit_cast<int32_t>(a)) - std::bit_cast<int32_t>(b));
  };
  int64_t worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    worst = std::max(worst, ulps(e[i], static_cast<float>(std::exp(static_cast<double>(x[i])))));
  }
  EXPECT_LE(worst, 1);
  // Below -104 (e^x under half the smallest denormal), -inf, NaN, and x > 0 (taken as 0).
  const std::vector<float> edges = {-105.0F, -1e30F, -std::numeric_limits<float>::infinity(),
                                    std::numeric_limits<float>::quiet_NaN(), 3.0F};
  std::vector<float> in(lanes, -1.0F);
  std::vector<float> out(lanes);
  for (float v : edges) {
    in[0] = v;
    hn::StoreU(cpu::exp_nonpositive(d, hn::LoadU(d, in.data())), d, out.data());
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(out[0]));
    } else {
      EXPECT_EQ(out[0], v > 0 ? 1.0F : 0.0F) << v;
    }
  }
}

}  // namespace
}  // namespace nuvec
