// Quantization against NumPy: the reference below implements CONFORMANCE.md's "Affine quantization" rules in NumPy
// (float32 arithmetic step by step, the bit stream packed with np.packbits), so quantize is compared bit for bit;
// dequantize against the same rules; quantized_matmul and gather_qmm against the float64 product with the weight
// dequantized by the reference. FP8 E4M3 codes come from a NumPy nearest-value search over the 254 finite codes
// (ties to the even code, saturation at 448). Every group size and width, transposes, batches, odd row counts (both
// the decode and the sgemm paths), strided inputs, empty arrays and the error messages.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec::test {
namespace {

const std::string prelude = R"(
def rbf16(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7fff + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32)
def cast(x, dt):
    return rbf16(x) if dt == 'bfloat16' else x.astype(dt)
def quantize(w, gs, bits):
    lead = w.shape[:-1]
    v = w.astype(np.float32).reshape(-1, gs)
    hi = v.max(axis=1)
    lo = v.min(axis=1)
    n_bins = np.float32(2 ** bits - 1)
    scale = np.maximum((hi - lo) / n_bins, np.float32(1e-7))
    from_min = np.abs(lo) > np.abs(hi)
    scale = np.where(from_min, scale, -scale).astype(np.float32)
    edge = np.where(from_min, lo, hi).astype(np.float32)
    q0 = np.round(edge / scale)
    nz = q0 != 0
    scale = np.where(nz, edge / np.where(nz, q0, np.float32(1)), scale).astype(np.float32)
    bias = np.where(nz, edge, np.float32(0)).astype(np.float32)
    q = np.clip(np.round((v - bias[:, None]) / scale[:, None]), 0, n_bins).astype(np.uint64)
    stream = ((q[..., None] >> np.arange(bits, dtype=np.uint64)) & 1).astype(np.uint8).reshape(-1)
    packed = np.packbits(stream, bitorder='little').view(np.uint32).reshape(lead + (-1,))
    return packed, scale.reshape(lead + (-1,)), bias.reshape(lead + (-1,))
def codes(wq, bits):
    b = np.unpackbits(np.ascontiguousarray(wq).view(np.uint8), bitorder='little').astype(np.int64)
    b = b.reshape(wq.shape[:-1] + (-1, bits))
    return (b << np.arange(bits)).sum(-1)
def dequant(wq, s, b, gs, bits, t=np.float64):
    q = codes(wq, bits).astype(t)
    q = q.reshape(q.shape[:-1] + (-1, gs))
    out = q * s.astype(t)[..., None] + b.astype(t)[..., None]
    return out.reshape(out.shape[:-2] + (-1,))
)";

/// Runs the prelude and `code` (which assigns `out`, one array or a tuple) on the inputs bound to a, b, c, ...
std::vector<HostArray> reference(const std::string& code, const std::vector<array>& inputs) {
  std::vector<HostArray> hosts;
  for (const auto& in : inputs) {
    hosts.push_back(to_host(in));
  }
  return numpy(prelude + code, hosts);
}

std::string py_dtype(Dtype d) {
  std::string quoted(1, '\'');
  quoted += dtype_name(d);
  quoted += '\'';
  return quoted;
}

using test::error_of;

constexpr int group_sizes[] = {32, 64, 128};
constexpr int widths[] = {2, 3, 4, 5, 6, 8};
const Dtype float_types[] = {float32, float16, bfloat16};

class QuantizedTest : public ::testing::Test {
 protected:
  std::mt19937 rng_{2024};
  array rand(const Shape& shape, Dtype dtype, double lo = -2.0, double hi = 2.0) {
    return random_array(shape, dtype, rng_, lo, hi);
  }
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
};

TEST_F(QuantizedTest, QuantizeIsBitExact) {
  for (auto dtype : float_types) {
    for (int gs : group_sizes) {
      for (int bits : widths) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " gs=" + std::to_string(gs) + " bits=" + std::to_string(bits));
        Shape shape = pick(0, 1) == 0 ? Shape{pick(1, 5), gs * pick(1, 3)} : Shape{2, pick(1, 3), gs * pick(1, 2)};
        // Values around an offset, so both edge rules (min and max) occur; one group is constant (q0 == 0 path).
        auto w = rand(shape, dtype, -1.0 + pick(-1, 1), 1.0 + pick(-1, 1));
        auto constant_row = zeros({1, shape.back()}, dtype);
        auto wq = quantize(concatenate({reshape(w, {-1, shape.back()}), constant_row}, 0), gs, bits);
        auto expected = reference("w = a.astype(np.float32)\np, s, b = quantize(w, " + std::to_string(gs) + ", " +
                                      std::to_string(bits) + ")\nout = (p, cast(s, " + py_dtype(dtype) + "), cast(b, " +
                                      py_dtype(dtype) + "))",
                                  {concatenate({reshape(w, {-1, shape.back()}), constant_row}, 0)});
        ASSERT_EQ(wq.size(), 3U);
        EXPECT_EQ(wq[0].dtype(), uint32);
        EXPECT_EQ(wq[1].dtype(), dtype);
        EXPECT_EQ(wq[2].dtype(), dtype);
        EXPECT_TRUE(matches(wq[0], expected[0], 0, 0));
        EXPECT_TRUE(matches(wq[1], expected[1], 0, 0, false));
        EXPECT_TRUE(matches(wq[2], expected[2], 0, 0, false));
        // Leading axes are kept.
        auto batched = quantize(w, gs, bits);
        Shape packed = shape;
        packed.back() = shape.back() * bits / 32;
        EXPECT_EQ(batched[0].shape(), packed);
      }
    }
  }
}

