// Indexing against NumPy (expected values come from the NumPy oracle: np.take, np.take_along_axis,
// np.put_along_axis, fancy indexing, np.add.at / np.multiply.at / np.maximum.at / np.minimum.at, slice assignment;
// torch.masked_scatter for masked_scatter), over every dtype and several index dtypes, negative and duplicate
// indices, empty index arrays, size-1 axes, non-contiguous inputs (transposes, strided slices, broadcasts), NaN,
// out-of-range indices (clamped by gathers, dropped by scatters: references apply the same rule explicitly), sizes
// that take the threaded paths, and the error messages.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
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

using test::error_of;

std::vector<Dtype> every_dtype() { return {std::begin(all_dtypes), std::end(all_dtypes)}; }

const std::vector<Dtype> index_dtypes = {int32, int64, uint8, int16, uint32, int8, uint16, uint64};

/// Exact comparison; bfloat16 results come back from NumPy as float32.
::testing::AssertionResult same(const array& actual, const test::HostArray& expected, double tol = 0.0) {
  return matches(actual, expected, tol, tol, actual.dtype() != bfloat16);
}

/// Random indices in [low, high) of `dtype` (negative values only for signed dtypes).
array random_indices(const Shape& shape, int low, int high, Dtype dtype, std::mt19937& rng) {
  if (!is_signed_integer(dtype)) {
    low = std::max(low, 0);
  }
  std::uniform_int_distribution<int> dist(low, std::max(low, high - 1));
  std::vector<int64_t> values(shape_size(shape));
  for (auto& v : values) {
    v = dist(rng);
  }
  auto out = astype(array(values.begin(), shape, int64), dtype);
  out.eval();
  return out;
}

/// A strided view of a fresh array: every other element of a doubled first axis, or a transpose.
array non_contiguous(const Shape& shape, Dtype dtype, std::mt19937& rng, bool transposed) {
  if (transposed && shape.size() >= 2) {
    Shape t(shape.rbegin(), shape.rend());
    return transpose(random_array(t, dtype, rng));
  }
  Shape doubled = shape;
  doubled[0] *= 2;
  auto base = random_array(doubled, dtype, rng);
  Shape start(shape.size(), 0);
  Shape strides(shape.size(), 1);
  strides[0] = 2;
  return slice(base, start, doubled, strides);
}

std::string py_list(const std::vector<int>& v) {
  std::string s = "[";
  for (int x : v) {
    s += std::to_string(x) + ",";
  }
  return s + "]";
}

// ---------------------------------------------------------------- take and gather

TEST(Indexing, TakeOverDtypesAxesAndIndexTypes) {
  std::mt19937 rng(1);
  for (auto dtype : every_dtype()) {
    for (int ndim = 1; ndim <= 3; ++ndim) {
      auto shape = test::random_shape(ndim, rng, 4);
      auto a = random_array(shape, dtype, rng);
      const int axis = std::uniform_int_distribution<int>(-ndim, ndim - 1)(rng);
      const int n = a.shape(axis);
      const Dtype itype = index_dtypes[rng() % index_dtypes.size()];
      auto idx = random_indices(test::random_shape(static_cast<int>(rng() % 3), rng, 3), -n, n, itype, rng);
      SCOPED_TRACE(std::string(dtype_name(dtype)) + shape_string(shape) + " axis " + std::to_string(axis) + " idx " +
                   std::string(dtype_name(itype)) + shape_string(idx.shape()));
      auto out = take(a, idx, axis);
      EXPECT_EQ(out.dtype(), dtype);
      EXPECT_TRUE(same(out, numpy_ref("np.take(a, b.astype(np.int64), axis=" + std::to_string(axis) + ")", {a, idx})));
    }
  }
}

TEST(Indexing, TakeFlatScalarIndexAndIntegerOverloads) {
  std::mt19937 rng(2);
  auto a = random_array({3, 4, 2}, float32, rng);
  auto idx = array({0, -1, 23, 5, 5}, {5});
  EXPECT_TRUE(same(take(a, idx), numpy_ref("np.take(a, b)", {a, idx})));
  EXPECT_TRUE(same(take(a, array(-2), 1), numpy_ref("np.take(a, -2, axis=1)", {a})));
  EXPECT_TRUE(same(take(a, 2, 1), numpy_ref("np.take(a, 2, axis=1)", {a})));
  EXPECT_TRUE(same(take(a, -1, -1), numpy_ref("np.take(a, -1, axis=-1)", {a})));
  EXPECT_TRUE(same(take(a, 7), numpy_ref("np.take(a, 7)", {a})));
  EXPECT_TRUE(same(take(a, -24), numpy_ref("np.take(a, -24)", {a})));
}

