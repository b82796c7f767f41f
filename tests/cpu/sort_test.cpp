// Sorting, selection and scans against NumPy (expected values come from the NumPy oracle: np.sort and np.argsort with
// kind='stable', np.partition's defining property, np.searchsorted, np.median, np.cumsum, np.cumprod,
// np.maximum/minimum/logaddexp.accumulate, np.diff), over dtypes, axes (negative ones too), reverse and exclusive
// scans, NaNs, ties, empty arrays, size-1 axes, non-contiguous inputs, rows long enough for the radix sort (one-byte
// keys, 64-bit keys with indices), VQSort and the threaded paths, and the error messages.

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
using test::random_array;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

const std::vector<Dtype> kAllDtypes = {bool_, uint8,   uint16,  uint32,  uint64,   int8,    int16,
                                       int32, int64,   float16, float32, float64, bfloat16, complex64};
const std::vector<Dtype> kRealDtypes = {bool_, uint8, uint16, uint32, uint64,  int8,    int16,
                                        int32, int64, float16, float32, float64, bfloat16};

using test::error_of;

std::string describe(const array& x) { return std::string(dtype_name(x.dtype())) + shape_string(x.shape()); }

/// The same values in three layouts: row-major, a transpose of a copy, and a strided slice (every other column).
std::vector<array> layouts(const array& x) {
  std::vector<array> out{x};
  if (x.ndim() >= 2) {
    auto t = contiguous(transpose(x));  // the same logical values after transposing back
    out.push_back(transpose(t));
  }
  if (x.ndim() >= 1 && x.shape(-1) >= 1) {
    auto wide = repeat(x, 2, x.ndim() - 1);  // each column twice; every other one gives x back
    Shape start(x.ndim(), 0);
    Shape stop = wide.shape();
    Shape step(x.ndim(), 1);
    step.back() = 2;
    out.push_back(slice(wide, start, stop, step));
  }
  return out;
}

/// Random floats with NaNs, infinities and signed zeros mixed in.
array with_specials(const Shape& shape, Dtype dtype, std::mt19937& rng) {
  std::vector<float> v(shape_size(shape));
  std::uniform_real_distribution<float> dist(-3.0F, 3.0F);
  std::uniform_int_distribution<int> pick(0, 9);
  for (auto& x : v) {
    switch (pick(rng)) {
      case 0:
        x = kNaN;
        break;
      case 1:
        x = -kNaN;
        break;
      case 2:
        x = pick(rng) < 5 ? kInf : -kInf;
        break;
      case 3:
        x = pick(rng) < 5 ? 0.0F : -0.0F;
        break;
      default:
        x = std::round(dist(rng) * 2.0F) / 2.0F;  // coarse: ties
    }
  }
  return astype(array(v.begin(), shape), dtype);
}

// ---------------------------------------------------------------- sort and argsort

TEST(Sort, EveryDtypeAndAxis) {
  std::mt19937 rng(1);
  for (auto dtype : kAllDtypes) {
    for (int ndim = 1; ndim <= 3; ++ndim) {
      auto x = random_array(test::random_shape(ndim, rng, 6), dtype, rng);
      for (int axis = -ndim; axis < ndim; ++axis) {
        SCOPED_TRACE("sort of " + describe(x) + " axis " + std::to_string(axis));
        auto code = "np.sort(a, axis=" + std::to_string(axis) + ", kind='stable')";
        EXPECT_TRUE(matches(sort(x, axis), numpy_ref(code, {x}), 0.0, 0.0, false));
        auto idx = argsort(x, axis);
        EXPECT_EQ(idx.dtype(), uint32);
        auto expected = "np.argsort(a, axis=" + std::to_string(axis) + ", kind='stable').astype(np.uint32)";
        EXPECT_TRUE(matches(idx, numpy_ref(expected, {x}), 0.0, 0.0));
      }
    }
    auto x = random_array({3, 4}, dtype, rng);
    EXPECT_TRUE(matches(sort(x), numpy_ref("np.sort(a, axis=None, kind='stable')", {x}), 0.0, 0.0, false));
    EXPECT_TRUE(
        matches(argsort(x), numpy_ref("np.argsort(a, axis=None, kind='stable').astype(np.uint32)", {x}), 0.0, 0.0));
  }
}