TEST_F(QuantizedTest, QuantizeStridedAndDefaults) {
  // A transposed weight, and the defaults (group_size 64, bits 4).
  auto w = transpose(rand({128, 6}, float32));
  auto q = quantize(w);
  auto expected = reference("p, s, b = quantize(a, 64, 4)\nout = (p, s, b)", {w});
  EXPECT_EQ(q[0].shape(), (Shape{6, 16}));
  EXPECT_TRUE(matches(q[0], expected[0], 0, 0));
  EXPECT_TRUE(matches(q[1], expected[1], 0, 0));
  EXPECT_TRUE(matches(q[2], expected[2], 0, 0));
  // Empty leading axis.
  auto e = quantize(zeros({0, 64}));
  EXPECT_EQ(e[0].shape(), (Shape{0, 8}));
  EXPECT_EQ(e[1].shape(), (Shape{0, 1}));
  eval(e);
}

TEST_F(QuantizedTest, Dequantize) {
  for (auto dtype : float_types) {
    for (int gs : group_sizes) {
      for (int bits : widths) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " gs=" + std::to_string(gs) + " bits=" + std::to_string(bits));
        auto w = rand({pick(1, 4), gs * pick(1, 3)}, dtype);
        auto q = quantize(w, gs, bits);
        auto out = dequantize(q[0], q[1], q[2], gs, bits);
        EXPECT_EQ(out.dtype(), dtype);
        EXPECT_EQ(out.shape(), w.shape());
        auto expected = reference("out = cast(dequant(a, b, c, " + std::to_string(gs) + ", " + std::to_string(bits) +
                                      ", np.float32), " + py_dtype(dtype) + ")",
                                  {q[0], q[1], q[2]});
        EXPECT_TRUE(matches(out, expected[0], default_rtol(dtype), 1e-6, false));
      }
    }
  }
  // An explicit output dtype, and strided operands.
  auto w = rand({4, 128}, float16);
  auto q = quantize(w, 64, 4);
  auto wide = dequantize(q[0], q[1], q[2], 64, 4, "affine", std::nullopt, float32);
  EXPECT_EQ(wide.dtype(), float32);
  EXPECT_TRUE(matches(wide, reference("out = dequant(a, b, c, 64, 4, np.float32)", {q[0], q[1], q[2]})[0], 1e-6, 1e-6));
  auto rows = slice(q[0], {0, 0}, {4, 16}, {2, 1});
  auto s = slice(q[1], {0, 0}, {4, 2}, {2, 1});
  auto b = slice(q[2], {0, 0}, {4, 2}, {2, 1});
  EXPECT_TRUE(matches(dequantize(rows, s, b, 64, 4),
                      reference("out = dequant(a, b, c, 64, 4, np.float32).astype(np.float16)", {rows, s, b})[0], 2e-3,
                      1e-6));
}

/// The tolerance of a product of K terms of size ~1 computed in float32 and rounded to dtype.
struct Tol {
  double rtol;
  double atol;
};
Tol product_tol(Dtype dtype, int k) {
  const double acc = 2e-6 * k;
  if (dtype == float16) {
    return {2e-3, acc + 2e-2};
  }
  if (dtype == bfloat16) {
    return {1.6e-2, acc + 1e-1};
  }
  return {1e-5, acc};
}

std::string product_code(int gs, int bits, bool transpose) {
  return "W = dequant(b, c, d, " + std::to_string(gs) + ", " + std::to_string(bits) + ")\nout = (a.astype(np.float64)" +
         " @ " + (transpose ? "np.swapaxes(W, -1, -2)" : "W") + ").astype(np.float32)";
}

