// Layout ops against NumPy (expected values come from the NumPy oracle unless a
// test says otherwise): split, stack, unstack, repeat, tile, pad, roll, flip,
// diag, trace, number_of_elements, depends, the dtype utilities, and the view
// machinery they are built on (results and buffer sharing).

#include <gtest/gtest.h>

#include <cstring>
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

::testing::AssertionResult same_as_numpy(const array& actual, const std::string& code,
                                         const std::vector<array>& inputs = {}, double atol = 1e-6) {
  auto expected = numpy_ref(code, inputs);
  // NumPy has no bfloat16: the oracle widens it to float32, so only the values are compared.
  return matches(actual, expected, test::default_rtol(actual.dtype()), atol, actual.dtype() != bfloat16);
}

using test::error_of;

#define EXPECT_ERROR_CONTAINS(stmt, text) expect_error_contains([&] { (void)(stmt); }, text)
void expect_error_contains(const std::function<void()>& fn, const std::string& text) {
  auto message = error_of(fn);
  EXPECT_NE(message.find(text), std::string::npos) << "message: " << message << "\nexpected to contain: " << text;
}

/// Whether two evaluated arrays view the same allocation.
bool shares_buffer(array a, array b) {
  a.eval();
  b.eval();
  return a.buffer().raw_ptr() != nullptr && a.buffer().raw_ptr() == b.buffer().raw_ptr();
}

/// Inputs in three layouts with the same values: row-contiguous, transposed, and a strided slice.
struct Layouts {
  array dense;
  array transposed;
  array sliced;
};
Layouts layouts(const Shape& shape, Dtype dtype, std::mt19937& rng) {
  auto dense = random_array(shape, dtype, rng);
  Shape reversed(shape.rbegin(), shape.rend());
  auto transposed = transpose(random_array(reversed, dtype, rng));
  Shape wide = shape;
  wide.back() *= 2;
  auto base = random_array(wide, dtype, rng);
  Shape start(shape.size(), 0);
  Shape strides(shape.size(), 1);
  strides.back() = 2;
  auto sliced = slice(base, start, wide, strides);
  return {dense, transposed, sliced};
}

std::string py_list(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) {
      s += ", ";
    }
    s += std::to_string(v[i]);
  }
  return s + "]";
}

// ---------------------------------------------------------------- split

TEST(LayoutSplit, ByCountMatchesNumpy) {
  std::mt19937 rng(11);
  for (auto dtype : {float32, int8, bool_, complex64, bfloat16}) {
    auto in = layouts({4, 6}, dtype, rng);
    for (const auto& x : {in.dense, in.transposed, in.sliced}) {
      for (auto [count, axis] :
           {std::pair{2, 0}, std::pair{4, 0}, std::pair{3, 1}, std::pair{6, -1}, std::pair{1, 1}}) {
        auto parts = split(x, count, axis);
        ASSERT_EQ(parts.size(), static_cast<size_t>(count));
        for (int i = 0; i < count; ++i) {
          auto code = "np.split(a, " + std::to_string(count) + ", axis=" + std::to_string(axis) + ")[" +
                      std::to_string(i) + "]";
          EXPECT_TRUE(same_as_numpy(parts[i], code, {x})) << code;
        }
      }
    }
  }
  auto x = arange(12);
  auto parts = split(x, 3);
  EXPECT_TRUE(same_as_numpy(parts[2], "np.split(np.arange(12, dtype=np.int32), 3)[2]"));
  EXPECT_TRUE(shares_buffer(parts[1], x)) << "split pieces are views";
  auto empty = split(zeros({0, 2}), 2, 0);
  ASSERT_EQ(empty.size(), 2U);
  EXPECT_EQ(empty[1].shape(), (Shape{0, 2}));
}

TEST(LayoutSplit, ByIndicesMatchesNumpy) {
  std::mt19937 rng(12);
  auto in = layouts({7, 5}, float32, rng);
  const std::vector<Shape> index_sets = {{}, {2}, {1, 4}, {3, 1}, {-2}, {0, 7}, {2, 10}, {-9, 3}, {5, 5}};
  for (const auto& x : {in.dense, in.transposed, in.sliced}) {
    for (const auto& indices : index_sets) {
      for (int axis : {0, 1, -2}) {
        auto parts = split(x, indices, axis);
        ASSERT_EQ(parts.size(), indices.size() + 1);
        for (size_t i = 0; i < parts.size(); ++i) {
          auto code =
              "np.split(a, " + py_list(indices) + ", axis=" + std::to_string(axis) + ")[" + std::to_string(i) + "]";
          EXPECT_TRUE(same_as_numpy(parts[i], code, {x})) << code;
        }
      }
    }
  }
  auto parts = split(arange(6), Shape{4});
  EXPECT_TRUE(same_as_numpy(parts[1], "np.arange(6, dtype=np.int32)[4:]"));
}

TEST(LayoutSplit, Errors) {
  EXPECT_ERROR_CONTAINS(split(arange(5), 2), "[split] Array split does not result in sub arrays with equal size.");
  EXPECT_ERROR_CONTAINS(split(zeros({2, 3}), 2, 1), "Axis 1 of shape (2,3) cannot be split into 2 equal parts.");
  EXPECT_ERROR_CONTAINS(split(arange(4), 0), "[split] The number of splits must be positive");
  EXPECT_ERROR_CONTAINS(split(zeros({2, 3}), 2, 2), "[split] Axis 2 is out of bounds");
  EXPECT_ERROR_CONTAINS(split(array(1.0F), 1), "[split]");
  EXPECT_ERROR_CONTAINS(split(zeros({2, 3}), Shape{1}, -3), "[split]");
}

// ---------------------------------------------------------------- stack and unstack

