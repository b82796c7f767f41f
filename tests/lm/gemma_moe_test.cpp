// gemma2, gemma3_text, gemma3 (its language model), mixtral and qwen3_moe against a PyTorch reference written out
// from the transformers definitions (tests/lm/reference/gemma_moe_reference.py): tiny random-weight Hugging Face
// folders (per-expert weight names, as transformers saves them) in float32 and bfloat16, and 4-bit MLX-style folders
// (quantize -> save_folder -> load_folder, experts stacked and quantized) against the reference run on the
// dequantized weights. Gemma prompts are longer than the sliding window; mixture prompts are long enough that the
// experts' rows are sorted before gather_mm, and the token-by-token runs take the unsorted path.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "nuvec/core/ops.h"
#include "nuvec/core/random.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/lm/models/load.h"
#include "nuvec/lm/models/moe.h"
#include "nuvec/lm/models/registry.h"
#include "tests/lm/model_test_util.h"

namespace nuvec::lm::test {
namespace {

namespace fs = std::filesystem;

using Json = nlohmann::json;

// ---------------------------------------------------------------- configs and checkpoints

Json with(Json config, const Json& extra) {
  config.update(extra);
  return config;
}

Json gemma2_config() {
  return with(tiny_config("gemma2"), {{"hidden_activation", "gelu_pytorch_tanh"},
                                      {"hidden_act", "gelu_pytorch_tanh"},
                                      {"tie_word_embeddings", true},
                                      {"sliding_window", 4},
                                      {"query_pre_attn_scalar", 24},
                                      {"attn_logit_softcapping", 1.5},
                                      {"final_logit_softcapping", 2.0}});
}

/// Four layers, every third global: sliding, sliding, global, sliding; the global layers with linear scaling and
/// their own theta.
Json gemma3_text_config() {
  return with(tiny_config("gemma3_text"), {{"hidden_activation", "gelu_pytorch_tanh"},
                                           {"num_hidden_layers", 4},
                                           {"tie_word_embeddings", true},
                                           {"sliding_window", 4},
                                           {"sliding_window_pattern", 3},
                                           {"query_pre_attn_scalar", 24},
                                           {"rope_theta", 1000000.0},
                                           {"rope_local_base_freq", 100.0},
                                           {"rope_scaling", {{"rope_type", "linear"}, {"factor", 2.0}}},
                                           {"attn_logit_softcapping", nullptr},
                                           {"final_logit_softcapping", nullptr}});
}

/// The multimodal Gemma 3 config: the text model in text_config, a vision tower beside it.
Json gemma3_config() {
  Json text = gemma3_text_config();
  text.erase("rope_scaling");
  text["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention", "full_attention"};
  text["final_logit_softcapping"] = 3.0;
  return {{"model_type", "gemma3"},
          {"text_config", text},
          {"vision_config", {{"model_type", "siglip_vision_model"}, {"hidden_size", 8}}},
          {"eos_token_id", 2}};
}

Json mixtral_config() {
  return with(tiny_config("mixtral"), {{"intermediate_size", 64},
                                       {"num_local_experts", 4},
                                       {"num_experts_per_tok", 2},
                                       {"sliding_window", 6},
                                       {"rope_theta", 1000000.0}});
}

Json qwen3_moe_config() {
  return with(tiny_config("qwen3_moe", 32), {{"num_hidden_layers", 3},
                                             {"intermediate_size", 96},
                                             {"moe_intermediate_size", 64},
                                             {"num_experts", 4},
                                             {"num_experts_per_tok", 2},
                                             {"norm_topk_prob", false},
                                             {"mlp_only_layers", {1}}});
}

bool is_gemma(const std::string& type) { return type == "gemma2" || type == "gemma3" || type == "gemma3_text"; }

/// The weights transformers saves for `config`, by name and shape, written out from its model definitions (not
/// from nuvec's modules): per-expert names for the mixtures, language_model.* and a vision tower for gemma3.
std::vector<std::pair<std::string, Shape>> checkpoint_shapes(const Json& config) {
  const std::string type = config["model_type"];
  const bool multimodal = type == "gemma3";
  const Json& c = multimodal ? config["text_config"] : config;
  const std::string prefix = multimodal ? "language_model." : "";
  const int vocab = c["vocab_size"];
  const int hidden = c["hidden_size"];
  const int inter = c["intermediate_size"];
  const int heads = c["num_attention_heads"];
  const int kv_heads = c["num_key_value_heads"];
  const int head_dim = c["head_dim"];
  std::vector<std::pair<std::string, Shape>> shapes = {{prefix + "model.embed_tokens.weight", {vocab, hidden}}};
  auto add = [&](const std::string& name, Shape shape) { shapes.emplace_back(prefix + name, std::move(shape)); };
  for (int i = 0; i < c["num_hidden_layers"].get<int>(); ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    add(p + "input_layernorm.weight", {hidden});
    add(p + "post_attention_layernorm.weight", {hidden});
    add(p + "self_attn.q_proj.weight", {heads * head_dim, hidden});
    add(p + "self_attn.k_proj.weight", {kv_heads * head_dim, hidden});
    add(p + "self_attn.v_proj.weight", {kv_heads * head_dim, hidden});
    add(p + "self_attn.o_proj.weight", {hidden, heads * head_dim});
    if (type == "gemma3" || type == "gemma3_text" || type == "qwen3_moe") {
      add(p + "self_attn.q_norm.weight", {head_dim});
      add(p + "self_attn.k_norm.weight", {head_dim});
    }
    if (is_gemma(type)) {
      add(p + "pre_feedforward_layernorm.weight", {hidden});
      add(p + "post_feedforward_layernorm.weight", {hidden});
    }
    const Json dense_layers = c.value("mlp_only_layers", Json::array());
    const bool dense_qwen = std::find(dense_layers.begin(), dense_layers.end(), Json(i)) != dense_layers.end();
    if (type == "mixtral") {
      const int experts = c["num_local_experts"];
      add(p + "block_sparse_moe.gate.weight", {experts, hidden});
      for (int e = 0; e < experts; ++e) {
        const std::string x = p + "block_sparse_moe.experts." + std::to_string(e) + ".";
        add(x + "w1.weight", {inter, hidden});
        add(x + "w2.weight", {hidden, inter});
        add(x + "w3.weight", {inter, hidden});
      }
    } else if (type == "qwen3_moe" && !dense_qwen) {
      const int experts = c["num_experts"];
      const int moe_inter = c["moe_intermediate_size"];
      add(p + "mlp.gate.weight", {experts, hidden});
      for (int e = 0; e < experts; ++e) {
        const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
        add(x + "gate_proj.weight", {moe_inter, hidden});
        add(x + "up_proj.weight", {moe_inter, hidden});
        add(x + "down_proj.weight", {hidden, moe_inter});
      }
    } else {
      add(p + "mlp.gate_proj.weight", {inter, hidden});
      add(p + "mlp.up_proj.weight", {inter, hidden});
      add(p + "mlp.down_proj.weight", {hidden, inter});
    }
  }
  add("model.norm.weight", {hidden});
  if (!c.value("tie_word_embeddings", is_gemma(type))) {
    add("lm_head.weight", {vocab, hidden});
  }
  if (multimodal) {
    shapes.emplace_back("vision_tower.vision_model.embeddings.patch_embedding.weight", Shape{8, 3, 2, 2});
    shapes.emplace_back("multi_modal_projector.mm_input_projection_weight", Shape{8, hidden});
  }
  return shapes;
}

/// Random weights: norms near their identity (1, or 0 for Gemma's offset-from-1 norms), routers large enough that
/// the chosen experts are clear, queries and keys large enough that attention is far from uniform.
std::unordered_map<std::string, array> checkpoint_weights(const Json& config, Dtype dtype, uint64_t seed) {
  const bool gemma = is_gemma(config["model_type"]);
  std::unordered_map<std::string, array> weights;
  uint64_t index = 0;
  for (const auto& [name, shape] : checkpoint_shapes(config)) {
    const array key = random::key(seed * 1000 + index++);
    const bool norm = name.find("norm") != std::string::npos;
    const bool router = name.ends_with("mlp.gate.weight") || name.ends_with("block_sparse_moe.gate.weight");
    const bool qk = name.find("q_proj") != std::string::npos || name.find("k_proj") != std::string::npos;
    const float mean = norm && !gemma ? 1.0F : 0.0F;
    const float stddev = router ? 0.5F : (norm || qk ? 0.1F : 0.05F);
    weights.emplace(name, astype(random::normal(shape, float32, mean, stddev, key), dtype));
  }
  return weights;
}

void write_folder(const std::string& dir, const Json& config, const std::unordered_map<std::string, array>& weights) {
  save_safetensors((fs::path(dir) / "model.safetensors").string(), weights);
  std::ofstream(fs::path(dir) / "config.json") << config.dump(2);
  write_tiny_tokenizer(dir);
}

// ---------------------------------------------------------------- cases

struct Case {
  std::string name;
  Json config;
  Dtype dtype = float32;
  int prompt_length = 12;
  /// 4-bit through quantize() and save_folder() before loading, with this group size.
  std::optional<int> group_size;
  std::string folder;
};

Case make_case(std::string name, Json config, Dtype dtype = float32, int prompt_length = 12,
               std::optional<int> group_size = std::nullopt) {
  Case c;
  c.name = std::move(name);
  c.config = std::move(config);
  c.dtype = dtype;
  c.prompt_length = prompt_length;
  c.group_size = group_size;
  return c;
}

std::vector<Case> make_cases() {
  // Gemma prompts of 12 against windows of 4; mixtures of 40 tokens x 2 experts, past the sorting threshold.
  return {
      make_case("gemma2_f32", gemma2_config()),
      make_case("gemma2_bf16", gemma2_config(), bfloat16),
      make_case("gemma3_text_f32", gemma3_text_config()),
      make_case("gemma3_text_bf16", gemma3_text_config(), bfloat16),
      make_case("gemma3_multimodal_f32", gemma3_config()),
      make_case("mixtral_f32", mixtral_config(), float32, 40),
      make_case("mixtral_bf16", with(mixtral_config(), {{"sliding_window", nullptr}}), bfloat16, 40),
      make_case("qwen3_moe_f32", qwen3_moe_config(), float32, 40),
      make_case("qwen3_moe_bf16",
                with(qwen3_moe_config(), {{"norm_topk_prob", true}, {"mlp_only_layers", Json::array()}}), bfloat16, 40),
      make_case("gemma2_q4", gemma2_config(), float32, 12, 64),
      make_case("gemma3_text_q4", gemma3_text_config(), float32, 12, 32),
      make_case("mixtral_q4", mixtral_config(), float32, 40, 32),
      make_case("qwen3_moe_q4", qwen3_moe_config(), float32, 40, 64),
  };
}

std::vector<int> prompt_for(size_t case_index, int length) {
  std::mt19937 rng(static_cast<unsigned>(4321 + case_index));
  std::uniform_int_distribution<int> id(3, 95);
  std::vector<int> ids(length);
  for (int& x : ids) {
    x = id(rng);
  }
  return ids;
}

array tokens(const std::vector<int>& ids) { return array(ids.begin(), {1, static_cast<int>(ids.size())}, int32); }

std::vector<float> host(const array& a) {
  array f = astype(a, float32);
  f.eval();
  return {f.data<float>(), f.data<float>() + f.size()};
}

int argmax_of_last(const array& logits) {
  const std::vector<float> last = host(slice(logits, {0, logits.shape(1) - 1, 0}, logits.shape()));
  return static_cast<int>(std::max_element(last.begin(), last.end()) - last.begin());
}

/// Greedy continuation through the cache: the prompt in one call, then one token at a time.
std::vector<int> greedy(LanguageModel& model, const std::vector<int>& prompt, int steps) {
  Cache cache = model.make_cache();
  array logits = model(tokens(prompt), &cache);
  std::vector<int> out;
  for (int i = 0; i < steps; ++i) {
    out.push_back(argmax_of_last(logits));
    logits = model(tokens({out.back()}), &cache);
  }
  return out;
}

/// Float32 agrees to rounding; bfloat16 rounds every activation to 8 bits.
double tolerance(Dtype dtype) { return dtype == float32 ? 1e-5 : 0.03; }

class GemmaMoeCases : public ::testing::TestWithParam<size_t> {
 public:
  static void SetUpTestSuite() {
    cases_ = make_cases();
    std::vector<ReferenceJob> jobs;
    for (size_t i = 0; i < cases_.size(); ++i) {
      Case& c = cases_[i];
      c.folder = fresh_dir(c.name);
      write_folder(c.folder, c.config, checkpoint_weights(c.config, c.dtype, 200 + i));
      if (c.group_size) {
        LoadedModel loaded = load_folder(c.folder);
        Json config = loaded.config;
        quantize(*loaded.model, config, *c.group_size, 4);
        const std::string source = c.folder;
        c.folder = fresh_dir(c.name + "_quantized");
        save_folder(c.folder, *loaded.model, config, source);
      }
      jobs.push_back({c.folder, prompt_for(i, c.prompt_length), c.dtype == float32 ? 8 : 0});
    }
    references_ = run_reference(jobs, "gemma_moe_reference.py");
  }
  static void TearDownTestSuite() {
    cases_.clear();
    references_.clear();
  }

