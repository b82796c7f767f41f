#include "tests/lm/model_test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <unordered_map>

#include "nuvec/core/ops.h"
#include "nuvec/core/random.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/lm/models/llama.h"

namespace nuvec::lm::test {

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("nuvec_models_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

nlohmann::json tiny_config(const std::string& model_type, int head_dim) {
  return {{"model_type", model_type},
          {"vocab_size", 96},
          {"hidden_size", 64},
          {"intermediate_size", 128},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"head_dim", head_dim},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 10000.0},
          {"max_position_embeddings", 256},
          {"tie_word_embeddings", false},
          {"hidden_act", "silu"},
          {"bos_token_id", 1},
          {"eos_token_id", 2}};
}

std::vector<std::pair<std::string, Shape>> hf_weight_shapes(const nlohmann::json& config) {
  const std::string type = config["model_type"];
  const int vocab = config["vocab_size"];
  const int hidden = config["hidden_size"];
  const int inter = config["intermediate_size"];
  const int heads = config["num_attention_heads"];
  const int kv_heads = config["num_key_value_heads"];
  const int head_dim = config["head_dim"];
  const bool attention_bias = config.value("attention_bias", false);
  const bool mlp_bias = config.value("mlp_bias", false);
  const bool qkv_bias = type == "qwen2" || attention_bias;
  const bool o_bias = type != "qwen2" && attention_bias;
  std::vector<std::pair<std::string, Shape>> shapes = {{"model.embed_tokens.weight", {vocab, hidden}}};
  auto linear = [&](const std::string& name, int out, int in, bool bias) {
    shapes.emplace_back(name + ".weight", Shape{out, in});
    if (bias) {
      shapes.emplace_back(name + ".bias", Shape{out});
    }
  };
  for (int i = 0; i < config["num_hidden_layers"].get<int>(); ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    shapes.emplace_back(p + "input_layernorm.weight", Shape{hidden});
    shapes.emplace_back(p + "post_attention_layernorm.weight", Shape{hidden});
    if (type == "phi3") {
      linear(p + "self_attn.qkv_proj", (heads + 2 * kv_heads) * head_dim, hidden, false);
      linear(p + "mlp.gate_up_proj", 2 * inter, hidden, false);
    } else {
      linear(p + "self_attn.q_proj", heads * head_dim, hidden, qkv_bias);
      linear(p + "self_attn.k_proj", kv_heads * head_dim, hidden, qkv_bias);
      linear(p + "self_attn.v_proj", kv_heads * head_dim, hidden, qkv_bias);
      linear(p + "mlp.gate_proj", inter, hidden, mlp_bias);
      linear(p + "mlp.up_proj", inter, hidden, mlp_bias);
    }
    linear(p + "self_attn.o_proj", hidden, heads * head_dim, o_bias);
    linear(p + "mlp.down_proj", hidden, inter, mlp_bias);
    if (type == "qwen3") {
      shapes.emplace_back(p + "self_attn.q_norm.weight", Shape{head_dim});
      shapes.emplace_back(p + "self_attn.k_norm.weight", Shape{head_dim});
    }
  }
  shapes.emplace_back("model.norm.weight", Shape{hidden});
  if (!config.value("tie_word_embeddings", false)) {
    shapes.emplace_back("lm_head.weight", Shape{vocab, hidden});
  }
  return shapes;
}

std::vector<std::pair<std::string, array>> random_weights(const nlohmann::json& config, Dtype dtype, uint64_t seed) {
  std::vector<std::pair<std::string, array>> weights;
  uint64_t index = 0;
  for (const auto& [name, shape] : hf_weight_shapes(config)) {
    const array key = random::key(seed * 1000 + index++);
    const bool norm = name.find("norm") != std::string::npos;
    // Queries and keys a little larger so attention is far from uniform and positions matter.
    const bool qk = name.find("q_proj") != std::string::npos || name.find("k_proj") != std::string::npos ||
                    name.find("qkv_proj") != std::string::npos;
    const float stddev = norm ? 0.1F : (qk ? 0.1F : 0.05F);
    array value = random::normal(shape, float32, norm ? 1.0F : 0.0F, stddev, key);
    weights.emplace_back(name, astype(value, dtype));
  }
  return weights;
}

