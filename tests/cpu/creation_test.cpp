// Creation ops against NumPy (expected values come from the NumPy oracle unless
// a test says otherwise): arange, linspace, full and friends, eye, identity,
// tri, tril, triu, meshgrid and the window functions.

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

/// NumPy's spelling of a dtype; bfloat16, which NumPy lacks, is checked against float32.
std::string np_dtype(Dtype dtype) {
  return "np." + std::string(dtype == bfloat16 ? "float32" : dtype == bool_ ? "bool_" : dtype_name(dtype));
}

/// `actual` against NumPy's `code` on `inputs`, with the dtype's tolerance.
::testing::AssertionResult same_as_numpy(const array& actual, const std::string& code,
                                         const std::vector<array>& inputs = {}, double atol = 1e-6) {
  auto expected = numpy_ref(code, inputs);
  const bool check_dtype = actual.dtype() != bfloat16;
  return matches(actual, expected, test::default_rtol(actual.dtype()), atol, check_dtype);
}

using test::error_of;

#define EXPECT_ERROR_CONTAINS(stmt, text) expect_error_contains([&] { (void)(stmt); }, text)
void expect_error_contains(const std::function<void()>& fn, const std::string& text) {
  auto message = error_of(fn);
  EXPECT_NE(message.find(text), std::string::npos) << "message: " << message << "\nexpected to contain: " << text;
}

// ---------------------------------------------------------------- arange

TEST(CreationArange, DefaultDtypesFollowMlx) {
  EXPECT_EQ(arange(10).dtype(), int32);
  EXPECT_EQ(arange(2, 10).dtype(), int32);
  EXPECT_EQ(arange(2, 10, 3).dtype(), int32);
  EXPECT_EQ(arange(10.0).dtype(), float32);
  EXPECT_EQ(arange(1.0, 10.0).dtype(), float32);
  EXPECT_EQ(arange(1.0, 10.0, 0.5).dtype(), float32);
  EXPECT_EQ(arange(10.0, int64).dtype(), int64);
  EXPECT_EQ(arange(1.0, 10.0, float16).dtype(), float16);
  EXPECT_TRUE(same_as_numpy(arange(10), "np.arange(10, dtype=np.int32)"));
  EXPECT_TRUE(same_as_numpy(arange(2, 10, 3), "np.arange(2, 10, 3, dtype=np.int32)"));
  EXPECT_TRUE(same_as_numpy(arange(1.0, 10.0), "np.arange(1.0, 10.0).astype(np.float32)"));
  EXPECT_TRUE(same_as_numpy(arange(0.0, 1.0, 0.1), "np.arange(0.0, 1.0, 0.1).astype(np.float32)"));
  EXPECT_TRUE(same_as_numpy(arange(7.5), "np.arange(7.5).astype(np.float32)"));
}

TEST(CreationArange, RangesOverEveryNumericDtype) {
  struct Range {
    double start, stop, step;
  };
  const std::vector<Range> ranges = {{0, 10, 1},   {2, 11, 3},    {5, 0, -1},     {0, 5, -1},   {3, 3, 1},
                                     {-4, 4, 0.5}, {0.5, 5, 0.7}, {10, -3, -2.5}, {1, 2, 0.01}, {-2, 7, 2}};
  for (auto dtype : all_dtypes) {
    if (dtype == bool_) {
      continue;
    }
    for (const auto& r : ranges) {
      // Negative values do not fit unsigned dtypes (NumPy warns); skip those ranges there.
      if (is_unsigned(dtype) && (r.start < 0 || r.stop < -1)) {
        continue;
      }
      if (is_integer(dtype) && std::abs(r.stop - r.start) / std::abs(r.step) > 100) {
        continue;  // int8 would wrap
      }
      auto x = arange(r.start, r.stop, r.step, dtype);
      std::string code;
      if (is_integer(dtype)) {
        // NumPy's integer arange (the first two values cast, their difference the step) is what nuvec follows.
        code = "np.arange(" + std::to_string(r.start) + ", " + std::to_string(r.stop) + ", " + std::to_string(r.step) +
               ", dtype=" + np_dtype(dtype) + ")";
      } else {
        code = "np.arange(" + std::to_string(r.start) + ", " + std::to_string(r.stop) + ", " + std::to_string(r.step) +
               ").astype(" + np_dtype(dtype) + ")";
      }
      EXPECT_TRUE(same_as_numpy(x, code)) << dtype << " " << code;
    }
  }
}