TEST(Indexing, TakeNonContiguousInputsAndIndices) {
  std::mt19937 rng(3);
  for (bool transposed : {false, true}) {
    auto a = non_contiguous({5, 4, 3}, int16, rng, transposed);
    auto idx = transpose(random_indices({3, 2}, -3, 3, int32, rng));  // (2, 3), not contiguous
    for (int axis : {0, 1, 2}) {
      EXPECT_TRUE(same(take(a, idx, axis), numpy_ref("np.take(a, b, axis=" + std::to_string(axis) + ")", {a, idx})));
    }
  }
  // A flipped view (negative strides) and a broadcast one.
  auto base = random_array({6, 5}, float64, rng);
  auto flipped = slice(base, {5, 4}, {-7, -7}, {-1, -2});
  auto idx = array({2, 0, -1}, {3});
  EXPECT_TRUE(same(take(flipped, idx, 1), numpy_ref("np.take(a[::-1, ::-2], b, axis=1)", {base, idx})));
  auto wide = broadcast_to(random_array({1, 5}, float32, rng), {4, 5});
  EXPECT_TRUE(same(take(wide, idx, 0),
                   numpy_ref("np.take(np.broadcast_to(a, (4, 5)), b, axis=0)", {slice(wide, {0, 0}, {1, 5}), idx})));
}

TEST(Indexing, TakeEmptyAndSizeOne) {
  std::mt19937 rng(4);
  auto a = random_array({3, 1, 4}, float32, rng);
  auto none = astype(array({1}, {1}), int32);
  auto empty = slice(none, {0}, {0});
  EXPECT_EQ(take(a, empty, 2).shape(), Shape({3, 1, 0}));
  EXPECT_TRUE(same(take(a, empty, 0), numpy_ref("np.take(a, np.zeros(0, np.int64), axis=0)", {a})));
  EXPECT_TRUE(same(take(a, array({0, 0, -1}), 1), numpy_ref("np.take(a, [0, 0, -1], axis=1)", {a})));
  auto no_rows = zeros({0, 3}, float32);
  EXPECT_EQ(take(no_rows, empty, 0).shape(), Shape({0, 3}));
  EXPECT_EQ(take(no_rows, array({1, 2}), 1).shape(), Shape({0, 2}));
}

TEST(Indexing, EmbeddingLookupThreaded) {
  std::mt19937 rng(5);
  auto table = random_array({500, 96}, float32, rng);
  auto tokens = random_indices({4, 700}, 0, 500, uint32, rng);  // 2800 rows * 96: several threads
  auto out = take(table, tokens, 0);
  EXPECT_EQ(out.shape(), Shape({4, 700, 96}));
  EXPECT_TRUE(same(out, numpy_ref("np.take(a, b, axis=0)", {table, tokens})));
}

TEST(Indexing, LargeEmbeddingLookupsAreStreamed) {
  // Outputs of 32 MiB or more are streamed a row at a time (rows whose bytes are no multiple of a vector, so the
  // rows' heads and tails are stored plainly), with repeated, negative and NaN-holding rows; and a strided table,
  // which keeps the plain path.
  std::mt19937 rng(7);
  for (auto [dtype, cols] : {std::pair{float32, 4100}, std::pair{float16, 8191}, std::pair{float64, 2049}}) {
    auto table = random_array({600, cols}, dtype, rng);
    table = where(equal(random_indices({600, cols}, 0, 50, int32, rng), array(0)), array(NAN, dtype), table);
    const int rows = static_cast<int>((size_t{33} << 20) / (static_cast<size_t>(cols) * size_of(dtype)));
    auto ids = random_indices({rows}, -600, 600, int32, rng);
    auto out = take(table, ids, 0);
    SCOPED_TRACE(dtype_name(dtype));
    EXPECT_TRUE(same(out, numpy_ref("np.take(a, b, axis=0)", {table, ids})));
  }
  auto wide = random_array({300, 2 * 8192}, float32, rng);
  auto strided = slice(wide, {0, 0}, {300, 2 * 8192}, {1, 2});
  auto ids = random_indices({1100}, 0, 300, int32, rng);
  EXPECT_TRUE(same(take(strided, ids, 0), numpy_ref("np.take(a, b, axis=0)", {strided, ids})));
}

TEST(Indexing, GatherOutOfRangeClampsAndNeverCrashes) {
  std::mt19937 rng(6);
  auto a = random_array({4, 5}, int32, rng);
  const std::vector<int64_t> far{
      std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), 4, -5, -6, 3, 100};
  auto idx = array(far.begin(), {7});
  // Reference: wrap negatives once, then clamp (the documented rule), in Python integers.
  auto clamped = [](int n) {
    const std::string size = std::to_string(n);
    return "i = np.array([min(max(int(v) + " + size + " if int(v) < 0 else int(v), 0), " + size +
           " - 1) for v in b], np.int64)\n";
  };
  EXPECT_TRUE(same(take(a, idx, 0), numpy_ref(clamped(4) + "out = np.take(a, i, axis=0)", {a, idx})));
  EXPECT_TRUE(same(take(a, idx, 1), numpy_ref(clamped(5) + "out = np.take(a, i, axis=1)", {a, idx})));
  auto uidx = astype(array({0, 9, 3}, {3}), uint64);
  auto huge = array({std::numeric_limits<uint64_t>::max(), uint64_t{1} << 40}, {2});
  EXPECT_TRUE(same(take(a, uidx, 1), numpy_ref("np.take(a, [0, 4, 3], axis=1)", {a})));
  EXPECT_EQ(take(a, huge, 1).shape(), Shape({4, 2}));
  take(a, huge, 1).eval();
  // A slice wider than 1: the start is clamped so the whole slice fits.
  auto g = gather(a, array({3, -1, 9}), 1, {4, 3});
  EXPECT_TRUE(same(g, numpy_ref("np.stack([a[:, 2:5], a[:, 2:5], a[:, 2:5]])", {a})));
}