TEST(LayoutStack, MatchesNumpy) {
  std::mt19937 rng(13);
  for (auto dtype : {float32, int64, bool_, float16}) {
    auto in = layouts({3, 4}, dtype, rng);
    std::vector<array> xs = {in.dense, in.transposed, in.sliced};
    for (int axis : {0, 1, 2, -1, -3}) {
      EXPECT_TRUE(same_as_numpy(stack(xs, axis), "np.stack([a, b, c], axis=" + std::to_string(axis) + ")", xs));
    }
    EXPECT_TRUE(same_as_numpy(stack(xs), "np.stack([a, b, c])", xs));
    EXPECT_TRUE(same_as_numpy(stack({in.dense}, 1), "np.stack([a], axis=1)", {in.dense}));
  }
  // Dtypes promote as in concatenate.
  auto a = array({1, 2});
  auto b = array({0.5F, 1.5F});
  EXPECT_TRUE(same_as_numpy(stack({a, b}), "np.stack([a, b]).astype(np.float32)", {a, b}));
  EXPECT_TRUE(same_as_numpy(stack({array(1), array(2)}), "np.stack([np.int32(1), np.int32(2)])"));
  EXPECT_EQ(stack({zeros({0, 3}), zeros({0, 3})}, 1).shape(), (Shape{0, 2, 3}));
}

TEST(LayoutStack, Errors) {
  EXPECT_ERROR_CONTAINS(stack({}), "[stack] No arrays provided for stacking.");
  EXPECT_ERROR_CONTAINS(stack({zeros({2}), zeros({3})}),
                        "[stack] All arrays must have the same shape; got (2) and (3).");
  EXPECT_ERROR_CONTAINS(stack({zeros({2})}, 2), "[stack] Axis 2 is out of bounds");
}

TEST(LayoutUnstack, MatchesNumpy) {
  std::mt19937 rng(14);
  auto in = layouts({3, 4, 2}, float32, rng);
  for (const auto& x : {in.dense, in.transposed, in.sliced}) {
    for (int axis : {0, 1, 2, -1}) {
      auto parts = unstack(x, axis);
      ASSERT_EQ(parts.size(), static_cast<size_t>(x.shape(axis)));
      for (size_t i = 0; i < parts.size(); ++i) {
        auto code = "np.moveaxis(a, " + std::to_string(axis) + ", 0)[" + std::to_string(i) + "]";
        EXPECT_TRUE(same_as_numpy(parts[i], code, {x})) << code;
      }
    }
  }
  EXPECT_TRUE(unstack(zeros({0, 3})).empty());
  EXPECT_ERROR_CONTAINS(unstack(array(1)), "[unstack] Cannot unstack a scalar");
  EXPECT_ERROR_CONTAINS(unstack(zeros({2}), 1), "[unstack] Axis 1 is out of bounds");
}

// ---------------------------------------------------------------- repeat and tile

TEST(LayoutRepeat, MatchesNumpy) {
  std::mt19937 rng(15);
  for (auto dtype : {float32, int16, bool_, complex64}) {
    auto in = layouts({2, 3}, dtype, rng);
    for (const auto& x : {in.dense, in.transposed, in.sliced}) {
      for (int repeats : {0, 1, 2, 3}) {
        auto r = std::to_string(repeats);
        for (int axis : {0, 1, -1, -2}) {
          EXPECT_TRUE(same_as_numpy(repeat(x, repeats, axis),
                                    "np.repeat(a, " + r + ", axis=" + std::to_string(axis) + ")", {x}));
        }
        EXPECT_TRUE(same_as_numpy(repeat(x, repeats), "np.repeat(a, " + r + ")", {x}));
      }
    }
  }
  EXPECT_TRUE(same_as_numpy(repeat(array(7), 3), "np.repeat(np.int32(7), 3)"));
  EXPECT_EQ(repeat(zeros({0, 2}), 4, 1).shape(), (Shape{0, 8}));
}

TEST(LayoutRepeat, Errors) {
  EXPECT_ERROR_CONTAINS(repeat(zeros({2}), -1, 0), "[repeat] Number of repeats cannot be negative; got -1.");
  EXPECT_ERROR_CONTAINS(repeat(zeros({2}), 2, 1), "[repeat] Axis 1 is out of bounds");
  EXPECT_ERROR_CONTAINS(repeat(array(1), 2, 0), "[repeat]");
}

TEST(LayoutTile, MatchesNumpy) {
  std::mt19937 rng(16);
  auto in = layouts({2, 3}, int32, rng);
  const std::vector<std::vector<int>> reps_list = {{},     {1},       {2},    {2, 1},      {1, 3},
                                                   {2, 2}, {3, 1, 2}, {0, 2}, {2, 1, 1, 1}};
  for (const auto& x : {in.dense, in.transposed, in.sliced}) {
    for (const auto& reps : reps_list) {
      EXPECT_TRUE(same_as_numpy(tile(x, reps), "np.tile(a, " + py_list(reps) + ")", {x})) << py_list(reps);
    }
  }
  auto scalar = array(2.5F);
  EXPECT_TRUE(same_as_numpy(tile(scalar, {3, 2}), "np.tile(np.float32(2.5), (3, 2))"));
  auto v = array({1.0F, 2.0F, 3.0F});
  EXPECT_TRUE(same_as_numpy(tile(v, {2}), "np.tile(a, 2)", {v}));
  EXPECT_ERROR_CONTAINS(tile(v, {-1}), "[tile] Repetitions must be non-negative; got (-1).");
}

// ---------------------------------------------------------------- pad

