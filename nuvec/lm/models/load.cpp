#include "nuvec/lm/models/load.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "nuvec/core/error.h"
#include "nuvec/core/quantization_mode.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/lm/models/moe.h"
#include "nuvec/lm/models/registry.h"
#include "nuvec/lm/models/transformer.h"
#include "nuvec/nn/quantized.h"

namespace nuvec::lm {

namespace fs = std::filesystem;

using Weights = std::unordered_map<std::string, array>;

namespace {

nlohmann::json read_json(const fs::path& file) {
  std::ifstream in(file);
  if (!in) {
    throw_error(ErrorKind::io, "[load_folder] cannot read " + file.string() + ".");
  }
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw_error(ErrorKind::io, "[load_folder] " + file.string() + " is not valid JSON: " + e.what());
  }
}

/// load_safetensors with the file named in its errors.
Weights read_safetensors(const fs::path& file) {
  try {
    return load_safetensors(file.string()).first;
  } catch (const error& e) {
    if (std::string(e.what()).find(file.string()) != std::string::npos) {
      throw;
    }
    throw_error(e.kind(), "[load_folder] " + file.string() + ": " + e.what());
  }
}

void merge_into(Weights& all, const Weights& part, const fs::path& file) {
  for (const auto& [name, value] : part) {
    if (!all.emplace(name, value).second) {
      throw_invalid("[load_folder] " + name + " appears in more than one file (again in " + file.string() + ").");
    }
  }
}

/// The affine quantization config.json asks for: "quantization" (mlx-lm), or an MLX "quantization_config";
/// null when the model is float.
nlohmann::json quantization_of(const nlohmann::json& config) {
  if (auto q = config.find("quantization"); q != config.end() && !q->is_null()) {
    if (!q->is_object()) {
      throw_invalid("[config.json] quantization must be an object; got " + q->dump() + ".");
    }
    return *q;
  }
  if (auto q = config.find("quantization_config"); q != config.end() && q->is_object()) {
    if (q->contains("quant_method")) {
      throw_unsupported("[config.json] quantization_config's quant_method " + (*q)["quant_method"].dump() +
                        " is not supported; nuvec reads MLX's affine quantization (config.json's quantization).");
    }
    return *q;
  }
  return nullptr;
}

QuantParams quant_params(const nlohmann::json& entry, const QuantParams& defaults, const std::string& where) {
  QuantParams p{config_field::integer(entry, "group_size", defaults.group_size),
                config_field::integer(entry, "bits", defaults.bits), defaults.mode};
  if (auto mode = entry.find("mode"); mode != entry.end()) {
    if (!mode->is_string()) {
      throw_invalid("[config.json] quantization" + where + ".mode must be a string; got " + mode->dump() + ".");
    }
    p.mode = mode->get<std::string>();
    const auto parsed = parse_quantization_mode(p.mode);
    if (p.mode != "affine" && !(parsed && is_block_format(*parsed))) {
      throw_unsupported("[config.json] quantization mode \"" + p.mode +
                        "\" is not supported; nuvec reads \"affine\" and GGML's block formats (q4_0, q8_0, q4_k, "
                        "q6_k).");
    }
  }
  if (p.group_size <= 0 || p.bits <= 0) {
    throw_invalid("[config.json] quantization" + where + " needs a positive group_size and bits; got " + entry.dump() +
                  ".");
  }
  return p;
}

/// Replaces the Linear or Embedding `child` of `parent` with its quantized version.
/// The input size of a layer quantize() can swap (what its group size must divide), none for other modules.
std::optional<int> quantizable_input_dims(const nn::Module& module) {
  if (dynamic_cast<const nn::QuantizedLinear*>(&module) != nullptr ||
      dynamic_cast<const nn::QuantizedEmbedding*>(&module) != nullptr ||
      dynamic_cast<const QuantizedSwitchLinear*>(&module) != nullptr) {
    return std::nullopt;
  }
  if (const auto* linear = dynamic_cast<const nn::Linear*>(&module)) {
    return linear->input_dims();
  }
  if (const auto* embedding = dynamic_cast<const nn::Embedding*>(&module)) {
    return embedding->dims();
  }
  if (const auto* experts = dynamic_cast<const SwitchLinear*>(&module)) {
    return experts->input_dims();
  }
  return std::nullopt;
}

void quantize_child(nn::Module& parent, const std::string& name, const std::string& path, nn::Module& child,
                    const QuantParams& p) {
  const int dims = quantizable_input_dims(child).value();
  if (p.mode == "affine" && dims % p.group_size != 0) {
    throw_invalid("[quantize] " + path + ": its input size " + std::to_string(dims) +
                  " is not a multiple of group_size " + std::to_string(p.group_size) + ".");
  }
  try {
    if (auto* linear = dynamic_cast<nn::Linear*>(&child)) {
      parent.set_child(name, linear->to_quantized(p.group_size, p.bits, p.mode));
    } else if (auto* embedding = dynamic_cast<nn::Embedding*>(&child)) {
      parent.set_child(name, std::make_shared<nn::QuantizedEmbedding>(*embedding, p.group_size, p.bits, p.mode));
    } else if (p.mode != "affine") {
      throw_unsupported("stacked experts are computed in affine quantization only; got mode " + p.mode);
    } else {
      parent.set_child(
          name, std::make_shared<QuantizedSwitchLinear>(dynamic_cast<SwitchLinear&>(child), p.group_size, p.bits));
    }
  } catch (const error& e) {
    throw_error(e.kind(), "[quantize] " + path + ": " + e.what());
  }
}

/// Calls fn(parent, name, path, child) for every float Linear, Embedding and SwitchLinear (stacked experts) of the
/// tree.
void for_each_quantizable(
    nn::Module& root, const std::function<void(nn::Module&, const std::string&, const std::string&, nn::Module&)>& fn) {
  root.apply_to_modules([&](const std::string& path, nn::Module& parent) {
    for (const auto& [name, child] : parent.children()) {
      if (quantizable_input_dims(*child)) {
        std::string child_path = path;
        child_path.append(path.empty() ? "" : ".").append(name);
        fn(parent, name, child_path, *child);
      }
    }
  });
}

/// Swaps in quantized layers where the config's per-module entry says so (false keeps a layer float) or, without
/// one, where the weights hold the layer's scales.
void apply_quantization(nn::Module& model, const nlohmann::json& quantization, const Weights& weights) {
  const QuantParams defaults = quant_params(quantization, QuantParams{}, "");
  for_each_quantizable(model, [&](nn::Module& parent, const std::string& name, const std::string& path,
                                  nn::Module& child) {
    std::optional<QuantParams> params;
    if (auto entry = quantization.find(path); entry != quantization.end()) {
      if (entry->is_object()) {
        params = quant_params(*entry, defaults, "." + path);
      } else if (!entry->is_boolean()) {
        throw_invalid("[config.json] quantization." + path + " must be an object or false; got " + entry->dump() + ".");
      } else if (entry->get<bool>()) {
        params = defaults;
      }
    } else if (weights.contains(path + ".scales")) {
      params = defaults;
    }
    if (params) {
      quantize_child(parent, name, path, child, *params);
    }
  });
}

/// Names whose given dtype cannot fill the parameter: float data for packed weights or the reverse.
std::vector<std::string> dtype_mismatches(const nn::Module& model, const Weights& weights) {
  std::vector<std::string> wrong;
  for (const auto& [name, current] : model.parameters()) {
    auto given = weights.find(name);
    if (given != weights.end() && is_floating(given->second.dtype()) != is_floating(current.dtype())) {
      std::ostringstream line;
      line << name << ": expected " << current.dtype() << ", given " << given->second.dtype();
      wrong.push_back(line.str());
    }
  }
  std::sort(wrong.begin(), wrong.end());
  return wrong;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

}  // namespace

Weights load_folder_weights(const std::string& dir) {
  const fs::path root(dir);
  Weights weights;
  if (const fs::path index_file = root / "model.safetensors.index.json"; fs::exists(index_file)) {
    const nlohmann::json index = read_json(index_file);
    auto map = index.find("weight_map");
    if (map == index.end() || !map->is_object()) {
      throw_invalid("[load_folder] " + index_file.string() + " has no weight_map object.");
    }
    std::map<std::string, std::vector<std::string>> by_file;
    for (const auto& [name, file] : map->items()) {
      if (!file.is_string()) {
        throw_invalid("[load_folder] " + index_file.string() + " maps " + name + " to " + file.dump() +
                      ", not a file name.");
      }
      by_file[file.get<std::string>()].push_back(name);
    }
    for (const auto& [file, names] : by_file) {
      Weights part = read_safetensors(root / file);
      for (const auto& name : names) {
        if (!part.contains(name)) {
          std::ostringstream message;
          message << "[load_folder] " << index_file.string() << " places " << name << " in " << file
                  << ", which does not hold it.";
          throw_invalid(message.str());
        }
      }
      merge_into(weights, part, root / file);
    }
    return weights;
  }
  if (const fs::path single = root / "model.safetensors"; fs::exists(single)) {
    return read_safetensors(single);
  }
  std::vector<fs::path> files;
  if (fs::is_directory(root)) {
    for (const auto& entry : fs::directory_iterator(root)) {
      if (entry.path().extension() == ".safetensors") {
        files.push_back(entry.path());
      }
    }
  }
  if (files.empty()) {
    throw_error(ErrorKind::io, "[load_folder] " + dir +
                                   " holds no model.safetensors, no model.safetensors.index.json and no other "
                                   ".safetensors file.");
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    merge_into(weights, read_safetensors(file), file);
  }
  return weights;
}

void load_weights_into(LanguageModel& model, Weights weights, const nlohmann::json& config,
                       const std::optional<Placement>& placement, const WeightConversion& convert) {
  if (auto* transformer = dynamic_cast<TransformerModel*>(&model)) {
    transformer->sanitize(weights);
  }
  if (const nlohmann::json quantization = quantization_of(config); !quantization.is_null()) {
    apply_quantization(model, quantization, weights);
  }
  // The split comes before the weights: they are then read (and converted) only where the rank keeps them.
  const LoadPlan plan = placement ? LoadPlan(model, *placement) : LoadPlan();
  std::erase_if(weights, [&](const auto& entry) { return !plan.keeps(entry.first); });
  if (convert) {
    convert(weights, plan);
  }
  for (auto& [name, value] : weights) {
    value = plan.take(name, value);
  }
  if (auto wrong = dtype_mismatches(model, weights); !wrong.empty()) {
    throw_invalid("[load_weights] weights of the wrong kind (is config.json's quantization right?): " + join(wrong) +
                  ".");
  }
  nn::Params params(weights.begin(), weights.end());
  std::sort(params.begin(), params.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  model.load_weights(params, true);
}

LoadedModel load_folder(const std::string& dir, const std::optional<Placement>& placement) {
  const fs::path root(dir);
  if (!fs::is_directory(root)) {
    throw_error(ErrorKind::io, "[load_folder] " + dir + " is not a folder.");
  }
  if (!fs::exists(root / "config.json")) {
    throw_error(ErrorKind::io, "[load_folder] " + dir + " has no config.json.");
  }
  nlohmann::json config = read_json(root / "config.json");
  std::shared_ptr<LanguageModel> model = create_model(config);
  load_weights_into(*model, load_folder_weights(dir), config, placement);
  model->eval();
  const fs::path generation_file = root / "generation_config.json";
  const nlohmann::json generation = fs::exists(generation_file) ? read_json(generation_file) : nlohmann::json();
  return LoadedModel{std::move(model), Tokenizer::from_folder(dir), GenerationConfig::from_json(generation, config),
                     std::move(config)};
}

void quantize(LanguageModel& model, nlohmann::json& config, int group_size, int bits, const QuantRecipe& recipe) {
  const QuantParams defaults{group_size, bits};
  nlohmann::json quantization = {{"group_size", group_size}, {"bits", bits}};
  for_each_quantizable(model,
                       [&](nn::Module& parent, const std::string& name, const std::string& path, nn::Module& child) {
                         const std::optional<QuantParams> params = recipe ? recipe(path, child) : defaults;
                         const int dims = quantizable_input_dims(child).value();
                         if (!params || dims % params->group_size != 0) {
                           if (recipe) {
                             quantization[path] = false;
                           }
                           return;
                         }
                         if (params->group_size != group_size || params->bits != bits) {
                           quantization[path] = {{"group_size", params->group_size}, {"bits", params->bits}};
                         }
                         quantize_child(parent, name, path, child, *params);
                       });
  config["quantization"] = quantization;
  config["quantization_config"] = quantization;
}

void save_folder(const std::string& dir, const LanguageModel& model, const nlohmann::json& config,
                 const std::string& tokenizer_dir, size_t shard_bytes) {
  const fs::path root(dir);
  fs::create_directories(root);
  // Shards in parameter order, each under shard_bytes unless one tensor alone is larger.
  std::vector<std::unordered_map<std::string, array>> shards(1);
  size_t shard_size = 0;
  size_t total_size = 0;
  for (const auto& [name, value] : model.parameters()) {
    if (shard_size > 0 && shard_size + value.nbytes() > shard_bytes) {
      shards.emplace_back();
      shard_size = 0;
    }
    shards.back().emplace(name, value);
    shard_size += value.nbytes();
    total_size += value.nbytes();
  }
  const std::unordered_map<std::string, std::string> metadata = {{"format", "mlx"}};
  if (shards.size() == 1) {
    save_safetensors((root / "model.safetensors").string(), shards[0], metadata);
  } else {
    nlohmann::json weight_map = nlohmann::json::object();
    for (size_t i = 0; i < shards.size(); ++i) {
      char file[64];
      std::snprintf(file, sizeof(file), "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
      for (const auto& [name, value] : shards[i]) {
        weight_map[name] = file;
      }
      save_safetensors((root / file).string(), shards[i], metadata);
    }
    const nlohmann::json index = {{"metadata", {{"total_size", total_size}}}, {"weight_map", weight_map}};
    std::ofstream(root / "model.safetensors.index.json") << index.dump(4) << '\n';
  }
  std::ofstream out(root / "config.json");
  out << config.dump(4) << '\n';
  if (!out) {
    throw_error(ErrorKind::io, "[save_folder] cannot write " + (root / "config.json").string() + ".");
  }
  if (tokenizer_dir.empty()) {
    return;
  }
  if (!fs::is_directory(tokenizer_dir)) {
    throw_error(ErrorKind::io, "[save_folder] the tokenizer folder " + tokenizer_dir + " does not exist.");
  }
  if (fs::equivalent(fs::path(tokenizer_dir), root)) {
    return;
  }
  static const char* const tokenizer_files[] = {
      "tokenizer.json",      "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
      "chat_template.jinja", "chat_template.json",    "tokenizer.model",         "vocab.json",
      "merges.txt",          "generation_config.json"};
  for (const char* file : tokenizer_files) {
    const fs::path source = fs::path(tokenizer_dir) / file;
    if (fs::exists(source)) {
      fs::copy_file(source, root / file, fs::copy_options::overwrite_existing);
    }
  }
}

}  // namespace nuvec::lm