/// The NumPy names of inputs 1..k (b, c, ...), as a Python list.
std::string index_names(size_t k) {
  std::string s = "[";
  for (size_t i = 0; i < k; ++i) {
    s += std::string(1, static_cast<char>('b' + i)) + ",";
  }
  return s + "]";
}

/// NumPy reference for gather(a, {b, c, ...}, axes, slice_sizes): a loop over index positions applying the clamp
/// rule.
std::string gather_ref(const std::vector<int>& axes, const Shape& slice_sizes) {
  std::vector<int> sizes(slice_sizes.begin(), slice_sizes.end());
  return "axes = " + py_list(axes) + "\nsizes = " + py_list(sizes) +
         "\nidx = np.broadcast_arrays(*[x.astype(np.int64) for x in " + index_names(axes.size()) +
         "])\n"
         "I = idx[0].shape if idx else ()\n"
         "out = np.zeros(I + tuple(sizes), a.dtype)\n"
         "for n in np.ndindex(*I):\n"
         "  st = [0] * a.ndim\n"
         "  for k, ax in enumerate(axes):\n"
         "    i = int(idx[k][n]); i = i + a.shape[ax] if i < 0 else i\n"
         "    st[ax] = min(max(i, 0), a.shape[ax] - sizes[ax])\n"
         "  out[n] = a[tuple(slice(s, s + z) for s, z in zip(st, sizes))]\n";
}

TEST(Indexing, GatherSlicesAxesAndBroadcastIndices) {
  std::mt19937 rng(7);
  struct Case {
    std::vector<int> axes;
    Shape slice_sizes;
    std::vector<Shape> index_shapes;
  };
  const std::vector<Case> cases = {
      {{0}, {1, 4, 6}, {{3}}},          {{0, 2}, {1, 2, 1}, {{3, 1}, {1, 2}}},
      {{-1, 1}, {5, 2, 3}, {{2}, {2}}}, {{}, {2, 3, 4}, {}},
      {{1}, {0, 1, 6}, {{4}}},          {{2}, {5, 4, 1}, {{}}},
  };
  for (auto dtype : {float32, int8, bool_, complex64, bfloat16, float16, uint64}) {
    for (const auto& c : cases) {
      for (bool strided : {false, true}) {
        auto a = strided ? non_contiguous({5, 4, 6}, dtype, rng, true) : random_array({5, 4, 6}, dtype, rng);
        std::vector<array> indices;
        for (size_t k = 0; k < c.axes.size(); ++k) {
          const int n = a.shape(c.axes[k]);
          indices.push_back(random_indices(c.index_shapes[k], -n - 2, n + 2, k % 2 == 0 ? int32 : int64, rng));
        }
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " axes " + py_list(c.axes) + " sizes " +
                     shape_string(c.slice_sizes));
        std::vector<array> inputs{a};
        inputs.insert(inputs.end(), indices.begin(), indices.end());
        EXPECT_TRUE(
            same(gather(a, indices, c.axes, c.slice_sizes), numpy_ref(gather_ref(c.axes, c.slice_sizes), inputs)));
      }
    }
  }
}

TEST(Indexing, TakeAlongAxisOverDtypesAndBroadcasts) {
  std::mt19937 rng(8);
  for (auto dtype : every_dtype()) {
    for (int ndim = 1; ndim <= 3; ++ndim) {
      auto shape = test::random_shape(ndim, rng, 4);
      auto a = rng() % 2 == 0 || ndim < 2 ? random_array(shape, dtype, rng) : non_contiguous(shape, dtype, rng, true);
      const int axis = std::uniform_int_distribution<int>(-ndim, ndim - 1)(rng);
      const int ax = axis < 0 ? axis + ndim : axis;
      Shape ishape = shape;
      ishape[ax] = static_cast<int32_t>(rng() % 5);
      for (int i = 0; i < ndim; ++i) {
        if (i != ax && rng() % 3 == 0) {
          ishape[i] = 1;  // broadcast against a
        }
      }
      const int n = shape[ax];
      auto idx = random_indices(ishape, -n, n, index_dtypes[rng() % index_dtypes.size()], rng);
      SCOPED_TRACE(std::string(dtype_name(dtype)) + shape_string(shape) + " axis " + std::to_string(axis) +
                   " indices " + shape_string(ishape));
      EXPECT_TRUE(
          same(take_along_axis(a, idx, axis),
               numpy_ref("np.take_along_axis(a, b.astype(np.int64), axis=" + std::to_string(axis) + ")", {a, idx})));
    }
  }
  // The array broadcasts too (size 1 off the axis), and a large last-axis case takes the threaded path.
  auto row = random_array({1, 6}, float32, rng);
  auto idx = random_indices({3, 4}, -6, 6, int32, rng);
  EXPECT_TRUE(same(take_along_axis(row, idx, 1), numpy_ref("np.take_along_axis(a, b, axis=1)", {row, idx})));
  auto big = random_array({300, 200}, float32, rng);
  auto big_idx = random_indices({300, 150}, -200, 200, int64, rng);
  EXPECT_TRUE(same(take_along_axis(big, big_idx, -1), numpy_ref("np.take_along_axis(a, b, axis=-1)", {big, big_idx})));
  auto column = transpose(random_indices({1, 250}, -300, 300, int32, rng));  // (250, 1): broadcast, strided
  EXPECT_TRUE(same(take_along_axis(big, column, 0), numpy_ref("np.take_along_axis(a, b, axis=0)", {big, column})));
  // Out of range: clamped.
  auto m = random_array({2, 3}, int32, rng);
  auto far = array({7, -9, 2, -100, 100, -1}, {2, 3});
  EXPECT_TRUE(
      same(take_along_axis(m, far, 1), numpy_ref("np.take_along_axis(a, np.array([[2, 0, 2], [0, 2, 2]]), 1)", {m})));
}

