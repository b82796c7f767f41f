// Quantized layers in GGML's block formats: their parameters (the uint8 rows of blocks, no scales or biases), a
// zero start, their outputs against the block-format ops on the same weight (the ops themselves are checked against
// the GGUF reader's decoder in tests/cpu/quantized_blocks_test.cpp), layers repacked into grouped layouts, whole or a
// slice of rows at a time, and an embedding reading its rows out of their groups.

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "nuvec/nn/nn.h"
#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using test::error_of;

/// Random q8_0 blocks (a float16 scale of 1/64, random codes): rows x k values.
array random_q8_0(int rows, int k, std::mt19937& rng) {
  std::vector<uint8_t> bytes(static_cast<size_t>(rows) * static_cast<size_t>(k / 32 * 34));
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = i % 34 == 0 ? 0x00 : i % 34 == 1 ? 0x24 : static_cast<uint8_t>(rng() & 0xFF);  // 0x2400 = 1/64
  }
  return array(bytes.begin(), {rows, k / 32 * 34}, uint8);
}

std::map<std::string, Dtype> parameter_dtypes(const nn::Module& m) {
  std::map<std::string, Dtype> out;
  for (const auto& [name, p] : m.parameters()) {
    out.emplace(name, p.dtype());
  }
  return out;
}

TEST(QuantizedBlockLayers, LinearHoldsTheBlocksAndComputesWithThem) {
  std::mt19937 rng(1);
  nn::QuantizedLinear layer(64, 5, true, 32, 8, "q8_0");
  EXPECT_EQ(parameter_dtypes(layer), (std::map<std::string, Dtype>{{"weight", uint8}, {"bias", float32}}));
  EXPECT_EQ(layer.weight.shape(), Shape({5, 68}));
  EXPECT_EQ(layer.mode(), "q8_0");
  array x = test::random_array({2, 3, 64}, float32, rng);
  // A fresh layer's weight is zero.
  EXPECT_TRUE(array_equal(layer.forward(x), broadcast_to(*layer.bias, {2, 3, 5})).item<bool>());
  layer.weight = random_q8_0(5, 64, rng);
  layer.update(nn::Params{{"weight", layer.weight}});
  array expected = quantized_matmul(x, layer.weight, "q8_0") + *layer.bias;
  EXPECT_TRUE(allclose(layer.forward(x), expected, 1e-6, 1e-6).item<bool>());
  EXPECT_TRUE(
      allclose(layer.forward(x), matmul(x, transpose(dequantize(layer.weight, "q8_0"))) + *layer.bias, 1e-4, 1e-4)
          .item<bool>());
}

TEST(QuantizedBlockLayers, EmbeddingLooksUpAndDecodesRows) {
  std::mt19937 rng(2);
  nn::QuantizedEmbedding embedding(7, 64, 32, 8, "q8_0");
  EXPECT_EQ(parameter_dtypes(embedding), (std::map<std::string, Dtype>{{"weight", uint8}}));
  embedding.weight = random_q8_0(7, 64, rng);
  embedding.update(nn::Params{{"weight", embedding.weight}});
  array ids(std::vector<int32_t>{3, 0, 6, 6, 1, 2}.begin(), {2, 3}, int32);
  array rows = embedding.forward(ids);
  EXPECT_EQ(rows.shape(), Shape({2, 3, 64}));
  EXPECT_TRUE(array_equal(rows, take(dequantize(embedding.weight, "q8_0"), ids, 0)).item<bool>());
  EXPECT_EQ(embedding.forward(array(4)).shape(), Shape({64}));
  array x = test::random_array({3, 64}, float32, rng);
  EXPECT_TRUE(allclose(embedding.as_linear(x), quantized_matmul(x, embedding.weight, "q8_0"), 1e-6, 1e-6).item<bool>());
}

