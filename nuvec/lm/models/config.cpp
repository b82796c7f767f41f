#include "nuvec/lm/models/config.h"

#include <cmath>

#include "nuvec/core/error.h"
#include "nuvec/core/op_prefix.h"

namespace nuvec::lm {

namespace config_field {

namespace {

const nlohmann::json* find(const nlohmann::json& config, const std::string& key) {
  auto it = config.find(key);
  return it == config.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void wrong_type(const std::string& key, const char* expected, const nlohmann::json& value) {
  throw_invalid("[config.json] " + key + " must be " + expected + "; got " + value.dump() + ".");
}

}  // namespace

int integer(const nlohmann::json& config, const std::string& key) {
  auto value = optional_integer(config, key);
  if (!value) {
    throw_invalid("[config.json] " + key + " is missing.");
  }
  return *value;
}

int integer(const nlohmann::json& config, const std::string& key, int fallback) {
  return optional_integer(config, key).value_or(fallback);
}

std::optional<int> optional_integer(const nlohmann::json& config, const std::string& key) {
  const nlohmann::json* value = find(config, key);
  if (value == nullptr) {
    return std::nullopt;
  }
  // Some converters write integral fields as 4096.0.
  if (value->is_number_float() && std::trunc(value->get<double>()) == value->get<double>()) {
    return static_cast<int>(value->get<double>());
  }
  if (!value->is_number_integer()) {
    wrong_type(key, "an integer", *value);
  }
  return value->get<int>();
}

float number(const nlohmann::json& config, const std::string& key, float fallback) {
  return optional_number(config, key).value_or(fallback);
}

std::optional<float> optional_number(const nlohmann::json& config, const std::string& key) {
  const nlohmann::json* value = find(config, key);
  if (value == nullptr) {
    return std::nullopt;
  }
  if (!value->is_number()) {
    wrong_type(key, "a number", *value);
  }
  return value->get<float>();
}

bool boolean(const nlohmann::json& config, const std::string& key, bool fallback) {
  const nlohmann::json* value = find(config, key);
  if (value == nullptr) {
    return fallback;
  }
  if (!value->is_boolean()) {
    wrong_type(key, "true or false", *value);
  }
  return value->get<bool>();
}

std::string string(const nlohmann::json& config, const std::string& key, const std::string& fallback) {
  const nlohmann::json* value = find(config, key);
  if (value == nullptr) {
    return fallback;
  }
  if (!value->is_string()) {
    wrong_type(key, "a string", *value);
  }
  return value->get<std::string>();
}

}  // namespace config_field

namespace {

void require_positive(int value, const char* key) {
  if (value <= 0) {
    throw_invalid(std::string("[config.json] ") + key + " must be positive; got " + std::to_string(value) + ".");
  }
}

/// layer_types (recent transformers): "sliding_attention" layers get sliding_window, the others are global.
std::vector<std::optional<int>> windows_from_layer_types(const nlohmann::json& config, int num_layers) {
  std::vector<std::optional<int>> windows(num_layers);
  auto types = config.find("layer_types");
  if (types == config.end() || types->is_null()) {
    return windows;
  }
  if (!types->is_array() || static_cast<int>(types->size()) != num_layers) {
    throw_invalid("[config.json] layer_types must list one type per layer (" + std::to_string(num_layers) + "); got " +
                  types->dump() + ".");
  }
  for (int i = 0; i < num_layers; ++i) {
    if ((*types)[i] == "sliding_attention") {
      windows[i] = config_field::integer(config, "sliding_window");
    }
  }
  return windows;
}

/// eos_token_id as an int or a list of ints.
std::vector<int32_t> token_ids(const nlohmann::json& value, const char* file) {
  std::vector<int32_t> ids;
  auto add = [&](const nlohmann::json& id) {
    if (!id.is_number_integer()) {
      throw_invalid(nuvec::detail::op_prefix(file) + "eos_token_id must be an integer or a list of integers; got " +
                    value.dump() + ".");
    }
    ids.push_back(id.get<int32_t>());
  };
  if (value.is_array()) {
    for (const auto& id : value) {
      add(id);
    }
  } else if (!value.is_null()) {
    add(value);
  }
  return ids;
}

}  // namespace

TransformerConfig TransformerConfig::from_json(const nlohmann::json& config) {
  using namespace config_field;
  TransformerConfig c;
  c.model_type = string(config, "model_type", "");
  c.vocab_size = integer(config, "vocab_size");
  c.hidden_size = integer(config, "hidden_size");
  c.intermediate_size = integer(config, "intermediate_size");
  c.num_layers = integer(config, "num_hidden_layers");
  c.num_heads = integer(config, "num_attention_heads");
  require_positive(c.vocab_size, "vocab_size");
  require_positive(c.hidden_size, "hidden_size");
  require_positive(c.intermediate_size, "intermediate_size");
  require_positive(c.num_layers, "num_hidden_layers");
  require_positive(c.num_heads, "num_attention_heads");
  c.num_kv_heads = integer(config, "num_key_value_heads", c.num_heads);
  require_positive(c.num_kv_heads, "num_key_value_heads");
  if (c.num_heads % c.num_kv_heads != 0) {
    throw_invalid("[config.json] num_attention_heads (" + std::to_string(c.num_heads) +
                  ") must be a multiple of num_key_value_heads (" + std::to_string(c.num_kv_heads) + ").");
  }
  c.head_dim = integer(config, "head_dim", c.hidden_size / c.num_heads);
  require_positive(c.head_dim, "head_dim");
  c.rms_norm_eps = number(config, "rms_norm_eps", c.rms_norm_eps);
  c.rope_theta = number(config, "rope_theta", c.rope_theta);
  c.rope_traditional = boolean(config, "rope_traditional", false);
  c.rope_scaling = config.value("rope_scaling", nlohmann::json());
  // Recent transformers folds rope_theta and the scaling into one rope_parameters object.
  if (auto params = config.find("rope_parameters"); params != config.end() && params->is_object()) {
    c.rope_theta = number(*params, "rope_theta", c.rope_theta);
    if (string(*params, "rope_type", "default") != "default") {
      c.rope_scaling = *params;
    }
  }
  c.partial_rotary_factor = number(config, "partial_rotary_factor", 1.0F);
  c.max_position_embeddings = integer(config, "max_position_embeddings", 0);
  c.tie_word_embeddings = boolean(config, "tie_word_embeddings", false);
  c.qkv_bias = c.o_bias = boolean(config, "attention_bias", false);
  c.mlp_bias = boolean(config, "mlp_bias", false);
  c.hidden_act = string(config, "hidden_act", "silu");
  c.layer_windows = windows_from_layer_types(config, c.num_layers);
  return c;
}

void TransformerConfig::set_all_windows(std::optional<int> window) { layer_windows.assign(num_layers, window); }

GenerationConfig GenerationConfig::from_json(const nlohmann::json& generation_config, const nlohmann::json& config) {
  using namespace config_field;
  GenerationConfig g;
  const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json& gen = generation_config.is_object() ? generation_config : empty;
  if (auto eos = gen.find("eos_token_id"); eos != gen.end() && !eos->is_null()) {
    g.eos_token_ids = token_ids(*eos, "generation_config.json");
  } else if (auto config_eos = config.find("eos_token_id"); config_eos != config.end()) {
    g.eos_token_ids = token_ids(*config_eos, "config.json");
  }
  g.bos_token_id = optional_integer(gen, "bos_token_id");
  if (!g.bos_token_id) {
    g.bos_token_id = optional_integer(config, "bos_token_id");
  }
  g.temperature = optional_number(gen, "temperature");
  g.top_p = optional_number(gen, "top_p");
  g.top_k = optional_integer(gen, "top_k");
  g.min_p = optional_number(gen, "min_p");
  g.repetition_penalty = optional_number(gen, "repetition_penalty");
  return g;
}

}  // namespace nuvec::lm