/// NumPy reference for the scatters: the documented rule as a loop over index positions in row-major order
/// (negative indices wrap once, a slice that does not fit is dropped), combining with `ufunc` (None: assignment).
std::string scatter_ref(const std::vector<int>& axes, const std::string& ufunc) {
  const std::string u(1, static_cast<char>('b' + axes.size()));
  return "axes = " + py_list(axes) + "\nidx = np.broadcast_arrays(*[x.astype(np.int64) for x in " +
         index_names(axes.size()) + "])\nu = " + u +
         "\nout = a.copy()\nnI = u.ndim - a.ndim\nsl = u.shape[nI:]\n"
         "for n in np.ndindex(*u.shape[:nI]):\n"
         "  st = [0] * a.ndim\n"
         "  ok = True\n"
         "  for k, ax in enumerate(axes):\n"
         "    i = int(idx[k][n]); i = i + a.shape[ax] if i < 0 else i\n"
         "    ok = ok and 0 <= i <= a.shape[ax] - sl[ax]\n"
         "    st[ax] = i\n"
         "  if ok:\n"
         "    r = tuple(slice(s, s + z) for s, z in zip(st, sl))\n"
         "    out[r] = " +
         (ufunc == "None" ? std::string("u[n]") : ufunc + "(out[r], u[n])") + "\n";
}

struct ScatterOp {
  std::string name;
  std::function<array(const array&, const std::vector<array>&, const array&, const std::vector<int>&)> fn;
  std::string ufunc;  // NumPy's
};

std::vector<ScatterOp> scatter_ops() {
  return {
      {"scatter", [](auto& a, auto& i, auto& u, auto& ax) { return scatter(a, i, u, ax); }, "None"},
      {"scatter_add", [](auto& a, auto& i, auto& u, auto& ax) { return scatter_add(a, i, u, ax); }, "np.add"},
      {"scatter_prod", [](auto& a, auto& i, auto& u, auto& ax) { return scatter_prod(a, i, u, ax); }, "np.multiply"},
      {"scatter_max", [](auto& a, auto& i, auto& u, auto& ax) { return scatter_max(a, i, u, ax); }, "np.maximum"},
      {"scatter_min", [](auto& a, auto& i, auto& u, auto& ax) { return scatter_min(a, i, u, ax); }, "np.minimum"},
  };
}

/// bfloat16 rounds after every step where NumPy (float32) rounds once.
double scatter_tol(Dtype dtype) { return dtype == bfloat16 ? 2e-2 : 0.0; }

TEST(Indexing, ScatterReductionsMatchUfuncAt) {
  std::mt19937 rng(9);
  for (const auto& op : scatter_ops()) {
    for (auto dtype : every_dtype()) {
      auto a = random_array({6, 4}, dtype, rng, -2.0, 2.0);
      auto idx = random_indices({10}, -6, 6, int32, rng);  // duplicates and negative indices
      auto upd = random_array({10, 1, 4}, dtype, rng, -2.0, 2.0);
      SCOPED_TRACE(op.name + " " + std::string(dtype_name(dtype)));
      const std::string ref =
          op.ufunc == "None" ? scatter_ref({0}, "None") : "out = a.copy()\n" + op.ufunc + ".at(out, b, c[:, 0, :])";
      EXPECT_TRUE(same(op.fn(a, {idx}, upd, {0}), numpy_ref(ref, {a, idx, upd}), scatter_tol(dtype)));
      // Two indexed axes of a 3-d array; the third is a full slice.
      auto b3 = random_array({3, 4, 5}, dtype, rng);
      auto i0 = random_indices({2, 3}, -3, 3, uint8, rng);
      auto i1 = random_indices({1, 3}, -4, 4, int64, rng);
      auto u3 = random_array({2, 3, 1, 1, 5}, dtype, rng);
      const std::string ref3 = op.ufunc == "None" ? scatter_ref({0, 1}, "None")
                                                  : "out = a.copy()\nc2 = np.broadcast_to(c, b.shape)\n" + op.ufunc +
                                                        ".at(out, (b, c2), d[:, :, 0, 0, :])";
      EXPECT_TRUE(same(op.fn(b3, {i0, i1}, u3, {0, -2}), numpy_ref(ref3, {b3, i0, i1, u3}), scatter_tol(dtype)));
    }
  }
}