TEST(CreationArange, Float64IsComputedInDouble) {
  auto x = arange(0.1, 3.0, 0.1, float64);
  EXPECT_TRUE(same_as_numpy(x, "np.arange(0.1, 3.0, 0.1)", {}, 1e-15));
}

TEST(CreationArange, LargeRangesSplitAcrossThreads) {
  auto x = arange(0, 1 << 20, 1);
  auto y = arange(-3.0, 1000000.0, 0.5, float64);
  EXPECT_TRUE(same_as_numpy(x, "np.arange(0, 1 << 20, 1, dtype=np.int32)"));
  EXPECT_TRUE(same_as_numpy(y, "np.arange(-3.0, 1000000.0, 0.5)"));
}

TEST(CreationArange, InfiniteStepGivesOneOrNoElement) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(same_as_numpy(arange(0.0, 10.0, inf), "np.arange(0, 10, np.inf).astype(np.float32)"));
  EXPECT_TRUE(same_as_numpy(arange(0.0, -10.0, inf), "np.arange(0, -10, np.inf).astype(np.float32)"));
  EXPECT_TRUE(same_as_numpy(arange(0.0, -10.0, -inf), "np.arange(0, -10, -np.inf).astype(np.float32)"));
}

TEST(CreationArange, Errors) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_ERROR_CONTAINS(arange(0.0, 10.0, 1.0, bool_), "[arange] bool is not supported");
  EXPECT_ERROR_CONTAINS(arange(0.0, 10.0, 0.0), "[arange] Cannot compute length.");
  EXPECT_ERROR_CONTAINS(arange(0, 10, 0), "[arange] Cannot compute length.");
  EXPECT_ERROR_CONTAINS(arange(nan, 10.0, 1.0), "[arange] Cannot compute length.");
  EXPECT_ERROR_CONTAINS(arange(0.0, inf, 1.0), "[arange] Cannot compute length.");
  EXPECT_ERROR_CONTAINS(arange(0.0, 1e10, 1.0), "[arange] Maximum size exceeded");
}

// ---------------------------------------------------------------- linspace

TEST(CreationLinspace, MatchesNumpy) {
  for (int num : {0, 1, 2, 3, 5, 50, 1000}) {
    for (auto [start, stop] :
         {std::pair{0.0, 1.0}, std::pair{-3.5, 7.25}, std::pair{10.0, -10.0}, std::pair{2.0, 2.0}}) {
      for (auto dtype : {float32, float64, float16, bfloat16, int32, int64, uint8, complex64}) {
        if (dtype == uint8 && (start < 0 || stop < 0)) {
          continue;
        }
        auto x = linspace(start, stop, num, dtype);
        ASSERT_EQ(x.shape(), Shape{num});
        ASSERT_EQ(x.dtype(), dtype);
        auto code = "np.linspace(" + std::to_string(start) + ", " + std::to_string(stop) + ", " + std::to_string(num) +
                    ").astype(" + np_dtype(dtype) + ")";
        EXPECT_TRUE(same_as_numpy(x, code, {}, dtype == float64 ? 1e-15 : 1e-6)) << code;
      }
    }
  }
  EXPECT_EQ(linspace(0.0, 1.0).size(), 50U);
  EXPECT_EQ(linspace(0.0, 1.0).dtype(), float32);
}

TEST(CreationLinspace, EndpointsAreExact) {
  auto x = linspace(0.1, 0.7, 7, float64);
  x.eval();
  EXPECT_EQ(x.data<double>()[0], 0.1);
  EXPECT_EQ(x.data<double>()[6], 0.7);
}

TEST(CreationLinspace, Errors) {
  EXPECT_ERROR_CONTAINS(linspace(0.0, 1.0, -1), "[linspace] number of samples, -1, must be non-negative.");
}

// ---------------------------------------------------------------- full, zeros, ones

