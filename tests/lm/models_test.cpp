// The dense architectures (llama with every RoPE scaling, mistral, qwen2, qwen3, phi3) against a PyTorch
// reference written out from the transformers definitions (tests/lm/reference/llama_reference.py): tiny
// random-weight Hugging Face folders in float32 and bfloat16, and MLX-quantized folders (quantize -> save_folder ->
// load_folder) against the reference run on the dequantized weights.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "nuvec/core/ops.h"
#include "nuvec/core/random.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/lm/models/config.h"
#include "nuvec/lm/models/load.h"
#include "nuvec/lm/models/registry.h"
#include "nuvec/lm/models/rope.h"
#include "tests/lm/model_test_util.h"

namespace nuvec::lm::test {
namespace {

namespace fs = std::filesystem;

struct ModelCase {
  std::string name;
  nlohmann::json config;
  Dtype dtype = float32;
  int prompt_length = 12;
  /// Cache and greedy checks; off where transformers' frequencies change with the sequence's length past the
  /// trained context (dynamic, longrope), which a cache that keeps earlier keys cannot follow.
  bool cached_checks = true;
  /// Quantized through quantize() and save_folder() before loading.
  std::optional<QuantParams> quantization;
  QuantRecipe recipe;
  std::string folder;
};

ModelCase model_case(std::string name, nlohmann::json config, Dtype dtype = float32, bool cached_checks = true) {
  ModelCase c;
  c.name = std::move(name);
  c.config = std::move(config);
  c.dtype = dtype;
  c.cached_checks = cached_checks;
  return c;
}

nlohmann::json with(nlohmann::json config, const nlohmann::json& extra) {
  config.update(extra);
  return config;
}

std::vector<ModelCase> make_cases() {
  const nlohmann::json llama = tiny_config("llama");
  const nlohmann::json llama_wide = tiny_config("llama", 32);
  std::vector<ModelCase> cases = {
      model_case("llama_f32", llama),
      model_case("llama_bf16", llama, bfloat16),
      model_case("llama_f16", llama, float16),
      model_case("llama_llama3_rope", with(llama_wide, {{"rope_scaling",
                                                         {{"rope_type", "llama3"},
                                                          {"factor", 8.0},
                                                          {"low_freq_factor", 1.0},
                                                          {"high_freq_factor", 4.0},
                                                          {"original_max_position_embeddings", 64}}}})),
      model_case("llama_linear_rope", with(llama, {{"rope_scaling", {{"type", "linear"}, {"factor", 2.0}}}})),
      model_case(
          "llama_dynamic_rope",
          with(llama, {{"max_position_embeddings", 8}, {"rope_scaling", {{"type", "dynamic"}, {"factor", 2.0}}}}),
          float32, false),
      model_case(
          "llama_yarn_rope",
          with(llama_wide,
               {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 64}}}})),
      model_case("llama_tied_biases",
                 with(llama, {{"tie_word_embeddings", true}, {"attention_bias", true}, {"mlp_bias", true}})),
      model_case("mistral_f32", with(tiny_config("mistral"), {{"sliding_window", 5}})),
      model_case("mistral_bf16", with(tiny_config("mistral"), {{"sliding_window", 5}}), bfloat16),
      model_case("qwen2_f32", with(tiny_config("qwen2"), {{"tie_word_embeddings", true}})),
      model_case("qwen2_bf16", tiny_config("qwen2"), bfloat16),
      model_case(
          "qwen2_window_on_later_layers",
          with(tiny_config("qwen2"), {{"use_sliding_window", true}, {"sliding_window", 4}, {"max_window_layers", 1}})),
      model_case("qwen3_f32", tiny_config("qwen3", 32)),
      model_case("qwen3_bf16", tiny_config("qwen3", 32), bfloat16),
      model_case("phi3_f32", with(tiny_config("phi3"), {{"partial_rotary_factor", 0.5}})),
      model_case("phi3_bf16", tiny_config("phi3"), bfloat16),
      model_case("phi3_longrope",
                 with(tiny_config("phi3"), {{"max_position_embeddings", 32},
                                            {"original_max_position_embeddings", 8},
                                            {"rope_scaling",
                                             {{"type", "longrope"},
                                              {"short_factor", {1.0, 1.1, 1.3, 1.5, 2.0, 2.5, 3.0, 4.0}},
                                              {"long_factor", {1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0}}}}}),
                 float32, false),
  };
  ModelCase q4 = model_case("llama_q4_g32", llama);
  q4.quantization = QuantParams{32, 4};
  ModelCase q8 = model_case("qwen3_q8_bf16", tiny_config("qwen3", 32), bfloat16);
  q8.quantization = QuantParams{64, 8};
  ModelCase tied = model_case("qwen2_tied_q4", with(tiny_config("qwen2"), {{"tie_word_embeddings", true}}));
  tied.quantization = QuantParams{64, 4};
  ModelCase mixed = model_case("phi3_mixed_precision", tiny_config("phi3"));
  mixed.quantization = QuantParams{64, 4};
  // 8 bits for the down projections, group 32 for the output head, the embedding kept in float.
  mixed.recipe = [](const std::string& path, const nn::Module&) -> std::optional<QuantParams> {
    if (path == "model.embed_tokens") {
      return std::nullopt;
    }
    if (path.ends_with("down_proj")) {
      return QuantParams{64, 8};
    }
    return path == "lm_head" ? QuantParams{32, 4} : QuantParams{64, 4};
  };
  cases.insert(cases.end(), {q4, q8, tied, mixed});
  return cases;
}