TEST(Indexing, ScatterMaxMinPropagateNaN) {
  auto a = array({1.0F, std::nanf(""), 3.0F, 4.0F}, {4});
  auto idx = array({0, 1, 2, 2});
  auto upd = reshape(array({std::nanf(""), 5.0F, 7.0F, 2.0F}), {4, 1});
  for (const auto& op : scatter_ops()) {
    if (op.ufunc == "None") {
      continue;
    }
    SCOPED_TRACE(op.name);
    EXPECT_TRUE(same(op.fn(a, {idx}, upd, {0}),
                     numpy_ref("out = a.copy()\n" + op.ufunc + ".at(out, b, c[:, 0])", {a, idx, upd})));
  }
}

TEST(Indexing, ScatterOverlappingSlicesOutOfRangeAndStridedInputs) {
  std::mt19937 rng(10);
  for (const auto& op : scatter_ops()) {
    for (auto dtype : {float32, int16, float64}) {
      SCOPED_TRACE(op.name + " " + std::string(dtype_name(dtype)));
      // Slices of 3 on the indexed axis overlap; 5, -1 and -9 do not fit and are dropped.
      auto a = non_contiguous({6, 5}, dtype, rng, true);
      auto idx = array({0, 1, 5, 3, -1, -9, 2, 1}, {8});
      auto upd = transpose(random_array({2, 3, 8}, dtype, rng), {2, 1, 0});  // (8, 3, 2), strided
      EXPECT_TRUE(same(op.fn(a, {idx}, upd, {0}), numpy_ref(scatter_ref({0}, op.ufunc), {a, idx, upd})));
      // Indices at the int64 extremes never write out of bounds.
      auto far = array({std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), int64_t{2}}, {3});
      auto u2 = random_array({3, 1, 5}, dtype, rng);
      EXPECT_TRUE(same(op.fn(a, {far}, u2, {0}), numpy_ref(scatter_ref({0}, op.ufunc), {a, far, u2})));
      // No indexed axis: one update slice at the origin.
      auto u0 = random_array({2, 2}, dtype, rng);
      EXPECT_TRUE(same(op.fn(a, {}, u0, {}), numpy_ref(scatter_ref({}, op.ufunc), {a, u0})));
    }
  }
}

TEST(Indexing, ScatterEmptyAndThreaded) {
  std::mt19937 rng(11);
  auto a = random_array({4, 3}, float32, rng);
  auto empty = slice(array({1}), {0}, {0});
  EXPECT_TRUE(same(scatter_add(a, empty, zeros({0, 1, 3}), 0), numpy_ref("a", {a})));
  EXPECT_TRUE(same(scatter(a, array({1}), zeros({1, 0, 3}), 0), numpy_ref("a", {a})));
  auto none = zeros({0, 3}, float32);
  EXPECT_EQ(scatter(none, array({0}), zeros({1, 0, 3}), 0).shape(), Shape({0, 3}));
  // Large enough to split across threads; per destination the order is the index order, so sums match exactly.
  auto table = random_array({700, 64}, float32, rng);
  auto idx = random_indices({3000}, -700, 700, int32, rng);
  auto grads = random_array({3000, 1, 64}, float32, rng);
  EXPECT_TRUE(same(scatter_add(table, idx, grads, 0),
                   numpy_ref("out = a.copy()\nnp.add.at(out, b, c[:, 0, :])", {table, idx, grads})));
  EXPECT_TRUE(same(scatter(table, idx, grads, 0), numpy_ref(scatter_ref({0}, "None"), {table, idx, grads})));
}

TEST(Indexing, PutAlongAxisAndScatterAddAxis) {
  std::mt19937 rng(12);
  auto m = random_array({4, 5}, float32, rng);
  auto idx = array({0, 2, 1, 4, 3, 0, -1, 1}, {4, 2});
  auto vals = random_array({4, 2}, float32, rng);
  EXPECT_TRUE(same(put_along_axis(m, idx, vals, 1),
                   numpy_ref("out = a.copy()\nnp.put_along_axis(out, b, c, axis=1)", {m, idx, vals})));
  // A broadcast scalar value, and values broadcast along the axis.
  EXPECT_TRUE(same(put_along_axis(m, idx, array(9.0F), -1),
                   numpy_ref("out = a.copy()\nnp.put_along_axis(out, b, 9.0, axis=-1)", {m, idx})));
  // The rule as a loop (duplicates: the last wins; out of range: dropped) and np.add.at for the sums.
  const std::string fancy =
      "idx = b.astype(np.int64)\nshape = list(a.shape); shape[ax] = idx.shape[ax]\nidx = np.broadcast_to(idx, shape)\n"
      "v = np.broadcast_to(c, shape)\nout = a.copy()\n"
      "for n in np.ndindex(*shape):\n"
      "  i = int(idx[n]); i = i + a.shape[ax] if i < 0 else i\n"
      "  if 0 <= i < a.shape[ax]:\n"
      "    t = list(n); t[ax] = i; t = tuple(t)\n"
      "    out[t] = ";
  for (auto dtype : every_dtype()) {
    for (int ax : {0, 1, 2}) {
      auto a = rng() % 2 == 0 ? random_array({3, 4, 5}, dtype, rng) : non_contiguous({3, 4, 5}, dtype, rng, true);
      Shape ishape = a.shape();
      ishape[ax] = 6;
      ishape[(ax + 1) % 3] = 1;  // broadcast against a
      const int n = a.shape(ax);
      auto ix = random_indices(ishape, -n - 1, n + 1, index_dtypes[rng() % index_dtypes.size()], rng);
      Shape vshape = ishape;
      vshape[0] = 1;
      auto v = random_array(vshape, dtype, rng);
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " axis " + std::to_string(ax));
      const std::string head = "ax = " + std::to_string(ax) + "\n" + fancy;
      EXPECT_TRUE(same(put_along_axis(a, ix, v, ax), numpy_ref(head + "v[n]\n", {a, ix, v})));
      EXPECT_TRUE(same(scatter_add_axis(a, ix, v, ax), numpy_ref(head + "np.add(out[t], v[n])\n", {a, ix, v}),
                       scatter_tol(dtype)));
    }
  }
  auto big = random_array({64, 2000}, float32, rng);
  auto big_idx = random_indices({64, 3000}, -2000, 2000, int32, rng);
  auto big_vals = random_array({64, 3000}, float32, rng);
  EXPECT_TRUE(
      same(scatter_add_axis(big, big_idx, big_vals, 1),
           numpy_ref("out = a.copy()\nnp.add.at(out, (np.arange(64)[:, None], b), c)", {big, big_idx, big_vals})));
}