TEST(Sort, NaNsLastTiesStableAndLayouts) {
  std::mt19937 rng(2);
  for (auto dtype : {float32, float64, float16, bfloat16}) {
    auto base = with_specials({5, 7, 6}, dtype, rng);
    for (const auto& x : layouts(base)) {
      for (int axis : {0, 1, -1}) {
        SCOPED_TRACE("sort of " + describe(x) + " axis " + std::to_string(axis) +
                     (x.flags().row_contiguous ? "" : " (strided)"));
        auto ax = std::to_string(axis);
        EXPECT_TRUE(matches(sort(x, axis), numpy_ref("np.sort(a, axis=" + ax + ", kind='stable')", {x}), 0.0, 0.0,
                            false));
        EXPECT_TRUE(matches(argsort(x, axis),
                            numpy_ref("np.argsort(a, axis=" + ax + ", kind='stable').astype(np.uint32)", {x}), 0.0,
                            0.0));
      }
    }
  }
}

TEST(Sort, LongRowsTakeTheVQSortAndRadixPaths) {
  std::mt19937 rng(3);
  for (auto dtype : {float32, int32, uint8, int64, float64, float16, uint16}) {
    auto x = is_inexact(dtype) ? with_specials({3, 5000}, dtype, rng) : random_array({3, 5000}, dtype, rng);
    for (const auto& v : {x, transpose(x)}) {
      const int axis = v.shape(0) == 3 ? 1 : 0;
      SCOPED_TRACE("sort of " + describe(v) + " axis " + std::to_string(axis));
      auto ax = std::to_string(axis);
      EXPECT_TRUE(
          matches(sort(v, axis), numpy_ref("np.sort(a, axis=" + ax + ", kind='stable')", {v}), 0.0, 0.0, false));
      EXPECT_TRUE(matches(argsort(v, axis),
                          numpy_ref("np.argsort(a, axis=" + ax + ", kind='stable').astype(np.uint32)", {v}), 0.0,
                          0.0));
    }
  }
  // Many short rows across the thread pool.
  auto many = random_array({2000, 40}, float32, rng);
  EXPECT_TRUE(matches(sort(many, -1), numpy_ref("np.sort(a, axis=-1)", {many}), 0.0, 0.0));
}

TEST(Sort, SignedZerosAndEdgeShapes) {
  // Sort keeps -0.0 before +0.0 (both equal); argsort ties them, keeping input order (NumPy's stable order).
  auto z = array({0.0F, -0.0F, 0.0F, -0.0F});
  EXPECT_TRUE(matches(argsort(z), numpy_ref("np.argsort(a, kind='stable').astype(np.uint32)", {z}), 0.0, 0.0));
  auto sorted = sort(z);
  sorted.eval();
  EXPECT_TRUE(std::signbit(sorted.data<float>()[0]));
  EXPECT_FALSE(std::signbit(sorted.data<float>()[3]));
  // Empty arrays, size-1 axes and scalars (the flattened overload).
  for (const Shape& shape : {Shape{0}, Shape{3, 0}, Shape{0, 4}, Shape{4, 1}, Shape{1, 4}}) {
    auto x = zeros(shape, float32);
    for (int axis : {0, -1}) {
      EXPECT_EQ(sort(x, axis).shape(), shape);
      EXPECT_TRUE(matches(argsort(x, axis), numpy_ref("np.argsort(a, axis=" + std::to_string(axis) +
                                                          ", kind='stable').astype(np.uint32)",
                                                      {x}),
                          0.0, 0.0));
    }
  }
  EXPECT_EQ(sort(array(3.0F)).shape(), Shape{1});
  EXPECT_EQ(argsort(array(3.0F)).shape(), Shape{1});
}

TEST(Sort, ComplexNaNsInNumPysOrder) {
  const std::vector<complex64_t> v = {{1, kNaN}, {kNaN, 2}, {0, 1}, {kNaN, kNaN}, {-1, 5}, {0, 0},
                                      {kNaN, -1}, {-3, kNaN}, {0, 1}, {2, -2}};
  auto z = array(v.begin(), Shape{10}, complex64);
  EXPECT_TRUE(matches(sort(z), numpy_ref("np.sort(a, kind='stable')", {z}), 0.0, 0.0));
  EXPECT_TRUE(matches(argsort(z), numpy_ref("np.argsort(a, kind='stable').astype(np.uint32)", {z}), 0.0, 0.0));
  auto q = array({2.0F, 0.5F});
  auto zs = sort(z);
  EXPECT_TRUE(matches(searchsorted(zs, astype(q, complex64)),
                      numpy_ref("np.searchsorted(a, b.astype(np.complex64)).astype(np.int64)", {zs, q}), 0.0, 0.0));
}