TEST(LayoutPad, ConstantMatchesNumpy) {
  std::mt19937 rng(17);
  for (auto dtype : {float32, uint8, bool_, float64, bfloat16, complex64}) {
    auto in = layouts({3, 4}, dtype, rng);
    for (const auto& x : {in.dense, in.transposed, in.sliced}) {
      EXPECT_TRUE(same_as_numpy(pad(x, 2), "np.pad(a, 2)", {x}));
      EXPECT_TRUE(same_as_numpy(pad(x, {1, 0}), "np.pad(a, (1, 0))", {x}));
      EXPECT_TRUE(
          same_as_numpy(pad(x, {{0, 2}, {3, 1}}, array(1)), "np.pad(a, ((0, 2), (3, 1)), constant_values=1)", {x}));
      EXPECT_TRUE(same_as_numpy(pad(x, std::vector<int>{-1}, Shape{2}, Shape{0}), "np.pad(a, ((0, 0), (2, 0)))", {x}));
      EXPECT_TRUE(same_as_numpy(pad(x, std::vector<int>{1, 0}, Shape{0, 1}, Shape{2, 2}, array(1)),
                                "np.pad(a, ((1, 2), (0, 2)), constant_values=1)", {x}));
    }
  }
  // The pad value converts to the array's dtype (NumPy casts it the same way).
  auto x = arange(6);
  EXPECT_TRUE(same_as_numpy(pad(x, 1, array(2.7F)), "np.pad(np.arange(6, dtype=np.int32), 1, constant_values=2)"));
  EXPECT_TRUE(same_as_numpy(pad(zeros({0, 2}), 1), "np.pad(np.zeros((0, 2), np.float32), 1)"));
  EXPECT_TRUE(same_as_numpy(pad(array(3.0F), 0), "np.pad(np.float32(3), 0)"));
  auto y = random_array({2, 3, 2}, int32, rng);
  EXPECT_TRUE(same_as_numpy(pad(y, {{1, 1}, {0, 0}, {2, 0}}, array(-5)),
                            "np.pad(a, ((1, 1), (0, 0), (2, 0)), constant_values=-5)", {y}));
}

TEST(LayoutPad, EdgeMatchesNumpy) {
  std::mt19937 rng(18);
  for (auto dtype : {float32, int32, bool_, float16}) {
    auto in = layouts({3, 4}, dtype, rng);
    for (const auto& x : {in.dense, in.transposed, in.sliced}) {
      EXPECT_TRUE(same_as_numpy(pad(x, 2, array(0), "edge"), "np.pad(a, 2, mode='edge')", {x}));
      EXPECT_TRUE(
          same_as_numpy(pad(x, {{0, 3}, {1, 0}}, array(0), "edge"), "np.pad(a, ((0, 3), (1, 0)), mode='edge')", {x}));
      EXPECT_TRUE(same_as_numpy(pad(x, std::vector<int>{1}, Shape{2}, Shape{1}, array(0), "edge"),
                                "np.pad(a, ((0, 0), (2, 1)), mode='edge')", {x}));
    }
  }
  auto v = array({1.0F, 2.0F, 3.0F});
  EXPECT_TRUE(same_as_numpy(pad(v, {2, 1}, array(0), "edge"), "np.pad(a, (2, 1), mode='edge')", {v}));
  // An empty axis may be padded by nothing; other axes still pad.
  EXPECT_TRUE(same_as_numpy(pad(zeros({0, 2}), {{0, 0}, {1, 1}}, array(0), "edge"),
                            "np.pad(np.zeros((0, 2), np.float32), ((0, 0), (1, 1)), mode='edge')"));
}

TEST(LayoutPad, Errors) {
  auto x = zeros({2, 3});
  EXPECT_ERROR_CONTAINS(pad(x, {{1, 1}}), "[pad] Invalid number of padding sizes passed to pad with axes of size 2");
  EXPECT_ERROR_CONTAINS(pad(x, std::vector<int>{0}, Shape{1, 2}, Shape{1}),
                        "[pad] Invalid number of padding sizes passed to pad with axes of size 1");
  EXPECT_ERROR_CONTAINS(
      pad(x, -1), "[pad] Invalid low padding size (-1) passed to pad for axis 0. Padding sizes must be non-negative.");
  EXPECT_ERROR_CONTAINS(pad(x, {0, -2}), "[pad] Invalid high padding size (-2)");
  EXPECT_ERROR_CONTAINS(pad(x, 1, array(0), "wrap"), "[pad] Invalid padding mode (wrap) passed to pad");
  EXPECT_ERROR_CONTAINS(pad(x, std::vector<int>{0, 0}, Shape{1, 1}, Shape{1, 1}), "[pad] Repeated axis 0");
  EXPECT_ERROR_CONTAINS(pad(x, std::vector<int>{2}, Shape{1}, Shape{1}), "[pad] Axis 2 is out of bounds");
  EXPECT_ERROR_CONTAINS(pad(x, 1, array({1, 2})), "[pad] The padding value must be a single value; got shape (2).");
  EXPECT_ERROR_CONTAINS(pad(zeros({0, 2}), 1, array(0), "edge"), "[pad] Cannot extend the empty axis 0 of shape (0,2)");
}

// ---------------------------------------------------------------- roll

TEST(LayoutRoll, MatchesNumpy) {
  std::mt19937 rng(19);
  for (auto dtype : {float32, int8, bool_}) {
    auto in = layouts({3, 5}, dtype, rng);
    for (const auto& x : {in.dense, in.transposed, in.sliced}) {
      for (int shift : {0, 1, -1, 4, 7, -16, 15}) {
        auto sh = std::to_string(shift);
        EXPECT_TRUE(same_as_numpy(roll(x, shift), "np.roll(a, " + sh + ")", {x}));
        for (int axis : {0, 1, -1}) {
          EXPECT_TRUE(
              same_as_numpy(roll(x, shift, axis), "np.roll(a, " + sh + ", axis=" + std::to_string(axis) + ")", {x}));
        }
        EXPECT_TRUE(same_as_numpy(roll(x, shift, std::vector<int>{0, 1}), "np.roll(a, " + sh + ", axis=(0, 1))", {x}));
      }
      EXPECT_TRUE(same_as_numpy(roll(x, Shape{1, 2}), "np.roll(a, (1, 2))", {x}));
      EXPECT_TRUE(same_as_numpy(roll(x, Shape{1, -3}, 1), "np.roll(a, (1, -3), axis=1)", {x}));
      EXPECT_TRUE(
          same_as_numpy(roll(x, Shape{2, -1}, std::vector<int>{1, 0}), "np.roll(a, (2, -1), axis=(1, 0))", {x}));
      EXPECT_TRUE(same_as_numpy(roll(x, Shape{2, 3}, std::vector<int>{1, 1}), "np.roll(a, (2, 3), axis=(1, 1))", {x}));
      EXPECT_TRUE(same_as_numpy(roll(x, Shape{2}, std::vector<int>{0, 1}), "np.roll(a, (2,), axis=(0, 1))", {x}));
    }
  }
  EXPECT_TRUE(same_as_numpy(roll(array(5), 3), "np.roll(np.int32(5), 3)"));
  EXPECT_TRUE(same_as_numpy(roll(zeros({0, 3}), 2, 0), "np.roll(np.zeros((0, 3), np.float32), 2, axis=0)"));
  EXPECT_TRUE(same_as_numpy(roll(zeros({0, 3}), 2), "np.roll(np.zeros((0, 3), np.float32), 2)"));
  auto x = arange(4);
  EXPECT_EQ(roll(x, 1, std::vector<int>{}).id(), x.id()) << "no axes: nothing to roll";
  EXPECT_EQ(roll(x, Shape{}, std::vector<int>{0}).id(), x.id()) << "no shifts: nothing to roll (NumPy broadcasts)";
  EXPECT_TRUE(same_as_numpy(roll(x, Shape{}), "np.roll(np.arange(4, dtype=np.int32), ())"));
}

