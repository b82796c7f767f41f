// The tensor-parallel layers on every rank (nuvec launch or mpirun runs this program; see tests/CMakeLists.txt).
// Every rank builds the same unsharded layer from the same seed, so each sharded result is checked against the
// single-process layer: an all-to-sharded output against this rank's columns of the unsharded output, a
// sharded-to-all output against the whole of it, and gradients against the slices of the unsharded gradients.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nuvec/nn/nn.h"
#include "nuvec/nuvec.h"

namespace nuvec::nn {
namespace {

distributed::Group world() { return distributed::init(true); }

/// The first feature of rank r when `sizes` are the ranks' shares.
int offset_of(const std::vector<int>& sizes, int r) {
  int offset = 0;
  for (int i = 0; i < r; ++i) {
    offset += sizes[static_cast<size_t>(i)];
  }
  return offset;
}

/// a[..., begin:end] along axis.
array columns(const array& a, int axis, int begin, int end) {
  Shape start(a.ndim(), 0);
  Shape stop = a.shape();
  start[static_cast<size_t>(axis)] = begin;
  stop[static_cast<size_t>(axis)] = end;
  return slice(a, start, stop);
}

/// The same random input on every rank.
array input(const Shape& shape, uint64_t seed) { return random::normal(shape, float32, 0.0F, 1.0F, random::key(seed)); }

void expect_close(const array& got, const array& want, const std::string& what, double tol = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_TRUE(allclose(got, want, tol, tol).item<bool>()) << what << "\ngot  " << got << "\nwant " << want;
}

std::shared_ptr<Linear> seeded_linear(int in, int out, bool bias, uint64_t seed) {
  random::seed(seed);
  auto linear = std::make_shared<Linear>(in, out, bias);
  eval(linear->weight);
  return linear;
}

TEST(TensorParallel, AllToShardedGivesThisRanksColumns) {
  const distributed::Group g = world();
  for (bool bias : {true, false}) {
    // 10 outputs do not divide by 4 ranks: the first ranks take one more.
    auto full = seeded_linear(12, 10, bias, 1);
    auto sharded = std::dynamic_pointer_cast<AllToShardedLinear>(shard_linear(*full, Sharding::all_to_sharded));
    ASSERT_TRUE(sharded);
    const int begin = offset_of(sharded->sizes(), g.rank());
    const int end = begin + sharded->sizes()[static_cast<size_t>(g.rank())];
    EXPECT_EQ(sharded->output_dims(), end - begin);
    EXPECT_EQ(sharded->total_output_dims(), 10);
    const array x = input({3, 5, 12}, 2);
    expect_close((*sharded)(x), columns((*full)(x), 2, begin, end), "all-to-sharded, bias " + std::to_string(bias));
  }
}

TEST(TensorParallel, ShardedToAllGivesTheWholeOutput) {
  const distributed::Group g = world();
  for (bool bias : {true, false}) {
    auto full = seeded_linear(14, 6, bias, 3);
    auto sharded = std::dynamic_pointer_cast<ShardedToAllLinear>(shard_linear(*full, Sharding::sharded_to_all));
    ASSERT_TRUE(sharded);
    const int begin = offset_of(sharded->sizes(), g.rank());
    const int end = begin + sharded->sizes()[static_cast<size_t>(g.rank())];
    const array x = input({4, 14}, 4);
    expect_close((*sharded)(columns(x, 1, begin, end)), (*full)(x), "sharded-to-all, bias " + std::to_string(bias));
  }
}

TEST(TensorParallel, GradientsThroughAnMLPPairAreTheSlicesOfTheUnshardedOnes) {
  const distributed::Group g = world();
  auto up = seeded_linear(8, 12, true, 5);
  auto down = seeded_linear(12, 6, true, 6);
  auto up_sharded = shard_linear(*up, Sharding::all_to_sharded);
  auto down_sharded = shard_linear(*down, Sharding::sharded_to_all);
  // The loss of (x, up.weight, up.bias, down.weight, down.bias) through a pair of layers.
  const auto loss_of = [](const std::shared_ptr<Linear>& a, const std::shared_ptr<Linear>& b) {
    return [a, b](const std::vector<array>& p) -> std::vector<array> {
      a->weight = p[1];
      a->bias = p[2];
      b->weight = p[3];
      b->bias = p[4];
      return {sum(square((*b)(tanh((*a)(p[0])))))};
    };
  };
  const array x = input({5, 8}, 7);
  const auto [full_loss, full_grads] =
      vjp(loss_of(up, down), {x, up->weight, *up->bias, down->weight, *down->bias}, {array(1.0F)});
  const auto [loss, grads] =
      vjp(loss_of(up_sharded, down_sharded),
          {x, up_sharded->weight, *up_sharded->bias, down_sharded->weight, *down_sharded->bias}, {array(1.0F)});
  expect_close(loss[0], full_loss[0], "loss");
  const int rows = up_sharded->output_dims();
  const int begin = g.rank() * rows;  // 12 divides by 2 and by 4
  expect_close(grads[0], full_grads[0], "d x (summed over the ranks)");
  expect_close(grads[1], columns(full_grads[1], 0, begin, begin + rows), "d up.weight");
  expect_close(grads[2], columns(full_grads[2], 0, begin, begin + rows), "d up.bias");
  expect_close(grads[3], columns(full_grads[3], 1, begin, begin + rows), "d down.weight");
  expect_close(grads[4], full_grads[4], "d down.bias");
}

TEST(TensorParallel, SegmentsSplitEachPartOfAFusedWeight) {
  const distributed::Group g = world();
  const int n = g.size();
  const int r = g.rank();
  // A fused q|k|v: 24 query rows, then 12 key and 12 value rows (each part split evenly by 1 to 4 ranks).
  auto fused = seeded_linear(6, 48, true, 8);
  const array x = input({2, 6}, 9);
  const array y = (*fused)(x);
  auto sharded = shard_linear(*fused, Sharding::all_to_sharded, std::vector<double>{0.5, 0.75});
  ASSERT_EQ(sharded->output_dims(), 48 / n);
  const array want =
      concatenate({columns(y, 1, r * 24 / n, (r + 1) * 24 / n), columns(y, 1, 24 + r * 12 / n, 24 + (r + 1) * 12 / n),
                   columns(y, 1, 36 + r * 12 / n, 36 + (r + 1) * 12 / n)},
                  1);
  expect_close((*sharded)(x), want, "fractions {0.5, 0.75}");
  // Two equal parts (a fused gate|up).
  auto two = shard_linear(*fused, Sharding::all_to_sharded, 2);
  const array want_two = concatenate(
      {columns(y, 1, r * 24 / n, (r + 1) * 24 / n), columns(y, 1, 24 + r * 24 / n, 24 + (r + 1) * 24 / n)}, 1);
  expect_close((*two)(x), want_two, "2 segments");
  // shard_inplace cuts the same rows of the module's own parameters.
  auto in_place = seeded_linear(6, 48, true, 8);
  shard_inplace(*in_place, Sharding::all_to_sharded, std::vector<double>{0.5, 0.75});
  expect_close(in_place->weight, sharded->weight, "shard_inplace weight");
  expect_close(*in_place->bias, *sharded->bias, "shard_inplace bias");
  // Segments that the group does not divide are refused with the segment's size: n + 1 segments of n + 1 rows.
  if (n > 1) {
    auto odd = seeded_linear(6, (n + 1) * (n + 1), false, 10);
    try {
      (void)shard_linear(*odd, Sharding::all_to_sharded, n + 1);
      ADD_FAILURE() << "expected an error";
    } catch (const error& e) {
      EXPECT_NE(std::string(e.what()).find("cannot shard the output size"), std::string::npos) << e.what();
    }
  }
}

TEST(TensorParallel, QuantizedFormsEqualTheUnshardedQuantizedLayer) {
  const distributed::Group g = world();
  // 128 inputs in groups of 32: whole groups for up to 4 ranks, unevenly on 3.
  auto linear = seeded_linear(128, 64, true, 11);
  QuantizedLinear full(*linear, 32, 4);
  const array x = input({3, 128}, 12);
  const array y = full(x);

  auto rows = std::dynamic_pointer_cast<QuantizedAllToShardedLinear>(shard_linear(full, Sharding::all_to_sharded));
  ASSERT_TRUE(rows);
  const int begin = offset_of(rows->sizes(), g.rank());
  const int end = begin + rows->sizes()[static_cast<size_t>(g.rank())];
  expect_close((*rows)(x), columns(y, 1, begin, end), "quantized all-to-sharded", 1e-4);

  auto cols = std::dynamic_pointer_cast<QuantizedShardedToAllLinear>(shard_linear(full, Sharding::sharded_to_all));
  ASSERT_TRUE(cols);
  const int in_begin = offset_of(cols->sizes(), g.rank());
  const int in_end = in_begin + cols->sizes()[static_cast<size_t>(g.rank())];
  // The 4 groups of a row split as evenly as whole groups go (2, 1, 1 on 3 ranks).
  EXPECT_EQ(in_end - in_begin, 32 * (4 / g.size() + (g.rank() < 4 % g.size() ? 1 : 0)));
  expect_close((*cols)(columns(x, 1, in_begin, in_end)), y, "quantized sharded-to-all", 1e-4);

  // shard_inplace cuts the packed weight, the scales and the biases at the same features.
  QuantizedLinear in_place(*linear, 32, 4);
  shard_inplace(in_place, Sharding::sharded_to_all);
  expect_close(astype(in_place.weight, float32), astype(cols->weight, float32), "shard_inplace packed weight");
  expect_close(in_place.scales, cols->scales, "shard_inplace scales");
  expect_close(in_place.biases, cols->biases, "shard_inplace biases");

  // Quantizing a sharded float layer gives the quantized sharded layer (whole groups stay whole: the float layer is
  // cut at the quantized one's sizes, which an even split of 128 features on 3 ranks would not give).
  Sequential model({shard_linear(*linear, Sharding::sharded_to_all, 1, g, cols->sizes())});
  quantize(model, 32, 4);
  auto quantized = std::dynamic_pointer_cast<QuantizedShardedToAllLinear>(model[0]);
  ASSERT_TRUE(quantized) << model[0]->type_name();
  expect_close((*quantized)(columns(x, 1, in_begin, in_end)), y, "quantize of a sharded-to-all layer", 1e-4);
}

// A q4_0x8, q4_0x16, q8_0x16, q4_kx16 or q6_kx16 layer (rows interleaved in eights or sixteens) shards as its plain
// format would, by shard_linear and by shard_inplace, and its shares go back to the grouped layout where their rows
// come in whole groups (64 rows: 32 each on 2 ranks, 22 or 21 on 3).
TEST(TensorParallel, InterleavedRowsShardAsThePlainFormat) {
  const distributed::Group g = world();
  struct Layout {
    const char* plain;
    const char* grouped;
    int rows_per_group, values, bytes, in;
    std::vector<int> scale_bytes;  // float16 scales (1/64) at these offsets of a block
  };
  for (const Layout& l :
       {Layout{"q4_0", "q4_0x8", 8, 32, 18, 128, {0}}, Layout{"q4_0", "q4_0x16", 16, 32, 18, 128, {0}},
        Layout{"q8_0", "q8_0x16", 16, 32, 34, 128, {0}}, Layout{"q4_k", "q4_kx16", 16, 256, 144, 1024, {0, 2}},
        Layout{"q6_k", "q6_kx16", 16, 256, 210, 1024, {208}}}) {
    SCOPED_TRACE(l.grouped);
    const int row_bytes = l.in / l.values * l.bytes;
    std::vector<uint8_t> bytes(static_cast<size_t>(64 * row_bytes));
    uint32_t state = 7;
    for (size_t i = 0; i < bytes.size(); ++i) {
      state = state * 1664525U + 1013904223U;  // the same bytes on every rank
      bytes[i] = static_cast<uint8_t>(state >> 24);
    }
    for (size_t block = 0; block < bytes.size() / static_cast<size_t>(l.bytes); ++block) {
      for (int at : l.scale_bytes) {
        bytes[block * static_cast<size_t>(l.bytes) + static_cast<size_t>(at)] = 0x00;
        bytes[block * static_cast<size_t>(l.bytes) + static_cast<size_t>(at) + 1] = 0x24;
      }
    }
    QuantizedLinear full(l.in, 64, true, l.values, 4, l.plain);
    full.update(Params{{"weight", array(bytes.begin(), {64, row_bytes}, uint8)}, {"bias", input({64}, 21)}});
    const array x = input({3, l.in}, 22);
    const array y = full(x);
    QuantizedLinear interleaved(l.in, 64, true, l.values, 4, l.grouped);
    interleaved.update(Params{{"weight", repack_blocks(full.weight, l.plain, l.grouped)}, {"bias", *full.bias}});

    auto rows =
        std::dynamic_pointer_cast<QuantizedAllToShardedLinear>(shard_linear(interleaved, Sharding::all_to_sharded));
    ASSERT_TRUE(rows);
    const int count = rows->sizes()[static_cast<size_t>(g.rank())];
    EXPECT_EQ(rows->mode(), count % l.rows_per_group == 0 ? l.grouped : l.plain);
    const int begin = offset_of(rows->sizes(), g.rank());
    expect_close((*rows)(x), columns(y, 1, begin, begin + count), "interleaved all-to-sharded", 1e-4);

    auto cols =
        std::dynamic_pointer_cast<QuantizedShardedToAllLinear>(shard_linear(interleaved, Sharding::sharded_to_all));
    ASSERT_TRUE(cols);
    EXPECT_EQ(cols->mode(), l.grouped);
    const int in_begin = offset_of(cols->sizes(), g.rank());
    const int in_end = in_begin + cols->sizes()[static_cast<size_t>(g.rank())];
    expect_close((*cols)(columns(x, 1, in_begin, in_end)), y, "interleaved sharded-to-all", 1e-4);

    shard_inplace(interleaved, Sharding::sharded_to_all);
    EXPECT_EQ(interleaved.mode(), l.grouped);
    EXPECT_TRUE(array_equal(interleaved.weight, cols->weight).item<bool>());
  }
}

}  // namespace
}  // namespace nuvec::nn

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  nuvec::distributed::init(true);
  return RUN_ALL_TESTS();
}
