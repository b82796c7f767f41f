#include "nuvec/lm/models/qwen3_moe.h"

#include <set>

#include "nuvec/core/error.h"
#include "nuvec/lm/models/config.h"
#include "nuvec/lm/models/moe.h"

namespace nuvec::lm {

namespace {

/// mlp_only_layers: the layers that keep a dense MLP.
std::set<int> dense_layers(const nlohmann::json& config) {
  std::set<int> layers;
  auto list = config.find("mlp_only_layers");
  if (list == config.end() || list->is_null()) {
    return layers;
  }
  if (!list->is_array()) {
    throw_invalid("[config.json] mlp_only_layers must be a list of layer indices; got " + list->dump() + ".");
  }
  for (const auto& index : *list) {
    if (!index.is_number_integer()) {
      throw_invalid("[config.json] mlp_only_layers must be a list of layer indices; got " + list->dump() + ".");
    }
    layers.insert(index.get<int>());
  }
  return layers;
}

}  // namespace

std::shared_ptr<LanguageModel> make_qwen3_moe(const nlohmann::json& config) {
  TransformerConfig c = TransformerConfig::from_json(config);
  c.qk_norm = true;
  if (!config.contains("layer_types") && config_field::boolean(config, "use_sliding_window", false)) {
    // As Qwen2 and Qwen3: the layers from max_window_layers on slide.
    const int window = config_field::integer(config, "sliding_window", 4096);
    for (int i = config_field::integer(config, "max_window_layers", 28); i < c.num_layers; ++i) {
      c.layer_windows[i] = window;
    }
  }
  const int num_experts = config_field::integer(config, "num_experts", 128);
  const int sparse_step = config_field::integer(config, "decoder_sparse_step", 1);
  if (sparse_step <= 0) {
    throw_invalid("[config.json] decoder_sparse_step must be positive; got " + std::to_string(sparse_step) + ".");
  }
  const MoeOptions moe{c.hidden_size,
                       config_field::integer(config, "moe_intermediate_size", 768),
                       num_experts,
                       config_field::integer(config, "num_experts_per_tok", 8),
                       config_field::boolean(config, "norm_topk_prob", false),
                       activation(c.hidden_act)};
  const MLPOptions mlp{c.hidden_size, c.intermediate_size, false, false, activation(c.hidden_act)};
  const std::set<int> dense = dense_layers(config);
  const std::shared_ptr<const RoPE> rope = make_rope(c);
  const NormFactory norm = rms_norm(c.rms_norm_eps);
  std::vector<std::shared_ptr<DecoderLayer>> layers;
  layers.reserve(c.num_layers);
  for (int i = 0; i < c.num_layers; ++i) {
    const bool sparse = !dense.contains(i) && num_experts > 0 && (i + 1) % sparse_step == 0;
    std::shared_ptr<nn::UnaryModule> feed_forward;
    if (sparse) {
      feed_forward = std::make_shared<SparseMoeBlock>(moe);
    } else {
      feed_forward = std::make_shared<MLP>(mlp);
    }
    layers.push_back(std::make_shared<TransformerBlock>(std::make_shared<Attention>(attention_options(c, i, rope)),
                                                        std::move(feed_forward), c.hidden_size, norm));
  }
  return std::make_shared<MoeModel>(
      c, std::move(layers),
      ExpertNames{{"gate_proj", "gate_proj"}, {"up_proj", "up_proj"}, {"down_proj", "down_proj"}});
}

}  // namespace nuvec::lm