TEST(CreationFull, EveryDtypeAndShape) {
  const std::vector<Shape> shapes = {{}, {0}, {1}, {5}, {2, 3}, {3, 0, 2}, {2, 1, 4}};
  for (auto dtype : all_dtypes) {
    for (const auto& shape : shapes) {
      std::string shape_py = "(";
      for (auto d : shape) {
        shape_py += std::to_string(d);
        shape_py += ',';
      }
      shape_py += ')';
      auto np = np_dtype(dtype);
      EXPECT_TRUE(same_as_numpy(zeros(shape, dtype), "np.zeros(" + shape_py + ", dtype=" + np + ")"));
      EXPECT_TRUE(same_as_numpy(ones(shape, dtype), "np.ones(" + shape_py + ", dtype=" + np + ")"));
      EXPECT_TRUE(same_as_numpy(full(shape, 3, dtype), "np.full(" + shape_py + ", 3, dtype=" + np + ")"));
      auto like = test::from_host(numpy_ref("np.ones(" + shape_py + ", dtype=" + np + ")", {}));
      if (dtype != bfloat16) {
        EXPECT_EQ(zeros_like(like).dtype(), dtype);
        EXPECT_EQ(ones_like(like).shape(), shape);
        EXPECT_TRUE(same_as_numpy(full_like(like, array(2.5F)), "np.full_like(a, 2.5)", {like}));
        EXPECT_TRUE(same_as_numpy(zeros_like(like), "np.zeros_like(a)", {like}));
        EXPECT_TRUE(same_as_numpy(ones_like(like), "np.ones_like(a)", {like}));
      }
    }
  }
  EXPECT_EQ(zeros({2}).dtype(), float32);
  EXPECT_EQ(ones({2}).dtype(), float32);
}

TEST(CreationFull, ScalarDtypesAndConversion) {
  EXPECT_EQ(full({2}, 1).dtype(), int32);
  EXPECT_EQ(full({2}, 1.0).dtype(), float32);
  EXPECT_EQ(full({2}, true).dtype(), bool_);
  EXPECT_TRUE(same_as_numpy(full({3}, 3.7, int32), "np.full((3,), 3.7).astype(np.int32)"));
  EXPECT_TRUE(same_as_numpy(full({2, 2}, -1.5, float16), "np.full((2, 2), -1.5, dtype=np.float16)"));
}

TEST(CreationFull, BroadcastsArrayValues) {
  std::mt19937 rng(7);
  auto row = test::random_array({3}, float32, rng);
  auto col = test::random_array({2, 1}, int32, rng);
  EXPECT_TRUE(same_as_numpy(full({4, 3}, row), "np.broadcast_to(a, (4, 3))", {row}));
  EXPECT_TRUE(same_as_numpy(full({2, 5}, col, float64), "np.broadcast_to(a, (2, 5)).astype(np.float64)", {col}));
  // A non-contiguous source broadcasts too.
  auto t = transpose(test::random_array({3, 2}, float32, rng));
  EXPECT_TRUE(same_as_numpy(full({4, 2, 3}, t), "np.broadcast_to(a, (4, 2, 3))", {t}));
  EXPECT_ERROR_CONTAINS(full({4, 2}, row), "Cannot broadcast");
  EXPECT_ERROR_CONTAINS(full({-1, 2}, 0.0F), "[full] Negative dimensions not allowed");
}

TEST(CreationFull, IsADenseArrayAsMlxs) {
  // MLX's full (and zeros, ones) fill a buffer of their own, which later kernels read contiguously and may donate.
  auto x = zeros({1000, 1000}, float32);
  x.eval();
  EXPECT_EQ(x.data_size(), x.size());
  EXPECT_EQ(x.strides(), (Strides{1000, 1}));
  EXPECT_TRUE(x.flags().row_contiguous);
  // Kernels take broadcast inputs as well: copies, conversions, concatenation, padding.
  auto y = broadcast_to(array({1.0F, 2.0F, 3.0F, 4.0F}), {3, 4});
  EXPECT_TRUE(same_as_numpy(copy(y), "np.tile(np.arange(1, 5, dtype=np.float32), (3, 1))"));
  EXPECT_TRUE(same_as_numpy(astype(y, int16), "np.tile(np.arange(1, 5, dtype=np.int16), (3, 1))"));
  EXPECT_TRUE(same_as_numpy(reshape(y, {12}), "np.tile(np.arange(1, 5, dtype=np.float32), 3)"));
  EXPECT_TRUE(same_as_numpy(concatenate({y, ones({1, 4})}, 0),
                            "np.concatenate([np.tile(np.arange(1, 5, dtype=np.float32), (3, 1)), "
                            "np.ones((1, 4), np.float32)])"));
  EXPECT_TRUE(same_as_numpy(pad(ones({2, 2}, int32), 1), "np.pad(np.ones((2, 2), np.int32), 1)"));
  EXPECT_TRUE(same_as_numpy(transpose(y), "np.tile(np.arange(1, 5, dtype=np.float32), (3, 1)).T"));
}