TEST(Indexing, MaskedScatter) {
  std::mt19937 rng(13);
  const std::string ref =
      "out = a.copy()\nm = np.broadcast_to(b, a.shape)\npos = np.flatnonzero(m)\nsrc = c.ravel()\n"
      "k = min(len(pos), src.size)\nout.flat[pos[:k]] = src[:k].astype(a.dtype)";
  for (auto dtype : every_dtype()) {
    auto a = random_array({3, 4}, dtype, rng);
    auto mask = random_array({3, 4}, bool_, rng);
    auto src = random_array({2, 6}, dtype, rng);
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    EXPECT_TRUE(same(masked_scatter(a, mask, src), numpy_ref(ref, {a, mask, src})));
    // A broadcast mask row, a transposed array and a short source (the later true positions keep a's values).
    auto row = random_array({1, 4}, bool_, rng);
    auto at = transpose(random_array({4, 3}, dtype, rng));
    auto short_src = random_array({2}, dtype, rng);
    EXPECT_TRUE(same(masked_scatter(at, row, short_src), numpy_ref(ref, {at, row, short_src})));
  }
  // torch.masked_scatter agrees where the source is long enough (its requirement).
  auto a = random_array({5, 6}, float32, rng);
  auto mask = transpose(random_array({6, 5}, bool_, rng));
  auto src = random_array({40}, float32, rng);
  EXPECT_TRUE(same(masked_scatter(a, mask, src),
                   numpy_ref("import torch\nout = torch.from_numpy(a.copy()).masked_scatter(torch.from_numpy("
                             "b.copy()), torch.from_numpy(c.copy())).numpy()",
                             {a, mask, src})));
  auto empty = zeros({0, 6}, float32);
  EXPECT_EQ(masked_scatter(empty, array(true), src).shape(), Shape({0, 6}));
}

struct SliceCase {
  Shape start;
  Shape stop;
  Shape strides;
  std::string py;  // the same slice in Python
};