std::vector<int> prompt_for(size_t case_index, int length) {
  std::mt19937 rng(static_cast<unsigned>(1234 + case_index));
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

/// Greedy continuation through the cache: the prompt in one call, then one token at a time.
std::vector<int> greedy(LanguageModel& model, const std::vector<int>& prompt, int steps) {
  Cache cache = model.make_cache();
  array logits = model(tokens(prompt), &cache);
  std::vector<int> out;
  for (int i = 0; i < steps; ++i) {
    std::vector<float> last = host(slice(logits, {0, logits.shape(1) - 1, 0}, logits.shape()));
    out.push_back(static_cast<int>(std::max_element(last.begin(), last.end()) - last.begin()));
    logits = model(tokens({out.back()}), &cache);
  }
  return out;
}

/// Logit tolerance: float32 agrees to rounding; half precision rounds every activation (bfloat16 to 8 bits).
double tolerance(Dtype dtype) { return dtype == float32 ? 1e-5 : 0.03; }

class ModelCases : public ::testing::TestWithParam<size_t> {
 public:
  static void SetUpTestSuite() {
    cases_ = make_cases();
    std::vector<ReferenceJob> jobs;
    for (size_t i = 0; i < cases_.size(); ++i) {
      ModelCase& c = cases_[i];
      const std::string source = fresh_dir(c.name);
      write_hf_folder(source, c.config, c.dtype, 100 + i);
      c.folder = source;
      if (c.quantization) {
        LoadedModel loaded = load_folder(source);
        nlohmann::json config = loaded.config;
        quantize(*loaded.model, config, c.quantization->group_size, c.quantization->bits, c.recipe);
        c.folder = fresh_dir(c.name + "_quantized");
        save_folder(c.folder, *loaded.model, config, source);
      }
      jobs.push_back({c.folder, prompt_for(i, c.prompt_length), c.cached_checks ? 8 : 0});
    }
    references_ = run_reference(jobs);
  }
  static void TearDownTestSuite() {
    cases_.clear();
    references_.clear();
  }

 protected:
  static std::vector<ModelCase> cases_;
  static std::vector<ReferenceResult> references_;
};

std::vector<ModelCase> ModelCases::cases_;
std::vector<ReferenceResult> ModelCases::references_;

TEST_P(ModelCases, LogitsMatchTheReferenceAtEveryPosition) {
  const size_t index = GetParam();
  const ModelCase& c = cases_[index];
  const ReferenceResult& ref = references_[index];
  LoadedModel loaded = load_folder(c.folder);
  const std::vector<int> prompt = prompt_for(index, c.prompt_length);
  const array logits = (*loaded.model)(tokens(prompt));
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

TEST_P(ModelCases, CachedStepsMatchOneCall) {
  const size_t index = GetParam();
  const ModelCase& c = cases_[index];
  if (!c.cached_checks) {
    GTEST_SKIP() << "frequencies depend on the sequence's length";
  }
  LoadedModel loaded = load_folder(c.folder);
  LanguageModel& model = *loaded.model;
  const std::vector<int> prompt = prompt_for(index, c.prompt_length);
  const std::vector<float> whole = host(model(tokens(prompt)));
  const int vocab = model.vocab_size();

  Cache one_by_one = model.make_cache();
  ASSERT_EQ(static_cast<int>(one_by_one.size()), model.num_layers());
  Cache chunked = model.make_cache();
  const int split = 5;
  const std::vector<float> first_chunk =
      host(model(tokens(std::vector<int>(prompt.begin(), prompt.begin() + split)), &chunked));
  const std::vector<float> second_chunk =
      host(model(tokens(std::vector<int>(prompt.begin() + split, prompt.end())), &chunked));
  double worst = 0;
  for (size_t t = 0; t < prompt.size(); ++t) {
    const std::vector<float> step = host(model(tokens({prompt[t]}), &one_by_one));
    for (int v = 0; v < vocab; ++v) {
      const float expected = whole[t * vocab + v];
      const float chunk = t < split ? first_chunk[t * vocab + v] : second_chunk[(t - split) * vocab + v];
      worst = std::max(
          {worst, static_cast<double>(std::abs(step[v] - expected)), static_cast<double>(std::abs(chunk - expected))});
    }
  }
  EXPECT_EQ(one_by_one[0]->offset(), c.prompt_length);
  EXPECT_LE(worst, tolerance(c.dtype)) << c.name;
}

TEST_P(ModelCases, GreedyContinuationMatchesTheReference) {
  const size_t index = GetParam();
  const ModelCase& c = cases_[index];
  if (!c.cached_checks || c.dtype != float32) {
    GTEST_SKIP() << "greedy ties are only decisive in float32, with fixed frequencies";
  }
  LoadedModel loaded = load_folder(c.folder);
  EXPECT_EQ(greedy(*loaded.model, prompt_for(index, c.prompt_length), 8), references_[index].greedy) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Architectures, ModelCases, ::testing::Range<size_t>(0, make_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return make_cases()[info.param].name; });

// ---------------------------------------------------------------- loading and saving

TEST(ModelFolders, QuantizedFolderRecordsItsLayout) {
  const std::string source = fresh_dir("quantized_layout_source");
  write_hf_folder(source, tiny_config("llama"), float32, 7);
  LoadedModel loaded = load_folder(source);
  nlohmann::json config = loaded.config;
  quantize(*loaded.model, config, 64, 8, [](const std::string& path, const nn::Module&) -> std::optional<QuantParams> {
    if (path == "lm_head") {
      return std::nullopt;
    }
    return path.ends_with("down_proj") ? QuantParams{32, 4} : QuantParams{64, 8};
  });
  EXPECT_EQ(config["quantization"]["group_size"], 64);
  EXPECT_EQ(config["quantization"]["bits"], 8);
  EXPECT_EQ(config["quantization"]["lm_head"], false);
  EXPECT_EQ(config["quantization"]["model.layers.1.mlp.down_proj"], (nlohmann::json{{"group_size", 32}, {"bits", 4}}));
  const std::string saved = fresh_dir("quantized_layout");
  save_folder(saved, *loaded.model, config, source);
  const auto weights = load_folder_weights(saved);
  EXPECT_EQ(weights.at("model.layers.0.self_attn.q_proj.weight").dtype(), uint32);
  EXPECT_EQ(weights.at("model.layers.0.self_attn.q_proj.weight").shape(), (Shape{64, 64 * 8 / 32}));
  EXPECT_EQ(weights.at("model.layers.0.mlp.down_proj.scales").shape(), (Shape{64, 128 / 32}));
  EXPECT_FALSE(weights.contains("lm_head.scales"));
  EXPECT_TRUE(fs::exists(fs::path(saved) / "tokenizer.json"));
  LoadedModel back = load_folder(saved);
  EXPECT_EQ(back.tokenizer.encode("w5 w7", false), (std::vector<int32_t>{5, 7}));
  const array ids = tokens({3, 9, 27, 81});
  const std::vector<float> before = host((*loaded.model)(ids));
  const std::vector<float> after = host((*back.model)(ids));
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    ASSERT_EQ(before[i], after[i]) << "logit " << i;
  }
}

TEST(ModelFolders, ShardedFolderLoadsAsOne) {
  const std::string source = fresh_dir("shard_source");
  write_hf_folder(source, tiny_config("qwen3", 32), float32, 11);
  LoadedModel loaded = load_folder(source);
  const std::string sharded = fresh_dir("sharded");
  save_folder(sharded, *loaded.model, loaded.config, source, 64 * 1024);
  EXPECT_TRUE(fs::exists(fs::path(sharded) / "model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(fs::path(sharded) / "model.safetensors"));
  LoadedModel back = load_folder(sharded);
  const array ids = tokens({4, 8, 15, 16, 23, 42});
  const std::vector<float> a = host((*loaded.model)(ids));
  const std::vector<float> b = host((*back.model)(ids));
  EXPECT_EQ(a, b);
}

TEST(ModelFolders, BatchedPromptsMatchSinglePrompts) {
  const std::string dir = fresh_dir("batched");
  write_hf_folder(dir, tiny_config("qwen2"), float32, 13);
  LoadedModel loaded = load_folder(dir);
  const std::vector<int> a = {5, 9, 33, 2, 71, 40};
  const std::vector<int> b = {88, 12, 6, 50, 3, 19};
  std::vector<int> both(a);
  both.insert(both.end(), b.begin(), b.end());
  const std::vector<float> batched = host((*loaded.model)(array(both.begin(), {2, 6}, int32)));
  std::vector<float> single = host((*loaded.model)(tokens(a)));
  const std::vector<float> second = host((*loaded.model)(tokens(b)));
  single.insert(single.end(), second.begin(), second.end());
  ASSERT_EQ(batched.size(), single.size());
  for (size_t i = 0; i < single.size(); ++i) {
    ASSERT_NEAR(batched[i], single[i], 1e-5) << "logit " << i;
  }
}

TEST(ModelFolders, GenerationConfigReadsEosIdsAndDefaults) {
  const nlohmann::json config = {{"eos_token_id", 2}, {"bos_token_id", 1}};
  GenerationConfig from_config = GenerationConfig::from_json(nullptr, config);
  EXPECT_EQ(from_config.eos_token_ids, (std::vector<int32_t>{2}));
  EXPECT_EQ(from_config.bos_token_id, 1);
  EXPECT_FALSE(from_config.temperature);
  const nlohmann::json generation = {
      {"eos_token_id", {128001, 128008, 128009}}, {"temperature", 0.6}, {"top_p", 0.9}, {"top_k", 40}};
  GenerationConfig g = GenerationConfig::from_json(generation, config);
  EXPECT_EQ(g.eos_token_ids, (std::vector<int32_t>{128001, 128008, 128009}));
  EXPECT_FLOAT_EQ(*g.temperature, 0.6F);
  EXPECT_FLOAT_EQ(*g.top_p, 0.9F);
  EXPECT_EQ(g.top_k, 40);
  EXPECT_FALSE(g.repetition_penalty);

  const std::string dir = fresh_dir("generation_config");
  write_hf_folder(dir, tiny_config("llama"), float32, 17);
  std::ofstream(fs::path(dir) / "generation_config.json") << generation.dump();
  LoadedModel loaded = load_folder(dir);
  EXPECT_EQ(loaded.generation.eos_token_ids, (std::vector<int32_t>{128001, 128008, 128009}));
  EXPECT_EQ(loaded.model->model_type(), "llama");
  EXPECT_EQ(loaded.model->vocab_size(), 96);
  EXPECT_EQ(loaded.model->num_layers(), 2);
  EXPECT_EQ(loaded.model->max_context(), 256);
}

// ---------------------------------------------------------------- bad input

/// Runs fn, expecting a nuvec error whose message holds every piece.
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& pieces) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one mentioning " << pieces.front();
  } catch (const nuvec::error& e) {
    for (const auto& piece : pieces) {
      EXPECT_NE(std::string(e.what()).find(piece), std::string::npos) << "message: " << e.what();
    }
  }
}