TEST_F(QuantizedTest, QuantizedMatmulEveryWidth) {
  // Rows 1, 2 and 3 take the decode paths, 37 the dequantized-tile sgemm path.
  for (int gs : group_sizes) {
    for (int bits : widths) {
      for (bool transpose : {true, false}) {
        for (int m : {1, 3, 37}) {
          SCOPED_TRACE("gs=" + std::to_string(gs) + " bits=" + std::to_string(bits) +
                       " transpose=" + std::to_string(transpose) + " m=" + std::to_string(m));
          const int k = transpose ? gs * pick(1, 3) : pick(1, 40);
          const int n = transpose ? pick(1, 9) : gs * pick(1, 3);
          auto w = rand(transpose ? Shape{n, k} : Shape{k, n}, float32);
          auto q = quantize(w, gs, bits);
          auto x = rand({m, k}, float32);
          auto out = quantized_matmul(x, q[0], q[1], q[2], transpose, gs, bits);
          EXPECT_EQ(out.shape(), (Shape{m, n}));
          auto tol = product_tol(float32, k);
          EXPECT_TRUE(
              matches(out, reference(product_code(gs, bits, transpose), {x, q[0], q[1], q[2]})[0], tol.rtol, tol.atol));
        }
      }
    }
  }
}

TEST_F(QuantizedTest, QuantizedMatmulDtypesAndLayouts) {
  for (auto dtype : float_types) {
    for (bool transpose : {true, false}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " transpose=" + std::to_string(transpose));
      const int k = 256;
      const int n = 320;  // more than one sgemm tile
      auto w = rand(transpose ? Shape{n, k} : Shape{k, n}, dtype);
      auto q = quantize(w, 64, 4);
      // Batched x, a transposed (strided) x, a 1-d x, and enough rows for the sgemm path.
      std::vector<array> xs{rand({2, 3, k}, dtype), nuvec::transpose(rand({k, 5}, dtype)), rand({k}, dtype),
                            rand({2, 20, k}, dtype)};
      for (const auto& x : xs) {
        auto out = quantized_matmul(x, q[0], q[1], q[2], transpose);
        Shape shape = x.shape();
        shape.back() = n;
        EXPECT_EQ(out.shape(), shape);
        EXPECT_EQ(out.dtype(), dtype);
        auto tol = product_tol(dtype, k);
        EXPECT_TRUE(matches(out, reference(product_code(64, 4, transpose), {x, q[0], q[1], q[2]})[0], tol.rtol,
                            tol.atol, false));
      }
    }
  }
}

TEST_F(QuantizedTest, QuantizedMatmulSplitAcrossTasks) {
  // Shapes that split the decode paths into several tasks (of columns, or of K rows), with a short last one; for
  // w (K, N): rows of whole vectors or not (N = 1088, 192), K split into parts (1100, 600) or not, and x row counts
  // that take every number of rows kept in registers at once (4, 2 and 1 for 8 bits: 7 = 4 + 2 + 1).
  for (auto [transpose, k, n, rows] :
       {std::tuple{true, 512, 601, 2}, std::tuple{false, 64, 1088, 1}, std::tuple{false, 300, 192, 7},
        std::tuple{false, 1100, 1088, 3}, std::tuple{false, 600, 2048, 6}}) {
    for (int bits : {4, 8, 6, 2}) {
      SCOPED_TRACE("transpose=" + std::to_string(transpose) + " bits=" + std::to_string(bits) +
                   " k=" + std::to_string(k) + " n=" + std::to_string(n) + " rows=" + std::to_string(rows));
      auto w = rand(transpose ? Shape{n, k} : Shape{k, n}, float32);
      auto q = quantize(w, 64, bits);
      auto x = rand({rows, k}, float32);
      auto out = quantized_matmul(x, q[0], q[1], q[2], transpose, 64, bits);
      auto tol = product_tol(float32, k);
      EXPECT_TRUE(
          matches(out, reference(product_code(64, bits, transpose), {x, q[0], q[1], q[2]})[0], tol.rtol, tol.atol));
    }
  }
}

