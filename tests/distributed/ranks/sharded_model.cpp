// LanguageModel::shard and pipeline on every rank: tiny random models built from the same seed on each rank, one
// kept whole and one sharded (or split into a pipeline) across the group, give the same logits, and greedy decoding
// through their KV caches the same tokens.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nuvec/lm/lm.h"
#include "nuvec/nn/nn.h"
#include "nuvec/nuvec.h"

namespace nuvec::lm {
namespace {

/// config.json of a two-layer model: 8 heads and 4 key-value heads (whole heads for 1, 2 or 4 ranks) of 16
/// features, a feed-forward of 128 and a vocabulary of 64.
nlohmann::json tiny_config(const std::string& model_type) {
  return {
      {"model_type", model_type},       {"vocab_size", 64},         {"hidden_size", 64},     {"num_hidden_layers", 2},
      {"num_attention_heads", 8},       {"num_key_value_heads", 4}, {"head_dim", 16},        {"intermediate_size", 128},
      {"max_position_embeddings", 128}, {"rms_norm_eps", 1e-5},     {"rope_theta", 10000.0}, {"hidden_act", "silu"},
      {"tie_word_embeddings", false}};
}

/// The model of `config` with random weights drawn from `seed` (the same on every rank); lm_head scaled up so that
/// greedy choices are far from ties.
std::shared_ptr<LanguageModel> tiny_model(const nlohmann::json& config, uint64_t seed) {
  std::shared_ptr<LanguageModel> model = create_model(config);
  array key = random::key(seed);
  model->apply([&](const std::string& name, const array& a) {
    auto keys = random::split(key);
    key = keys.first;
    if (a.ndim() == 1) {
      return random::normal(a.shape(), float32, 1.0F, 0.1F, keys.second);
    }
    const float scale = name == "lm_head.weight" ? 2.0F : 1.0F / std::sqrt(static_cast<float>(a.shape(1)));
    return random::normal(a.shape(), float32, 0.0F, name.find("embed") != std::string::npos ? 1.0F : scale,
                          keys.second);
  });
  return model;
}

const array prompt = array({3, 17, 41, 5, 60, 22, 9}, {1, 7}, int32);

std::vector<int> greedy(LanguageModel& model, int steps) {
  Cache cache = model.make_cache();
  array logits = model(prompt, &cache);
  std::vector<int> tokens;
  for (int i = 0; i < steps; ++i) {
    array next = reshape(astype(argmax(slice(logits, {0, logits.shape(1) - 1, 0}, logits.shape()), -1), int32), {1, 1});
    tokens.push_back(next.item<int>());
    logits = model(next, &cache);
  }
  return tokens;
}

void expect_same_model(const std::shared_ptr<LanguageModel>& whole, const std::shared_ptr<LanguageModel>& sharded,
                       const std::string& what, double tol) {
  array want = (*whole)(prompt);
  array got = (*sharded)(prompt);
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_TRUE(allclose(got, want, tol, tol).item<bool>())
      << what << ": largest difference " << max(abs(got - want)).item<float>();
  EXPECT_EQ(greedy(*sharded, 8), greedy(*whole, 8)) << what;
}

TEST(ShardedModel, LogitsAndGreedyTokensEqualTheUnshardedModel) {
  const distributed::Group g = distributed::init(true);
  // llama: separate q, k, v; qwen2: with q/k/v biases; qwen3: q/k norms; phi3: fused qkv_proj and gate_up_proj.
  for (const std::string type : {"llama", "qwen2", "qwen3", "phi3"}) {
    const nlohmann::json config = tiny_config(type);
    auto whole = tiny_model(config, 7);
    auto sharded = tiny_model(config, 7);
    sharded->shard(g);
    auto& attention =
        *dynamic_cast<TransformerBlock&>((*dynamic_cast<TransformerModel&>(*sharded).model->layers)[0]).self_attn;
    EXPECT_EQ(attention.options().num_heads, 8 / g.size()) << type;
    EXPECT_EQ(attention.options().num_kv_heads, 4 / g.size()) << type;
    expect_same_model(whole, sharded, type, 1e-4);
  }
}

TEST(ShardedModel, QuantizedModelsShardTheirQuantizedLayers) {
  const distributed::Group g = distributed::init(true);
  const nlohmann::json config = tiny_config("llama");
  auto whole = tiny_model(config, 8);
  auto sharded = tiny_model(config, 8);
  nn::quantize(*whole, 32, 8);
  nn::quantize(*sharded, 32, 8);
  sharded->shard(g);
  auto& block = dynamic_cast<TransformerBlock&>((*dynamic_cast<TransformerModel&>(*sharded).model->layers)[1]);
  EXPECT_NE(dynamic_cast<nn::QuantizedAllToShardedLinear*>(block.self_attn->q_proj.get()), nullptr);
  EXPECT_NE(dynamic_cast<nn::QuantizedShardedToAllLinear*>(block.self_attn->o_proj.get()), nullptr);
  expect_same_model(whole, sharded, "llama quantized to 8 bits", 1e-3);
}

TEST(PipelinedModel, LogitsAndGreedyTokensEqualTheUnsplitModel) {
  const distributed::Group g = distributed::init(true);
  // 5 layers: 3 and 2 on 2 ranks, 2, 1, 1 and 1 on 4. A mixture of experts pipelines too.
  nlohmann::json llama = tiny_config("llama");
  llama["num_hidden_layers"] = 5;
  nlohmann::json mixtral = tiny_config("mixtral");
  mixtral["num_local_experts"] = 4;
  mixtral["num_experts_per_tok"] = 2;
  mixtral["num_hidden_layers"] = 5;
  for (const nlohmann::json& config : {llama, mixtral}) {
    auto whole = tiny_model(config, 10);
    auto split = tiny_model(config, 10);
    split->pipeline(g);
    expect_same_model(whole, split, config["model_type"].get<std::string>() + " pipelined", 1e-5);
  }
}

TEST(ShardedModel, HeadsTheGroupDoesNotDivideAreRefused) {
  const distributed::Group g = distributed::init(true);
  if (g.size() == 1) {
    GTEST_SKIP() << "one rank divides everything";
  }
  nlohmann::json config = tiny_config("llama");
  config["num_key_value_heads"] = 1;
  auto model = tiny_model(config, 9);
  try {
    model->shard(g);
    ADD_FAILURE() << "expected an error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot split 8 heads and 1 key-value heads across " +
                                         std::to_string(g.size()) + " ranks"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace nuvec::lm