TEST(LayoutRoll, Errors) {
  auto x = zeros({2, 3});
  EXPECT_ERROR_CONTAINS(roll(x, Shape{1, 2, 3}, std::vector<int>{0, 1}),
                        "[roll] The shifts (1,2,3) and the axes (0,1) cannot be broadcast together.");
  EXPECT_ERROR_CONTAINS(roll(x, 1, 2), "[roll] Axis 2 is out of bounds");
  EXPECT_ERROR_CONTAINS(roll(array(1), 1, 0), "[roll] Axis 0 is out of bounds");
}

// ---------------------------------------------------------------- transposing copies

TEST(LayoutTransposingCopy, MatchesNumpyOverWholeAndPartialTiles) {
  // contiguous() and astype() of a transposed array copy it in 64x64 tiles through a buffer (8x8 blocks in
  // registers for 4-byte elements that keep their type): whole tiles, edges on both axes, a batch axis, and
  // conversions.
  std::mt19937 rng(22);
  for (auto dtype : {float32, int32, uint32, float64, bfloat16, uint8, complex64}) {
    for (const Shape& shape : {Shape{3, 131, 70}, Shape{128, 192}, Shape{1, 64, 64}, Shape{65, 7}}) {
      auto x = random_array(shape, dtype, rng);
      auto t = shape.size() == 3 ? transpose(x, {0, 2, 1}) : transpose(x);
      const std::string np_t = shape.size() == 3 ? "np.transpose(a, (0, 2, 1))" : "a.T";
      EXPECT_TRUE(same_as_numpy(contiguous(t), np_t, {x})) << dtype_name(dtype) << " " << shape_string(shape);
      if (dtype != complex64) {
        EXPECT_TRUE(same_as_numpy(astype(t, float32), np_t + ".astype(np.float32)", {x}))
            << dtype_name(dtype) << " " << shape_string(shape);
      }
    }
  }
}

TEST(LayoutTransposingCopy, BlocksOfEveryElementSizeMatchNumpy) {
  // 2-, 4- and 8-byte elements move as blocks transposed in registers (transpose_block.h): empty and size-1 axes,
  // whole and partial tiles, a strided and an offset source, and NaN/Inf, which are moved as they are.
  std::mt19937 rng(23);
  const std::vector<float> specials = {NAN, INFINITY, -INFINITY, -0.0F, 1.5F, -2.25F, 3e-39F};
  for (auto dtype : {float16, bfloat16, int16, float32, int32, int64, float64, complex64}) {
    for (const Shape& shape : {Shape{0, 5}, Shape{5, 0}, Shape{1, 1}, Shape{1, 64}, Shape{64, 1}, Shape{128, 64},
                               Shape{2, 64, 128}, Shape{67, 130}}) {
      auto x = random_array(shape, dtype, rng);
      if (is_floating(dtype) && shape_size(shape) >= specials.size()) {
        // The first elements become NaN, +-Inf, -0 and a denormal.
        auto flat = flatten(x);
        auto head = astype(array(specials.begin(), Shape{static_cast<int>(specials.size())}, float32), dtype);
        x = reshape(concatenate({head, slice(flat, {static_cast<int>(specials.size())}, {flat.shape(0)})}), shape);
      }
      const bool batched = shape.size() == 3;
      auto t = batched ? transpose(x, {0, 2, 1}) : transpose(x);
      const std::string np_t = batched ? "np.transpose(a, (0, 2, 1))" : "a.T";
      EXPECT_TRUE(same_as_numpy(contiguous(t), np_t, {x})) << dtype_name(dtype) << " " << shape_string(shape);
    }
    // Every other row of the source (its rows 2 * 128 apart), and a source starting one element in.
    auto x = random_array({130, 128}, dtype, rng);
    auto every_other = slice(x, {0, 0}, {130, 128}, {2, 1});
    EXPECT_TRUE(same_as_numpy(contiguous(transpose(every_other)), "a[::2].T", {x})) << dtype_name(dtype);
    auto offset = slice(x, {1, 1}, {130, 128});
    EXPECT_TRUE(same_as_numpy(contiguous(transpose(offset)), "a[1:, 1:].T", {x})) << dtype_name(dtype);
  }
}

/// Whether out (rows x cols, row-major) is the transpose of x (cols x rows), element bytes compared.
template <class T>
bool is_transpose_of(const array& out, const array& x) {
  const auto rows = static_cast<size_t>(out.shape(0));
  const auto cols = static_cast<size_t>(out.shape(1));
  const T* o = out.data<T>();
  const T* in = x.data<T>();
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      if (std::memcmp(o + r * cols + c, in + c * rows + r, sizeof(T)) != 0) {
        return false;
      }
    }
  }
  return true;
}