 protected:
  static std::vector<Case> cases_;
  static std::vector<ReferenceResult> references_;
};

std::vector<Case> GemmaMoeCases::cases_;
std::vector<ReferenceResult> GemmaMoeCases::references_;

TEST_P(GemmaMoeCases, LogitsMatchTheReferenceAtEveryPosition) {
  const size_t index = GetParam();
  const Case& c = cases_[index];
  const ReferenceResult& ref = references_[index];
  LoadedModel loaded = load_folder(c.folder);
  const array logits = (*loaded.model)(tokens(prompt_for(index, c.prompt_length)));
  ASSERT_EQ(logits.shape(), (Shape{1, ref.length, ref.vocab}));
  EXPECT_EQ(logits.dtype(), c.dtype);
  const std::vector<float> got = host(logits);
  double scale = 1;
  for (double v : ref.logits) {
    scale = std::max(scale, std::abs(v));
  }
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(got[i] - ref.logits[i]));
  }
  EXPECT_LE(worst, tolerance(c.dtype) * scale)
      << c.name << ": largest difference " << worst << " at logit scale " << scale;
}

TEST_P(GemmaMoeCases, CachedStepsMatchOneCall) {
  const size_t index = GetParam();
  const Case& c = cases_[index];
  LoadedModel loaded = load_folder(c.folder);
  LanguageModel& model = *loaded.model;
  const std::vector<int> prompt = prompt_for(index, c.prompt_length);
  const std::vector<float> whole = host(model(tokens(prompt)));
  const int vocab = model.vocab_size();
  Cache one_by_one = model.make_cache();
  Cache chunked = model.make_cache();
  // Both chunks longer than the sliding window.
  const int split = 5;
  const std::vector<float> first = host(model(tokens({prompt.begin(), prompt.begin() + split}), &chunked));
  const std::vector<float> second = host(model(tokens({prompt.begin() + split, prompt.end()}), &chunked));
  double worst = 0;
  for (size_t t = 0; t < prompt.size(); ++t) {
    const std::vector<float> step = host(model(tokens({prompt[t]}), &one_by_one));
    for (int v = 0; v < vocab; ++v) {
      const double expected = whole[t * vocab + v];
      const double chunk = t < split ? first[t * vocab + v] : second[(t - split) * vocab + v];
      worst = std::max({worst, std::abs(step[v] - expected), std::abs(chunk - expected)});
    }
  }
  EXPECT_EQ(one_by_one.back()->offset(), c.prompt_length);
  EXPECT_LE(worst, tolerance(c.dtype)) << c.name;
}