TEST(ModelErrors, MissingOrUnknownModelTypeListsTheSupportedOnes) {
  nlohmann::json config = tiny_config("llama");
  config.erase("model_type");
  expect_error([&] { create_model(config); }, {"model_type is missing", "llama", "qwen3", "phi3"});
  config["model_type"] = "gpt_neo_x";
  expect_error([&] { create_model(config); }, {"unsupported model_type 'gpt_neo_x'", "mistral", "qwen2"});
}

TEST(ModelErrors, BadConfigFieldsAreNamed) {
  nlohmann::json config = tiny_config("llama");
  config.erase("hidden_size");
  expect_error([&] { create_model(config); }, {"hidden_size is missing"});
  config = tiny_config("llama");
  config["num_key_value_heads"] = 3;
  expect_error([&] { create_model(config); }, {"num_attention_heads (4)", "num_key_value_heads (3)"});
  config = tiny_config("llama");
  config["rope_scaling"] = {{"rope_type", "spiral"}, {"factor", 2.0}};
  expect_error([&] { create_model(config); }, {"unknown rope_scaling type 'spiral'", "llama3", "yarn"});
  config["rope_scaling"] = {{"rope_type", "llama3"}};
  expect_error([&] { create_model(config); }, {"rope_scaling.factor is missing"});
}