TEST(Indexing, SliceUpdateAndReducingForms) {
  std::mt19937 rng(14);
  const std::vector<SliceCase> cases = {
      {{1, 0, 2}, {3, 4, 5}, {1, 1, 1}, "1:3, 0:4, 2:5"},
      {{0, -1, 0}, {4, -5, 6}, {2, -1, 3}, "0:4:2, -1:-5:-1, 0:6:3"},
      {{-10, 1, 5}, {10, 2, -10}, {1, 1, -2}, "-10:10, 1:2, 5:-10:-2"},
      {{0, 0, 0}, {4, 4, 6}, {1, 1, 1}, ":, :, :"},
      {{2, 0, 0}, {2, 4, 6}, {1, 1, 1}, "2:2, :, :"},
  };
  struct Op {
    std::string name;
    std::function<array(const array&, const array&, Shape, Shape, Shape)> fn;
    std::string combine;  // Python expression of the old values `o` and the update `b`
  };
  const std::vector<Op> ops = {
      {"slice_update", [](auto& s, auto& u, Shape b, Shape e, Shape st) { return slice_update(s, u, b, e, st); }, "b"},
      {"slice_update_add",
       [](auto& s, auto& u, Shape b, Shape e, Shape st) { return slice_update_add(s, u, b, e, st); }, "o + b"},
      {"slice_update_prod",
       [](auto& s, auto& u, Shape b, Shape e, Shape st) { return slice_update_prod(s, u, b, e, st); }, "o * b"},
      {"slice_update_max",
       [](auto& s, auto& u, Shape b, Shape e, Shape st) { return slice_update_max(s, u, b, e, st); },
       "np.maximum(o, b)"},
      {"slice_update_min",
       [](auto& s, auto& u, Shape b, Shape e, Shape st) { return slice_update_min(s, u, b, e, st); },
       "np.minimum(o, b)"},
  };
  for (const auto& op : ops) {
    for (auto dtype : {float32, int8, bool_, bfloat16, complex64, uint32}) {
      for (const auto& c : cases) {
        auto src = rng() % 2 == 0 ? random_array({4, 4, 6}, dtype, rng) : non_contiguous({4, 4, 6}, dtype, rng, true);
        auto shape = numpy_ref("a[" + c.py + "]", {src}).shape;
        Shape update_shape(shape.begin(), shape.end());
        if (!update_shape.empty() && rng() % 2 == 0) {
          update_shape[0] = 1;  // broadcast along the first axis
        }
        auto upd = random_array(update_shape, dtype, rng);
        SCOPED_TRACE(op.name + " " + std::string(dtype_name(dtype)) + " [" + c.py + "]");
        const std::string ref = "out = a.copy()\no = out[" + c.py + "]\nout[" + c.py + "] = " + op.combine;
        auto tol = dtype == bfloat16 && op.name != "slice_update" ? 1e-2 : 0.0;
        EXPECT_TRUE(same(op.fn(src, upd, c.start, c.stop, c.strides), numpy_ref(ref, {src, upd}), tol));
      }
    }
  }
  // The overloads without strides, and a cast update.
  auto src = random_array({3, 4}, int32, rng);
  EXPECT_TRUE(
      same(slice_update(src, array(2.7F), {1, 1}, {3, 3}), numpy_ref("out = a.copy()\nout[1:3, 1:3] = 2\n", {src})));
  EXPECT_TRUE(same(slice_update_add(src, array({1, 2}), {0, 2}, {3, 4}),
                   numpy_ref("out = a.copy()\nout[:, 2:4] += np.array([1, 2], np.int32)", {src})));
}

TEST(Indexing, DynamicSliceAndUpdate) {
  std::mt19937 rng(15);
  auto a = random_array({5, 6, 3}, float32, rng);
  // Starts out of range are clamped so the slice fits; negative ones count from the end first.
  const std::string ref =
      "st = [0, 0, 0]\nfor ax, v in zip({axes}, b.astype(np.int64).reshape(-1)):\n"
      "  v = int(v) + a.shape[ax] if v < 0 else int(v)\n  st[ax] = min(max(v, 0), a.shape[ax] - {size}[ax])\n"
      "out = a[tuple(slice(s, s + z) for s, z in zip(st, {size}))]";
  auto fill = [](std::string code, const std::string& axes, const std::string& size) {
    for (size_t at = code.find("{axes}"); at != std::string::npos; at = code.find("{axes}")) {
      code.replace(at, 6, axes);
    }
    for (size_t at = code.find("{size}"); at != std::string::npos; at = code.find("{size}")) {
      code.replace(at, 6, size);
    }
    return code;
  };
  for (auto itype : index_dtypes) {
    auto start = astype(array({3, is_signed_integer(itype) ? -2 : 40}, {2}), itype);
    EXPECT_TRUE(same(slice(a, start, {0, 1}, {3, 4, 3}), numpy_ref(fill(ref, "[0, 1]", "[3, 4, 3]"), {a, start})));
    EXPECT_TRUE(same(slice(a, start, {-1, 0}, {2, 1, 2}), numpy_ref(fill(ref, "[2, 0]", "[2, 1, 2]"), {a, start})));
  }
  auto one = array(100);
  EXPECT_TRUE(same(slice(transpose(a), one, {2}, {3, 6, 2}), numpy_ref("a.T[:, :, 3:5]", {a})));
  // slice_update with a dynamic start: clamped so the update fits; missing leading axes broadcast.
  auto upd = random_array({2, 3}, float32, rng);
  auto start = array({-1, 7}, {2});
  EXPECT_TRUE(
      same(slice_update(a, upd, start, {1, 2}), numpy_ref("out = a.copy()\nout[:, 4:6, 0:3] = c", {a, start, upd})));
  auto upd3 = random_array({1, 2, 2}, float32, rng);
  auto s0 = astype(array({-100}, {1}), int16);
  EXPECT_TRUE(same(slice_update(a, upd3, s0, {0}), numpy_ref("out = a.copy()\nout[0:1, 0:2, 0:2] = c", {a, s0, upd3})));
  auto lead = array(1);
  EXPECT_TRUE(same(slice_update(a, zeros({3}), lead, {0}), numpy_ref("out = a.copy()\nout[1:2, :, :] = 0", {a})));
}

