// Affine quantization with groups of 16 (GGUF's Q2_K, Q3_K and Q6_K scale 16 elements at a time). The products are
// checked against the float64 product with the weight dequantized here, from the bit stream's definition (value i of a
// row is bits [i * bits, (i + 1) * bits) of its little-endian words); the weights are random words with random scales
// and biases, so the check does not lean on quantize. Every width, both layouts, the decode row counts (1 to 3: the
// int8 and float decode kernels) and the dequantized-tile path (40 rows), gather_qmm, and quantize's round trip.

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec::test {
namespace {

constexpr int group = 16;
constexpr int widths[] = {2, 3, 4, 5, 6, 8};

/// A packed weight with its scales and biases, and its values in float64.
struct Packed {
  array w;
  array scales;
  array biases;
  std::vector<double> values;  // rows x cols
};

/// Values of rows x cols codes, `bits` wide, from the packed words' definition, in float64.
std::vector<double> dequantize_definition(const std::vector<uint32_t>& w, const std::vector<float>& scales,
                                          const std::vector<float>& biases, int rows, int cols, int bits) {
  const int words = cols * bits / 32;
  const int groups = cols / group;
  std::vector<double> values(static_cast<size_t>(rows * cols));
  for (int r = 0; r < rows; ++r) {
    for (int i = 0; i < cols; ++i) {
      uint64_t code = 0;
      for (int b = 0; b < bits; ++b) {
        const int64_t bit = int64_t{i} * bits + b;
        code |= static_cast<uint64_t>((w[r * words + bit / 32] >> (bit % 32)) & 1U) << b;
      }
      const auto g = static_cast<size_t>(r * groups + i / group);
      values[static_cast<size_t>(r * cols + i)] =
          static_cast<double>(scales[g]) * static_cast<double>(code) + static_cast<double>(biases[g]);
    }
  }
  return values;
}

/// The elements of an evaluated array of type T.
template <class T>
std::vector<T> elements(array a) {
  a.eval();
  return {a.data<T>(), a.data<T>() + a.size()};
}

class QuantizedGroup16Test : public ::testing::Test {
 protected:
  std::mt19937 rng_{16};

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  /// rows x cols values (cols a multiple of 32, so that every width fills whole words) of `bits`-wide codes.
  Packed random_packed(int rows, int cols, int bits) {
    const int words = cols * bits / 32;
    std::vector<uint32_t> w(static_cast<size_t>(rows * words));
    for (auto& word : w) {
      word = std::uniform_int_distribution<uint32_t>()(rng_);
    }
    const int groups = cols / group;
    std::vector<float> scales(static_cast<size_t>(rows * groups));
    std::vector<float> biases(scales.size());
    std::uniform_real_distribution<float> unit(-1.0F, 1.0F);
    for (size_t g = 0; g < scales.size(); ++g) {
      scales[g] = unit(rng_) / static_cast<float>(1 << bits);
      biases[g] = unit(rng_);
    }
    return {array(w.begin(), {rows, words}, uint32), array(scales.begin(), {rows, groups}, float32),
            array(biases.begin(), {rows, groups}, float32), dequantize_definition(w, scales, biases, rows, cols, bits)};
  }

  std::vector<float> random_floats(size_t n) {
    std::vector<float> v(n);
    std::uniform_real_distribution<float> dist(-2.0F, 2.0F);
    for (auto& x : v) {
      x = dist(rng_);
    }
    return v;
  }
};

/// x (m x k) times the float64 weight: transpose means w is (n, k), else (k, n).
std::vector<double> reference_product(const std::vector<float>& x, int m, int k, const Packed& p, int n,
                                      bool transpose) {
  std::vector<double> out(static_cast<size_t>(m * n), 0.0);
  for (int r = 0; r < m; ++r) {
    for (int c = 0; c < n; ++c) {
      double acc = 0;
      for (int i = 0; i < k; ++i) {
        const double w =
            transpose ? p.values[static_cast<size_t>(c * k + i)] : p.values[static_cast<size_t>(i * n + c)];
        acc += static_cast<double>(x[static_cast<size_t>(r * k + i)]) * w;
      }
      out[static_cast<size_t>(r * n + c)] = acc;
    }
  }
  return out;
}

/// |actual - expected| within a float32 product's error over k terms of size ~1.
::testing::AssertionResult close(const array& actual, const std::vector<double>& expected, int k) {
  array a = astype(actual, float32);
  a.eval();
  if (a.size() != expected.size()) {
    return ::testing::AssertionFailure() << "size " << a.size() << ", expected " << expected.size();
  }
  const double atol = 4e-6 * k;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double got = a.data<float>()[i];
    if (std::abs(got - expected[i]) > atol + 1e-5 * std::abs(expected[i])) {
      return ::testing::AssertionFailure() << "element " << i << ": " << got << ", expected " << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}

TEST_F(QuantizedGroup16Test, QuantizedMatmulEveryWidthAndPath) {
  for (const char* int8 : {"1", "0"}) {  // the int8 (VNNI) decode and the float decode
    setenv("NUVEC_QMM_INT8", int8, 1);
    for (int bits : widths) {
      for (bool transpose : {true, false}) {
        for (int m : {1, 2, 3, 40}) {
          SCOPED_TRACE(std::string("int8=") + int8 + " bits=" + std::to_string(bits) +
                       " transpose=" + std::to_string(transpose) + " m=" + std::to_string(m));
          const int k = transpose ? 32 * pick(1, 8) : pick(1, 40);
          const int n = transpose ? pick(1, 9) : 32 * pick(1, 8);
          const Packed p = transpose ? random_packed(n, k, bits) : random_packed(k, n, bits);
          const auto x = random_floats(static_cast<size_t>(m * k));
          const array xa(x.begin(), {m, k}, float32);
          const array out = quantized_matmul(xa, p.w, p.scales, p.biases, transpose, group, bits);
          EXPECT_EQ(out.shape(), (Shape{m, n}));
          EXPECT_TRUE(close(out, reference_product(x, m, k, p, n, transpose), k));
        }
      }
    }
  }
  unsetenv("NUVEC_QMM_INT8");
}

TEST_F(QuantizedGroup16Test, LongRowsAndHalfPrecisionScales) {
  // Rows of 4096 values (K-quant sized), and bfloat16 scales (the product computes in the promoted dtype).
  for (int bits : {2, 3, 6}) {
    SCOPED_TRACE("bits=" + std::to_string(bits));
    const int k = 4096;
    const int n = 24;
    const Packed p = random_packed(n, k, bits);
    const auto x = random_floats(static_cast<size_t>(2 * k));
    const array out = quantized_matmul(array(x.begin(), {2, k}, float32), p.w, p.scales, p.biases, true, group, bits);
    EXPECT_TRUE(close(out, reference_product(x, 2, k, p, n, true), k));
    const array half = quantized_matmul(array(x.begin(), {2, k}, float32), p.w, astype(p.scales, bfloat16),
                                        astype(p.biases, bfloat16), true, group, bits);
    EXPECT_EQ(half.dtype(), float32);
    EXPECT_EQ(half.shape(), (Shape{2, n}));
  }
}

TEST_F(QuantizedGroup16Test, GatherQmm) {
  const int bits = 6;
  const int k = 64;
  const int n = 5;
  std::vector<Packed> experts;
  for (int e = 0; e < 3; ++e) {
    experts.push_back(random_packed(n, k, bits));
  }
  const array w = stack({experts[0].w, experts[1].w, experts[2].w});
  const array s = stack({experts[0].scales, experts[1].scales, experts[2].scales});
  const array b = stack({experts[0].biases, experts[1].biases, experts[2].biases});
  const auto x = random_floats(static_cast<size_t>(4 * k));
  const array xa = reshape(array(x.begin(), {4, 1, k}, float32), {4, 1, k});
  const std::vector<uint32_t> route{2, 0, 2, 1};
  const array out = gather_qmm(xa, w, s, b, std::nullopt, array(route.begin(), {4}, uint32), true, group, bits);
  ASSERT_EQ(out.shape(), (Shape{4, 1, n}));
  for (int t = 0; t < 4; ++t) {
    const std::vector<float> row(x.begin() + t * k, x.begin() + (t + 1) * k);
    EXPECT_TRUE(
        close(slice(out, {t, 0, 0}, {t + 1, 1, n}), reference_product(row, 1, k, experts[route[t]], n, true), k));
  }
}

TEST_F(QuantizedGroup16Test, QuantizeRoundTrip) {
  for (int bits : widths) {
    SCOPED_TRACE("bits=" + std::to_string(bits));
    const int rows = pick(1, 5);
    const int cols = 32 * pick(1, 4);
    const auto v = random_floats(static_cast<size_t>(rows * cols));
    const array w(v.begin(), {rows, cols}, float32);
    const auto q = quantize(w, group, bits);
    ASSERT_EQ(q[0].shape(), (Shape{rows, cols * bits / 32}));
    ASSERT_EQ(q[1].shape(), (Shape{rows, cols / group}));
    // dequantize reads the stream as the definition does. Every value lies within 1.5 steps of its input: MLX's
    // rounding makes one end of a group exact, which can move the other end by up to a step.
    const auto scales = elements<float>(q[1]);
    const auto expected =
        dequantize_definition(elements<uint32_t>(q[0]), scales, elements<float>(q[2]), rows, cols, bits);
    const array deq = dequantize(q[0], q[1], q[2], group, bits);
    const auto got = elements<float>(deq);
    for (int r = 0; r < rows; ++r) {
      for (int i = 0; i < cols; ++i) {
        const auto at = static_cast<size_t>(r * cols + i);
        EXPECT_NEAR(got[at], expected[at], 1e-6) << "row " << r << " value " << i;
        const float step = std::abs(scales[static_cast<size_t>(r * cols / group + i / group)]);
        EXPECT_LE(std::abs(got[at] - v[at]), 1.5F * step + 1e-5F) << "row " << r << " value " << i;
      }
    }
    // quantized_matmul agrees with the product against the dequantized weight.
    const auto x = random_floats(static_cast<size_t>(cols));
    const array out = quantized_matmul(array(x.begin(), {1, cols}, float32), q[0], q[1], q[2], true, group, bits);
    const array product = matmul(array(x.begin(), {1, cols}, float32), transpose(deq));
    EXPECT_TRUE(allclose(out, product, 1e-5, 1e-4).item<bool>());
  }
}

TEST_F(QuantizedGroup16Test, ShapeErrors) {
  // 16 codes of 3 or 5 bits fill a word and a half: a row must hold a whole number of words.
  EXPECT_EQ(error_of([&] {
              quantize(zeros({2, 48}), group, 3);
            }),
            "[quantize] A row of 48 values of 3 bits must fill whole 32-bit words; got shape (2,48).");
  EXPECT_EQ(error_of([&] {
              quantize(zeros({2, 40}), group, 4);
            }),
            "[quantize] The last dimension of the matrix needs to be divisible by the quantization group size 16; got "
            "shape (2,40).");
}

}  // namespace
}  // namespace nuvec::test