TEST(CreationFull, ElementwiseKernelsTakeBroadcastInputs) {
  auto y = broadcast_to(array({1.0F, 2.0F, 3.0F, 4.0F}), {3, 4});
  EXPECT_TRUE(same_as_numpy(add(y, ones({3, 4})), "np.tile(np.arange(2, 6, dtype=np.float32), (3, 1))"));
  EXPECT_TRUE(same_as_numpy(exp(broadcast_to(array(0.0F), {2, 2})), "np.ones((2, 2), np.float32)"));
  EXPECT_TRUE(
      same_as_numpy(where(broadcast_to(array(true), {2, 3}), broadcast_to(array(1), {2, 3}), zeros({2, 3}, int32)),
                    "np.ones((2, 3), np.int32)"));
}

// ---------------------------------------------------------------- eye, identity, tri

TEST(CreationEye, MatchesNumpyOverShapesAndDiagonals) {
  for (int n : {0, 1, 2, 3, 5}) {
    for (int m : {0, 1, 3, 4}) {
      for (int k : {-6, -3, -1, 0, 1, 2, 4}) {
        auto code =
            "np.eye(" + std::to_string(n) + ", " + std::to_string(m) + ", " + std::to_string(k) + ", dtype=np.float32)";
        EXPECT_TRUE(same_as_numpy(eye(n, m, k), code)) << code;
        auto tcode =
            "np.tri(" + std::to_string(n) + ", " + std::to_string(m) + ", " + std::to_string(k) + ", dtype=np.float32)";
        EXPECT_TRUE(same_as_numpy(tri(n, m, k, float32), tcode)) << tcode;
      }
    }
  }
}

TEST(CreationEye, OverloadsAndDtypes) {
  for (auto dtype : all_dtypes) {
    EXPECT_TRUE(same_as_numpy(eye(4, dtype), "np.eye(4, dtype=" + np_dtype(dtype) + ")"));
    EXPECT_TRUE(same_as_numpy(identity(3, dtype), "np.identity(3, dtype=" + np_dtype(dtype) + ")"));
    EXPECT_TRUE(same_as_numpy(tri(4, dtype), "np.tri(4, dtype=" + np_dtype(dtype) + ")"));
  }
  EXPECT_TRUE(same_as_numpy(eye(3), "np.eye(3, dtype=np.float32)"));
  EXPECT_TRUE(same_as_numpy(eye(2, 5), "np.eye(2, 5, dtype=np.float32)"));
  EXPECT_TRUE(same_as_numpy(eye(4, 3, -1), "np.eye(4, 3, -1, dtype=np.float32)"));
  EXPECT_TRUE(same_as_numpy(identity(2), "np.identity(2, dtype=np.float32)"));
  EXPECT_EQ(eye(3).dtype(), float32);
  EXPECT_EQ(tri(3, int8).dtype(), int8);
}

TEST(CreationEye, IsCheapAndComposes) {
  // A 2000 x 2000 identity reads a window of 3999 values; later ops see an ordinary array.
  auto x = eye(2000, 2000, 0, float32);
  x.eval();
  EXPECT_EQ(x.buffer().size(), 3999U * sizeof(float)) << "eye must hold one window, not n * m values";
  auto c = contiguous(x);
  c.eval();
  EXPECT_TRUE(c.flags().row_contiguous);
  EXPECT_EQ(c.data<float>()[0], 1.0F);
  EXPECT_EQ(c.data<float>()[2001], 1.0F);
  EXPECT_EQ(c.data<float>()[1], 0.0F);
  EXPECT_TRUE(same_as_numpy(reshape(eye(3, 4, 1), {12}), "np.eye(3, 4, 1, dtype=np.float32).reshape(12)"));
  EXPECT_TRUE(same_as_numpy(transpose(tri(3, 5, 1, int32)), "np.tri(3, 5, 1, dtype=np.int32).T"));
  EXPECT_TRUE(same_as_numpy(slice(eye(5), {1, 0}, {4, 5}, {2, 2}), "np.eye(5, dtype=np.float32)[1:4:2, 0:5:2]"));
  EXPECT_TRUE(same_as_numpy(flip(tri(3, 4, 0, float32), 1), "np.tri(3, 4, dtype=np.float32)[:, ::-1]"));
}