// A q4_0 layer repacked into q4_0x8 (its rows interleaved in eights) takes the mode and computes the same outputs.
TEST(QuantizedBlockLayers, LinearRepacksIntoInterleavedRows) {
  std::mt19937 rng(3);
  nn::QuantizedLinear layer(64, 16, true, 32, 4, "q4_0");
  std::vector<uint8_t> bytes(static_cast<size_t>(16 * 36));
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = i % 18 == 0 ? 0x00 : i % 18 == 1 ? 0x24 : static_cast<uint8_t>(rng() & 0xFF);  // scales 1/64
  }
  layer.weight = array(bytes.begin(), {16, 36}, uint8);
  array x = test::random_array({3, 64}, float32, rng);
  array before = layer.forward(x);
  before.eval();
  layer.repack("q4_0x8");
  EXPECT_EQ(layer.mode(), "q4_0x8");
  EXPECT_EQ(layer.weight.shape(), Shape({16, 36}));
  EXPECT_TRUE(array_equal(layer.forward(x), before).item<bool>());
  EXPECT_TRUE(
      array_equal(layer.weight, repack_blocks(array(bytes.begin(), {16, 36}, uint8), "q4_0", "q4_0x8")).item<bool>());
}

// A q4_k layer repacked into q4_kx16 (its rows interleaved in sixteens) likewise.
TEST(QuantizedBlockLayers, Q4_KLinearRepacksIntoInterleavedRows) {
  std::mt19937 rng(4);
  nn::QuantizedLinear layer(256, 32, false, 256, 4, "q4_k");
  std::vector<uint8_t> bytes(static_cast<size_t>(32 * 144));
  for (size_t i = 0; i < bytes.size(); ++i) {
    const size_t at = i % 144;
    bytes[i] = at == 0 || at == 2 ? 0x00 : at == 1 || at == 3 ? 0x24 : static_cast<uint8_t>(rng() & 0xFF);
  }
  layer.weight = array(bytes.begin(), {32, 144}, uint8);
  array x = test::random_array({3, 256}, float32, rng);
  const test::MatmulPrecisionScope scope("highest");
  array before = layer.forward(x);
  before.eval();
  layer.repack("q4_kx16");
  EXPECT_EQ(layer.mode(), "q4_kx16");
  EXPECT_EQ(layer.weight.shape(), Shape({32, 144}));
  EXPECT_TRUE(allclose(layer.forward(x), before, 1e-5, 1e-5).item<bool>());
  EXPECT_TRUE(
      array_equal(layer.weight, repack_blocks(array(bytes.begin(), {32, 144}, uint8), "q4_k", "q4_kx16")).item<bool>());
}

