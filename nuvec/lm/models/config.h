#pragma once

// What a model folder's config.json and generation_config.json say, read into typed structs with Hugging Face's
// defaults and errors that name the field. The readers are public so every architecture reads its own extra fields
// the same way.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace nuvec::lm {

/// The fields the decoder-only transformers share (Llama's names; families read their extras themselves).
struct TransformerConfig {
  std::string model_type;
  int vocab_size = 0;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  /// Features per head; may differ from hidden_size / num_heads.
  int head_dim = 0;
  float rms_norm_eps = 1e-6F;
  float rope_theta = 10000.0F;
  /// RoPE on adjacent pairs of features instead of the two halves (mlx-lm's rope_traditional).
  bool rope_traditional = false;
  /// The fraction of each head's features RoPE rotates (phi3's partial_rotary_factor).
  float partial_rotary_factor = 1.0F;
  /// rope_scaling as config.json gives it (null when absent).
  nlohmann::json rope_scaling;
  /// max_position_embeddings, 0 when absent.
  int max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  /// Biases on the q/k/v projections and on the output projection.
  bool qkv_bias = false;
  bool o_bias = false;
  bool mlp_bias = false;
  /// RMSNorm over each head's queries and keys before RoPE (qwen3).
  bool qk_norm = false;
  std::string hidden_act = "silu";
  /// The sliding window of each layer's attention (none: global), num_layers entries.
  std::vector<std::optional<int>> layer_windows;

  /// Reads the shared fields; layer_windows comes from layer_types when config.json has it, else stays global.
  static TransformerConfig from_json(const nlohmann::json& config);
  /// Gives every layer the same window (or none).
  void set_all_windows(std::optional<int> window);
};

/// Sampling defaults and stop ids from generation_config.json, falling back to config.json for the ids.
struct GenerationConfig {
  std::vector<int32_t> eos_token_ids;
  std::optional<int32_t> bos_token_id;
  std::optional<float> temperature;
  std::optional<float> top_p;
  std::optional<int> top_k;
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;

  /// `generation_config` may be null (no generation_config.json); eos_token_id may be an int or a list in either.
  static GenerationConfig from_json(const nlohmann::json& generation_config, const nlohmann::json& config);
};

namespace config_field {

// Typed reads of one config.json field; errors say "[config.json] <key> ..." with what was found.

/// A required integer.
int integer(const nlohmann::json& config, const std::string& key);
/// An integer, `fallback` when absent or null.
int integer(const nlohmann::json& config, const std::string& key, int fallback);
/// An integer, none when absent or null.
std::optional<int> optional_integer(const nlohmann::json& config, const std::string& key);
/// A number, `fallback` when absent or null.
float number(const nlohmann::json& config, const std::string& key, float fallback);
/// A number, none when absent or null.
std::optional<float> optional_number(const nlohmann::json& config, const std::string& key);
/// A boolean, `fallback` when absent or null.
bool boolean(const nlohmann::json& config, const std::string& key, bool fallback);
/// A string, `fallback` when absent or null.
std::string string(const nlohmann::json& config, const std::string& key, const std::string& fallback);

}  // namespace config_field

}  // namespace nuvec::lm