TEST(ModelErrors, MissingAndMisshapedWeightsAreListedByName) {
  const nlohmann::json config = tiny_config("llama");
  auto weights_of = [&] {
    std::unordered_map<std::string, array> map;
    for (auto& [name, value] : random_weights(config, float32, 3)) {
      map.emplace(name, value);
    }
    return map;
  };
  auto model = create_model(config);
  auto missing = weights_of();
  missing.erase("model.layers.1.mlp.up_proj.weight");
  missing.erase("lm_head.weight");
  expect_error([&] { load_weights_into(*model, missing, config); },
               {"missing", "model.layers.1.mlp.up_proj.weight", "lm_head.weight"});
  auto misshaped = weights_of();
  misshaped.insert_or_assign("model.layers.0.self_attn.k_proj.weight", zeros({16, 64}));
  misshaped.emplace("model.layers.0.self_attn.k_proj.bias", zeros({32}));
  expect_error([&] { load_weights_into(*model, misshaped, config); },
               {"mis-shaped", "model.layers.0.self_attn.k_proj.weight: expected (32,64), given (16,64)", "unexpected",
                "model.layers.0.self_attn.k_proj.bias"});
  // Quantized weights in a folder whose config.json does not say so.
  auto packed = weights_of();
  packed.insert_or_assign("model.layers.0.mlp.gate_proj.weight", zeros({128, 8}, uint32));
  expect_error([&] { load_weights_into(*model, packed, config); },
               {"model.layers.0.mlp.gate_proj.weight: expected float32, given uint32", "quantization"});
  // Checkpoint extras the model computes itself are dropped.
  auto extras = weights_of();
  extras.emplace("model.layers.0.self_attn.rotary_emb.inv_freq", zeros({8}));
  EXPECT_NO_THROW(load_weights_into(*model, extras, config));
}