TEST_F(QuantizedTest, DecodeIsAccurateToFloat32) {
  // Decode products (a few rows, w (N, K), 2/4/8 bits) run on int8 levels of x where the CPU has AVX-512 VNNI. Their
  // error must stay that of a float32 computation (a few 1e-6 of the largest output) for any x: outliers 1000x the
  // rest, magnitudes near the ends of float32's range, denormals, zeros; non-finite x propagates as in the float
  // product.
  const int n = 37;
  for (int gs : group_sizes) {
    const int k = gs * 17;  // the last 64-byte chunk of a packed row is partial for most widths
    auto w = rand({n, k}, float32);
    auto outliers = multiply(array(1000.F), astype(less(rand({3, k}, float32, 0.0, 1.0), array(0.005F)), float32));
    const std::vector<std::pair<std::string, array>> xs{
        {"plain", rand({3, k}, float32)},
        {"outliers", add(rand({3, k}, float32), outliers)},
        {"tiny", multiply(rand({2, k}, float32), array(1e-30F))},
        {"huge", multiply(rand({2, k}, float32), array(1e30F))},
        {"denormal", multiply(rand({1, k}, float32), array(1e-40F))},
        {"zeros", zeros({2, k}, float32)},
        {"one nonzero", concatenate({zeros({1, k - 1}, float32), array({-3.F}, {1, 1})}, 1)},
    };
    for (int bits : {2, 4, 8}) {
      auto q = quantize(w, gs, bits);
      for (const auto& [name, x] : xs) {
        SCOPED_TRACE(name + " bits=" + std::to_string(bits) + " gs=" + std::to_string(gs));
        auto out = quantized_matmul(x, q[0], q[1], q[2], true, gs, bits);
        auto expected = reference("W = dequant(b, c, d, " + std::to_string(gs) + ", " + std::to_string(bits) +
                                      ")\nref = a.astype(np.float64) @ W.T\n"
                                      "out = np.array(np.abs(e.astype(np.float64) - ref).max() / "
                                      "max(np.abs(ref).max(), 1e-300))",
                                  {x, q[0], q[1], q[2], out})[0];
        EXPECT_LE(as_doubles(expected)[0], 5e-6);  // two int8 levels give ~6e-4
      }
      // A NaN in row 0, an infinity in row 1, row 2 finite.
      const auto position = reshape(arange(3 * k), {3, k});
      auto bad =
          where(equal(position, array(5)), array(std::numeric_limits<float>::quiet_NaN()), rand({3, k}, float32));
      bad = where(equal(position, array(k + 7)), array(std::numeric_limits<float>::infinity()), bad);
      auto out = quantized_matmul(bad, q[0], q[1], q[2], true, gs, bits);
      EXPECT_TRUE(matches(out, reference(product_code(gs, bits, true), {bad, q[0], q[1], q[2]})[0], 1e-5, 2e-6 * k));
      auto plain = quantize(rand({k, 2 * gs}, float32), gs, bits);  // w (K, N)
      out = quantized_matmul(bad, plain[0], plain[1], plain[2], false, gs, bits);
      EXPECT_TRUE(matches(out, reference(product_code(gs, bits, false), {bad, plain[0], plain[1], plain[2]})[0], 1e-5,
                          2e-6 * k));
    }
  }
}

TEST_F(QuantizedTest, HighMatmulPrecisionTakesTwoLevelsOfX) {
  // Under "high" and "medium" decode products write x as two int8 levels: an error below 1e-3 of the largest output
  // (~6e-4 with outliers 1000x the rest), and results that differ from "highest"'s three levels.
  const int k = 64 * 9;
  auto w = rand({29, k}, float32);
  auto outliers = multiply(array(1000.F), astype(less(rand({3, k}, float32, 0.0, 1.0), array(0.005F)), float32));
  const std::vector<std::pair<std::string, array>> xs{
      {"plain", rand({3, k}, float32)},
      {"outliers", add(rand({3, k}, float32), outliers)},
  };
  for (int bits : {2, 4, 8}) {
    auto q = quantize(w, 64, bits);
    for (const auto& [name, x] : xs) {
      SCOPED_TRACE(name + " bits=" + std::to_string(bits));
      auto highest = quantized_matmul(x, q[0], q[1], q[2], true, 64, bits);
      highest.eval();
      for (const char* precision : {"high", "medium"}) {
        const MatmulPrecisionScope scope(precision);
        auto out = quantized_matmul(x, q[0], q[1], q[2], true, 64, bits);
        out.eval();
        auto error = reference("W = dequant(b, c, d, 64, " + std::to_string(bits) +
                                   ")\nref = a.astype(np.float64) @ W.T\n"
                                   "out = np.array(np.abs(e.astype(np.float64) - ref).max() / np.abs(ref).max())",
                               {x, q[0], q[1], q[2], out})[0];
        EXPECT_LE(as_doubles(error)[0], 1e-3) << precision;
        if (int8_decode_built) {
          EXPECT_FALSE(array_equal(out, highest).item<bool>()) << precision;
        }
      }
    }
  }
}