TEST(Indexing, ErrorMessages) {
  auto a = zeros({3, 4});
  auto idx = array({0, 1});
  EXPECT_EQ(error_of([&] { take(a, array({1.0F}), 0); }), "[take] Indices must have an integer dtype; got float32.");
  EXPECT_EQ(error_of([&] { take(a, array({true}), 0); }), "[take] Indices must have an integer dtype; got bool.");
  EXPECT_EQ(error_of([&] { take(a, idx, 2); }), "[take] Axis 2 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { take(a, 4, 1); }), "[take] Index 4 is out of bounds for axis 1 with size 4.");
  EXPECT_EQ(error_of([&] {
              take(zeros({3, 0}), idx, 1);
            }),
            "[take] Cannot do a non-empty take from an empty axis; got axis 1 of an array of shape (3,0).");
  EXPECT_EQ(error_of([&] { take_along_axis(a, idx, 0); }),
            "[take_along_axis] Indices of shape (2) must have as many dimensions as the array of shape (3,4).");
  EXPECT_EQ(error_of([&] {
              take_along_axis(a, zeros({2, 3}, int32), 0);
            }),
            "[take_along_axis] Indices of shape (2,3) cannot be broadcast against the array of shape (3,4) off axis "
            "0.");
  EXPECT_EQ(error_of([&] {
              put_along_axis(a, zeros({2, 4}, int32), zeros({3, 4}), 0);
            }),
            "[put_along_axis] Values of shape (3,4) cannot be broadcast to the indices' shape (2,4).");
  EXPECT_EQ(error_of([&] {
              gather(a, {idx}, {0, 1}, {1, 4});
            }),
            "[gather] Got 1 index arrays for 2 axes (0,1); each axis needs one index array.");
  EXPECT_EQ(error_of([&] { gather(a, {idx, idx}, {0, -2}, {1, 1}); }), "[gather] Repeated axis -2 in axes (0,-2).");
  EXPECT_EQ(error_of([&] {
              gather(a, {idx}, {0}, {1, 5});
            }),
            "[gather] Slice sizes must be in [0, a.shape(i)]; got (1,5) for array of shape (3,4).");
  EXPECT_EQ(error_of([&] { gather(a, {idx}, {0}, {1}); }),
            "[gather] Got slice_sizes (1) for array of shape (3,4); it needs one size per dimension.");
  EXPECT_EQ(error_of([&] {
              gather(a, {idx, zeros({3}, int32)}, {0, 1}, {1, 1});
            }),
            "[gather] Index arrays of shapes (2) and (3) cannot be broadcast together.");
  EXPECT_EQ(error_of([&] {
              scatter(a, idx, zeros({2, 4}), 0);
            }),
            "[scatter] Updates of shape (2,4) must have 3 dimensions: the indices' 1 then the array's 2.");
  EXPECT_EQ(error_of([&] {
              scatter_add(a, idx, zeros({3, 1, 4}), 0);
            }),
            "[scatter_add] Updates of shape (3,1,4) do not start with the broadcast index shape (2).");
  EXPECT_EQ(error_of([&] {
              scatter_max(a, idx, zeros({2, 1, 5}), 0);
            }),
            "[scatter_max] Updates of shape (2,1,5) are too large for array with shape (3,4).");
  EXPECT_EQ(error_of([&] {
              scatter_min(a, array({0.5F}), zeros({1, 1, 4}), 0);
            }),
            "[scatter_min] Indices must have an integer dtype; got float32.");
  EXPECT_EQ(error_of([&] {
              masked_scatter(a, zeros({3, 4}), a);
            }),
            "[masked_scatter] The mask must be bool; got float32.");
  EXPECT_EQ(error_of([&] {
              masked_scatter(a, zeros({2, 4}, bool_), a);
            }),
            "[masked_scatter] Mask of shape (2,4) does not match the leading axes of the array's shape (3,4).");
  EXPECT_EQ(error_of([&] {
              slice_update(a, zeros({2, 2}), {0, 0}, {3, 2});
            }),
            "[slice_update] Update of shape (2,2) cannot be broadcast to the slice's shape (3,2).");
  EXPECT_EQ(error_of([&] { slice_update_add(a, zeros({1}), {0}, {1}); }),
            "[slice_update_add] Invalid number of indices or strides for array with 2 dimensions; got 1 start, 1 "
            "stop and 2 strides.");
  EXPECT_EQ(error_of([&] {
              slice_update_prod(a, zeros({1}), {0, 0}, {1, 1}, {1, 0});
            }),
            "[slice_update_prod] Slice step cannot be zero (axis 1).");
  EXPECT_EQ(error_of([&] {
              slice(a, array({0.0F}), {0}, {1, 4});
            }),
            "[slice] Start indices must have an integer dtype; got float32.");
  EXPECT_EQ(error_of([&] { slice(a, idx, {0}, {1, 4}); }), "[slice] Got 2 start indices for 1 axes (0).");
  EXPECT_EQ(error_of([&] {
              slice(a, zeros({1, 1}, int32), {0}, {1, 4});
            }),
            "[slice] Start indices must be a scalar or a 1-d array; got shape (1,1).");
  EXPECT_EQ(error_of([&] {
              slice(a, array(0), {0}, {4, 4});
            }),
            "[slice] Slice size (4,4) does not fit array of shape (3,4).");
  EXPECT_EQ(error_of([&] { slice_update(a, zeros({5}), array(0), {0}); }),
            "[slice_update] Update of shape (5) does not fit array of shape (3,4).");
  EXPECT_EQ(error_of([&] {
              slice_update(a, zeros({1, 1, 1}), array(0), {0});
            }),
            "[slice_update] Update of shape (1,1,1) has more dimensions than the array of shape (3,4).");
}

}  // namespace
}  // namespace nuvec