TEST_P(GemmaMoeCases, GreedyContinuationMatchesTheReference) {
  const size_t index = GetParam();
  const Case& c = cases_[index];
  if (c.dtype != float32) {
    GTEST_SKIP() << "greedy ties are only decisive in float32";
  }
  LoadedModel loaded = load_folder(c.folder);
  EXPECT_EQ(greedy(*loaded.model, prompt_for(index, c.prompt_length), 8), references_[index].greedy) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Architectures, GemmaMoeCases, ::testing::Range<size_t>(0, make_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return make_cases()[info.param].name; });

// ---------------------------------------------------------------- layouts and errors

TEST(GemmaModels, SlidingLayersGetRotatingCaches) {
  auto types = [](const Json& config) {
    std::vector<std::string> out;
    for (const auto& cache : create_model(config)->make_cache()) {
      out.push_back(cache->type_name());
    }
    return out;
  };
  EXPECT_EQ(types(gemma2_config()), (std::vector<std::string>{"RotatingKVCache", "KVCache"}));
  EXPECT_EQ(types(gemma3_text_config()),
            (std::vector<std::string>{"RotatingKVCache", "RotatingKVCache", "KVCache", "RotatingKVCache"}));
  EXPECT_EQ(types(gemma3_config()),
            (std::vector<std::string>{"RotatingKVCache", "KVCache", "RotatingKVCache", "KVCache"}));
  EXPECT_EQ(create_model(gemma3_config())->model_type(), "gemma3");
}