TEST_F(QuantizedTest, PrefillOnLevelsUnderHigh) {
  // Under "high" and "medium", prefill products (128 rows of x and more) of 4- and 8-bit weights
  // whose groups are whole blocks of 32 values take the GGML block formats' prefill kernel on two int8 levels of x per
  // 32 values: every output within the levels' error (each value of x within 1 / 32512 of its 32 values' largest |x|,
  // times the weight's |values|) plus float32 rounding, and unlike the float32 tiles of "highest". Rows of x that are
  // no multiple of the kernel's 8 or of its tiles' 128, a last panel of fewer than 16 rows of w, more blocks than a
  // tile's 32, float16 and bfloat16 scales, outliers in x. 2 bits, groups of 16 and an x holding an infinity keep the
  // tiles.
  struct Case {
    int m, n, k;
  };
  const std::vector<Case> cases{{77, 37, 1152}, {33, 16, 128}, {133, 21, 256}};
  const std::vector<Dtype> dtypes{float32, float16, bfloat16};
  int turn = 0;
  for (int bits : {2, 4, 8}) {
    for (int gs : {16, 32, 64, 128}) {
      const auto [rows, n, k] = cases[static_cast<size_t>(turn) % cases.size()];
      const int m = std::max(rows, 128);  // fewer take the decode kernel (below)
      const Dtype dtype = dtypes[static_cast<size_t>(turn) % dtypes.size()];
      ++turn;
      SCOPED_TRACE("bits=" + std::to_string(bits) + " gs=" + std::to_string(gs) + " m=" + std::to_string(m) +
                   " n=" + std::to_string(n) + " k=" + std::to_string(k) + " " + std::string(dtype_name(dtype)));
      auto q = quantize(rand({n, k}, dtype, -1.0, 1.0), gs, bits);
      auto outliers = multiply(array(30.F), astype(less(rand({m, k}, float32, 0.0, 1.0), array(0.01F)), float32));
      auto x = add(rand({m, k}, float32, -1.0, 1.0), outliers);
      auto highest = quantized_matmul(x, q[0], q[1], q[2], true, gs, bits);
      highest.eval();
      const bool levels = int8_decode_built && (bits == 4 || bits == 8) && gs % 32 == 0;
      for (const char* precision : {"high", "medium"}) {
        const MatmulPrecisionScope scope(precision);
        auto out = quantized_matmul(x, q[0], q[1], q[2], true, gs, bits);
        auto excess = reference("W = dequant(b, c, d, " + std::to_string(gs) + ", " + std::to_string(bits) +
                                    ")\nx = a.astype(np.float64)\nref = x @ W.T\n"
                                    "top = np.abs(x).reshape(x.shape[0], -1, 32).max(-1)\n"
                                    "mass = np.abs(W).reshape(W.shape[0], -1, 32).sum(-1)\n"
                                    "bound = top / 32512 @ mass.T + 1e-6 * (np.abs(x) @ np.abs(W).T)\n"
                                    "out = np.array((np.abs(e.astype(np.float64) - ref) - bound).max())",
                                {x, q[0], q[1], q[2], out})[0];
        EXPECT_LE(as_doubles(excess)[0], 0.0) << precision;
        EXPECT_EQ(array_equal(out, highest).item<bool>(), !levels) << precision;
      }
      auto with_infinity =
          where(equal(reshape(arange(m * k), {m, k}), array(5)), array(std::numeric_limits<float>::infinity()), x);
      auto tiles = quantized_matmul(with_infinity, q[0], q[1], q[2], true, gs, bits);
      tiles.eval();
      const MatmulPrecisionScope scope("high");
      EXPECT_TRUE(
          array_equal(quantized_matmul(with_infinity, q[0], q[1], q[2], true, gs, bits), tiles, true).item<bool>());
    }
  }
  // From 32 to 127 rows, 2-, 4- and 8-bit codes stay on the decode kernel (units per row, two rows of x a pass):
  // float32's accuracy under "highest" (three levels), and under "high" its first two rows as they are alone.
  for (int bits : {2, 4, 8}) {
    auto q = quantize(rand({37, 640}, float32), 64, bits);
    auto x = rand({45, 640}, float32);
    auto error = reference("W = dequant(b, c, d, 64, " + std::to_string(bits) +
                               ")\nref = a.astype(np.float64) @ W.T\n"
                               "out = np.array(np.abs(e.astype(np.float64) - ref).max() / np.abs(ref).max())",
                           {x, q[0], q[1], q[2], quantized_matmul(x, q[0], q[1], q[2], true, 64, bits)})[0];
    EXPECT_LE(as_doubles(error)[0], 5e-6) << "bits=" << bits;
    const MatmulPrecisionScope scope("high");
    const auto first_two = slice(x, {0, 0}, {2, 640});
    EXPECT_TRUE(array_equal(slice(quantized_matmul(x, q[0], q[1], q[2], true, 64, bits), {0, 0}, {2, 37}),
                            quantized_matmul(first_two, q[0], q[1], q[2], true, 64, bits))
                    .item<bool>() ||
                !int8_decode_built)
        << "bits=" << bits;
  }
}