// An embedding whose rows are grouped (q6_kx16, q8_0x16, q4_0x16, and q4_0x8 whose pieces go one after another over the
// whole row) reads each row back out of its group: the same rows as the plain table, for ids anywhere in their groups,
// repeated, in any shape, and none; as the output layer of tied embeddings it computes the plain table's product.
TEST(QuantizedBlockLayers, EmbeddingReadsRowsOfGroupedLayouts) {
  std::mt19937 rng(5);
  struct Table {
    const char* plain;
    const char* grouped;
    int rows, dims, block_values, block_bytes, scale_at;
  };
  for (const Table& t : {Table{"q6_k", "q6_kx16", 48, 512, 256, 210, 208}, Table{"q4_0", "q4_0x8", 24, 64, 32, 18, 0},
                         Table{"q8_0", "q8_0x16", 48, 64, 32, 34, 0}, Table{"q4_0", "q4_0x16", 32, 96, 32, 18, 0}}) {
    const int row_bytes = t.dims / t.block_values * t.block_bytes;
    std::vector<uint8_t> bytes(static_cast<size_t>(t.rows * row_bytes));
    for (size_t i = 0; i < bytes.size(); ++i) {
      const auto at = static_cast<int>(i % static_cast<size_t>(t.block_bytes));
      bytes[i] = at == t.scale_at ? 0x00 : at == t.scale_at + 1 ? 0x24 : static_cast<uint8_t>(rng() & 0xFF);
    }
    nn::QuantizedEmbedding plain(t.rows, t.dims, t.block_values, 4, t.plain);
    plain.weight = array(bytes.begin(), {t.rows, row_bytes}, uint8);
    nn::QuantizedEmbedding grouped(t.rows, t.dims, t.block_values, 4, t.plain);
    grouped.weight = plain.weight;
    grouped.repack(t.grouped);
    EXPECT_EQ(grouped.mode(), t.grouped);
    EXPECT_FALSE(array_equal(grouped.weight, plain.weight).item<bool>());
    const array ids(std::vector<int32_t>{0, 17, 15, 16, t.rows - 1, 17, 3, 8}.begin(), {2, 4}, int32);
    EXPECT_TRUE(array_equal(grouped.forward(ids), plain.forward(ids)).item<bool>()) << t.grouped;
    EXPECT_TRUE(array_equal(grouped.forward(array(9)), plain.forward(array(9))).item<bool>()) << t.grouped;
    EXPECT_EQ(grouped.forward(zeros({0, 3}, int32)).shape(), Shape({0, 3, t.dims}));
    const array x = test::random_array({2, t.dims}, float32, rng);
    EXPECT_TRUE(allclose(grouped.as_linear(x), plain.as_linear(x), 1e-4, 1e-4).item<bool>()) << t.grouped;

    // Repacked 16 rows at a time, each slice handed back once done (the last one shorter): the same layout.
    nn::QuantizedEmbedding sliced(t.rows, t.dims, t.block_values, 4, t.plain);
    sliced.weight = plain.weight;
    std::vector<array> done;
    sliced.repack(t.grouped, 16, [&](const array& rows) { done.push_back(rows); });
    EXPECT_EQ(sliced.mode(), t.grouped);
    EXPECT_TRUE(array_equal(sliced.weight, grouped.weight).item<bool>()) << t.grouped;
    ASSERT_EQ(done.size(), static_cast<size_t>((t.rows + 15) / 16)) << t.grouped;
    EXPECT_TRUE(array_equal(concatenate(done, 0), plain.weight).item<bool>()) << t.grouped;
    EXPECT_EQ(done.back().shape(0), t.rows % 16 == 0 ? 16 : t.rows % 16) << t.grouped;
  }
}

TEST(QuantizedBlockLayers, Errors) {
  EXPECT_EQ(error_of([] { nn::QuantizedLinear(96, 4, false, 256, 4, "q4_k"); }),
            "[quantize] the input size 96 must be a multiple of the q4_k block of 256 values.");
  EXPECT_EQ(error_of([] { nn::QuantizedLinear(64, 4, false, 32, 4, "q9_9"); }),
            "[quantize] Invalid quantization mode 'q9_9'; expected one of 'affine', 'mxfp4', 'mxfp8', 'nvfp4'.");
  EXPECT_EQ(error_of([] { nn::QuantizedLinear(64, 16, false, 64, 4).repack("q4_0x8"); }),
            "[QuantizedLinear] only a weight in a block format has other layouts; this one is 'affine'.");
  EXPECT_EQ(error_of([] { nn::QuantizedLinear(64, 16, false, 32, 8, "q8_0").repack("q4_0x8"); }),
            "[repack_blocks] A weight in the block format 'q4_0x8' is a matrix of rows of whole 18-byte blocks; got "
            "shape (16,68).");
  const auto sliced = [](const std::string& mode, int rows) {
    return error_of([&] {
      nn::QuantizedEmbedding table(48, 256, 256, 6, "q6_k");
      table.repack(mode, rows, [](const array&) {});
    });
  };
  // The slices' rows, then repack's checks on the whole weight.
  EXPECT_EQ(sliced("q4_0x16", 16),
            "[repack_blocks] A weight in the block format 'q4_0x16' is a matrix of rows of whole 18-byte blocks; got "
            "shape (48,210).");
  EXPECT_EQ(sliced("q6_kx16", 0),
            "[QuantizedEmbedding] repacking from 'q6_k' to 'q6_kx16' goes by a positive multiple of 16 rows; got 0.");
  EXPECT_EQ(sliced("q6_kx16", 12),
            "[QuantizedEmbedding] repacking from 'q6_k' to 'q6_kx16' goes by a positive multiple of 16 rows; got 12.");
}

}  // namespace
}  // namespace nuvec
