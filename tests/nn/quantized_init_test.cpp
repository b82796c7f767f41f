// Quantized layers against their float layers computed from the dequantized weights, quantize() swapping layers in
// a tree (names as MLX checkpoints: weight, scales, biases), and the initializers' shapes and statistics.

#include <gtest/gtest.h>

#include <cmath>

#include "tests/nn/torch_reference.h"

namespace nuvec {
namespace {

using test::error_of;

class TinyLM : public nn::Module {
 public:
  TinyLM()
      : embed(std::make_shared<nn::Embedding>(16, 64)),
        proj(std::make_shared<nn::Linear>(64, 32)),
        head(std::make_shared<nn::Linear>(32, 16)) {
    register_module("embed", embed);
    register_module("proj", proj);
    register_module("head", head);
  }
  [[nodiscard]] std::string type_name() const override { return "TinyLM"; }
  array forward(const array& tokens) { return head->forward(proj->forward(embed->forward(tokens))); }

  std::shared_ptr<nn::Embedding> embed;
  std::shared_ptr<nn::Linear> proj;
  std::shared_ptr<nn::Linear> head;
};

TEST(Quantized, LinearMatchesItsDequantizedWeights) {
  nn::Linear linear(128, 24);
  nn::QuantizedLinear q(linear, 64, 4);
  EXPECT_EQ(q.weight.dtype(), uint32);
  EXPECT_EQ(q.weight.shape(), (Shape{24, 128 * 4 / 32}));
  EXPECT_EQ(q.scales.shape(), (Shape{24, 2}));
  auto x = random::normal({3, 5, 128});
  auto w = dequantize(q.weight, q.scales, q.biases, 64, 4);
  auto expected = matmul(x, transpose(w)) + *q.bias;
  EXPECT_TRUE(allclose(q(x), expected, 1e-4, 1e-4).item<bool>());
  // Quantization error stays small against the float layer.
  EXPECT_LT(max(abs(q(x) - linear(x))).item<float>(), 0.5F);
  // Only the float bias trains.
  auto trainable = q.trainable_parameters();
  ASSERT_EQ(trainable.size(), 1U);
  EXPECT_EQ(trainable[0].first, "bias");
  EXPECT_EQ(error_of([] { nn::QuantizedLinear(100, 8); }),
            "[QuantizedLinear] the input size 100 must be a multiple of group_size 64.");
}

TEST(Quantized, EmbeddingLooksUpDequantizedRows) {
  nn::Embedding embedding(10, 64);
  nn::QuantizedEmbedding q(embedding, 32, 8);
  auto idx = array({3, 0, 9, 3}, {2, 2});
  auto table = dequantize(q.weight, q.scales, q.biases, 32, 8);
  EXPECT_TRUE(allclose(q(idx), take(table, idx, 0)).item<bool>());
  EXPECT_LT(max(abs(q(idx) - embedding(idx))).item<float>(), 0.05F);
  auto h = random::normal({2, 64});
  EXPECT_TRUE(allclose(q.as_linear(h), matmul(h, transpose(table)), 1e-4, 1e-4).item<bool>());
}

TEST(Quantized, QuantizeSwapsLayersInPlace) {
  TinyLM model;
  auto tokens = array({1, 5, 7}, {1, 3});
  auto before = model.forward(tokens);
  nn::quantize(model, 32, 8, [](const std::string& path, nn::Module&) { return path != "head"; });
  EXPECT_EQ(model.embed->type_name(), "QuantizedEmbedding");
  EXPECT_EQ(model.proj->type_name(), "QuantizedLinear");
  EXPECT_EQ(model.head->type_name(), "Linear");
  EXPECT_EQ(model.proj->path(), "proj");
  auto params = model.parameters();
  ASSERT_NE(nn::find_param(params, "proj.scales"), nullptr);
  ASSERT_NE(nn::find_param(params, "embed.biases"), nullptr);
  EXPECT_EQ(nn::find_param(params, "proj.weight")->dtype(), uint32);
  EXPECT_LT(max(abs(model.forward(tokens) - before)).item<float>(), 0.05F);
  // A second pass quantizes what is left (head's input 32 divides by 32) and leaves quantized layers alone.
  nn::quantize(model, 32, 4);
  EXPECT_EQ(model.head->type_name(), "QuantizedLinear");
  EXPECT_EQ(std::dynamic_pointer_cast<nn::QuantizedLinear>(model.proj)->bits(), 8);
}

TEST(Init, ShapesAndStatistics) {
  auto w = zeros({400, 300});
  auto stats = [](const array& a) { return std::pair{mean(a).item<float>(), nuvec::std(a).item<float>()}; };
  auto [m0, s0] = stats(nn::init::normal(1.0, 2.0)(w));
  EXPECT_NEAR(m0, 1.0F, 0.02F);
  EXPECT_NEAR(s0, 2.0F, 0.02F);
  auto u = nn::init::uniform(-1.0, 3.0)(w);
  EXPECT_GE(min(u).item<float>(), -1.0F);
  EXPECT_LT(max(u).item<float>(), 3.0F);
  EXPECT_TRUE(array_equal(nn::init::constant(0.5, float16)(w), full({400, 300}, 0.5F, float16)).item<bool>());
  EXPECT_TRUE(array_equal(nn::init::identity()(zeros({3, 3})), eye(3)).item<bool>());
  EXPECT_NE(error_of([] { nn::init::identity()(zeros({3, 2})); }).find("square"), std::string::npos);

  auto [gn_mean, gn_std] = stats(nn::init::glorot_normal()(w, 1.0));
  EXPECT_NEAR(gn_std, std::sqrt(2.0 / 700.0), 0.002);
  EXPECT_NEAR(gn_mean, 0.0F, 0.002F);
  auto gu = nn::init::glorot_uniform()(w, 2.0);
  EXPECT_LE(max(abs(gu)).item<float>(), 2.0 * std::sqrt(6.0 / 700.0));
  EXPECT_NEAR(nuvec::std(gu).item<float>(), 2.0 * std::sqrt(6.0 / 700.0) / std::sqrt(3.0), 0.002);
  // A conv weight (C_out, kh, kw, C_in): fan_in = C_in * kh * kw.
  auto conv = zeros({64, 3, 3, 32});
  EXPECT_EQ(nn::init::fan_in_fan_out(conv.shape()), (std::pair{32 * 9, 64 * 9}));
  auto he = nn::init::he_normal()(conv, nn::init::FanMode::fan_in, std::sqrt(2.0));
  EXPECT_NEAR(nuvec::std(he).item<float>(), std::sqrt(2.0 / (32 * 9)), 0.002);
  auto hu = nn::init::he_uniform()(conv, nn::init::FanMode::fan_out, 1.0);
  EXPECT_LE(max(abs(hu)).item<float>(), std::sqrt(3.0 / (64 * 9)));
  EXPECT_EQ(hu.shape(), conv.shape());
}

}  // namespace
}  // namespace nuvec