// ---------------------------------------------------------------- partition, argpartition and topk

/// NumPy code that checks `b` is a partition of `a` at kth along axis (NaNs as the largest values): same multiset,
/// the sorted value at kth, nothing greater before it and nothing smaller after it.
std::string partition_check(int kth, int axis) {
  const auto k = std::to_string(kth);
  const auto ax = std::to_string(axis);
  return "key = lambda x: np.where(np.isnan(x), np.inf, x) if x.dtype.kind == 'f' else x\n"
         "n = a.shape[" + ax + "]\nk = " + k + " % n\n"
         "s = np.sort(a, axis=" + ax + ")\n"
         "pivot = key(np.take(b, [k], axis=" + ax + "))\n"
         "before = key(np.take(b, range(0, k), axis=" + ax + "))\n"
         "after = key(np.take(b, range(k + 1, n), axis=" + ax + "))\n"
         "out = np.array(np.array_equal(np.sort(b, axis=" + ax + "), s, equal_nan=True) and\n"
         "  np.array_equal(np.take(b, [k], axis=" + ax + "), np.take(s, [k], axis=" + ax + "), equal_nan=True) and\n"
         "  bool(np.all(before <= pivot)) and bool(np.all(after >= pivot)))";
}

void expect_partition(const array& x, int kth, int axis) {
  SCOPED_TRACE("partition of " + describe(x) + " kth " + std::to_string(kth) + " axis " + std::to_string(axis));
  auto p = partition(x, kth, axis);
  EXPECT_EQ(p.dtype(), x.dtype());
  EXPECT_TRUE(matches(array(true), numpy_ref(partition_check(kth, axis), {x, p})));
  auto idx = argpartition(x, kth, axis);
  EXPECT_EQ(idx.dtype(), uint32);
  // The indices must be a permutation along the axis that arranges x as a partition.
  const auto ax = std::to_string(axis);
  auto check = "b = np.take_along_axis(a, c.astype(np.int64), axis=" + ax + ")\n" + partition_check(kth, axis) +
               "\nout = out & np.array(np.array_equal(np.sort(c, axis=" + ax + "), np.broadcast_to(np.arange(n).reshape("
               "[n if i == (" + ax + " % a.ndim) else 1 for i in range(a.ndim)]), a.shape)))";
  EXPECT_TRUE(matches(array(true), numpy_ref(check, {x, x, idx})));
}

TEST(Partition, PropertyOverDtypesAxesAndKth) {
  std::mt19937 rng(4);
  for (auto dtype : kRealDtypes) {
    auto x = random_array({4, 9, 5}, dtype, rng);
    for (int axis : {0, 1, -1}) {
      const int n = x.shape(axis);
      for (int kth : {0, n / 2, n - 1, -1, -n}) {
        expect_partition(x, kth, axis);
      }
    }
  }
  // NaNs, strided layouts, long rows.
  for (const auto& x : layouts(with_specials({6, 11}, float32, rng))) {
    expect_partition(x, 3, -1);
    expect_partition(x, 5, 0);
  }
  expect_partition(with_specials({2, 20000}, float32, rng), 12345, 1);
  // The flattened overloads.
  auto y = random_array({3, 4}, int32, rng);
  expect_partition(flatten(y), 5, 0);
  EXPECT_EQ(partition(y, 5).shape(), Shape{12});
  EXPECT_EQ(argpartition(y, 5).shape(), Shape{12});
}