TEST(LayoutTransposingCopy, LargeOutputsAreStreamedIntact) {
  // Outputs of 32 MiB or more are written with streaming stores; every element is checked against the source read
  // at the transposed index.
  std::mt19937 rng(24);
  for (auto [dtype, side] : {std::pair{float16, 4096}, std::pair{float32, 3072}, std::pair{float64, 2048}}) {
    auto x = random_array({side, side + 64}, dtype, rng);
    auto out = contiguous(transpose(x));
    out.eval();
    ASSERT_GE(out.nbytes(), size_t{32} << 20);
    const bool ok = dtype == float16   ? is_transpose_of<uint16_t>(out, x)
                    : dtype == float32 ? is_transpose_of<uint32_t>(out, x)
                                       : is_transpose_of<uint64_t>(out, x);
    EXPECT_TRUE(ok) << dtype_name(dtype);
  }
}

TEST(LayoutTransposingCopy, LargeDenseConversionsAreSplitAndStreamed) {
  // A dense conversion is split between threads, and one whose output is 32 MiB or more is converted a block at a
  // time and streamed: float32 to bfloat16 (round to nearest even, NaN kept quiet: NumPy's bit arithmetic as the
  // reference) and to float16 (NumPy's astype), with NaN, +-Inf, ties, denormals and a source one element in.
  std::mt19937 rng(25);
  const int n = (1 << 24) + 3;
  auto x = random_array({n + 1}, float32, rng, -70000, 70000);
  const std::vector<float> specials = {NAN,     -NAN,        INFINITY,    -INFINITY, -0.0F,    1e-40F,
                                       -3e-39F, 1.00390625F, 1.01171875F, 65504.0F,  65520.0F, 3.4e38F};
  x = concatenate({array(specials.begin(), Shape{static_cast<int>(specials.size())}, float32), x});
  auto source = slice(x, {1}, {x.shape(0)});
  const std::string bits =
      "u = a.view(np.uint32)\n"
      "r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)\n"
      "out = np.where((u & 0x7FFFFFFF) > 0x7F800000, ((u >> 16) | 0x40).astype(np.uint16), r)";
  EXPECT_TRUE(same_as_numpy(view(astype(source, bfloat16), uint16), bits, {contiguous(source)}, 0));
  EXPECT_TRUE(same_as_numpy(astype(source, float16), "a.astype(np.float16)", {contiguous(source)}, 0));
  auto small = slice(source, {0}, {1000});
  EXPECT_TRUE(same_as_numpy(view(astype(small, bfloat16), uint16), bits, {contiguous(small)}, 0));
}

// ---------------------------------------------------------------- flip

TEST(LayoutFlip, MatchesNumpyAndIsAView) {
  std::mt19937 rng(20);
  for (auto dtype : {float32, uint16, complex64}) {
    auto in = layouts({3, 4, 2}, dtype, rng);
    for (const auto& x : {in.dense, in.transposed, in.sliced}) {
      EXPECT_TRUE(same_as_numpy(flip(x), "np.flip(a)", {x}));
      for (int axis : {0, 1, 2, -1}) {
        EXPECT_TRUE(same_as_numpy(flip(x, axis), "np.flip(a, " + std::to_string(axis) + ")", {x}));
      }
      EXPECT_TRUE(same_as_numpy(flip(x, std::vector<int>{0, 2}), "np.flip(a, (0, 2))", {x}));
      EXPECT_TRUE(same_as_numpy(flip(x, std::vector<int>{}), "a", {x}));
      // Views of flipped views.
      EXPECT_TRUE(same_as_numpy(reshape(flip(x), {24}), "np.flip(a).reshape(24)", {x}));
      EXPECT_TRUE(same_as_numpy(reshape(flip(x, 1), {12, 2}), "np.flip(a, 1).reshape(12, 2)", {x}));
      EXPECT_TRUE(same_as_numpy(transpose(flip(x, 0)), "np.flip(a, 0).T", {x}));
      EXPECT_TRUE(same_as_numpy(flip(flip(x, 1), 1), "a", {x}));
      EXPECT_TRUE(same_as_numpy(astype(flip(x, 2), float64), "np.real(np.flip(a, 2)).astype(np.float64)", {x}));
    }
  }
  auto x = arange(10);
  auto f = flip(x);
  EXPECT_TRUE(shares_buffer(f, x)) << "flip is a view";
  EXPECT_EQ(f.strides(), (Strides{-1}));
  EXPECT_FALSE(f.flags().contiguous) << "a negative stride starts the data at the end of its range";
  EXPECT_EQ(f.data<int32_t>()[0], 9);
  EXPECT_TRUE(same_as_numpy(flip(zeros({0, 2})), "np.zeros((0, 2), np.float32)"));
  EXPECT_TRUE(same_as_numpy(flip(array(4)), "np.int32(4)"));
  EXPECT_ERROR_CONTAINS(flip(x, 1), "[flip] Axis 1 is out of bounds");
  EXPECT_ERROR_CONTAINS(flip(zeros({2, 2}), std::vector<int>{0, -2}), "[flip] Received duplicate axes.");
}

TEST(LayoutFlip, ElementwiseKernelsReadNegativeStrides) {
  auto x = arange(0.0, 100000.0, 1.0, float32);
  EXPECT_TRUE(same_as_numpy(add(flip(x), x), "np.full(100000, 99999, np.float32)"));
  EXPECT_TRUE(same_as_numpy(exp(flip(arange(5.0))), "np.exp(np.arange(5.0, dtype=np.float32)[::-1])"));
  EXPECT_TRUE(
      same_as_numpy(add(eye(3), tri(3, 3, 0, float32)), "np.eye(3, dtype=np.float32) + np.tri(3, dtype=np.float32)"));
}

// ---------------------------------------------------------------- diag and trace