TEST(MoeModels, QuantizedExpertsLoadAsQuantizedSwitchLayers) {
  const std::string source = fresh_dir("moe_quantized_source");
  write_folder(source, mixtral_config(), checkpoint_weights(mixtral_config(), float32, 5));
  LoadedModel loaded = load_folder(source);
  Json config = loaded.config;
  quantize(*loaded.model, config, 64, 4);
  const std::string saved = fresh_dir("moe_quantized");
  save_folder(saved, *loaded.model, config, source);
  const auto weights = load_folder_weights(saved);
  const std::string stacked = "model.layers.1.block_sparse_moe.switch_mlp.down_proj.";
  EXPECT_EQ(weights.at(stacked + "weight").shape(), (Shape{4, 64, 64 * 4 / 32}));
  EXPECT_EQ(weights.at(stacked + "scales").shape(), (Shape{4, 64, 1}));
  EXPECT_FALSE(weights.contains("model.layers.1.block_sparse_moe.experts.0.w2.weight"));
  LoadedModel back = load_folder(saved);
  for (const auto& [name, value] : back.model->parameters()) {
    if (name == stacked + "weight") {
      EXPECT_EQ(value.dtype(), uint32);
    }
  }
  const array ids = tokens({4, 8, 15, 16, 23, 42});
  EXPECT_EQ(host((*loaded.model)(ids)), host((*back.model)(ids)));
}