TEST(TopK, TheKLargestAlongAnAxis) {
  std::mt19937 rng(5);
  for (auto dtype : {float32, int32, float16, uint8, float64}) {
    auto x = is_inexact(dtype) ? with_specials({5, 12}, dtype, rng) : random_array({5, 12}, dtype, rng);
    for (int axis : {0, 1, -1, -2}) {
      const int n = x.shape(axis);
      for (int k : {0, 1, 3, n}) {
        SCOPED_TRACE("topk of " + describe(x) + " k " + std::to_string(k) + " axis " + std::to_string(axis));
        auto t = topk(x, k, axis);
        Shape expected_shape = x.shape();
        expected_shape[axis < 0 ? axis + 2 : axis] = k;
        EXPECT_EQ(t.shape(), expected_shape);
        auto ax = std::to_string(axis);
        auto code = "np.sort(np.take(np.sort(a, axis=" + ax + "), range(a.shape[" + ax + "] - " + std::to_string(k) +
                    ", a.shape[" + ax + "]), axis=" + ax + "), axis=" + ax + ")";
        EXPECT_TRUE(matches(sort(t, axis), numpy_ref(code, {x}), 0.0, 0.0, false));
      }
    }
  }
  auto v = array({3.0F, 9.0F, 1.0F, 7.0F});
  EXPECT_TRUE(matches(sort(topk(v, 2)), numpy_ref("np.array([7.0, 9.0], np.float32)", {}), 0.0, 0.0));
}

// ---------------------------------------------------------------- searchsorted

TEST(SearchSorted, MatchesNumPy) {
  std::mt19937 rng(6);
  for (auto dtype : {float32, int32, float64, uint8, float16, int64}) {
    auto a = sort(is_inexact(dtype) ? with_specials({40}, dtype, rng) : random_array({40}, dtype, rng));
    auto v = is_inexact(dtype) ? with_specials({3, 7}, dtype, rng) : random_array({3, 7}, dtype, rng);
    for (bool right : {false, true}) {
      SCOPED_TRACE("searchsorted " + describe(a) + " right " + std::to_string(right));
      auto side = std::string(right ? "'right'" : "'left'");
      auto got = searchsorted(a, v, right);
      EXPECT_EQ(got.dtype(), int64);
      EXPECT_TRUE(matches(got, numpy_ref("np.searchsorted(a, b, side=" + side + ").astype(np.int64)", {a, v}), 0.0,
                          0.0));
      // Strided values, a scalar value, an empty array to search.
      auto vt = transpose(v);
      EXPECT_TRUE(matches(searchsorted(a, vt, right),
                          numpy_ref("np.searchsorted(a, b, side=" + side + ").astype(np.int64)", {a, vt}), 0.0, 0.0));
      auto scalar = astype(array(1), dtype);
      EXPECT_TRUE(matches(searchsorted(a, scalar, right),
                          numpy_ref("np.asarray(np.searchsorted(a, b, side=" + side + ")).astype(np.int64)",
                                    {a, scalar}),
                          0.0, 0.0));
      EXPECT_TRUE(matches(searchsorted(zeros({0}, dtype), v, right), numpy_ref("np.zeros((3, 7), np.int64)", {})));
    }
  }
  // Mixed dtypes promote first: 2.5 lands between the integers 2 and 3.
  auto ints = arange(0, 10);
  auto half_way = array({2.5F, -1.0F, 11.0F});
  EXPECT_TRUE(matches(searchsorted(ints, half_way), numpy_ref("np.searchsorted(a, b).astype(np.int64)",
                                                              {ints, half_way}),
                      0.0, 0.0));
}

// ---------------------------------------------------------------- median

TEST(Median, MatchesNumPy) {
  std::mt19937 rng(7);
  const std::vector<std::vector<int>> axis_sets = {{0}, {1}, {-1}, {0, 2}, {-1, 0}, {0, 1, 2}, {}};
  for (auto dtype : {float32, float64, int32, float16, uint8, bool_, bfloat16}) {
    auto x = random_array({4, 5, 6}, dtype, rng);
    const Dtype out = is_inexact(dtype) ? dtype : float32;
    for (const auto& axes : axis_sets) {
      for (bool keepdims : {false, true}) {
        std::string py = "(";
        for (int a : axes) {
          py += std::to_string(a) + ",";
        }
        py += ")";
        SCOPED_TRACE("median of " + describe(x) + " axes " + py + " keepdims " + std::to_string(keepdims));
        auto got = median(x, axes, keepdims);
        EXPECT_EQ(got.dtype(), out);
        auto code = "np.asarray(np.median(a.astype(np.float64), axis=" + py +
                    ", keepdims=" + (keepdims ? "True" : "False") + ")).astype(np.float32)";
        EXPECT_TRUE(matches(got, numpy_ref(code, {x}), test::default_rtol(out), 1e-6, false));
      }
    }
  }
  // NaN anywhere in a reduced row gives NaN; the overloads; an empty reduction gives NaN.
  auto y = with_specials({6, 8}, float32, rng);
  for (const auto& v : layouts(y)) {
    EXPECT_TRUE(matches(median(v, 1), numpy_ref("np.median(a, axis=1)", {v}), 1e-6, 1e-6));
    EXPECT_TRUE(matches(median(v, -2, true), numpy_ref("np.median(a, axis=-2, keepdims=True)", {v}), 1e-6, 1e-6));
  }
  auto finite = random_array({5, 4}, float32, rng);
  EXPECT_TRUE(matches(median(finite), numpy_ref("np.median(a).astype(np.float32)", {finite}), 1e-6, 1e-6));
  auto empty = median(zeros({3, 0}), 1);
  EXPECT_TRUE(matches(empty, numpy_ref("np.full(3, np.nan, np.float32)", {})));
}