std::shared_ptr<LanguageModel> random_tiny_llama(uint64_t seed, int vocab, int context) {
  const nlohmann::json config = {{"model_type", "llama"},    {"vocab_size", vocab},
                                 {"hidden_size", 32},        {"num_hidden_layers", 2},
                                 {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                                 {"intermediate_size", 64},  {"max_position_embeddings", context},
                                 {"rms_norm_eps", 1e-5},     {"rope_theta", 10000.0},
                                 {"hidden_act", "silu"},     {"tie_word_embeddings", false}};
  std::shared_ptr<LanguageModel> model = make_llama(config);
  array key = random::key(seed);
  model->apply([&](const std::string& name, const array& a) {
    auto keys = random::split(key);
    key = keys.first;
    if (a.ndim() == 1) {
      return random::normal(a.shape(), float32, 1.0F, 0.1F, keys.second);
    }
    float scale = 1.0F / std::sqrt(static_cast<float>(a.shape(1)));
    if (name == "lm_head.weight") {
      scale *= 4.0F;
    } else if (name.find("embed") != std::string::npos) {
      scale = 1.0F;
    }
    return random::normal(a.shape(), float32, 0.0F, scale, keys.second);
  });
  return model;
}

void write_tiny_tokenizer(const std::string& dir) {
  nlohmann::json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int id = 3; id < 64; ++id) {
    vocab[std::string("w").append(std::to_string(id))] = id;
  }
  auto special = [](int id, const char* content) {
    return nlohmann::json{{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
                          {"rstrip", false}, {"normalized", false}, {"special", true}};
  };
  const nlohmann::json tokenizer = {{"version", "1.0"},
                                    {"added_tokens", {special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")}},
                                    {"normalizer", nullptr},
                                    {"pre_tokenizer", {{"type", "WhitespaceSplit"}}},
                                    {"post_processor", nullptr},
                                    {"decoder", nullptr},
                                    {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}}}};
  std::ofstream(fs::path(dir) / "tokenizer.json") << tokenizer.dump();
  std::ofstream(fs::path(dir) / "tokenizer_config.json")
      << nlohmann::json{{"bos_token", "<s>"}, {"eos_token", "</s>"}}.dump();
}

void write_hf_folder(const std::string& dir, const nlohmann::json& config, Dtype dtype, uint64_t seed) {
  fs::create_directories(dir);
  std::unordered_map<std::string, array> weights;
  for (auto& [name, value] : random_weights(config, dtype, seed)) {
    weights.emplace(name, value);
  }
  save_safetensors((fs::path(dir) / "model.safetensors").string(), weights);
  std::ofstream(fs::path(dir) / "config.json") << config.dump(2);
  write_tiny_tokenizer(dir);
}

std::vector<ReferenceResult> run_reference(const std::vector<ReferenceJob>& jobs, const std::string& script) {
  const std::string dir = fresh_dir(std::string("reference_io_").append(script));
  const std::string jobs_file = dir + "/jobs.json";
  const std::string results_file = dir + "/results.json";
  nlohmann::json list = nlohmann::json::array();
  for (const auto& job : jobs) {
    list.push_back({{"folder", job.folder}, {"ids", job.ids}, {"greedy", job.greedy}});
  }
  std::ofstream(jobs_file) << list.dump();
  const std::string command = "/usr/bin/python3 '" + std::string(TESTS_LM_DIR) + "/reference/" + script + "' '" +
                              jobs_file + "' '" + results_file + "'";
  if (std::system(command.c_str()) != 0) {
    throw std::runtime_error("the PyTorch reference failed: " + command);
  }
  std::ifstream in(results_file);
  const nlohmann::json results = nlohmann::json::parse(in);
  std::vector<ReferenceResult> out;
  for (const auto& r : results) {
    out.push_back(
        {r["shape"][0], r["shape"][1], r["logits"].get<std::vector<double>>(), r["greedy"].get<std::vector<int>>()});
  }
  return out;
}

}  // namespace nuvec::lm::test