TEST_F(QuantizedTest, FloatDecodePath) {
  // NUVEC_QMM_INT8=0 sends decode products to the float path (the one CPUs without AVX-512 VNNI take): every width
  // and group size, one to three rows, both layouts of w, float32 and bfloat16.
  ASSERT_EQ(setenv("NUVEC_QMM_INT8", "0", 1), 0);
  for (int gs : group_sizes) {
    for (int bits : widths) {
      for (int m : {1, 3}) {
        for (auto dtype : {float32, bfloat16}) {
          SCOPED_TRACE("gs=" + std::to_string(gs) + " bits=" + std::to_string(bits) + " m=" + std::to_string(m) + " " +
                       std::string(dtype_name(dtype)));
          const int k = gs * pick(1, 3);
          auto w = rand({pick(1, 9), k}, dtype);
          auto q = quantize(w, gs, bits);
          auto x = rand({m, k}, dtype);
          auto out = quantized_matmul(x, q[0], q[1], q[2], true, gs, bits);
          auto tol = product_tol(dtype, k);
          EXPECT_TRUE(matches(out, reference(product_code(gs, bits, true), {x, q[0], q[1], q[2]})[0], tol.rtol,
                              tol.atol, false));
        }
      }
    }
  }
  ASSERT_EQ(unsetenv("NUVEC_QMM_INT8"), 0);
}

TEST_F(QuantizedTest, QuantizedMatmulBatchedWeightsAndEmpty) {
  // A stacked weight (3, N, K) against x (2, 1, M, K): batches broadcast as in matmul.
  auto w = rand({3, 16, 128}, float32);
  auto q = quantize(w, 32, 8);
  auto x = rand({2, 1, 2, 128}, float32);
  auto out = quantized_matmul(x, q[0], q[1], q[2], true, 32, 8);
  EXPECT_EQ(out.shape(), (Shape{2, 3, 2, 16}));
  EXPECT_TRUE(matches(out, reference(product_code(32, 8, true), {x, q[0], q[1], q[2]})[0], 1e-5, 1e-3));
  // No rows.
  auto w2 = quantize(rand({8, 64}, float32));
  auto none = quantized_matmul(zeros({0, 64}), w2[0], w2[1], w2[2]);
  EXPECT_EQ(none.shape(), (Shape{0, 8}));
  none.eval();
}

