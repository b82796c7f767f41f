// Products and dequantization of weights in GGML's block formats (q4_0, q8_0, q4_k, q6_k; and q4_0x8, q4_0x16,
// q4_kx16 and q6_kx16, q4_0, q4_k and q6_k with their rows interleaved in eights and sixteens), read from the blocks as
// a GGUF file holds them. The weights are random blocks (random codes, sub-block scales and mins, and random float16
// scales), decoded for reference by the GGUF reader's own decoder (io::detail::dequantize_blocks, a separate
// implementation) and multiplied in float64 here. Covered: the float32 matmul precision (two levels of x under "high"),
// the decode row counts of the integer kernel (1 to 9 rows of x, computed two at a time; 1 to 300 rows of w, computed
// four at a time, with 1 to 3 left over), the extreme codes (every code at its least or greatest, against x at the
// limits of its levels), the decoded-tile path (40 rows, and rows not a multiple of 64 values), half-precision x,
// infinities and tiny values in x, empty products, the gradient with respect to x, vmap, and the errors.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nuvec/io/gguf_quants.h"
#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec::test {
namespace {

struct Format {
  const char* mode;
  io::GGMLType type;
  int values;
  int bytes;
  std::vector<int> scale_offsets;  // the float16 fields of a block
};

const std::vector<Format>& formats() {
  static const std::vector<Format> all = {
      {"q4_0", io::GGMLType::Q4_0, 32, 18, {0}},
      {"q8_0", io::GGMLType::Q8_0, 32, 34, {0}},
      {"q4_k", io::GGMLType::Q4_K, 256, 144, {0, 2}},
      {"q6_k", io::GGMLType::Q6_K, 256, 210, {208}},
  };
  return all;
}

/// Random rows of blocks: random bytes, with each float16 scale drawn in [0.002, 0.05).
array random_blocks(const Format& f, int rows, int k, std::mt19937& rng) {
  const int row_bytes = k / f.values * f.bytes;
  std::vector<uint8_t> bytes(static_cast<size_t>(rows) * static_cast<size_t>(row_bytes));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.002F, 0.05F);
  for (auto& b : bytes) {
    b = static_cast<uint8_t>(byte(rng));
  }
  for (size_t block = 0; block < bytes.size() / static_cast<size_t>(f.bytes); ++block) {
    for (int offset : f.scale_offsets) {
      const float16_t h(scale(rng));
      bytes[block * f.bytes + static_cast<size_t>(offset)] = static_cast<uint8_t>(h.bits & 0xFF);
      bytes[block * f.bytes + static_cast<size_t>(offset) + 1] = static_cast<uint8_t>(h.bits >> 8);
    }
  }
  return array(bytes.begin(), {rows, row_bytes}, uint8);
}

/// The weight's values by the GGUF reader's decoder, in float64 on the host.
std::vector<double> reference_values(const Format& f, const array& blocks, int rows, int k) {
  const auto* info = io::detail::ggml_type_info(static_cast<uint32_t>(f.type));
  array values = io::detail::dequantize_blocks(*info, blocks.data<uint8_t>(), {rows, k});
  values.eval();
  const float* v = values.data<float>();
  return {v, v + static_cast<size_t>(rows) * static_cast<size_t>(k)};
}

/// The values of q4_k blocks without their mins (dmin taken as 0): each code times its scale, what the kernels meet
/// with x's levels; the other formats' values.
std::vector<double> scaled_codes(const Format& f, const array& blocks, int rows, int k) {
  if (f.type != io::GGMLType::Q4_K) {
    return reference_values(f, blocks, rows, k);
  }
  std::vector<uint8_t> bytes(blocks.data<uint8_t>(), blocks.data<uint8_t>() + blocks.size());
  for (size_t block = 0; block < bytes.size() / static_cast<size_t>(f.bytes); ++block) {
    bytes[block * static_cast<size_t>(f.bytes) + 2] = 0;
    bytes[block * static_cast<size_t>(f.bytes) + 3] = 0;
  }
  return reference_values(f, array(bytes.begin(), blocks.shape(), uint8), rows, k);
}

/// x (m x k) @ values.T in float64.
std::vector<double> reference_product(const std::vector<float>& x, const std::vector<double>& w, int m, int n, int k) {
  std::vector<double> out(static_cast<size_t>(m) * static_cast<size_t>(n));
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int t = 0; t < k; ++t) {
        s += static_cast<double>(x[static_cast<size_t>(i * k + t)]) * w[static_cast<size_t>(j) * k + t];
      }
      out[static_cast<size_t>(i) * n + j] = s;
    }
  }
  return out;
}

std::vector<float> random_x(int m, int k, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.F, 1.F);
  std::vector<float> x(static_cast<size_t>(m) * static_cast<size_t>(k));
  for (auto& v : x) {
    v = normal(rng);
  }
  if (!x.empty()) {
    x[x.size() / 3] *= 30.F;  // an outlier, as activations have
  }
  return x;
}