// ---------------------------------------------------------------- scans

struct ScanCase {
  std::string name;
  std::function<array(const array&, int, bool, bool)> op;
  std::function<array(const array&, bool, bool)> flat;
  std::string accumulate;  // NumPy: f(x, axis) computing the inclusive forward scan in a wide dtype
  std::string identity;    // NumPy: the identity of the exclusive scan, given the output dtype `dt`
  std::function<Dtype(Dtype)> out_dtype;
};

std::vector<ScanCase> scan_cases() {
  auto keep = [](Dtype d) { return d; };
  auto sum_rule = [](Dtype d) { return d == bool_ ? int32 : d; };
  auto float_rule = [](Dtype d) { return is_inexact(d) ? d : float32; };
  const std::string extreme_low = "(-np.inf if dt.kind in 'fc' else (False if dt == np.bool_ else np.iinfo(dt).min))";
  const std::string extreme_high = "(np.inf if dt.kind in 'fc' else (True if dt == np.bool_ else np.iinfo(dt).max))";
  return {
      {"cumsum", [](const array& a, int ax, bool r, bool i) { return cumsum(a, ax, r, i); },
       [](const array& a, bool r, bool i) { return cumsum(a, r, i); }, "np.cumsum(wide(x), axis=ax)", "0", sum_rule},
      {"cumprod", [](const array& a, int ax, bool r, bool i) { return cumprod(a, ax, r, i); },
       [](const array& a, bool r, bool i) { return cumprod(a, r, i); }, "np.cumprod(wide(x), axis=ax)", "1", sum_rule},
      {"cummax", [](const array& a, int ax, bool r, bool i) { return cummax(a, ax, r, i); },
       [](const array& a, bool r, bool i) { return cummax(a, r, i); }, "np.maximum.accumulate(x, axis=ax)",
       extreme_low, keep},
      {"cummin", [](const array& a, int ax, bool r, bool i) { return cummin(a, ax, r, i); },
       [](const array& a, bool r, bool i) { return cummin(a, r, i); }, "np.minimum.accumulate(x, axis=ax)",
       extreme_high, keep},
      {"logcumsumexp", [](const array& a, int ax, bool r, bool i) { return logcumsumexp(a, ax, r, i); },
       [](const array& a, bool r, bool i) { return logcumsumexp(a, r, i); },
       "np.logaddexp.accumulate(x.astype(np.float64), axis=ax)", "-np.inf", float_rule},
  };
}

/// NumPy code for a scan of `a` along `axis` (None: flattened), cast to `out`.
std::string scan_reference(const ScanCase& c, const std::string& axis, bool reverse, bool inclusive, Dtype out) {
  const std::string np_out =
      out == bfloat16 ? "np.float32" : out == bool_ ? "np.bool_" : "np." + std::string(dtype_name(out));
  return "import warnings\n"
         "warnings.simplefilter('ignore')\n"
         "dt = np.dtype(" + np_out + ")\n"
         "def wide(x):\n"
         "  k = x.dtype.kind\n"
         "  return x.astype(np.int64 if k in 'bi' else np.uint64 if k == 'u' else np.complex128 if k == 'c' "
         "else np.float64)\n"
         "x = a.reshape(-1) if " + (axis == "None" ? "True" : "False") + " else a\n"
         "ax = 0 if " + (axis == "None" ? "True" : "False") + " else " + (axis == "None" ? "0" : axis) + "\n"
         "x = x.astype(dt) if x.dtype != np.bool_ or dt != np.int32 else x\n"
         "x = np.flip(x, ax) if " + (reverse ? "True" : "False") + " else x\n"
         "y = (" + c.accumulate + ").astype(dt)\n"
         "if not " + (inclusive ? "True" : "False") + " and y.shape[ax] > 0:\n"
         "  shape = list(y.shape); shape[ax] = 1\n"
         "  y = np.concatenate([np.full(shape, " + c.identity + ", dt), np.take(y, range(y.shape[ax] - 1), axis=ax)],"
         " axis=ax)\n"
         "out = np.flip(y, ax) if " + (reverse ? "True" : "False") + " else y";
}

