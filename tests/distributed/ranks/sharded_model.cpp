// LanguageModel::shard and pipeline on every rank: tiny random models built from the same seed on each rank, one
// kept whole and one sharded (or split into a pipeline) across the group, give the same logits, and greedy decoding
// through their KV caches the same tokens. With 3 ranks the heads split unevenly (by whole key-value heads). Models
// loaded from checkpoints (GGUF files as llama.cpp writes them, safetensors folders) and sharded equal the whole
// model loaded from the same file, and a rank keeps only its slices of the file's sharded weights (a pipeline rank:
// only the weights of its layers), which are all it reads, converts or stacks while it loads.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "nuvec/io/safetensors.h"
#include "nuvec/lm/lm.h"
#include "nuvec/nn/nn.h"
#include "nuvec/nuvec.h"
#include "tests/lm/reference/gguf_writer.h"

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

/// The key-value heads of 4 that `rank` of `size` holds: whole heads, the first 4 % size ranks one more.
int kv_heads_of(int rank, int size) { return 4 / size + (rank < 4 % size ? 1 : 0); }

TEST(ShardedModel, LogitsAndGreedyTokensEqualTheUnshardedModel) {
  const distributed::Group g = distributed::init(true);
  // llama: separate q, k, v; qwen2: with q/k/v biases; qwen3: q/k norms; phi3: fused qkv_proj and gate_up_proj.
  for (const std::string type : {"llama", "qwen2", "qwen3", "phi3"}) {
    const nlohmann::json config = tiny_config(type);
    auto whole = tiny_model(config, 7);
    auto sharded = tiny_model(config, 7);
    if (type == "phi3" && 4 % g.size() != 0) {
      EXPECT_THROW(sharded->shard(g), std::invalid_argument) << "a fused qkv_proj split unevenly";
      continue;
    }
    sharded->shard(g);
    auto& attention =
        *dynamic_cast<TransformerBlock&>((*dynamic_cast<TransformerModel&>(*sharded).model->layers)[0]).self_attn;
    // Each key-value head keeps its 2 query heads on its rank.
    EXPECT_EQ(attention.options().num_kv_heads, kv_heads_of(g.rank(), g.size())) << type;
    EXPECT_EQ(attention.options().num_heads, 2 * kv_heads_of(g.rank(), g.size())) << type;
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

TEST(ShardedModel, MixturesOfExpertsShardEveryExpert) {
  const distributed::Group g = distributed::init(true);
  // Each rank keeps its share of every expert's 128 intermediate features (in whole groups of 32 once quantized: 2
  // and 2 on 2 ranks, 2, 1 and 1 on 3), the router whole; qwen3_moe's experts have a size of their own.
  nlohmann::json mixtral = tiny_config("mixtral");
  mixtral["num_local_experts"] = 4;
  mixtral["num_experts_per_tok"] = 2;
  nlohmann::json qwen3_moe = tiny_config("qwen3_moe");
  qwen3_moe["num_experts"] = 4;
  qwen3_moe["num_experts_per_tok"] = 2;
  qwen3_moe["moe_intermediate_size"] = 128;
  qwen3_moe["norm_topk_prob"] = true;
  for (const nlohmann::json& config : {mixtral, qwen3_moe}) {
    for (const bool quantized : {false, true}) {
      const std::string what = config["model_type"].get<std::string>() + (quantized ? " quantized" : "");
      auto whole = tiny_model(config, 11);
      auto sharded = tiny_model(config, 11);
      if (quantized) {  // every projection, the stacked experts too, in 8 bits
        for (auto* model : {whole.get(), sharded.get()}) {
          nlohmann::json written = config;
          quantize(*model, written, 32, 8);
        }
      }
      sharded->shard(g);
      const std::string prefix =
          "model.layers.1." +
          std::string(config["model_type"] == "mixtral" ? "block_sparse_moe.switch_mlp." : "mlp.switch_mlp.");
      const auto params = sharded->parameters();
      const auto shape_of = [&](const std::string& name) {
        for (const auto& [path, value] : params) {
          if (path == prefix + name) {
            return value.shape();
          }
        }
        return Shape{};
      };
      const int block = quantized ? 32 : 1;
      const int blocks = 128 / block;
      const int share = block * (blocks / g.size() + (g.rank() < blocks % g.size() ? 1 : 0));
      EXPECT_EQ(shape_of("gate_proj.weight")[1], share) << what;
      EXPECT_EQ(shape_of("down_proj.weight")[2], quantized ? share / 4 : share) << what;  // 4 features a word
      expect_same_model(whole, sharded, what, quantized ? 1e-3 : 1e-4);
    }
  }
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

TEST(ShardedModel, FewerKeyValueHeadsThanRanksAreRefused) {
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
    EXPECT_NE(
        std::string(e.what()).find("cannot split 8 heads and 1 key-value heads across " + std::to_string(g.size()) +
                                   " ranks: each rank needs a key-value head of its own."),
        std::string::npos)
        << e.what();
  }
}

/// A temporary file name of this rank's (every rank writes its own copy of each checkpoint).
std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("nuvec_sharded_checkpoint_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

/// The parameters of `model` by name: the Hugging Face names a checkpoint holds.
test::NamedArrays named_weights(const LanguageModel& model) {
  test::NamedArrays weights;
  for (const auto& [name, value] : model.parameters()) {
    weights.insert_or_assign(name, value);
  }
  return weights;
}

/// tiny_config with a byte-level vocabulary of 300 tokens (a GGUF file's tokenizer needs at least 258).
nlohmann::json gguf_config(const std::string& model_type) {
  nlohmann::json config = tiny_config(model_type);
  config["vocab_size"] = 300;
  config["bos_token_id"] = 298;
  config["eos_token_id"] = 299;
  return config;
}

/// Gemma 2's: norms plus 1 in the file, soft caps, a sliding window, tied embeddings.
nlohmann::json gemma2_config() {
  nlohmann::json config = gguf_config("gemma2");
  config["tie_word_embeddings"] = true;
  config["query_pre_attn_scalar"] = 16;
  config["hidden_activation"] = "gelu_pytorch_tanh";
  config["attn_logit_softcapping"] = 5.0;
  config["final_logit_softcapping"] = 10.0;
  config["sliding_window"] = 5;
  return config;
}

/// Writes tiny_model(config, seed) as llama.cpp's converter would: matrices as `matrices` (F16, or Q8_0 blocks cut
/// at whole blocks), norms and embeddings in F32.
void write_gguf(const std::string& path, const nlohmann::json& config, uint64_t seed, io::GGMLType matrices) {
  test::write_gguf_model(
      path, config, named_weights(*tiny_model(config, seed)),
      [matrices](const std::string& name) {
        const bool matrix = name.find("norm") == std::string::npos && name.find("embed") == std::string::npos;
        return matrix ? matrices : io::GGMLType::F32;
      },
      test::byte_level_vocabulary(config["vocab_size"].get<int>()));
}

TEST(ShardedCheckpoint, GGUFLlamaAndGemma2EqualTheWholeModel) {
  const distributed::Group g = distributed::init(true);
  // llama's Q and K rows as the converter permutes them, Gemma 2's norms, soft caps and sliding window.
  for (const nlohmann::json& config : {gguf_config("llama"), gemma2_config()}) {
    for (const io::GGMLType matrices : {io::GGMLType::F16, io::GGMLType::Q8_0}) {
      const std::string what = config["model_type"].get<std::string>().append(
          matrices == io::GGMLType::F16 ? " F16 from GGUF" : " Q8_0 from GGUF");
      const std::string path = temp_path("model.gguf");
      write_gguf(path, config, 11, matrices);
      auto whole = load_model(path).model;
      auto sharded = load_model(path).model;
      sharded->shard(g);
      expect_same_model(whole, sharded, what, 1e-3);
      std::filesystem::remove(path);
    }
  }
}

/// A safetensors folder of `model` (config.json and model.safetensors; no tokenizer: read back with load_weights).
void write_folder(const std::string& dir, const LanguageModel& model, const nlohmann::json& config) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << config.dump();
  save_safetensors(dir + "/model.safetensors", named_weights(model));
}

/// The model of a folder write_folder wrote, its weights mapped from the file.
std::shared_ptr<LanguageModel> read_folder(const std::string& dir, const nlohmann::json& config) {
  std::shared_ptr<LanguageModel> model = create_model(config);
  load_weights_into(*model, load_folder_weights(dir), config);
  return model;
}

TEST(ShardedCheckpoint, Gemma3FolderEqualsTheWholeModel) {
  const distributed::Group g = distributed::init(true);
  // Gemma 3: q/k norms, sliding-window layers (window 4) with their own RoPE base, and a global one.
  nlohmann::json config = tiny_config("gemma3_text");
  config["hidden_activation"] = "gelu_pytorch_tanh";
  config["tie_word_embeddings"] = true;
  config["query_pre_attn_scalar"] = 16;
  config["sliding_window"] = 4;
  config["sliding_window_pattern"] = 2;
  config["rope_local_base_freq"] = 20000.0;
  const std::string dir = temp_path("gemma3");
  write_folder(dir, *tiny_model(config, 12), config);
  auto whole = read_folder(dir, config);
  auto sharded = read_folder(dir, config);
  sharded->shard(g);
  expect_same_model(whole, sharded, "gemma3_text from safetensors", 1e-4);
  std::filesystem::remove_all(dir);
}

/// The bytes of `file` mapped into this process and resident: the Rss of its mappings in /proc/self/smaps.
size_t resident_bytes_of(const std::string& file) {
  std::ifstream smaps("/proc/self/smaps");
  const std::string target = std::filesystem::canonical(file).string();
  size_t kib = 0;
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::istringstream fields(line);
    std::string first;
    fields >> first;
    if (first.find('-') != std::string::npos && first.back() != ':') {
      // A mapping's header: address range, permissions, offset, device, inode, path.
      std::string skip;
      std::string path;
      fields >> skip >> skip >> skip >> skip >> path;
      inside = path == target;
    } else if (inside && first == "Rss:") {
      size_t value = 0;
      fields >> value;
      kib += value;
    }
  }
  return kib * 1024;
}

TEST(ShardedCheckpoint, EachRankHoldsItsSlicesOfTheFile) {
  const distributed::Group g = distributed::init(true);
  // Weights of 128 KiB to 1 MiB (hidden 256, head_dim 32, feed-forward 1024, float32).
  nlohmann::json config = tiny_config("llama");
  config["hidden_size"] = 256;
  config["head_dim"] = 32;
  config["intermediate_size"] = 1024;
  const std::string dir = temp_path("llama_slices");
  write_folder(dir, *tiny_model(config, 13), config);
  const std::string file = dir + "/model.safetensors";
  const auto measure = [&](bool shard) {
    auto model = read_folder(dir, config);
    if (shard) {
      model->shard(g);
    }
    eval((*model)(prompt));
    std::map<std::string, size_t> held;
    for (const auto& [name, value] : model->parameters()) {
      held[name] = value.nbytes();
    }
    return std::pair{resident_bytes_of(file), held};
  };
  // One model at a time: the other's mapping is gone when it is measured.
  const auto [sharded_mapped, sharded_held] = measure(true);
  const auto [whole_mapped, whole_held] = measure(false);
  // The attention's share is this rank's key-value heads of 4, the feed-forward's its features of 1024; embeddings,
  // norms and lm_head stay whole.
  const size_t features = 1024 / g.size() + (g.rank() < 1024 % g.size() ? 1 : 0);
  size_t held = 0;
  size_t whole = 0;
  for (const auto& [name, bytes] : whole_held) {
    const size_t want = name.find("self_attn.") != std::string::npos ? bytes / 4 * kv_heads_of(g.rank(), g.size())
                        : name.find("mlp.") != std::string::npos     ? bytes / 1024 * features
                                                                     : bytes;
    ASSERT_TRUE(sharded_held.contains(name)) << name;
    EXPECT_EQ(sharded_held.at(name), want) << name;
    held += sharded_held.at(name);
    whole += bytes;
  }
  // The mapped pages are reported, not checked: the kernel maps whole page-cache folios (up to megabytes on ext4)
  // around each fault, so they count more than the bytes a rank reads.
  std::printf(
      "rank %d of %d: holds %zu of the model's %zu bytes of weights; %zu of the file's %zu bytes mapped (the "
      "whole model: %zu)\n",
      g.rank(), g.size(), held, whole, sharded_mapped, static_cast<size_t>(std::filesystem::file_size(file)),
      whole_mapped);
  std::filesystem::remove_all(dir);
}

/// The bytes of each weight `model` holds, by name.
std::map<std::string, size_t> held_bytes(const LanguageModel& model) {
  std::map<std::string, size_t> held;
  for (const auto& [name, value] : model.parameters()) {
    held[name] = value.nbytes();
  }
  return held;
}

/// Whether pipeline rank `rank` of `size` needs weight `name` of a model of `layers` layers: its run of the layers
/// (the first layers % size ranks one layer more), the embeddings on the first rank, the final norm and lm_head (or
/// the tied embeddings) on the last.
bool pipeline_needs(const std::string& name, int rank, int size, int layers, bool tied) {
  const bool last = rank == size - 1;
  if (name.starts_with("model.layers.")) {
    const int layer = std::stoi(name.substr(std::string("model.layers.").size()));
    int begin = 0;
    for (int r = 0; r < rank; ++r) {
      begin += layers / size + (r < layers % size ? 1 : 0);
    }
    return layer >= begin && layer < begin + layers / size + (rank < layers % size ? 1 : 0);
  }
  if (name.starts_with("model.embed_tokens.")) {
    return rank == 0 || (tied && last);
  }
  EXPECT_TRUE(name.starts_with("model.norm.") || name.starts_with("lm_head.")) << "unexpected weight " << name;
  return last;
}

TEST(PipelinedCheckpoint, EachRankHoldsOnlyItsLayersAndEqualsTheWholeModel) {
  const distributed::Group g = distributed::init(true);
  // 5 layers: 3 and 2 on 2 ranks, 2, 2 and 1 on 3. llama from a safetensors folder with its own lm_head; Gemma 2
  // from a GGUF file (Q8_0 matrices) with tied embeddings, which the first and the last rank both hold.
  nlohmann::json llama = tiny_config("llama");
  nlohmann::json gemma2 = gemma2_config();
  for (nlohmann::json* config : {&llama, &gemma2}) {
    (*config)["num_hidden_layers"] = 5;
  }
  for (const nlohmann::json& config : {llama, gemma2}) {
    const bool gguf = config["model_type"] == "gemma2";
    const std::string what = config["model_type"].get<std::string>() + (gguf ? " from GGUF" : " from safetensors");
    const std::string path = temp_path(gguf ? "pipelined.gguf" : "pipelined");
    if (gguf) {
      write_gguf(path, config, 14, io::GGMLType::Q8_0);
    } else {
      write_folder(path, *tiny_model(config, 14), config);
    }
    const auto load = [&] { return gguf ? load_model(path).model : read_folder(path, config); };
    auto whole = load();
    auto split = load();
    split->pipeline(g);
    const std::map<std::string, size_t> whole_held = held_bytes(*whole);
    const std::map<std::string, size_t> split_held = held_bytes(*split);
    size_t want = 0;
    for (const auto& [name, bytes] : whole_held) {
      if (pipeline_needs(name, g.rank(), g.size(), 5, config["tie_word_embeddings"].get<bool>())) {
        EXPECT_EQ(split_held.contains(name) ? split_held.at(name) : 0, bytes) << what << ": " << name;
        want += bytes;
      } else {
        EXPECT_FALSE(split_held.contains(name)) << what << ": rank " << g.rank() << " holds " << name;
      }
    }
    size_t held = 0;
    for (const auto& [name, bytes] : split_held) {
      EXPECT_TRUE(whole_held.contains(name)) << what << ": " << name;
      held += bytes;
    }
    EXPECT_EQ(held, want) << what;
    std::printf("rank %d of %d: %s holds %zu of the model's weight bytes\n", g.rank(), g.size(), what.c_str(), held);
    expect_same_model(whole, split, what + " pipelined", 1e-4);
    std::filesystem::remove_all(path);
  }
}

/// `model`'s weights as a Hugging Face checkpoint names them: each stacked expert projection
/// (<block>.switch_mlp.<projection>.weight) as one weight an expert (<block>.experts.E.<name>.weight, mixtral's w1,
/// w3 and w2).
test::NamedArrays hf_expert_weights(const LanguageModel& model) {
  const bool mixtral = model.model_type() == "mixtral";
  const std::map<std::string, std::string> names = {{"gate_proj", mixtral ? "w1" : "gate_proj"},
                                                    {"up_proj", mixtral ? "w3" : "up_proj"},
                                                    {"down_proj", mixtral ? "w2" : "down_proj"}};
  test::NamedArrays weights;
  for (const auto& [name, value] : model.parameters()) {
    const auto at = name.find("switch_mlp.");
    if (at == std::string::npos) {
      weights.insert_or_assign(name, value);
      continue;
    }
    const std::string projection = name.substr(at + 11, name.find('.', at + 11) - at - 11);
    for (int e = 0; e < value.shape(0); ++e) {
      weights.insert_or_assign(
          name.substr(0, at) + "experts." + std::to_string(e) + "." + names.at(projection) + ".weight",
          contiguous(take(value, e, 0)));
    }
  }
  return weights;
}

/// The peak of active memory, above what was active before, while `load` runs and the weights of the model it gives
/// are evaluated; and what the model then holds.
struct LoadMemory {
  size_t peak;
  size_t held;
};
LoadMemory load_memory(const std::function<std::shared_ptr<LanguageModel>()>& load) {
  clear_cache();
  const size_t before = get_active_memory();
  reset_peak_memory();
  std::shared_ptr<LanguageModel> model = load();
  std::vector<array> weights;
  for (const auto& [name, value] : model->parameters()) {
    weights.push_back(value);
  }
  eval(weights);
  return {get_peak_memory() - before, get_active_memory() - before};
}

/// The bytes of the largest module of a layer (a projection, or a stack of experts: weight, scales and biases).
size_t largest_layer_module(const LanguageModel& model) {
  std::map<std::string, size_t> modules;
  for (const auto& [name, value] : model.parameters()) {
    if (name.starts_with("model.layers.")) {
      modules[name.substr(0, name.rfind('.'))] += value.nbytes();
    }
  }
  size_t largest = 0;
  for (const auto& [module, bytes] : modules) {
    largest = std::max(largest, bytes);
  }
  return largest;
}

TEST(ShardedCheckpoint, EachRankReadsAndConvertsOnlyWhatItKeeps) {
  const distributed::Group g = distributed::init(true);
  // Checkpoints whose loading converts: GGUF files of mixtral (its stacked experts repacked from Q8_0 blocks) and of
  // llama in Q5_0 (every matrix repacked, its 5-bit codes widened to 8), and a Hugging Face folder of mixtral (its
  // experts, one weight each in the file, stacked). 5 layers: a pipeline rank keeps 3 or 2 of them on 2 ranks.
  nlohmann::json mixtral = gguf_config("mixtral");
  mixtral["num_local_experts"] = 4;
  mixtral["num_experts_per_tok"] = 2;
  mixtral["num_hidden_layers"] = 5;
  nlohmann::json llama = gguf_config("llama");
  llama["num_hidden_layers"] = 5;
  struct Checkpoint {
    nlohmann::json config;
    std::string format;
    io::GGMLType matrices;
  };
  for (const Checkpoint& c :
       {Checkpoint{mixtral, "GGUF", io::GGMLType::Q8_0}, Checkpoint{llama, "GGUF", io::GGMLType::Q5_0},
        Checkpoint{mixtral, "safetensors", io::GGMLType::F32}}) {
    const std::string name = c.config["model_type"].get<std::string>() + " " + c.format;
    const std::string path = temp_path(c.format == "GGUF" ? "converted.gguf" : "converted");
    const test::NamedArrays weights = hf_expert_weights(*tiny_model(c.config, 15));
    if (c.format == "GGUF") {
      test::write_gguf_model(
          path, c.config, weights,
          [&](const std::string& weight) {
            const bool matrix = weight.find("norm") == std::string::npos && weight.find("embed") == std::string::npos;
            return matrix ? c.matrices : io::GGMLType::F32;
          },
          test::byte_level_vocabulary(c.config["vocab_size"].get<int>()));
    } else {
      std::filesystem::remove_all(path);
      std::filesystem::create_directories(path);
      std::ofstream(path + "/config.json") << c.config.dump();
      save_safetensors(path + "/model.safetensors", weights);
    }
    const auto load = [&](const std::optional<Placement>& placement) {
      if (c.format == "GGUF") {
        return load_model(path, placement).model;
      }
      std::shared_ptr<LanguageModel> model = create_model(c.config);
      load_weights_into(*model, load_folder_weights(path), c.config, placement);
      return model;
    };
    std::shared_ptr<LanguageModel> whole = load(std::nullopt);
    const size_t module = largest_layer_module(*whole);
    const LoadMemory whole_memory = load_memory([&] { return load(std::nullopt); });
    for (const bool pipeline : {false, true}) {
      const std::string what = name + (pipeline ? " pipelined" : " sharded");
      const LoadMemory split_memory = load_memory([&] { return load(Placement{g, pipeline}); });
      // Loading goes past what the rank keeps by what loading the whole model goes past what it keeps (the file's
      // metadata and tokenizer) and less than one module of a layer (the blocks of its share of one, read before
      // they are repacked): the other ranks' parts are never converted or stacked.
      std::printf("rank %d of %d: %s: %zu bytes at the peak of loading, %zu held (the whole model: %zu and %zu)\n",
                  g.rank(), g.size(), what.c_str(), split_memory.peak, split_memory.held, whole_memory.peak,
                  whole_memory.held);
      EXPECT_LT(split_memory.peak - split_memory.held, whole_memory.peak - whole_memory.held + module)
          << what << ": the largest module of a layer holds " << module << " bytes";
      EXPECT_LT(split_memory.held, whole_memory.held) << what;
      expect_same_model(whole, load(Placement{g, pipeline}), what, c.format == "GGUF" ? 1e-3 : 1e-4);
    }
    std::filesystem::remove_all(path);
  }
}

}  // namespace
}  // namespace nuvec::lm