/// The largest |difference| over the largest |expected|.
double relative_error(const array& got, const std::vector<double>& expected) {
  array g = astype(got, float32);
  g.eval();
  const float* p = g.data<float>();
  double worst = 0;
  double scale = 1e-30;
  for (size_t i = 0; i < expected.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(p[i]) - expected[i]));
    scale = std::max(scale, std::fabs(expected[i]));
  }
  return worst / scale;
}

/// Each output of the integer kernels within the error the 8-bit levels of a float32 x allow (three, or two under the
/// float32 matmul precision "high"): each x_i is off by at most 1 / (127 * 2^8 per further level) of the largest |x|
/// of its 32 values (half that but where the last level reaches its bound), so out_j is off by at most sum_i |c_ji|
/// of that, plus float32 rounding of sum_i |w_ji x_i|. c is what meets x's levels: w itself, or where given the larger
/// of w and the codes times their scales (q4_k's values without their mins, which meet x's exact sums: larger than w
/// where the two nearly cancel).
::testing::AssertionResult within_level_error(const array& got, const std::vector<float>& x,
                                              const std::vector<double>& w, int m, int n, int k, int levels = 3,
                                              const std::vector<double>* scaled_codes = nullptr) {
  const std::vector<double>& c = scaled_codes != nullptr ? *scaled_codes : w;
  const double level_unit = 127.0 * std::ldexp(1.0, 8 * (levels - 1));
  array g = astype(got, float32);
  g.eval();
  const float* p = g.data<float>();
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double exact = 0;
      double bound = 0;
      double magnitude = 0;
      for (int t = 0; t < k; ++t) {
        double block_max = 0;
        for (int u = t / 32 * 32; u < t / 32 * 32 + 32; ++u) {
          block_max = std::max(block_max, std::fabs(static_cast<double>(x[static_cast<size_t>(i * k + u)])));
        }
        const double wv = w[static_cast<size_t>(j) * k + t];
        const double xv = x[static_cast<size_t>(i * k + t)];
        exact += xv * wv;
        bound += std::max(std::fabs(wv), std::fabs(c[static_cast<size_t>(j) * k + t])) * block_max / level_unit;
        magnitude += std::fabs(xv * wv);
      }
      const double error = std::fabs(static_cast<double>(p[i * n + j]) - exact);
      if (error > bound + 2e-6 * magnitude) {
        return ::testing::AssertionFailure() << "out[" << i << "," << j << "] = " << p[i * n + j] << ", expected "
                                             << exact << " within " << bound + 2e-6 * magnitude;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(QuantizedBlocks, DequantizeMatchesTheGGUFDecoder) {
  std::mt19937 rng(1);
  for (const auto& f : formats()) {
    const int k = 2 * 256;
    array blocks = random_blocks(f, 5, k, rng);
    const auto expected = reference_values(f, blocks, 5, k);
    array got = dequantize(blocks, f.mode);
    EXPECT_EQ(got.shape(), Shape({5, k})) << f.mode;
    EXPECT_EQ(got.dtype(), float32);
    EXPECT_EQ(relative_error(got, expected), 0.0) << f.mode;
    EXPECT_EQ(dequantize(blocks, f.mode, bfloat16).dtype(), bfloat16);
  }
}

TEST(QuantizedBlocks, ProductsEqualTheDecodedWeightsProduct) {
  std::mt19937 rng(2);
  for (const auto& f : formats()) {
    for (int k : {256, 768}) {
      for (int n : {1, 2, 3, 13, 300}) {
        array blocks = random_blocks(f, n, k, rng);
        const auto values = reference_values(f, blocks, n, k);
        for (int m : {1, 2, 3, 5, 9, 40}) {
          const auto x = random_x(m, k, rng);
          array out = quantized_matmul(array(x.begin(), {m, k}, float32), blocks, f.mode);
          ASSERT_EQ(out.shape(), Shape({m, n}));
          EXPECT_TRUE(within_level_error(out, x, values, m, n, k)) << f.mode << " m=" << m << " n=" << n << " k=" << k;
        }
      }
    }
  }
}

// Under "high" the decode kernels take two levels of x and under "medium" one (x rounded to 8 bits per 32 values, as
// llama.cpp's q8_0 activations): within their error, and different from "highest"'s three and from each other (the
// setting reaches the kernel); so does q8_0's prefill (40 rows), while the other formats' decoded tiles are float32
// under every precision.
TEST(QuantizedBlocks, MatmulPrecisionSetsTheLevels) {
  std::mt19937 rng(9);
  for (const auto& f : formats()) {
    const int n = 13;
    const int k = 512;
    array blocks = random_blocks(f, n, k, rng);
    const auto values = reference_values(f, blocks, n, k);
    for (int m : {1, 3, 40}) {
      const auto x = random_x(m, k, rng);
      const array xa(x.begin(), {m, k}, float32);
      // The prefill of q8_0, q4_k and q6_k computes on the levels too (with q4_0x8's: PrefillOnLevels).
      const bool tiles = m == 40 && std::string(f.mode) == "q4_0";
      array highest = quantized_matmul(xa, blocks, f.mode);
      highest.eval();
      std::vector<array> outs;
      for (const auto& [precision, levels] : {std::pair{"high", 2}, std::pair{"medium", 1}}) {
        const MatmulPrecisionScope scope(precision);
        outs.push_back(quantized_matmul(xa, blocks, f.mode));
        EXPECT_TRUE(within_level_error(outs.back(), x, values, m, n, k, levels))
            << f.mode << " " << precision << " m=" << m;
        EXPECT_EQ(array_equal(outs.back(), highest).item<bool>(), tiles || !int8_decode_built)
            << f.mode << " " << precision << " m=" << m;
      }
      EXPECT_EQ(array_equal(outs[0], outs[1]).item<bool>(), tiles || !int8_decode_built) << f.mode << " m=" << m;
    }
  }
}

// Every code at its format's least or greatest value (q4_0 -8 and 7, q8_0 -128 and 127, q6_k -32 and 31, q4_k 0 and
// 15 with the largest scales and mins), against x of equal magnitudes with an outlier: the integer sums, started at the
// offset times the sums of x, reach their largest magnitudes.
TEST(QuantizedBlocks, ExtremeCodesKeepTheLevelError) {
  std::mt19937 rng(7);
  for (const auto& f : formats()) {
    for (uint8_t fill : {uint8_t{0x00}, uint8_t{0xFF}, uint8_t{0x80}}) {
      const int n = 5;
      const int k = 512;
      array random = random_blocks(f, n, k, rng);
      random.eval();
      std::vector<uint8_t> bytes(random.data<uint8_t>(), random.data<uint8_t>() + random.size());
      for (size_t block = 0; block < bytes.size() / static_cast<size_t>(f.bytes); ++block) {
        for (int b = 0; b < f.bytes; ++b) {
          const bool scale = std::any_of(f.scale_offsets.begin(), f.scale_offsets.end(),
                                         [&](int offset) { return b == offset || b == offset + 1; });
          if (!scale) {
            bytes[block * static_cast<size_t>(f.bytes) + static_cast<size_t>(b)] = fill;
          }
        }
      }
      array blocks(bytes.begin(), random.shape(), uint8);
      const auto values = reference_values(f, blocks, n, k);
      const auto codes = scaled_codes(f, blocks, n, k);
      for (int m : {1, 3, 40}) {  // 40: the prefill on levels of q8_0 and q4_k
        std::vector<float> x(static_cast<size_t>(m * k));
        for (size_t i = 0; i < x.size(); ++i) {
          x[i] = i / 32 % 2 == 0 ? 3.F : -3.F;  // whole blocks of one sign: the lanes' sums do not cancel
        }
        x[7] = 1000.F;
        for (const auto& [precision, levels] :
             {std::pair{"highest", 3}, std::pair{"high", 2}, std::pair{"medium", 1}}) {
          const MatmulPrecisionScope scope(precision);
          array out = quantized_matmul(array(x.begin(), {m, k}, float32), blocks, f.mode);
          EXPECT_TRUE(within_level_error(out, x, values, m, n, k, levels))
              << f.mode << " " << precision << " fill=" << int{fill} << " m=" << m;
        }
      }
    }
  }
}

TEST(QuantizedBlocks, RowsOfOddBlockCountsAndBatchedX) {
  std::mt19937 rng(3);
  for (const auto& f : formats()) {
    if (f.values != 32) {
      continue;
    }
    const int k = 96;  // three blocks: not a whole number of the decode kernel's 64 values
    array blocks = random_blocks(f, 7, k, rng);
    const auto values = reference_values(f, blocks, 7, k);
    const auto x = random_x(6, k, rng);
    array out = quantized_matmul(array(x.begin(), {2, 3, k}, float32), blocks, f.mode);
    ASSERT_EQ(out.shape(), Shape({2, 3, 7}));
    EXPECT_LT(relative_error(out, reference_product(x, values, 6, 7, k)), 1e-5) << f.mode;
  }
}

TEST(QuantizedBlocks, HalfPrecisionXAndNonFiniteValues) {
  std::mt19937 rng(4);
  const auto& f = formats()[2];
  const int k = 256;
  array blocks = random_blocks(f, 4, k, rng);
  const auto values = reference_values(f, blocks, 4, k);
  auto x = random_x(2, k, rng);
  array x16 = astype(array(x.begin(), {2, k}, float32), float16);
  array out = quantized_matmul(x16, blocks, f.mode);
  EXPECT_EQ(out.dtype(), float16);
  std::vector<float> rounded(x.size());
  array x16f = astype(x16, float32);
  x16f.eval();
  std::copy_n(x16f.data<float>(), x.size(), rounded.begin());
  EXPECT_LT(relative_error(out, reference_product(rounded, values, 2, 4, k)), 2e-3);

  // An infinity in x gives infinities (or NaN where the weights' signs cancel it), never a finite number.
  x[5] = std::numeric_limits<float>::infinity();
  array inf_out = quantized_matmul(array(x.begin(), {2, k}, float32), blocks, f.mode);
  inf_out.eval();
  const auto expected = reference_product(x, values, 2, 4, k);
  for (int j = 0; j < 4; ++j) {
    const float got = inf_out.data<float>()[j];
    EXPECT_TRUE(std::isinf(got) || std::isnan(got)) << j;
    if (std::isinf(expected[static_cast<size_t>(j)])) {
      EXPECT_EQ(got, static_cast<float>(expected[static_cast<size_t>(j)])) << j;
    }
  }
}

// Blocks of x whose largest |x| is tiny (down to near the least normal float), beside ordinary ones: the levels'
// units would leave the normal floats (their reciprocals overflow), so such x takes the decoded-tile path.
TEST(QuantizedBlocks, TinyValuesInX) {
  std::mt19937 rng(8);
  for (const auto& f : formats()) {
    const int k = 256;
    array blocks = random_blocks(f, 6, k, rng);
    const auto values = reference_values(f, blocks, 6, k);
    for (float tiny : {1e-28F, 1e-33F, 1e-37F}) {
      auto x = random_x(2, k, rng);
      for (int i = 32; i < 64; ++i) {
        x[static_cast<size_t>(i)] *= tiny;  // row 0, second block
      }
      for (int i = k; i < 2 * k; ++i) {
        x[static_cast<size_t>(i)] *= tiny;  // all of row 1
      }
      array out = quantized_matmul(array(x.begin(), {2, k}, float32), blocks, f.mode);
      EXPECT_TRUE(within_level_error(out, x, values, 2, 6, k)) << f.mode << " tiny=" << tiny;
    }
  }
}

TEST(QuantizedBlocks, EmptyProductsAndGradients) {
  std::mt19937 rng(5);
  const auto& f = formats()[0];
  array blocks = random_blocks(f, 6, 64, rng);
  EXPECT_EQ(quantized_matmul(zeros({0, 64}), blocks, f.mode).shape(), Shape({0, 6}));

  // d/dx sum(x @ W.T * c) = c @ W, W decoded.
  const auto x = random_x(3, 64, rng);
  array xa(x.begin(), {3, 64}, float32);
  array c = random_array({3, 6}, float32, rng);
  auto grad_fn = grad([&](const array& v) { return sum(quantized_matmul(v, blocks, f.mode) * c); });
  array g = grad_fn(xa);
  array expected = matmul(c, dequantize(blocks, f.mode));
  EXPECT_TRUE(allclose(g, expected, 1e-5, 1e-5).item<bool>());

  // vmap over rows of x equals the product of all rows.
  auto mapped = vmap([&](const array& v) { return quantized_matmul(v, blocks, f.mode); })(xa);
  EXPECT_TRUE(allclose(mapped, quantized_matmul(xa, blocks, f.mode), 1e-6, 1e-6).item<bool>());
}

TEST(QuantizedBlocks, Errors) {
  std::mt19937 rng(6);
  array blocks = random_blocks(formats()[0], 2, 64, rng);
  EXPECT_EQ(error_of([&] {
              quantized_matmul(ones({1, 32}), blocks, "q4_0");
            }),
            "[quantized_matmul] Last dimension of x with shape (1,32) must match the 64 values of a row of the q4_0 "
            "weight with shape (2,36).");
  EXPECT_EQ(error_of([&] {
              quantized_matmul(ones({1, 64}), blocks, "q5_9");
            }),
            "[quantized_matmul] Invalid block format 'q5_9'; expected one of 'q4_0', 'q8_0', 'q4_k', 'q6_k', "
            "'q4_0x8', 'q4_kx16', 'q4_0x16', 'q6_kx16', 'q8_0x16'.");
  EXPECT_EQ(error_of([&] {
              quantized_matmul(ones({1, 64}), astype(blocks, int8), "q4_0");
            }),
            "[quantized_matmul] A weight in the block format 'q4_0' holds its blocks as uint8; got int8.");
  EXPECT_EQ(error_of([&] {
              dequantize(slice(blocks, {0, 0}, {2, 20}), "q4_0");
            }),
            "[dequantize] A weight in the block format 'q4_0' is a matrix of rows of whole 18-byte blocks; got shape "
            "(2,20).");
  EXPECT_EQ(error_of([&] {
              quantized_matmul(ones({1, 64}, int32), blocks, "q4_0");
            }),
            "[quantized_matmul] Only real floating types are supported; got x of int32.");
  EXPECT_EQ(error_of([&] {
              quantized_matmul(ones({1, 64}), blocks, ones({2, 2}), std::nullopt, true, 32, 4, "q4_0");
            }),
            "[quantized_matmul] The block format 'q4_0' keeps its scales in its blocks; call quantized_matmul with "
            "the weight and the mode only.");
  EXPECT_EQ(error_of([&] {
              quantized_matmul(ones({1, 64}), blocks, "q4_0x8");
            }),
            "[quantized_matmul] A weight in the layout 'q4_0x8' holds its rows in groups of 8; got shape (2,36).");
  EXPECT_EQ(error_of([&] { repack_blocks(random_blocks(formats()[1], 8, 64, rng), "q8_0", "q4_0x8"); }),
            "[repack_blocks] A weight in the block format 'q4_0x8' is a matrix of rows of whole 18-byte blocks; got "
            "shape (8,68).");
  EXPECT_EQ(error_of([&] {
              repack_blocks(random_blocks(formats()[0], 8, 544, rng), "q4_0", "q8_0");  // 306 bytes: both fit
            }),
            "[repack_blocks] No repacking from 'q4_0' to 'q8_0'; the layouts of one format are 'q4_0', 'q4_0x8' "
            "and 'q4_0x16', 'q8_0' and 'q8_0x16', 'q4_k' and 'q4_kx16', and 'q6_k' and 'q6_kx16'.");
  EXPECT_EQ(error_of([&] { repack_blocks(random_blocks(formats()[2], 8, 256, rng), "q4_k", "q4_kx16"); }),
            "[repack_blocks] A weight in the layout 'q4_kx16' holds its rows in groups of 16; got shape (8,144).");
  EXPECT_EQ(error_of([&] {
              repack_blocks(random_blocks(formats()[2], 16, 256, rng), "q4_k", "q4_0x8");  // 144 bytes: both fit
            }),
            "[repack_blocks] No repacking from 'q4_k' to 'q4_0x8'; the layouts of one format are 'q4_0', 'q4_0x8' "
            "and 'q4_0x16', 'q8_0' and 'q8_0x16', 'q4_k' and 'q4_kx16', and 'q6_k' and 'q6_kx16'.");
}

// q4_0x8 holds q4_0's bytes with each eight rows interleaved: repack_blocks moves every byte where
// quantization_mode.h says (checked here byte by byte) and back, and the products and values equal q4_0's exactly
// (the same integer sums, scaled and added in the same order) on the decode kernel's rows of x and the decoded
// tiles', at both matmul precisions, with the odd block counts that the decode kernel leaves to the tiles; a weight
// of no rows, and the gradient with respect to x.
TEST(QuantizedBlocks, InterleavedQ4_0EqualsQ4_0) {
  std::mt19937 rng(12);
  const Format& f = formats()[0];
  for (int k : {64, 96, 512}) {
    for (int n : {8, 16, 136}) {
      array blocks = random_blocks(f, n, k, rng);
      array interleaved = repack_blocks(blocks, "q4_0", "q4_0x8");
      ASSERT_EQ(interleaved.shape(), blocks.shape());
      blocks.eval();
      interleaved.eval();
      const uint8_t* from = blocks.data<uint8_t>();
      const uint8_t* to = interleaved.data<uint8_t>();
      const int count = k / 32;
      const int group_bytes = 8 * count * 18;
      bool moved = true;
      for (int r = 0; r < n; ++r) {
        const uint8_t* group = to + static_cast<ptrdiff_t>(r / 8) * group_bytes;
        for (int b = 0; b < count; ++b) {
          const uint8_t* block = from + static_cast<ptrdiff_t>(r) * count * 18 + static_cast<ptrdiff_t>(b) * 18;
          moved = moved && std::equal(block, block + 2, group + 16 * b + 2 * (r % 8)) &&
                  std::equal(block + 2, block + 18, group + 16 * count + 128 * b + 16 * (r % 8));
        }
      }
      EXPECT_TRUE(moved) << "n=" << n << " k=" << k;
      EXPECT_TRUE(array_equal(repack_blocks(interleaved, "q4_0x8", "q4_0"), blocks).item<bool>());
      EXPECT_TRUE(array_equal(dequantize(interleaved, "q4_0x8"), dequantize(blocks, "q4_0")).item<bool>());
      const auto values = reference_values(f, blocks, n, k);
      for (const std::string_view precision : {"highest", "high"}) {
        const MatmulPrecisionScope scope(precision.data());
        for (int m : {1, 2, 3, 40}) {
          const auto x = random_x(m, k, rng);
          const array xa(x.begin(), {m, k}, float32);
          array got = quantized_matmul(xa, interleaved, "q4_0x8");
          // From 24 rows under "high" q4_0x8 computes on x's levels where q4_0 decodes tiles (PrefillOnLevels).
          EXPECT_EQ(array_equal(got, quantized_matmul(xa, blocks, "q4_0")).item<bool>(),
                    m < 24 || precision == "highest" || !int8_decode_built)
              << precision << " m=" << m << " n=" << n << " k=" << k;
          EXPECT_TRUE(within_level_error(got, x, values, m, n, k, 2)) << precision << " m=" << m;
        }
      }
    }
  }
  // No rows; and the gradient with respect to x, through the dequantized weight.
  const array none = repack_blocks(zeros({0, 36}, uint8), "q4_0", "q4_0x8");
  EXPECT_EQ(quantized_matmul(ones({2, 64}), none, "q4_0x8").shape(), Shape({2, 0}));
  array blocks = random_blocks(f, 16, 64, rng);
  const array x = ones({3, 64});
  auto x_grad = [&](const char* mode, const array& w) {
    return grad([&](const array& v) { return sum(quantized_matmul(v, w, mode)); })(x);
  };
  EXPECT_TRUE(
      array_equal(x_grad("q4_0x8", repack_blocks(blocks, "q4_0", "q4_0x8")), x_grad("q4_0", blocks)).item<bool>());
}

// q4_0x16, q8_0x16, q4_kx16 and q6_kx16 hold q4_0's, q8_0's, q4_k's and q6_k's bytes with each sixteen rows
// interleaved by dwords (q6_kx16's in the order its kernel reads them, its d and q8_0x16's by halfwords after every
// block's dwords): repack_blocks moves
// every byte where quantization_mode.h says (checked here byte by byte) and back, also between q4_0's two grouped
// layouts, the values equal the plain format's, and the products, on their own kernels (a lane per row of w, a
// (sub-)block a chain), are within the levels' error of the exact product at each matmul precision, and equal to the
// plain format's where both decode tiles (under "highest" from 32 rows of x). Rows of x on the decode kernel (1 to
// 23, two at a time and one) and the prefill's (24 and more, no multiple of its eight, more blocks than a tile of
// x's), every code at its least or greatest against x of one sign per block (with three levels, q6_kx16's offset
// sums of 16 values and q8_0x16's sums of Q would pass 2^31 in the integer lanes), a weight of no rows, and the
// gradient with respect to x.
TEST(QuantizedBlocks, SixteenRowLayoutsEqualThePlainFormat) {
  std::mt19937 rng(14);
  struct Layout {
    const Format& plain;
    const char* grouped;
    int codes_from;  // a block's code bytes
    int codes_to;
    std::array<uint8_t, 2> extremes;  // code bytes at the least and the greatest code
  };
  for (const Layout& layout :
       {Layout{formats()[0], "q4_0x16", 2, 18, {0x00, 0xFF}}, Layout{formats()[1], "q8_0x16", 2, 34, {0x80, 0x7F}},
        Layout{formats()[2], "q4_kx16", 16, 144, {0x00, 0xFF}},
        Layout{formats()[3], "q6_kx16", 0, 192, {0x00, 0xFF}}}) {
    const Format& f = layout.plain;
    // Where byte t of row i's block b (of `count`) is in its group of sixteen rows.
    auto placed = [&](int i, int b, int t, int count) {
      if (f.bytes == 210) {
        // Per half h of a block: its two scale dwords, then per m its low-bit dwords m and 8 + m and its high-bit
        // dword m; every block's d after the blocks.
        int vector = 0;
        if (t < 128) {
          vector = 26 * (t / 64) + 2 + 3 * (t % 32 / 4) + t % 64 / 32;
        } else if (t < 192) {
          vector = 26 * ((t - 128) / 32) + 4 + 3 * ((t - 128) % 32 / 4);
        } else if (t < 208) {
          vector = 26 * ((t - 192) / 8) + (t - 192) % 8 / 4;
        } else {
          return 3328 * count + 32 * b + 2 * i + t - 208;
        }
        return 3328 * b + 64 * vector + 4 * i + t % 4;
      }
      if (f.bytes == 144) {
        return 2304 * b + 64 * (t / 4) + 4 * i + t % 4;
      }
      if (f.bytes == 34) {  // every block's code dwords, then every block's d
        return t < 2 ? 512 * count + 32 * b + 2 * i + t : 512 * b + 64 * ((t - 2) / 4) + 4 * i + (t - 2) % 4;
      }
      return t < 2 ? 288 * b + 2 * i + t : 288 * b + 32 + 64 * ((t - 2) / 4) + 4 * i + (t - 2) % 4;
    };
    struct Case {
      int n, k;
      std::vector<int> rows_of_x;
    };
    for (const auto& [n, k, rows_of_x] : {Case{16, 256, {1, 2, 3, 24, 40}}, Case{48, 768, {1, 5, 23, 33}},
                                          Case{32, 2560, {2, 77}}, Case{160, 512, {1, 3}}, Case{16, 96, {1, 3, 40}}}) {
      if (k % f.values != 0) {
        continue;
      }
      array blocks = random_blocks(f, n, k, rng);
      array interleaved = repack_blocks(blocks, f.mode, layout.grouped);
      ASSERT_EQ(interleaved.shape(), blocks.shape());
      blocks.eval();
      interleaved.eval();
      const uint8_t* from = blocks.data<uint8_t>();
      const uint8_t* to = interleaved.data<uint8_t>();
      const int count = k / f.values;
      bool moved = true;
      for (int r = 0; r < n; ++r) {
        const uint8_t* group = to + static_cast<ptrdiff_t>(r / 16) * 16 * count * f.bytes;
        for (int b = 0; b < count; ++b) {
          const uint8_t* block = from + (static_cast<ptrdiff_t>(r) * count + b) * f.bytes;
          for (int t = 0; t < f.bytes; ++t) {
            moved = moved && block[t] == group[placed(r % 16, b, t, count)];
          }
        }
      }
      EXPECT_TRUE(moved) << layout.grouped << " n=" << n << " k=" << k;
      EXPECT_TRUE(array_equal(repack_blocks(interleaved, layout.grouped, f.mode), blocks).item<bool>());
      EXPECT_TRUE(array_equal(dequantize(interleaved, layout.grouped), dequantize(blocks, f.mode)).item<bool>());
      if (f.bytes == 18) {
        EXPECT_TRUE(
            array_equal(repack_blocks(interleaved, layout.grouped, "q4_0x8"), repack_blocks(blocks, f.mode, "q4_0x8"))
                .item<bool>());
      }
      const auto values = reference_values(f, blocks, n, k);
      for (int m : rows_of_x) {
        const auto x = random_x(m, k, rng);
        const array xa(x.begin(), {m, k}, float32);
        for (const auto& [precision, levels] :
             {std::pair{"highest", 3}, std::pair{"high", 2}, std::pair{"medium", 1}}) {
          const MatmulPrecisionScope scope(precision);
          array got = quantized_matmul(xa, interleaved, layout.grouped);
          ASSERT_EQ(got.shape(), Shape({m, n}));
          EXPECT_TRUE(within_level_error(got, x, values, m, n, k, levels))
              << layout.grouped << " " << precision << " m=" << m << " n=" << n << " k=" << k;
          if (m >= 32 && std::string(precision) == "highest") {
            EXPECT_TRUE(array_equal(got, quantized_matmul(xa, blocks, f.mode)).item<bool>()) << "m=" << m;
          }
        }
      }
    }
    for (uint8_t fill : layout.extremes) {
      const int n = 16;
      const int k = 512;
      array random = random_blocks(f, n, k, rng);
      random.eval();
      std::vector<uint8_t> bytes(random.data<uint8_t>(), random.data<uint8_t>() + random.size());
      for (size_t block = 0; block < bytes.size() / static_cast<size_t>(f.bytes); ++block) {
        std::fill(bytes.begin() + static_cast<ptrdiff_t>(block * f.bytes + layout.codes_from),
                  bytes.begin() + static_cast<ptrdiff_t>(block * f.bytes + layout.codes_to), fill);
      }
      const array blocks(bytes.begin(), random.shape(), uint8);
      const auto values = reference_values(f, blocks, n, k);
      const auto codes = scaled_codes(f, blocks, n, k);
      for (int m : {1, 3, 40}) {
        std::vector<float> x(static_cast<size_t>(m * k));
        for (size_t i = 0; i < x.size(); ++i) {
          x[i] = i / 32 % 2 == 0 ? 3.F : -3.F;
        }
        x[7] = 1000.F;
        for (const auto& [precision, levels] :
             {std::pair{"highest", 3}, std::pair{"high", 2}, std::pair{"medium", 1}}) {
          const MatmulPrecisionScope scope(precision);
          array got = quantized_matmul(array(x.begin(), {m, k}, float32), repack_blocks(blocks, f.mode, layout.grouped),
                                       layout.grouped);
          EXPECT_TRUE(within_level_error(got, x, values, m, n, k, levels, &codes))
              << layout.grouped << " " << precision << " fill=" << int{fill} << " m=" << m;
        }
      }
    }
    const array none = repack_blocks(zeros({0, f.bytes * 8}, uint8), f.mode, layout.grouped);
    EXPECT_EQ(quantized_matmul(ones({2, f.values * 8}), none, layout.grouped).shape(), Shape({2, 0}));
    array blocks = random_blocks(f, 16, 256, rng);
    const array x = ones({3, 256});
    auto x_grad = [&](const char* mode, const array& w) {
      return grad([&](const array& v) { return sum(quantized_matmul(v, w, mode)); })(x);
    };
    EXPECT_TRUE(
        array_equal(x_grad(layout.grouped, repack_blocks(blocks, f.mode, layout.grouped)), x_grad(f.mode, blocks))
            .item<bool>());
  }
}

// The prefill of q4_0x8, q8_0 and q4_k (24 rows of x and more) and q6_k (32 and more) meets panels of 16 rows of w
// with x's levels, two under "high" and one under "medium", within their error; under "highest", or with an infinity
// in x, q4_0x8 decodes tiles as q4_0 does. Rows of x that are no multiple of the kernel's eight or of its tiles' 128,
// an odd number of groups (a last panel of eight rows), more blocks than a tile's 32, and every code at its least or
// greatest against x of one sign per block (the gathered formats': ExtremeCodesKeepTheLevelError).
TEST(QuantizedBlocks, PrefillOnLevels) {
  std::mt19937 rng(13);
  const Format& f = formats()[0];
  struct Case {
    int m, n, k;
  };
  for (const auto [m, n, k] :
       {Case{77, 24, 96}, Case{40, 8, 32}, Case{33, 8, 2560}, Case{40, 48, 512}, Case{133, 16, 64}, Case{26, 16, 64}}) {
    array blocks = random_blocks(f, n, k, rng);
    const array interleaved = repack_blocks(blocks, "q4_0", "q4_0x8");
    const auto values = reference_values(f, blocks, n, k);
    auto x = random_x(m, k, rng);
    const array xa(x.begin(), {m, k}, float32);
    for (const auto& [precision, levels] : {std::pair{"highest", 3}, std::pair{"high", 2}, std::pair{"medium", 1}}) {
      const MatmulPrecisionScope scope(precision);
      array got = quantized_matmul(xa, interleaved, "q4_0x8");
      EXPECT_TRUE(within_level_error(got, x, values, m, n, k, levels)) << precision << " m=" << m << " n=" << n;
      EXPECT_EQ(array_equal(got, quantized_matmul(xa, blocks, "q4_0")).item<bool>(),
                std::string(precision) == "highest" || !int8_decode_built)
          << precision << " m=" << m << " n=" << n;
    }
    x[5] = std::numeric_limits<float>::infinity();
    const array with_infinity(x.begin(), {m, k}, float32);
    const MatmulPrecisionScope scope("medium");
    EXPECT_TRUE(array_equal(quantized_matmul(with_infinity, interleaved, "q4_0x8"),
                            quantized_matmul(with_infinity, blocks, "q4_0"), true)
                    .item<bool>())
        << "m=" << m << " n=" << n;
  }
  // The prefill of q8_0, q4_k and q6_k: panels of 16 rows gathered from the rows, the last one short (25 rows of x:
  // q6_k's decode kernel).
  for (const Format& gathered : {formats()[1], formats()[2], formats()[3]}) {
    for (const auto [m, n, k] : {Case{77, 37, 256}, Case{33, 16, 2560}, Case{133, 16, 256}, Case{25, 37, 256}}) {
      array blocks = random_blocks(gathered, n, k, rng);
      const auto values = reference_values(gathered, blocks, n, k);
      const auto x = random_x(m, k, rng);
      for (const auto& [precision, levels] : {std::pair{"high", 2}, std::pair{"medium", 1}}) {
        const MatmulPrecisionScope scope(precision);
        EXPECT_TRUE(within_level_error(quantized_matmul(array(x.begin(), {m, k}, float32), blocks, gathered.mode), x,
                                       values, m, n, k, levels))
            << gathered.mode << " " << precision << " m=" << m << " n=" << n;
      }
    }
  }
  for (uint8_t fill : {uint8_t{0x00}, uint8_t{0xFF}}) {
    const int n = 16;
    const int k = 256;
    array random = random_blocks(f, n, k, rng);
    random.eval();
    std::vector<uint8_t> bytes(random.data<uint8_t>(), random.data<uint8_t>() + random.size());
    for (size_t block = 0; block < bytes.size() / 18; ++block) {
      std::fill_n(bytes.begin() + static_cast<ptrdiff_t>(block * 18 + 2), 16, fill);
    }
    const array blocks(bytes.begin(), random.shape(), uint8);
    const auto values = reference_values(f, blocks, n, k);
    std::vector<float> x(static_cast<size_t>(40 * k));
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = i / 32 % 2 == 0 ? 3.F : -3.F;
    }
    x[7] = 1000.F;
    for (const auto& [precision, levels] : {std::pair{"high", 2}, std::pair{"medium", 1}}) {
      const MatmulPrecisionScope scope(precision);
      array got =
          quantized_matmul(array(x.begin(), {40, k}, float32), repack_blocks(blocks, "q4_0", "q4_0x8"), "q4_0x8");
      EXPECT_TRUE(within_level_error(got, x, values, 40, n, k, levels)) << precision << " fill=" << int{fill};
    }
  }
}

}  // namespace
}  // namespace nuvec::test
