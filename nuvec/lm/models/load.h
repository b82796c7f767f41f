#pragma once

// Model folders as Hugging Face and mlx-lm write them: config.json, generation_config.json, model.safetensors (or
// shards listed by model.safetensors.index.json) and the tokenizer's files. Weights are memory-mapped and read when
// first used. MLX-quantized folders (config.json's "quantization": group_size, bits and per-module overrides;
// weights with .scales and .biases) load into quantized layers; quantize() and save_folder() write them.

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>

#include "nuvec/core/array.h"
#include "nuvec/lm/models/config.h"
#include "nuvec/lm/models/language_model.h"
#include "nuvec/lm/models/load_plan.h"
#include "nuvec/lm/tokenizer/tokenizer.h"

namespace nuvec::lm {

struct LoadedModel {
  std::shared_ptr<LanguageModel> model;
  Tokenizer tokenizer;
  GenerationConfig generation;
  nlohmann::json config;
};

/// Loads a model folder: the architecture config.json names, its weights, tokenizer and generation defaults. With a
/// placement the model is split before its weights load, and this rank reads only what it keeps of them.
LoadedModel load_folder(const std::string& dir, const std::optional<Placement>& placement = std::nullopt);

/// The weights of a folder by name, mapped: model.safetensors.index.json's shards, else model.safetensors, else
/// every *.safetensors file.
std::unordered_map<std::string, array> load_folder_weights(const std::string& dir);

/// Turns the stand-ins among `weights` (arrays of the shape and dtype a weight will have, never evaluated) into
/// their values, each cut to what `plan` keeps of it: the hook of loaders that convert what they read (GGUF's).
using WeightConversion = std::function<void(std::unordered_map<std::string, array>& weights, const LoadPlan& plan)>;

/// Loads Hugging Face-named weights into a model create_model built from `config`: drops what checkpoints carry
/// that the model computes (rotary inv_freq, lm_head of tied embeddings), swaps in quantized layers where config's
/// quantization and the weights' .scales say so, and throws one error listing every missing, unexpected and
/// mis-shaped weight by name. With a placement the model is split first (LoadPlan), the weights it drops are never
/// read and the others are cut, lazily, to its part (stacked experts before they are stacked); `convert` then
/// gives the stand-ins their values.
void load_weights_into(LanguageModel& model, std::unordered_map<std::string, array> weights,
                       const nlohmann::json& config, const std::optional<Placement>& placement = std::nullopt,
                       const WeightConversion& convert = {});

/// Group size and bits of one quantized layer.
struct QuantParams {
  int group_size = 64;
  int bits = 4;
  /// "affine", or one of GGML's block formats (weights as a GGUF file holds them; nuvec/core/quantization_mode.h).
  std::string mode = "affine";
};
/// Chooses per layer (by dotted path, e.g. "model.layers.0.mlp.down_proj"): its parameters, or none to keep it float.
using QuantRecipe = std::function<std::optional<QuantParams>(const std::string& path, const nn::Module& module)>;

/// Quantizes every Linear and Embedding whose input size divides by its group size (affine, MLX's format), and
/// records it in config's "quantization" (with per-module entries where `recipe` departs from the defaults).
void quantize(LanguageModel& model, nlohmann::json& config, int group_size = 64, int bits = 4,
              const QuantRecipe& recipe = {});

/// Writes an MLX-style folder that load_folder reads back: config.json, model.safetensors (sharded past
/// `shard_bytes`, with an index) and the tokenizer's files copied from `tokenizer_dir` (none when empty).
void save_folder(const std::string& dir, const LanguageModel& model, const nlohmann::json& config,
                 const std::string& tokenizer_dir = "", size_t shard_bytes = size_t{5} << 30);

}  // namespace nuvec::lm