TEST(Scan, EveryOpDtypeAxisAndDirection) {
  std::mt19937 rng(8);
  for (const auto& c : scan_cases()) {
    for (auto dtype : kAllDtypes) {
      if (c.name == "logcumsumexp" && dtype == complex64) {
        continue;
      }
      auto x = random_array(test::random_shape(3, rng, 5), dtype, rng, -1.5, 1.5);
      const Dtype out = c.out_dtype(dtype);
      for (int axis : {0, 1, -1}) {
        for (bool reverse : {false, true}) {
          for (bool inclusive : {true, false}) {
            SCOPED_TRACE(c.name + " of " + describe(x) + " axis " + std::to_string(axis) + " reverse " +
                         std::to_string(reverse) + " inclusive " + std::to_string(inclusive));
            auto got = c.op(x, axis, reverse, inclusive);
            EXPECT_EQ(got.dtype(), out);
            auto expected = numpy_ref(scan_reference(c, std::to_string(axis), reverse, inclusive, out), {x});
            EXPECT_TRUE(matches(got, expected, test::default_rtol(out) * 4, is_integer(out) ? 0.0 : 1e-5, false));
          }
        }
      }
      auto flat = c.flat(x, false, true);
      EXPECT_TRUE(matches(flat, numpy_ref(scan_reference(c, "None", false, true, out), {x}),
                          test::default_rtol(out) * 4, is_integer(out) ? 0.0 : 1e-5, false));
    }
  }
}

TEST(Scan, LayoutsSpecialsAndLargeShapes) {
  std::mt19937 rng(9);
  const auto cases = scan_cases();
  // NaNs propagate, infinities and signed zeros, strided inputs.
  for (const auto& x : layouts(with_specials({7, 9}, float32, rng))) {
    for (const auto& c : cases) {
      for (int axis : {0, 1}) {
        for (bool reverse : {false, true}) {
          SCOPED_TRACE(c.name + " of " + describe(x) + " axis " + std::to_string(axis) + " reverse " +
                       std::to_string(reverse));
          EXPECT_TRUE(matches(c.op(x, axis, reverse, true),
                              numpy_ref(scan_reference(c, std::to_string(axis), reverse, true, float32), {x}), 1e-5,
                              1e-5));
        }
      }
    }
  }
  // Large: the row path and the column path across threads; empty arrays and size-1 axes.
  for (const Shape& shape : {Shape{3, 70000}, Shape{300, 700}, Shape{0, 5}, Shape{5, 0}, Shape{1, 6}, Shape{6, 1}}) {
    auto x = random_array(shape, float32, rng, 0.5, 1.0);
    for (const auto& c : cases) {
      for (int axis : {0, 1}) {
        SCOPED_TRACE(c.name + " of " + describe(x) + " axis " + std::to_string(axis));
        const double rtol = c.name == "cumprod" || c.name == "cumsum" ? 1e-3 : 1e-5;
        EXPECT_TRUE(matches(c.op(x, axis, false, false),
                            numpy_ref(scan_reference(c, std::to_string(axis), false, false, float32), {x}), rtol, 1e-5));
      }
    }
  }
  // logcumsumexp does not overflow where exp would.
  auto big = array({1000.0F, 1000.0F, -kInf, 999.0F, kInf, 3.0F});
  EXPECT_TRUE(matches(logcumsumexp(big), numpy_ref("np.logaddexp.accumulate(a.astype(np.float64)).astype(np.float32)",
                                                   {big}),
                      1e-6, 1e-6));
  auto all_neg_inf = array({-kInf, -kInf});
  EXPECT_TRUE(matches(logcumsumexp(all_neg_inf), numpy_ref("np.array([-np.inf, -np.inf], np.float32)", {})));
  // Small integers wrap in their own dtype (MLX's rule), bool sums give int32.
  auto bytes = array({100, 100, 100}, int8);
  EXPECT_TRUE(matches(cumsum(bytes), numpy_ref("np.array([100, -56, 44], np.int8)", {})));
  auto flags = array({true, false, true, true});
  EXPECT_TRUE(matches(cumsum(flags), numpy_ref("np.array([1, 1, 2, 3], np.int32)", {})));
  EXPECT_TRUE(matches(cummax(flags, 0, true, false), numpy_ref("np.array([True, True, True, False])", {})));
}

