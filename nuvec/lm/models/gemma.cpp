#include "nuvec/lm/models/gemma.h"

#include <cmath>
#include <limits>
#include <utility>

#include "nuvec/core/error.h"
#include "nuvec/core/fast.h"
#include "nuvec/core/ops.h"

namespace nuvec::lm {

namespace {

/// config.json with transformers' defaults filled in where a field is absent or null.
nlohmann::json with_defaults(const nlohmann::json& config, const nlohmann::json& defaults) {
  nlohmann::json out = config;
  for (const auto& [key, value] : defaults.items()) {
    if (!out.contains(key) || out[key].is_null()) {
      out[key] = value;
    }
  }
  return out;
}

/// The fields transformers' Gemma2Config and Gemma3TextConfig default (the sizes of the smallest released model).
nlohmann::json gemma_defaults(bool gemma3) {
  return {{"vocab_size", gemma3 ? 262208 : 256000},
          {"hidden_size", 2304},
          {"intermediate_size", 9216},
          {"num_hidden_layers", 26},
          {"num_attention_heads", 8},
          {"num_key_value_heads", 4},
          {"head_dim", 256},
          {"max_position_embeddings", gemma3 ? 131072 : 8192},
          {"rms_norm_eps", 1e-6},
          {"rope_theta", gemma3 ? 1000000.0 : 10000.0},
          {"tie_word_embeddings", true}};
}

/// A soft cap: `fallback` when config.json leaves the key out, none when it says null.
std::optional<float> softcap(const nlohmann::json& config, const std::string& key, std::optional<float> fallback) {
  return config.contains(key) ? config_field::optional_number(config, key) : fallback;
}

/// The sliding window: transformers' 4096 when config.json leaves it out, none (every layer global) when null.
std::optional<int> sliding_window(const nlohmann::json& config) {
  return config.contains("sliding_window") ? config_field::optional_integer(config, "sliding_window") : 4096;
}

/// Gemma names its activation hidden_activation (hidden_act in older files).
std::string gemma_activation(const nlohmann::json& config) {
  return config_field::string(config, "hidden_activation",
                              config_field::string(config, "hidden_act", "gelu_pytorch_tanh"));
}

/// What a Gemma family decides per layer beyond TransformerConfig.
struct GemmaLayout {
  float query_pre_attn_scalar = 256.0F;
  std::optional<float> attn_logit_softcapping;
  /// RoPE of the global layers and of the sliding-window ones (the same in Gemma 2).
  std::shared_ptr<const RoPE> global_rope;
  std::shared_ptr<const RoPE> local_rope;
  /// q_norm and k_norm over each head (Gemma 3).
  bool qk_norm = false;
};

std::vector<std::shared_ptr<DecoderLayer>> gemma_layers(const TransformerConfig& config, const GemmaLayout& layout) {
  const NormFactory norm = gemma_rms_norm(config.rms_norm_eps);
  const MLPOptions mlp{config.hidden_size, config.intermediate_size, config.mlp_bias, false,
                       activation(config.hidden_act)};
  std::vector<std::shared_ptr<DecoderLayer>> layers;
  layers.reserve(config.num_layers);
  for (int i = 0; i < config.num_layers; ++i) {
    const bool local = config.layer_windows[i].has_value();
    AttentionOptions options = attention_options(config, i, local ? layout.local_rope : layout.global_rope);
    options.scale = 1.0F / std::sqrt(layout.query_pre_attn_scalar);
    if (layout.qk_norm) {
      options.qk_norm = norm;
    }
    std::shared_ptr<Attention> attention =
        layout.attn_logit_softcapping
            ? std::make_shared<SoftCappedAttention>(std::move(options), *layout.attn_logit_softcapping)
            : std::make_shared<Attention>(std::move(options));
    layers.push_back(std::make_shared<GemmaDecoderLayer>(std::move(attention), std::make_shared<MLP>(mlp),
                                                         config.hidden_size, norm));
  }
  return layers;
}

/// The query scale's denominator; transformers defaults it to 256 whatever head_dim is.
float query_pre_attn_scalar(const nlohmann::json& config) {
  const float value = config_field::number(config, "query_pre_attn_scalar", 256.0F);
  if (!(value > 0)) {
    throw_invalid("[config.json] query_pre_attn_scalar must be positive; got " + std::to_string(value) + ".");
  }
  return value;
}

/// The theta and scaling of one kind of layer ("full_attention" or "sliding_attention") when rope_parameters
/// holds one entry per kind (recent transformers); none otherwise.
const nlohmann::json* rope_parameters_for(const nlohmann::json& config, const char* layer_type) {
  auto params = config.find("rope_parameters");
  if (params == config.end() || !params->is_object()) {
    return nullptr;
  }
  auto entry = params->find(layer_type);
  return entry != params->end() && entry->is_object() ? &*entry : nullptr;
}

std::shared_ptr<LanguageModel> build_gemma3(const nlohmann::json& text_config, const std::string& model_type,
                                            bool multimodal_checkpoint) {
  const nlohmann::json config = with_defaults(text_config, gemma_defaults(true));
  TransformerConfig c = TransformerConfig::from_json(config);
  c.model_type = model_type;
  c.hidden_act = gemma_activation(config);
  if (!config.contains("layer_types")) {
    // Every sliding_window_pattern-th layer is global, the others slide.
    const int pattern = config_field::integer(config, "sliding_window_pattern", 6);
    if (pattern <= 0) {
      throw_invalid("[config.json] sliding_window_pattern must be positive; got " + std::to_string(pattern) + ".");
    }
    const std::optional<int> window = sliding_window(config);
    for (int i = 0; i < c.num_layers; ++i) {
      c.layer_windows[i] = (i + 1) % pattern != 0 ? window : std::nullopt;
    }
  }
  float global_theta = c.rope_theta;
  nlohmann::json global_scaling = c.rope_scaling;
  float local_theta = config_field::number(config, "rope_local_base_freq", 10000.0F);
  if (const nlohmann::json* full = rope_parameters_for(config, "full_attention")) {
    global_theta = config_field::number(*full, "rope_theta", global_theta);
    global_scaling = config_field::string(*full, "rope_type", "default") == "default" ? nlohmann::json() : *full;
  }
  if (const nlohmann::json* sliding = rope_parameters_for(config, "sliding_attention")) {
    local_theta = config_field::number(*sliding, "rope_theta", local_theta);
  }
  GemmaLayout layout;
  layout.query_pre_attn_scalar = query_pre_attn_scalar(config);
  layout.attn_logit_softcapping = softcap(config, "attn_logit_softcapping", std::nullopt);
  layout.global_rope = make_rope(c.head_dim, global_theta, global_scaling, c.max_position_embeddings);
  layout.local_rope = make_rope(c.head_dim, local_theta, nullptr, c.max_position_embeddings);
  layout.qk_norm = true;
  GemmaModelOptions options{softcap(config, "final_logit_softcapping", std::nullopt), multimodal_checkpoint};
  return std::make_shared<GemmaModel>(c, gemma_layers(c, layout), options);
}

/// The keys each query may see, broadcastable to scores (B, N_kv, groups, L, L_kv); none when it sees all.
std::optional<array> visible_keys(const MaskSpec& mask, int length, int kv_length) {
  if (mask.mode.empty()) {
    return std::nullopt;
  }
  if (mask.mode == "causal") {
    // The last query sits at the last key.
    const array query_pos = reshape(arange(kv_length - length, kv_length, int32), {length, 1});
    const array key_pos = reshape(arange(0, kv_length, int32), {1, kv_length});
    return less_equal(key_pos, query_pos);
  }
  if (mask.mode == "array" && mask.mask) {
    // (B or 1, 1, L, L_kv): one more axis for the query heads sharing a key/value head.
    return mask.mask->ndim() == 4 ? expand_dims(*mask.mask, 2) : *mask.mask;
  }
  throw_invalid("[SoftCappedAttention] unknown mask mode '" + mask.mode +
                "' (expected \"\", \"causal\" or \"array\").");
}

}  // namespace

// ---------------------------------------------------------------- norm

GemmaRMSNorm::GemmaRMSNorm(int dims, float eps) : weight(zeros({dims})), dims_(dims), eps_(eps) {
  register_parameter("weight", weight);
}

array GemmaRMSNorm::forward(const array& x) {
  check_input(x, 1, dims_);
  const array factor = add(astype(weight, float32), array(1.0F));
  return astype(fast::rms_norm(x, factor, eps_), x.dtype());
}

NormFactory gemma_rms_norm(float eps) {
  return [eps](int dims) { return std::make_shared<GemmaRMSNorm>(dims, eps); };
}

// ---------------------------------------------------------------- attention

SoftCappedAttention::SoftCappedAttention(AttentionOptions options, float cap)
    : Attention(std::move(options)), cap_(cap) {
  if (!(cap > 0)) {
    fail("needs a positive soft cap; got " + std::to_string(cap) + ".");
  }
}

array SoftCappedAttention::attend(const array& queries, const array& keys, const array& values, const MaskSpec& mask,
                                  KVCache* cache) {
  // The fused attention has no soft cap, so the scores are formed here over every key the cache holds.
  auto [all_keys, all_values] = cache != nullptr ? cache->update_and_fetch(keys, values) : std::pair{keys, values};
  const int batch = queries.shape(0);
  const int heads = queries.shape(1);
  const int length = queries.shape(2);
  const int dims = queries.shape(3);
  const int kv_heads = all_keys.shape(1);
  const int kv_length = all_keys.shape(2);
  // Grouped-query heads share their key/value head: (B, N_kv, groups, L, D) against (B, N_kv, 1, D, L_kv).
  const array grouped = reshape(queries, {batch, kv_heads, heads / kv_heads, length, dims});
  array scores = astype(matmul(grouped, expand_dims(swapaxes(all_keys, -1, -2), 2)), float32);
  const array cap(cap_);
  scores = multiply(tanh(divide(multiply(scores, array(scale())), cap)), cap);
  if (const std::optional<array> visible = visible_keys(mask, length, kv_length)) {
    scores = visible->dtype() == bool_ ? where(*visible, scores, array(-std::numeric_limits<float>::infinity()))
                                       : add(scores, astype(*visible, float32));
  }
  const array probs = astype(softmax(scores, -1, true), all_values.dtype());
  return reshape(matmul(probs, expand_dims(all_values, 2)), {batch, heads, length, dims});
}

// ---------------------------------------------------------------- layer and model

GemmaDecoderLayer::GemmaDecoderLayer(std::shared_ptr<Attention> attention, std::shared_ptr<nn::UnaryModule> mlp,
                                     int hidden_size, const NormFactory& norm)
    : input_layernorm(norm(hidden_size)),
      self_attn(std::move(attention)),
      post_attention_layernorm(norm(hidden_size)),
      pre_feedforward_layernorm(norm(hidden_size)),
      mlp(std::move(mlp)),
      post_feedforward_layernorm(norm(hidden_size)) {
  register_module("input_layernorm", input_layernorm);
  register_module("self_attn", self_attn);
  register_module("post_attention_layernorm", post_attention_layernorm);
  register_module("pre_feedforward_layernorm", pre_feedforward_layernorm);
  register_module("mlp", this->mlp);
  register_module("post_feedforward_layernorm", post_feedforward_layernorm);
}

array GemmaDecoderLayer::forward(const array& x, const MaskSpec& mask, KVCache* cache) {
  const array h = x + (*post_attention_layernorm)(self_attn->forward((*input_layernorm)(x), mask, cache));
  return h + (*post_feedforward_layernorm)((*mlp)((*pre_feedforward_layernorm)(h)));
}

GemmaModel::GemmaModel(const TransformerConfig& config, std::vector<std::shared_ptr<DecoderLayer>> layers,
                       GemmaModelOptions options)
    : TransformerModel(config.model_type, config.vocab_size, config.hidden_size, std::move(layers),
                       gemma_rms_norm(config.rms_norm_eps)(config.hidden_size), config.tie_word_embeddings,
                       config.max_position_embeddings),
      embed_scale_(std::sqrt(static_cast<float>(config.hidden_size))),
      options_(options) {
  if (options_.final_logit_softcapping && !(*options_.final_logit_softcapping > 0)) {
    fail("needs a positive final_logit_softcapping; got " + std::to_string(*options_.final_logit_softcapping) + ".");
  }
}

void GemmaModel::sanitize(std::unordered_map<std::string, array>& weights) const {
  if (options_.multimodal_checkpoint) {
    // transformers names the language model language_model.model.* (model.language_model.* since 4.52).
    static const std::pair<const char*, const char*> renames[] = {{"language_model.model.", "model."},
                                                                  {"model.language_model.", "model."},
                                                                  {"language_model.lm_head.", "lm_head."}};
    static const char* const dropped[] = {"vision_tower.", "multi_modal_projector.", "model.vision_tower.",
                                          "model.multi_modal_projector."};
    std::unordered_map<std::string, array> renamed;
    for (auto& [name, value] : weights) {
      bool drop = false;
      for (const char* prefix : dropped) {
        drop = drop || name.starts_with(prefix);
      }
      if (drop) {
        continue;
      }
      std::string target = name;
      for (const auto& [from, to] : renames) {
        if (name.starts_with(from)) {
          target = to + name.substr(std::string(from).size());
          break;
        }
      }
      renamed.insert_or_assign(std::move(target), std::move(value));
    }
    weights = std::move(renamed);
  }
  TransformerModel::sanitize(weights);
}

array GemmaModel::embed(const array& tokens) {
  const array h = TransformerModel::embed(tokens);
  return multiply(h, astype(array(embed_scale_), h.dtype()));
}

array GemmaModel::logits(const array& hidden) {
  array out = TransformerModel::logits(hidden);
  if (!options_.final_logit_softcapping) {
    return out;
  }
  const array cap = astype(array(*options_.final_logit_softcapping), out.dtype());
  return multiply(tanh(divide(out, cap)), cap);
}

// ---------------------------------------------------------------- from config.json

std::shared_ptr<LanguageModel> make_gemma2(const nlohmann::json& raw) {
  const nlohmann::json config = with_defaults(raw, gemma_defaults(false));
  TransformerConfig c = TransformerConfig::from_json(config);
  c.hidden_act = gemma_activation(config);
  if (!config.contains("layer_types")) {
    // transformers' Gemma 2 slides on the even layers and attends globally on the odd ones.
    const std::optional<int> window = sliding_window(config);
    for (int i = 0; i < c.num_layers; ++i) {
      c.layer_windows[i] = i % 2 == 0 ? window : std::nullopt;
    }
  }
  GemmaLayout layout;
  layout.query_pre_attn_scalar = query_pre_attn_scalar(config);
  layout.attn_logit_softcapping = softcap(config, "attn_logit_softcapping", 50.0F);
  layout.global_rope = layout.local_rope = make_rope(c);
  GemmaModelOptions options{softcap(config, "final_logit_softcapping", 30.0F), false};
  return std::make_shared<GemmaModel>(c, gemma_layers(c, layout), options);
}

std::shared_ptr<LanguageModel> make_gemma3_text(const nlohmann::json& config) {
  return build_gemma3(config, config_field::string(config, "model_type", "gemma3_text"), false);
}

std::shared_ptr<LanguageModel> make_gemma3(const nlohmann::json& config) {
  auto text = config.find("text_config");
  if (text != config.end() && !text->is_null() && !text->is_object()) {
    throw_invalid("[config.json] text_config must be an object; got " + text->dump() + ".");
  }
  const nlohmann::json text_config = text != config.end() && text->is_object() ? *text : nlohmann::json::object();
  return build_gemma3(text_config, "gemma3", true);
}

}  // namespace nuvec::lm