TEST_F(QuantizedTest, GatherQmm) {
  for (bool transpose : {true, false}) {
    for (int bits : {4, 3}) {
      SCOPED_TRACE("transpose=" + std::to_string(transpose) + " bits=" + std::to_string(bits));
      const int e = 4;
      const int k = 128;
      const int n = 64;
      auto w = rand(transpose ? Shape{e, n, k} : Shape{e, k, n}, float32);
      auto q = quantize(w, 64, bits);
      auto x = rand({3, 2, k}, float32);
      // Runs of one expert (0, 0 and 2, 2, 2) share a pass over its weights.
      auto lhs = array({0, 1, 2, 2, 0, 1}, {2, 3}, uint32);
      auto rhs = array({0, 0, 2, 2, 2, 3}, {2, 3}, int32);
      auto out = gather_qmm(x, q[0], q[1], q[2], lhs, rhs, transpose, 64, bits, "affine", true);
      EXPECT_EQ(out.shape(), (Shape{2, 3, 2, n}));
      const std::string code = "W = dequant(b, c, d, 64, " + std::to_string(bits) + ")\n" +
                               (transpose ? "W = np.swapaxes(W, -1, -2)\n" : "") +
                               "out = np.matmul(a.astype(np.float64)[e.astype(np.int64)], W[f.astype(np.int64)])"
                               ".astype(np.float32)";
      EXPECT_TRUE(matches(out, reference(code, {x, q[0], q[1], q[2], lhs, rhs})[0], 1e-5, 1e-3, false));
      // Only rhs_indices: lhs defaults to every batch of x, broadcast against them.
      auto rhs_only = gather_qmm(x, q[0], q[1], q[2], std::nullopt, array({3, 1, 1}, uint32), transpose, 64, bits);
      EXPECT_EQ(rhs_only.shape(), (Shape{3, 2, n}));
      EXPECT_TRUE(matches(rhs_only,
                          reference(code, {x, q[0], q[1], q[2], array({0, 1, 2}, uint32), array({3, 1, 1}, uint32)})[0],
                          1e-5, 1e-3, false));
    }
  }
  // Decode-shaped MoE with halves: 8 tokens of one row each, sorted experts.
  auto w = rand({4, 32, 64}, bfloat16);
  auto q = quantize(w, 32, 4);
  auto x = rand({8, 1, 64}, bfloat16);
  auto rhs = array({0, 0, 0, 1, 1, 3, 3, 3}, uint32);
  auto out = gather_qmm(x, q[0], q[1], q[2], std::nullopt, rhs, true, 32, 4, "affine", true);
  EXPECT_EQ(out.dtype(), bfloat16);
  const std::string code =
      "W = np.swapaxes(dequant(b, c, d, 32, 4), -1, -2)\nout = np.matmul(a.astype(np.float64), "
      "W[e.astype(np.int64)]).astype(np.float32)";
  auto tol = product_tol(bfloat16, 64);
  EXPECT_TRUE(matches(out, reference(code, {x, q[0], q[1], q[2], rhs})[0], tol.rtol, tol.atol, false));
  {
    // Prefill-shaped MoE under "high": 130 rows on one expert a pair, computed on x's levels (PrefillOnLevelsUnderHigh)
    // against that expert's codes, scales and biases.
    auto experts = quantize(rand({3, 48, 128}, float32), 64, 4);
    auto rows = rand({2, 130, 128}, float32);
    auto routed = [&] {
      return gather_qmm(rows, experts[0], experts[1], experts[2], array({1, 0}, uint32), array({2, 1}, uint32), true,
                        64, 4);
    };
    auto highest = routed();
    highest.eval();
    const MatmulPrecisionScope scope("high");
    auto levels = routed();
    auto error = reference(
        "W = np.swapaxes(dequant(b, c, d, 64, 4), -1, -2)\n"
        "ref = np.matmul(a.astype(np.float64)[[1, 0]], W[[2, 1]])\n"
        "out = np.array(np.abs(e.astype(np.float64) - ref).max() / np.abs(ref).max())",
        {rows, experts[0], experts[1], experts[2], levels})[0];
    EXPECT_LE(as_doubles(error)[0], 1e-4);
    EXPECT_EQ(array_equal(levels, highest).item<bool>(), !int8_decode_built);
  }
  // An index out of range fails at evaluation.
  auto bad = gather_qmm(x, q[0], q[1], q[2], std::nullopt, array({7}, uint32), true, 32, 4);
  EXPECT_NE(error_of([&] { bad.eval(); }).find("[gather_qmm] Index out of range"), std::string::npos);
}

TEST_F(QuantizedTest, Fp8) {
  // Random magnitudes over the whole range (log-uniform), and the edges: zero, subnormal ties, the largest value,
  // the saturation midpoint 464, overflow, infinities and NaN.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> values{
      0.F,  -0.F, 0x1p-10F, 3 * 0x1p-10F, 0x1p-9F, 0x1p-6F,          448.F, 464.F, 465.F, 480.F, 1e9F, -1e9F, inf,
      -inf, nan,  1.0625F,  1.1875F,      -240.F,  0x1p-7F * 1.0625F};
  std::uniform_real_distribution<float> exponent(-12.F, 10.F);
  std::bernoulli_distribution negative(0.5);
  for (int i = 0; i < 2000; ++i) {
    values.push_back((negative(rng_) ? -1.F : 1.F) * std::exp2(exponent(rng_)));
  }
  auto x = array(values.begin(), {static_cast<int>(values.size())}, float32);
  const std::string encode = R"(
mag = np.abs(a.astype(np.float64))
vals = np.array([(m / 8.0) * 2.0 ** -6 if e == 0 else (1 + m / 8.0) * 2.0 ** (e - 7)
                 for e in range(16) for m in range(8)])[:127]
hi = np.searchsorted(vals, mag).clip(1, 126)
lo = hi - 1
dlo = mag - vals[lo]
dhi = vals[hi] - mag
pick = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(lo % 2 == 0, lo, hi)))
pick = np.where(np.isnan(mag) | (mag >= 464), 126, pick)
out = (pick | np.where(np.signbit(a), 128, 0)).astype(np.uint8)
)";
  for (auto dtype : float_types) {
    SCOPED_TRACE(dtype_name(dtype));
    auto xd = astype(x, dtype);
    auto codes = to_fp8(xd);
    EXPECT_EQ(codes.dtype(), uint8);
    EXPECT_TRUE(matches(codes, reference(encode, {astype(xd, float32)})[0], 0, 0));
  }
  // Every code back to each floating dtype (0x7f and 0xff are NaN).
  auto all_codes = astype(arange(0, 256, 1, int32), uint8);
  const std::string decode = R"(
