#include "nuvec/lm/models/llama.h"

#include "nuvec/core/error.h"

namespace nuvec::lm {

namespace {

/// Qwen's windows: with use_sliding_window, the layers from max_window_layers on see the last sliding_window
/// positions (layer_types, when config.json has it, already decided).
void qwen_windows(TransformerConfig& c, const nlohmann::json& config) {
  if (config.contains("layer_types") || !config_field::boolean(config, "use_sliding_window", false)) {
    return;
  }
  // transformers' Qwen2Config defaults to a 4096-position window; null turns it off.
  const std::optional<int> window = config.contains("sliding_window")
                                        ? config_field::optional_integer(config, "sliding_window")
                                        : std::optional<int>(4096);
  const int first = config_field::integer(config, "max_window_layers", 28);
  for (int i = first; i < c.num_layers; ++i) {
    c.layer_windows[i] = window;
  }
}

}  // namespace

std::shared_ptr<TransformerModel> make_dense_transformer(const TransformerConfig& config, const DenseLayout& layout) {
  const std::shared_ptr<const RoPE> rope = make_rope(config);
  const NormFactory norm = rms_norm(config.rms_norm_eps);
  MLPOptions mlp{config.hidden_size, config.intermediate_size, config.mlp_bias, layout.fused_gate_up,
                 activation(config.hidden_act)};
  std::vector<std::shared_ptr<DecoderLayer>> layers;
  layers.reserve(config.num_layers);
  for (int i = 0; i < config.num_layers; ++i) {
    AttentionOptions attention = attention_options(config, i, rope);
    attention.fused_qkv = layout.fused_qkv;
    layers.push_back(std::make_shared<TransformerBlock>(std::make_shared<Attention>(std::move(attention)),
                                                        std::make_shared<MLP>(mlp), config.hidden_size, norm));
  }
  return std::make_shared<TransformerModel>(config.model_type, config.vocab_size, config.hidden_size, std::move(layers),
                                            norm(config.hidden_size), config.tie_word_embeddings,
                                            config.max_position_embeddings);
}

std::shared_ptr<LanguageModel> make_llama(const nlohmann::json& config) {
  return make_dense_transformer(TransformerConfig::from_json(config));
}

std::shared_ptr<LanguageModel> make_mistral(const nlohmann::json& config) {
  TransformerConfig c = TransformerConfig::from_json(config);
  if (!config.contains("layer_types")) {
    // transformers' MistralConfig defaults to a 4096-position window; null turns it off.
    c.set_all_windows(config.contains("sliding_window") ? config_field::optional_integer(config, "sliding_window")
                                                        : std::optional<int>(4096));
  }
  return make_dense_transformer(c);
}

std::shared_ptr<LanguageModel> make_qwen2(const nlohmann::json& config) {
  TransformerConfig c = TransformerConfig::from_json(config);
  c.qkv_bias = true;
  c.o_bias = false;
  qwen_windows(c, config);
  return make_dense_transformer(c);
}

std::shared_ptr<LanguageModel> make_qwen3(const nlohmann::json& config) {
  nlohmann::json with_defaults = config;
  if (!config.contains("head_dim")) {
    with_defaults["head_dim"] = 128;  // transformers' Qwen3Config default
  }
  TransformerConfig c = TransformerConfig::from_json(with_defaults);
  c.qk_norm = true;
  qwen_windows(c, config);
  return make_dense_transformer(c);
}

std::shared_ptr<LanguageModel> make_phi3(const nlohmann::json& config) {
  TransformerConfig c = TransformerConfig::from_json(config);
  if (c.rope_scaling.is_object() && config.contains("original_max_position_embeddings") &&
      !c.rope_scaling.contains("original_max_position_embeddings")) {
    // Phi-3 keeps longrope's original context at the top level of config.json.
    c.rope_scaling["original_max_position_embeddings"] = config["original_max_position_embeddings"];
  }
  if (!config.contains("layer_types")) {
    c.set_all_windows(config_field::optional_integer(config, "sliding_window"));
  }
  return make_dense_transformer(c, DenseLayout{true, true});
}

}  // namespace nuvec::lm