TEST(LayoutDiag, MatchesNumpy) {
  std::mt19937 rng(21);
  for (auto dtype : {float32, int32, bool_, complex64, float16}) {
    for (int n : {0, 1, 3, 5}) {
      auto v = random_array({n}, dtype, rng);
      for (int k : {-4, -1, 0, 1, 2, 6}) {
        auto code = "np.diag(a, " + std::to_string(k) + ")";
        EXPECT_TRUE(same_as_numpy(diag(v, k), code, {v})) << code << " n=" << n;
      }
    }
    auto in = layouts({4, 6}, dtype, rng);
    for (const auto& m : {in.dense, in.transposed, in.sliced}) {
      for (int k : {-5, -2, 0, 3, 7}) {
        auto code = "np.diag(a, " + std::to_string(k) + ")";
        EXPECT_TRUE(same_as_numpy(diag(m, k), code, {m})) << code;
      }
    }
  }
  // A vector that is itself a strided view.
  auto base = random_array({10}, float32, rng);
  auto strided = slice(base, {1}, {10}, {3});
  EXPECT_TRUE(same_as_numpy(diag(strided, -1), "np.diag(a, -1)", {strided}));
  auto m = random_array({3, 3}, float32, rng);
  EXPECT_TRUE(shares_buffer(diag(m), m)) << "the diagonal of a matrix is a view";
  EXPECT_ERROR_CONTAINS(diag(zeros({2, 2, 2})), "[diag] array must be 1-D or 2-D; got shape (2,2,2).");
  EXPECT_ERROR_CONTAINS(diag(array(1)), "[diag] array must be 1-D or 2-D");
}

TEST(LayoutTrace, MatchesNumpy) {
  std::mt19937 rng(22);
  for (auto dtype : {float32, int32, int8, float64}) {
    auto in = layouts({4, 5}, dtype, rng);
    for (const auto& x : {in.dense, in.transposed, in.sliced}) {
      auto sum_dtype = "np." + std::string(dtype_name(trace(x).dtype()));
      EXPECT_TRUE(same_as_numpy(trace(x), "np.trace(a).astype(" + sum_dtype + ")", {x}));
      for (int k : {-2, 0, 1, 6}) {
        auto code = "np.trace(a, " + std::to_string(k) + ").astype(" + sum_dtype + ")";
        EXPECT_TRUE(same_as_numpy(trace(x, k, 0, 1), code, {x})) << code;
      }
    }
  }
  auto x = random_array({2, 3, 4}, float32, rng);
  EXPECT_TRUE(same_as_numpy(trace(x, 1, 1, 2), "np.trace(a, 1, 1, 2)", {x}));
  EXPECT_TRUE(same_as_numpy(trace(x, 0, -1, 0), "np.trace(a, 0, -1, 0)", {x}));
  EXPECT_TRUE(same_as_numpy(trace(x, 0, 0, 2, float64), "np.trace(a, 0, 0, 2, dtype=np.float64)", {x}));
  auto i = random_array({3, 3}, int8, rng);
  EXPECT_TRUE(same_as_numpy(trace(i, 0, 0, 1, int8), "np.trace(a, dtype=np.int8)", {i}));
  EXPECT_EQ(trace(i).dtype(), int32) << "sum's rule: small integers give int32";
  EXPECT_ERROR_CONTAINS(trace(zeros({3})), "[trace] Array must have at least two dimensions; got shape (3).");
  EXPECT_ERROR_CONTAINS(trace(zeros({3, 3}), 0, 0, 0), "[diagonal] axis1 and axis2 cannot be the same axis");
}

// ---------------------------------------------------------------- number_of_elements and depends

TEST(LayoutNumberOfElements, CountsAxes) {
  auto x = zeros({2, 3, 4});
  EXPECT_EQ(number_of_elements(x, {0, 2}, false).item<int32_t>(), 8);
  EXPECT_EQ(number_of_elements(x, {-1}, false).item<int32_t>(), 4);
  EXPECT_EQ(number_of_elements(x, {}, false).item<int32_t>(), 1);
  EXPECT_EQ(number_of_elements(x, {0, 1, 2}, false).dtype(), int32);
  auto inv = number_of_elements(x, {0, 1}, true, float32);
  EXPECT_EQ(inv.dtype(), float32);
  EXPECT_EQ(inv.ndim(), 0);
  EXPECT_FLOAT_EQ(inv.item<float>(), 1.0F / 6.0F);
  EXPECT_DOUBLE_EQ(number_of_elements(x, {1}, false, float64).item<double>(), 3.0);
  EXPECT_ERROR_CONTAINS(number_of_elements(x, {3}, false), "[number_of_elements] Axis 3 is out of bounds");
}

TEST(LayoutDepends, OutputsShareInputsAndRunDependenciesFirst) {
  auto a = arange(4);
  auto b = full({2}, 1.5F);
  auto dep = copy(arange(3.0));
  auto out = depends({a, b}, {dep});
  ASSERT_EQ(out.size(), 2U);
  EXPECT_EQ(out[0].shape(), a.shape());
  EXPECT_EQ(out[1].dtype(), float32);
  EXPECT_EQ(dep.status(), Status::unscheduled);
  eval(out[0]);
  EXPECT_EQ(dep.status(), Status::available) << "the dependency is evaluated with the outputs";
  EXPECT_TRUE(same_as_numpy(out[0], "np.arange(4, dtype=np.int32)"));
  EXPECT_TRUE(same_as_numpy(out[1], "np.full(2, 1.5, np.float32)"));
  EXPECT_TRUE(shares_buffer(out[0], a));
  EXPECT_TRUE(depends({}, {dep}).empty());
}

// ---------------------------------------------------------------- utilities

TEST(LayoutResultType, FoldsPromotion) {
  EXPECT_EQ(result_type(array(1), array(1.0F)), float32);
  EXPECT_EQ(result_type(array(true), array(uint8_t{1}), array(int8_t{1})), int16);
  EXPECT_EQ(result_type(std::vector<array>{array(1.0F, float16), array(1.0F, bfloat16)}), float32);
  EXPECT_EQ(result_type(std::vector<array>{array(1, int64), array(1, uint64)}), float32);
  EXPECT_EQ(result_type(std::vector<array>{array(true)}), bool_);
  EXPECT_EQ(result_type(std::vector<array>{}), bool_);
  for (auto a : all_dtypes) {
    for (auto b : all_dtypes) {
      for (auto c : all_dtypes) {
        EXPECT_EQ(result_type(array(0, a), array(0, b), array(0, c)), promote_types(promote_types(a, b), c));
      }
    }
  }
}