// ---------------------------------------------------------------- diff

TEST(Diff, MatchesNumPy) {
  std::mt19937 rng(10);
  for (auto dtype : {float32, int32, uint8, bool_, float16, int64, complex64}) {
    auto x = random_array({4, 6, 5}, dtype, rng);
    for (const auto& v : layouts(x)) {
      for (int n : {0, 1, 2, 7}) {
        for (int axis : {0, 1, -1}) {
          SCOPED_TRACE("diff of " + describe(v) + " n " + std::to_string(n) + " axis " + std::to_string(axis));
          auto got = diff(v, n, axis);
          EXPECT_TRUE(matches(got,
                              numpy_ref("np.diff(a, n=" + std::to_string(n) + ", axis=" + std::to_string(axis) + ")",
                                        {v}),
                              test::default_rtol(dtype), 1e-6, dtype != float16));
        }
      }
    }
  }
  auto y = array({1.0F, 4.0F, 9.0F, 16.0F});
  EXPECT_TRUE(matches(diff(y), numpy_ref("np.diff(a)", {y})));
}

// ---------------------------------------------------------------- errors and laziness

TEST(SortErrors, MessagesNameTheOpAndArguments) {
  auto x = zeros({3, 4});
  EXPECT_EQ(error_of([&] { sort(x, 2); }), "[sort] Axis 2 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { argsort(x, -3); }), "[argsort] Axis -3 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { sort(array(1.0F), 0); }), "[sort] Axis 0 is out of bounds for array with 0 dimensions.");
  EXPECT_EQ(error_of([&] { partition(x, 4, 1); }),
            "[partition] Expected kth in [-4, 4) along axis 1; got kth=4 for an array of shape (3,4).");
  EXPECT_EQ(error_of([&] { argpartition(x, -4, 0); }),
            "[argpartition] Expected kth in [-3, 3) along axis 0; got kth=-4 for an array of shape (3,4).");
  EXPECT_EQ(error_of([&] { topk(x, 5, -1); }),
            "[topk] Expected k in [0, 4] along axis 1; got k=5 for an array of shape (3,4).");
  EXPECT_EQ(error_of([&] { topk(x, -1); }),
            "[topk] Expected k in [0, 12] along axis 0; got k=-1 for an array of shape (12).");
  EXPECT_EQ(error_of([&] { searchsorted(x, array(1.0F)); }),
            "[searchsorted] Expected a sorted 1-d array to search; got an array of shape (3,4).");
  EXPECT_EQ(error_of([&] { median(zeros({2}, complex64)); }), "[median] Not supported for complex64 inputs.");
  EXPECT_EQ(error_of([&] { median(x, 2); }), "[median] Axis 2 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { cumsum(x, 2); }), "[cumsum] Axis 2 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { cummin(array(1), 0); }), "[cummin] Axis 0 is out of bounds for array with 0 dimensions.");
  EXPECT_EQ(error_of([&] { logcumsumexp(zeros({2}, complex64)); }),
            "[logcumsumexp] Not supported for complex64 inputs.");
  EXPECT_EQ(error_of([&] { diff(array(1.0F)); }), "[diff] Expected an array with at least one dimension; got a scalar.");
  EXPECT_EQ(error_of([&] { diff(x, -1); }), "[diff] Expected a non-negative order n; got n=-1.");
  EXPECT_EQ(error_of([&] { diff(x, 1, 3); }), "[diff] Axis 3 is out of bounds for array with 2 dimensions.");
}

TEST(SortLaziness, PermutationIsTheArgsortOfRandomBits) {
  auto key = random::key(5);
  auto p = random::permutation(100, key);
  EXPECT_FALSE(p.is_available());  // a graph until evaluated
  EXPECT_EQ(p.dtype(), int32);
  auto bits = random::bits({100}, 4, key);
  EXPECT_TRUE(matches(p, numpy_ref("np.argsort(a, kind='stable').astype(np.int32)", {bits}), 0.0, 0.0));
}

}  // namespace
}  // namespace nuvec