c = a.astype(np.int64)
e = (c >> 3) & 15
m = c & 7
v = np.where(e == 0, m / 8.0 * 2.0 ** -6, (1 + m / 8.0) * 2.0 ** (e - 7))
v = np.where((e == 15) & (m == 7), np.nan, v)
out = np.where(c >= 128, -v, v).astype(np.float32)
)";
  for (auto dtype : float_types) {
    auto back = from_fp8(all_codes, dtype);
    EXPECT_EQ(back.dtype(), dtype);
    EXPECT_TRUE(matches(back, reference(decode, {all_codes})[0], 0, 0, false));
  }
  // Strided input.
  auto strided = slice(x, {0}, {static_cast<int>(values.size())}, {3});
  EXPECT_TRUE(matches(to_fp8(strided), reference(encode, {strided})[0], 0, 0));
}

TEST_F(QuantizedTest, Errors) {
  auto w = rand({8, 128}, float32);
  auto q = quantize(w);
  auto x = rand({2, 128}, float32);
  EXPECT_EQ(error_of([&] {
              quantize(rand({4, 100}, float32));
            }),
            "[quantize] The last dimension of the matrix needs to be divisible by the quantization group size 64; "
            "got shape (4,100).");
  EXPECT_EQ(error_of([&] { quantize(w, 8); }),
            "[quantize] The requested group size 8 is not supported. The supported group sizes are 16, 32, 64 and "
            "128.");
  EXPECT_EQ(error_of([&] { quantize(w, 64, 7); }),
            "[quantize] The requested number of bits 7 is not supported. The supported bits are 2, 3, 4, 5, 6 and 8.");
  EXPECT_EQ(error_of([&] { quantize(rand({128}, float32)); }),
            "[quantize] The matrix to be quantized must have at least 2 dimensions; got shape (128).");
  EXPECT_EQ(error_of([&] {
              quantize(array({1, 2}, {1, 2}, int32), 32);
            }),
            "[quantize] Only real floating types can be quantized; got w of int32.");
  EXPECT_EQ(error_of([&] { quantize(w, 64, 4, "int4"); }),
            "[quantize] Invalid quantization mode 'int4'; expected one of 'affine', 'mxfp4', 'mxfp8', 'nvfp4'.");
  EXPECT_EQ(error_of([&] {
              quantized_matmul(rand({2, 64}, float32), q[0], q[1], q[2]);
            }),
            "[quantized_matmul] Last dimension of x with shape (2,64) must match the unpacked last dimension 128 of "
            "the quantized weight with shape (8,16) (transpose=true, bits=4).");
  EXPECT_EQ(error_of([&] { quantized_matmul(x, q[0], q[1], q[2], true, 32); }),
            "[quantized_matmul] The shapes of the weight and scales are incompatible based on bits and group_size; "
            "w.shape() == (8,16) and scales.shape() == (8,2) with group_size=32 and bits=4.");
  EXPECT_EQ(error_of([&] { quantized_matmul(x, astype(q[0], int32), q[1], q[2]); }),
            "[quantized_matmul] The weight matrix should be uint32; got int32.");
  EXPECT_EQ(error_of([&] { quantized_matmul(x, q[0], q[1], std::nullopt); }),
            "[quantized_matmul] Biases must be provided for affine quantization.");
  EXPECT_EQ(error_of([&] { quantized_matmul(x, q[0], astype(q[1], int32), q[2]); }),
            "[quantized_matmul] Scales and biases must be real floating point; got int32 and float32.");
  EXPECT_EQ(error_of([&] {
              quantized_matmul(x, q[0], q[1], slice(q[2], {0, 0}, {4, 2}));
            }),
            "[quantized_matmul] Scales and biases must have the same shape; got (8,2) and (4,2).");
  EXPECT_EQ(error_of([&] { dequantize(q[0], q[1], q[2], 64, 4, "affine", std::nullopt, int32); }),
            "[dequantize] The output dtype must be real floating point; got int32.");
  EXPECT_EQ(error_of([&] { gather_qmm(x, q[0], q[1], q[2], array({0.5F}), std::nullopt); }),
            "[gather_qmm] Got lhs_indices with invalid dtype float32; indices must be integral.");
  EXPECT_EQ(error_of([&] {
              to_fp8(array({1, 2}));
            }),
            "[to_fp8] Only real floating point inputs can be converted to fp8; got int32.");
  EXPECT_EQ(error_of([&] { from_fp8(array({1.F}), float32); }),
            "[from_fp8] Input must be uint8 fp8 codes; got float32.");
  EXPECT_EQ(error_of([&] { from_fp8(array({1}, uint8), int32); }),
            "[from_fp8] The output dtype must be real floating point; got int32.");
}

}  // namespace
}  // namespace nuvec::test