TEST(LayoutFinfo, MatchesNumpy) {
  for (auto dtype : {float16, float32, float64, complex64}) {
    finfo info(dtype);
    auto np = "np." + std::string(dtype_name(dtype));
    auto expected = test::as_doubles(
        numpy_ref("np.array([np.finfo(" + np + ").min, np.finfo(" + np + ").max, np.finfo(" + np + ").eps])", {}));
    EXPECT_EQ(info.min, expected[0]) << dtype;
    EXPECT_EQ(info.max, expected[1]) << dtype;
    EXPECT_EQ(info.eps, expected[2]) << dtype;
    EXPECT_EQ(info.dtype, dtype == complex64 ? float32 : dtype);
  }
  // bfloat16 (not in NumPy): 8 exponent bits and 7 fraction bits, as ml_dtypes reports.
  finfo bf(bfloat16);
  EXPECT_EQ(bf.max, 3.3895313892515355e38);
  EXPECT_EQ(bf.min, -3.3895313892515355e38);
  EXPECT_EQ(bf.eps, 0.0078125);
  EXPECT_EQ(bf.max, static_cast<double>(static_cast<float>(bfloat16_t::from_bits(0x7f7f))));
  for (auto dtype : {bool_, int8, uint64, int32}) {
    EXPECT_ERROR_CONTAINS(finfo(dtype), "[finfo] dtype " + std::string(dtype_name(dtype)) + " is not inexact");
  }
}

TEST(LayoutIinfo, MatchesNumpy) {
  for (auto dtype : {uint8, uint16, uint32, uint64, int8, int16, int32, int64}) {
    iinfo info(dtype);
    auto np = "np." + std::string(dtype_name(dtype));
    auto lo = numpy_ref("np.array(np.iinfo(" + np + ").min, " + np + ")", {});
    auto hi = numpy_ref("np.array(np.iinfo(" + np + ").max, " + np + ")", {});
    auto lo_value = test::from_host(lo);
    auto hi_value = test::from_host(hi);
    EXPECT_EQ(info.min, lo_value.item<int64_t>()) << dtype;
    EXPECT_EQ(info.max, hi_value.item<uint64_t>()) << dtype;
    EXPECT_EQ(info.dtype, dtype);
  }
  iinfo b(bool_);
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, 1U);
  for (auto dtype : {float16, float32, bfloat16, complex64, float64}) {
    EXPECT_ERROR_CONTAINS(iinfo(dtype), "[iinfo] dtype " + std::string(dtype_name(dtype)) + " is not an integer");
  }
}

// ---------------------------------------------------------------- the view machinery

TEST(LayoutViews, ReshapeViewsWhenTheStridesAllowAndCopiesOtherwise) {
  std::mt19937 rng(30);
  auto x = random_array({4, 6}, float32, rng);
  // Row-contiguous: a view.
  auto r = reshape(x, {2, 12});
  EXPECT_TRUE(same_as_numpy(r, "a.reshape(2, 12)", {x}));
  EXPECT_TRUE(shares_buffer(r, x));
  // Whole rows of a row slice stay mergeable: a view.
  auto rows = slice(x, {1, 0}, {3, 6});
  auto r2 = reshape(rows, {12});
  EXPECT_TRUE(same_as_numpy(r2, "a[1:3].reshape(12)", {x}));
  EXPECT_TRUE(shares_buffer(r2, x));
  // Splitting an axis of a transposed array: still a view.
  auto t = transpose(x);
  auto r3 = reshape(t, {2, 3, 4});
  EXPECT_TRUE(same_as_numpy(r3, "a.T.reshape(2, 3, 4)", {x}));
  EXPECT_TRUE(shares_buffer(r3, x));
  // Merging the axes of a transposed array needs a copy.
  auto r4 = reshape(t, {24});
  EXPECT_TRUE(same_as_numpy(r4, "a.T.reshape(24)", {x}));
  EXPECT_FALSE(shares_buffer(r4, x));
  EXPECT_TRUE(r4.flags().row_contiguous);
  // Column slices cannot merge either.
  auto cols = slice(x, {0, 1}, {4, 5});
  auto r5 = reshape(cols, {16});
  EXPECT_TRUE(same_as_numpy(r5, "a[:, 1:5].reshape(16)", {x}));
  EXPECT_FALSE(shares_buffer(r5, x));
  // Size-1 axes come and go freely; -1 is inferred; empty arrays reshape.
  EXPECT_TRUE(same_as_numpy(reshape(t, {1, 6, 1, 4}), "a.T.reshape(1, 6, 1, 4)", {x}));
  EXPECT_TRUE(same_as_numpy(reshape(x, {-1, 8}), "a.reshape(-1, 8)", {x}));
  EXPECT_EQ(reshape(zeros({0, 3}), {-1, 3}).shape(), (Shape{0, 3}));
  EXPECT_EQ(reshape(zeros({0}), {2, -1}).shape(), (Shape{2, 0}));
  EXPECT_ERROR_CONTAINS(reshape(zeros({0, 3}), {0, -1}), "[reshape] Cannot reshape array of size 0");
  EXPECT_ERROR_CONTAINS(reshape(x, {5, -1}), "[reshape] Cannot reshape array of size 24");
}