TEST(MoeModels, MissingExpertWeightsAreNamed) {
  const std::string dir = fresh_dir("moe_missing_expert");
  auto weights = checkpoint_weights(mixtral_config(), float32, 9);
  weights.erase("model.layers.1.block_sparse_moe.experts.3.w2.weight");
  weights.erase("model.layers.0.block_sparse_moe.experts.1.w1.weight");
  write_folder(dir, mixtral_config(), weights);
  try {
    load_folder(dir);
    ADD_FAILURE() << "no error for missing experts";
  } catch (const nuvec::error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("model.layers.1.block_sparse_moe.experts.3.w2.weight"), std::string::npos) << message;
    EXPECT_NE(message.find("model.layers.0.block_sparse_moe.experts.1.w1.weight"), std::string::npos) << message;
  }
}

TEST(MoeModels, RegistryKnowsTheNewArchitectures) {
  const std::vector<std::string> types = supported_model_types();
  for (const char* type : {"gemma2", "gemma3", "gemma3_text", "mixtral", "qwen3_moe"}) {
    EXPECT_NE(std::find(types.begin(), types.end(), type), types.end()) << type;
  }
  Json config = qwen3_moe_config();
  config["num_experts_per_tok"] = 5;
  try {
    create_model(config);
    ADD_FAILURE() << "no error for more experts per token than experts";
  } catch (const nuvec::error& e) {
    EXPECT_NE(std::string(e.what()).find("num_experts_per_tok 5"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nuvec::lm::test