TEST(ModelErrors, FolderProblemsNameTheFile) {
  const std::string dir = fresh_dir("truncated");
  write_hf_folder(dir, tiny_config("llama"), float32, 5);
  const fs::path weights = fs::path(dir) / "model.safetensors";
  fs::resize_file(weights, fs::file_size(weights) / 2);
  expect_error([&] { load_folder(dir); }, {"model.safetensors"});

  const std::string empty = fresh_dir("no_config");
  expect_error([&] { load_folder(empty); }, {"no config.json"});
  std::ofstream(fs::path(empty) / "config.json") << tiny_config("llama").dump();
  expect_error([&] { load_folder(empty); }, {"no model.safetensors"});
}

TEST(RoPEScalings, LinearScalingIsPositionsOverFactor) {
  // Position p under linear scaling with factor 4 equals plain RoPE at p / 4 (offset 8 -> 2).
  const array x = random::normal({1, 2, 1, 8}, float32, 0.0F, 1.0F, random::key(3));
  auto linear = make_rope(8, 10000.0F, {{"type", "linear"}, {"factor", 4.0}}, 0);
  auto plain = make_rope(8, 10000.0F, nullptr, 0);
  const std::vector<float> a = host((*linear)(x, 8));
  const std::vector<float> b = host((*plain)(x, 2));
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(a[i], b[i], 1e-5);
  }
}

TEST(RoPEScalings, BatchOffsetsRotateEachSequenceAtItsPosition) {
  // Yarn carries explicit periods and a magnitude: both must apply per sequence as for a single one.
  auto rope =
      make_rope(16, 10000.0F, {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 64}}, 256);
  const array x = random::normal({2, 2, 3, 16}, float32, 0.0F, 1.0F, random::key(5));
  const std::vector<float> batched = host((*rope)(x, array({4, 9}, int32)));
  std::vector<float> separate = host((*rope)(slice(x, {0, 0, 0, 0}, {1, 2, 3, 16}), 4));
  const std::vector<float> second = host((*rope)(slice(x, {1, 0, 0, 0}, {2, 2, 3, 16}), 9));
  separate.insert(separate.end(), second.begin(), second.end());
  ASSERT_EQ(batched.size(), separate.size());
  for (size_t i = 0; i < batched.size(); ++i) {
    EXPECT_NEAR(batched[i], separate[i], 1e-5);
  }
}

}  // namespace
}  // namespace nuvec::lm::test