TEST(LayoutViews, TransposeSliceBroadcastMatchNumpyAndShareTheBuffer) {
  std::mt19937 rng(31);
  for (auto dtype : {float32, int8, bfloat16, complex64, bool_}) {
    auto x = random_array({3, 4, 5}, dtype, rng);
    auto views = std::vector<std::pair<array, std::string>>{
        {transpose(x), "a.T"},
        {transpose(x, {1, 0, 2}), "a.transpose(1, 0, 2)"},
        {swapaxes(x, 0, 2), "np.swapaxes(a, 0, 2)"},
        {moveaxis(x, 0, -1), "np.moveaxis(a, 0, -1)"},
        {slice(x, {1, 0, 1}, {3, 4, 5}, {1, 2, 2}), "a[1:3, 0:4:2, 1:5:2]"},
        {slice(x, {-1, 3, 4}, {-4, -5, -6}, {-1, -2, -1}), "a[::-1, 3::-2, ::-1]"},
        {slice(x, {2, 1, 0}, {1, 1, 5}, {1, 1, 1}), "a[2:1, 1:1, 0:5]"},
        {slice(x, {-100, 1, 2}, {100, 3, 3}), "a[-100:100, 1:3, 2:3]"},
        {broadcast_to(slice(x, {0, 0, 0}, {1, 4, 5}), {2, 3, 4, 5}), "np.broadcast_to(a[0:1], (2, 3, 4, 5))"},
        {expand_dims(x, {0, -1}), "np.expand_dims(a, (0, -1))"},
        {squeeze(expand_dims(x, 1), 1), "a"},
        {diagonal(x, 1, 1, 2), "np.diagonal(a, 1, 1, 2)"},
        {diagonal(x, -1, 2, 0), "np.diagonal(a, -1, 2, 0)"},
        {diagonal(transpose(x), 0, 0, 1), "np.diagonal(a.T, 0, 0, 1)"},
    };
    for (const auto& [view, code] : views) {
      EXPECT_TRUE(same_as_numpy(view, code, {x})) << code << " " << dtype;
      if (view.size() > 0) {
        EXPECT_TRUE(shares_buffer(view, x)) << code << " should be a view";
      }
    }
  }
  auto x = random_array({2, 3}, float32, rng);
  auto b = broadcast_to(x, {4, 2, 3});
  b.eval();
  EXPECT_EQ(b.strides(), (Strides{0, 3, 1}));
  EXPECT_TRUE(same_as_numpy(squeeze(reshape(x, {1, 2, 1, 3})), "a", {x}));
  EXPECT_ERROR_CONTAINS(squeeze(x, 0), "[squeeze] Cannot squeeze axis 0 of size 2");
  EXPECT_ERROR_CONTAINS(transpose(x, {0, 0}), "[transpose] Repeated axis");
  EXPECT_ERROR_CONTAINS(broadcast_to(x, {3, 3}),
                        "[broadcast_to] Cannot broadcast array of shape (2,3) to shape (3,3).");
  EXPECT_ERROR_CONTAINS(slice(x, {0, 0}, {1, 1}, {1, 0}), "[slice] Slice step cannot be zero");
}

TEST(LayoutViews, AsStridedAndDtypeViewsMatchNumpy) {
  std::mt19937 rng(32);
  auto x = random_array({4, 5}, float32, rng);
  // Sliding windows of length 3 over the flattened array (NumPy's as_strided in elements).
  auto windows = as_strided(x, {6, 3}, {3, 1}, 1);
  EXPECT_TRUE(same_as_numpy(windows, "np.lib.stride_tricks.as_strided(a.reshape(-1)[1:], (6, 3), (12, 4))", {x}));
  EXPECT_TRUE(shares_buffer(windows, x));
  // On a non-contiguous input the strides address its row-contiguous copy.
  auto t = transpose(x);
  EXPECT_TRUE(same_as_numpy(as_strided(t, {2, 5}, {1, 4}, 0),
                            "np.lib.stride_tricks.as_strided(np.ascontiguousarray(a.T), (2, 5), (4, 16))", {x}));
  // dtype views reinterpret the bytes.
  auto f = random_array({3, 4}, float32, rng);
  auto as_int = view(f, int32);
  EXPECT_TRUE(same_as_numpy(as_int, "a.view(np.int32)", {f}));
  EXPECT_TRUE(shares_buffer(as_int, f));
  EXPECT_TRUE(same_as_numpy(view(f, uint8), "a.view(np.uint8)", {f}));
  EXPECT_TRUE(same_as_numpy(view(f, float64), "a.view(np.float64)", {f}));
  EXPECT_TRUE(same_as_numpy(view(f, float16), "a.view(np.float16)", {f}));
  EXPECT_TRUE(same_as_numpy(view(transpose(f), int16), "np.ascontiguousarray(a.T).view(np.int16)", {f}));
  EXPECT_TRUE(same_as_numpy(view(transpose(f), uint32), "a.T.view(np.uint32)", {f}));
  EXPECT_ERROR_CONTAINS(view(random_array({3}, float32, rng), float64), "[view] The last axis of 12 bytes");
  EXPECT_ERROR_CONTAINS(view(array(1.0F), float64), "[view] Changing the type of a scalar");
}

TEST(LayoutViews, CopiesAndConversionsOfViews) {
  std::mt19937 rng(33);
  auto x = random_array({5, 6}, float32, rng);
  auto v = slice(transpose(x), {5, 4}, {0, 0}, {-2, -1});
  EXPECT_TRUE(same_as_numpy(copy(v), "a.T[5:0:-2, 4:0:-1]", {x}));
  auto c = contiguous(v);
  c.eval();
  EXPECT_TRUE(c.flags().row_contiguous);
  EXPECT_TRUE(same_as_numpy(astype(v, int32), "a.T[5:0:-2, 4:0:-1].astype(np.int32)", {x}));
  EXPECT_TRUE(same_as_numpy(astype(v, bfloat16), "a.T[5:0:-2, 4:0:-1]", {x}, 1e-2));
  EXPECT_TRUE(same_as_numpy(concatenate({v, flip(v, 0)}, 1),
                            "np.concatenate([a.T[5:0:-2, 4:0:-1], a.T[5:0:-2, 4:0:-1][::-1]], 1)", {x}));
  EXPECT_TRUE(same_as_numpy(flatten(v), "a.T[5:0:-2, 4:0:-1].reshape(-1)", {x}));
  auto contiguous_x = contiguous(x);
  EXPECT_EQ(contiguous_x.id(), x.id()) << "an evaluated row-contiguous array is its own contiguous form";
}

}  // namespace
}  // namespace nuvec