TEST(CreationEye, Errors) {
  EXPECT_ERROR_CONTAINS(eye(-1), "[eye] N and M must be non-negative");
  EXPECT_ERROR_CONTAINS(eye(2, -3), "[eye] N and M must be non-negative");
  EXPECT_ERROR_CONTAINS(identity(-2), "[identity] N must be non-negative");
  EXPECT_ERROR_CONTAINS(tri(-1, 2, 0, float32), "[tri] N and M must be non-negative");
}

TEST(CreationTril, MatchesNumpy) {
  std::mt19937 rng(1);
  for (auto dtype : {float32, int32, bool_, float16, complex64, uint8}) {
    for (const auto& shape : std::vector<Shape>{{4, 4}, {3, 5}, {5, 2}, {2, 3, 4}, {0, 3}, {1, 1}}) {
      auto x = test::random_array(shape, dtype, rng);
      for (int k : {-2, -1, 0, 1, 3}) {
        auto ks = std::to_string(k);
        EXPECT_TRUE(same_as_numpy(tril(x, k), "np.tril(a, " + ks + ")", {x}));
        EXPECT_TRUE(same_as_numpy(triu(x, k), "np.triu(a, " + ks + ")", {x}));
      }
    }
  }
  // Non-contiguous input.
  auto t = transpose(test::random_array({5, 3}, float32, rng));
  EXPECT_TRUE(same_as_numpy(tril(t), "np.tril(a)", {t}));
  EXPECT_TRUE(same_as_numpy(triu(t, 1), "np.triu(a, 1)", {t}));
}

TEST(CreationTril, Errors) {
  EXPECT_ERROR_CONTAINS(tril(array({1, 2, 3})), "[tril] array must be at least 2-D; got shape (3)");
  EXPECT_ERROR_CONTAINS(triu(array(1)), "[triu] array must be at least 2-D");
}

// ---------------------------------------------------------------- meshgrid

TEST(CreationMeshgrid, MatchesNumpy) {
  std::mt19937 rng(3);
  auto x = test::random_array({3}, float32, rng);
  auto y = test::random_array({4}, int32, rng);
  auto z = test::random_array({2, 1}, float64, rng);  // flattened, as NumPy does
  for (std::string indexing : {"xy", "ij"}) {
    for (bool sparse : {false, true}) {
      auto args = ", indexing='" + indexing + "', sparse=" + (sparse ? "True" : "False") + ")";
      auto two = meshgrid({x, y}, sparse, indexing);
      ASSERT_EQ(two.size(), 2U);
      for (int i = 0; i < 2; ++i) {
        EXPECT_TRUE(same_as_numpy(two[i], "np.meshgrid(a, b" + args + "[" + std::to_string(i) + "]", {x, y}))
            << indexing << sparse << i;
      }
      auto three = meshgrid({x, y, z}, sparse, indexing);
      ASSERT_EQ(three.size(), 3U);
      for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(same_as_numpy(three[i], "np.meshgrid(a, b, c" + args + "[" + std::to_string(i) + "]", {x, y, z}))
            << indexing << sparse << i;
      }
      auto one = meshgrid({x}, sparse, indexing);
      ASSERT_EQ(one.size(), 1U);
      EXPECT_TRUE(same_as_numpy(one[0], "np.meshgrid(a" + args + "[0]", {x}));
    }
  }
  auto empty = zeros({0});
  auto grids = meshgrid({empty, x});
  EXPECT_EQ(grids[0].shape(), (Shape{3, 0}));
  EXPECT_TRUE(meshgrid({}).empty());
}

TEST(CreationMeshgrid, Errors) {
  EXPECT_ERROR_CONTAINS(meshgrid({array({1})}, false, "xz"),
                        "[meshgrid] Invalid indexing value 'xz'. Valid values are 'xy' and 'ij'.");
}

// ---------------------------------------------------------------- windows

TEST(CreationWindow, MatchesNumpy) {
  for (int m : {-3, 0, 1, 2, 3, 4, 7, 12, 51}) {
    auto ms = std::to_string(m);
    for (auto [fn, name] : {std::pair{&bartlett, "bartlett"}, std::pair{&blackman, "blackman"},
                            std::pair{&hamming, "hamming"}, std::pair{&hanning, "hanning"}}) {
      auto w = fn(m, {});
      EXPECT_EQ(w.dtype(), float32);
      EXPECT_TRUE(same_as_numpy(w, "np." + std::string(name) + "(" + ms + ").astype(np.float32)", {}, 1e-6))
          << name << " " << m;
    }
  }
}

}  // namespace
}  // namespace nuvec
