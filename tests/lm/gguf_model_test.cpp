// Models from GGUF files. Small random llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, phi3, gemma2 and gemma3
// text models (hidden 256, so that every K-quant fits) are written as llama.cpp's converter and llama-quantize write
// them (tests/lm/reference/gguf_writer.h: its names, metadata, Q/K permutation, Gemma's norms plus 1, stacked experts
// and every weight type), and the model loaded from the file is checked against the same architecture built from the
// original config.json with the file's weights dequantized in float32 (a mixture's experts one by one, as Hugging
// Face names them): logits at every position within tolerance (the differences are 2e-6 to 4e-5) and the same
// greedy choices through the caches. Also the config.json the metadata gives (with what llama.cpp assumes where the
// converter keeps nothing), the tensor names, the un-permutation on float and packed rows, Llama 3's rope_freqs, the
// widened codes, quantized experts staying quantized, and the errors for unknown architectures, truncated files and
// unsupported types.

#include "nuvec/lm/models/gguf_model.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <tuple>

#include "nuvec/core/error.h"
#include "nuvec/lm/models/registry.h"
#include "nuvec/lm/models/rope.h"
#include "nuvec/nn/quantized.h"
#include "tests/lm/reference/gguf_writer.h"

namespace nuvec::lm {
namespace {

using io::GGMLType;
using nlohmann::json;
using test::NamedArrays;

array uniform(std::mt19937& rng, const Shape& shape, double lo, double hi) {
  std::uniform_real_distribution<float> dist(static_cast<float>(lo), static_cast<float>(hi));
  std::vector<float> values(shape_size(shape));
  for (auto& v : values) {
    v = dist(rng);
  }
  return array(values.begin(), shape, float32);
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("nuvec_gguf_model_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

/// A config.json of a tiny model: 2 layers, hidden 256, grouped-query attention.
json tiny_config(const std::string& model_type) {
  json c = {{"model_type", model_type},
            {"vocab_size", 300},
            {"hidden_size", 256},
            {"intermediate_size", 512},
            {"num_hidden_layers", 2},
            {"num_attention_heads", 4},
            {"num_key_value_heads", 2},
            {"head_dim", 64},
            {"rms_norm_eps", 1e-5},
            {"rope_theta", 10000.0},
            {"max_position_embeddings", 512},
            {"tie_word_embeddings", false},
            {"torch_dtype", "float32"},
            {"bos_token_id", 298},
            {"eos_token_id", 299}};
  if (model_type == "phi3") {
    // Partial rotary embeddings, a sliding window and longrope's per-frequency factors (16 rotated pairs).
    c["partial_rotary_factor"] = 0.5;
    c["sliding_window"] = 5;
    c["original_max_position_embeddings"] = 128;
    std::vector<double> short_factor;
    std::vector<double> long_factor;
    for (int i = 0; i < 16; ++i) {
      short_factor.push_back(1.0 + 0.1 * i);
      long_factor.push_back(1.0 + 0.5 * i);
    }
    c["rope_scaling"] = {{"type", "longrope"}, {"short_factor", short_factor}, {"long_factor", long_factor}};
  }
  if (model_type == "qwen3" || model_type == "qwen3_moe") {
    c["num_attention_heads"] = 8;  // head_dim * heads (512) differs from hidden_size
    c["tie_word_embeddings"] = model_type == "qwen3";
  }
  if (model_type == "mistral") {
    c["sliding_window"] = 4096;  // longer than the tests' sequences, which llama.cpp (no window) sees alike
  }
  if (model_type == "mixtral") {
    c["intermediate_size"] = 256;  // each expert's
    c["num_local_experts"] = 4;
    c["num_experts_per_tok"] = 2;
  }
  if (model_type == "qwen3_moe") {
    c["moe_intermediate_size"] = 256;
    c["num_experts"] = 4;
    c["num_experts_per_tok"] = 2;
    c["norm_topk_prob"] = true;  // what llama.cpp computes
  }
  if (model_type == "gemma2" || model_type == "gemma3_text") {
    c["tie_word_embeddings"] = true;
    c["query_pre_attn_scalar"] = 64;  // head_dim, as llama.cpp takes it below 27B
    c["hidden_activation"] = "gelu_pytorch_tanh";
    c["rms_norm_eps"] = 1e-6;
  }
  if (model_type == "gemma2") {
    // Soft caps small enough to bite; a window shorter than the prompt on the even (sliding) layer.
    c["attn_logit_softcapping"] = 5.0;
    c["final_logit_softcapping"] = 10.0;
    c["sliding_window"] = 5;
  }
  if (model_type == "gemma3_text") {
    // Six layers: five sliding (window 4) and a global one, each kind with its own RoPE base; linear scaling on the
    // global layers.
    c["num_hidden_layers"] = 6;
    c["sliding_window"] = 4;
    c["sliding_window_pattern"] = 6;
    c["rope_theta"] = 1000000.0;
    c["rope_local_base_freq"] = 20000.0;
    c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
  }
  return c;
}

/// Random weights of a model with Hugging Face names: matrices of about unit-variance products, norms near 1.
NamedArrays random_weights(const json& c, std::mt19937& rng) {
  const int hidden = c["hidden_size"];
  const int inter = c["intermediate_size"];
  const int heads = c["num_attention_heads"];
  const int kv = c["num_key_value_heads"];
  const int hd = c["head_dim"];
  const int vocab = c["vocab_size"];
  const std::string type = c["model_type"];
  auto matrix = [&](int rows, int cols) {
    const double bound = std::sqrt(3.0 / cols);
    return uniform(rng, {rows, cols}, -bound, bound);
  };
  // Gemma's norms scale by 1 + weight.
  const bool gemma = type.starts_with("gemma");
  auto norm = [&](int n) { return gemma ? uniform(rng, {n}, -0.2, 0.2) : uniform(rng, {n}, 0.8, 1.2); };
  NamedArrays w;
  w.insert_or_assign("model.embed_tokens.weight", uniform(rng, {vocab, hidden}, -1.0, 1.0));
  w.insert_or_assign("model.norm.weight", norm(hidden));
  if (!c["tie_word_embeddings"].get<bool>()) {
    w.insert_or_assign("lm_head.weight", matrix(vocab, hidden));
  }
  for (int l = 0; l < c["num_hidden_layers"].get<int>(); ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    w.insert_or_assign(p + "input_layernorm.weight", norm(hidden));
    w.insert_or_assign(p + "post_attention_layernorm.weight", norm(hidden));
    const bool moe = type == "mixtral" || type == "qwen3_moe";
    if (type == "phi3") {
      w.insert_or_assign(p + "self_attn.qkv_proj.weight", matrix((heads + 2 * kv) * hd, hidden));
      w.insert_or_assign(p + "mlp.gate_up_proj.weight", matrix(2 * inter, hidden));
    } else {
      w.insert_or_assign(p + "self_attn.q_proj.weight", matrix(heads * hd, hidden));
      w.insert_or_assign(p + "self_attn.k_proj.weight", matrix(kv * hd, hidden));
      w.insert_or_assign(p + "self_attn.v_proj.weight", matrix(kv * hd, hidden));
      if (!moe) {
        w.insert_or_assign(p + "mlp.gate_proj.weight", matrix(inter, hidden));
        w.insert_or_assign(p + "mlp.up_proj.weight", matrix(inter, hidden));
      }
    }
    w.insert_or_assign(p + "self_attn.o_proj.weight", matrix(hidden, heads * hd));
    if (!moe) {
      w.insert_or_assign(p + "mlp.down_proj.weight", matrix(hidden, inter));
    }
    if (moe) {
      // Hugging Face's experts, one by one (Mixtral's w1 is the gate, w3 the up, w2 the down projection).
      const bool mixtral = type == "mixtral";
      const int experts = c[mixtral ? "num_local_experts" : "num_experts"];
      const int size = c[mixtral ? "intermediate_size" : "moe_intermediate_size"];
      const std::string block = p + (mixtral ? "block_sparse_moe." : "mlp.");
      w.insert_or_assign(block + "gate.weight", matrix(experts, hidden));
      for (int e = 0; e < experts; ++e) {
        const std::string x = block + "experts." + std::to_string(e) + ".";
        w.insert_or_assign(x + (mixtral ? "w1" : "gate_proj") + ".weight", matrix(size, hidden));
        w.insert_or_assign(x + (mixtral ? "w3" : "up_proj") + ".weight", matrix(size, hidden));
        w.insert_or_assign(x + (mixtral ? "w2" : "down_proj") + ".weight", matrix(hidden, size));
      }
    }
    if (gemma) {
      w.insert_or_assign(p + "pre_feedforward_layernorm.weight", norm(hidden));
      w.insert_or_assign(p + "post_feedforward_layernorm.weight", norm(hidden));
    }
    if (type == "qwen2" || c.value("attention_bias", false)) {
      w.insert_or_assign(p + "self_attn.q_proj.bias", uniform(rng, {heads * hd}, -0.5, 0.5));
      w.insert_or_assign(p + "self_attn.k_proj.bias", uniform(rng, {kv * hd}, -0.5, 0.5));
      w.insert_or_assign(p + "self_attn.v_proj.bias", uniform(rng, {kv * hd}, -0.5, 0.5));
    }
    if (c.value("attention_bias", false)) {  // Llama's attention_bias covers o_proj too
      w.insert_or_assign(p + "self_attn.o_proj.bias", uniform(rng, {hidden}, -0.5, 0.5));
    }
    if (type == "qwen3" || type == "qwen3_moe" || type == "gemma3_text") {
      w.insert_or_assign(p + "self_attn.q_norm.weight", norm(hd));
      w.insert_or_assign(p + "self_attn.k_norm.weight", norm(hd));
    }
  }
  return w;
}

/// Every type a weight can be written in; the K-quants need rows of whole 256-element blocks.
const GGMLType kTypes[] = {GGMLType::F32,  GGMLType::F16,  GGMLType::BF16, GGMLType::Q4_0, GGMLType::Q4_1,
                           GGMLType::Q5_0, GGMLType::Q5_1, GGMLType::Q8_0, GGMLType::Q2_K, GGMLType::Q3_K,
                           GGMLType::Q4_K, GGMLType::Q5_K, GGMLType::Q6_K};

std::string type_name(GGMLType t) { return std::string(io::detail::ggml_type_info(static_cast<uint32_t>(t))->name); }

/// A GGUF file of a tiny model, deleted with it, and the float weights it computes with.
struct TinyFile {
  std::string path;
  json config;
  NamedArrays reference;
  TinyFile(const std::string& name, json hf_config, const std::function<GGMLType(const std::string&)>& type_of,
           uint32_t seed, const test::Metadata& extra = {})
      : path(temp_path(name + ".gguf")), config(std::move(hf_config)) {
    std::mt19937 rng(seed);
    test::Metadata metadata = test::byte_level_vocabulary(config["vocab_size"]);
    for (const auto& [key, value] : extra) {
      metadata[key] = value;
    }
    reference = test::write_gguf_model(path, config, random_weights(config, rng), type_of, metadata);
  }
  TinyFile(const TinyFile&) = delete;
  TinyFile& operator=(const TinyFile&) = delete;
  ~TinyFile() { std::filesystem::remove(path); }
};

/// The message of the nuvec error fn throws.
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const error& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::pair<NamedArrays, test::Metadata> read_file(const std::string& path) {
  auto [tensors, metadata] = io::load_gguf(path, io::GGUFQuantized::packed_all);
  return {tensors, metadata};
}

TEST(GGUFModel, ConfigFromMetadata) {
  json llama = tiny_config("llama");
  llama["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
  json qwen3 = tiny_config("qwen3");
  json qwen2 = tiny_config("qwen2");
  qwen2["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 128}};
  for (const json& hf : {llama, qwen3, qwen2}) {
    SCOPED_TRACE(hf["model_type"].get<std::string>());
    TinyFile file(
        hf["model_type"], hf, [](const std::string&) { return GGMLType::F16; }, 1);
    auto [tensors, metadata] = read_file(file.path);
    json c = detail::gguf_hf_config(metadata, tensors, file.path);
    for (const char* key : {"model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                            "num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings",
                            "tie_word_embeddings", "bos_token_id", "eos_token_id"}) {
      EXPECT_EQ(c[key], hf[key]) << key;
    }
    EXPECT_TRUE(c["architectures"].is_array() && c["architectures"].size() == 1) << c["architectures"];
    EXPECT_NEAR(c["rms_norm_eps"].get<double>(), 1e-5, 1e-11);  // stored as float32
    EXPECT_EQ(c["rope_theta"].get<double>(), 10000.0);
    if (hf.contains("rope_scaling")) {
      for (const auto& [key, value] : hf["rope_scaling"].items()) {
        EXPECT_EQ(c["rope_scaling"][key], value) << key;
      }
    } else {
      EXPECT_TRUE(c["rope_scaling"].is_null());
    }
    EXPECT_FALSE(c.contains("quantization"));
    // The weights of a float file carry no quantization either.
    detail::gguf_hf_weights(tensors, c, file.path);
    EXPECT_FALSE(c.contains("quantization"));
  }
}

TEST(GGUFModel, TensorNames) {
  const std::string f = "model.gguf";
  EXPECT_EQ(detail::hf_tensor_name("token_embd.weight", "llama", f), "model.embed_tokens.weight");
  EXPECT_EQ(detail::hf_tensor_name("token_embd.scales", "llama", f), "model.embed_tokens.scales");
  EXPECT_EQ(detail::hf_tensor_name("output.weight", "llama", f), "lm_head.weight");
  EXPECT_EQ(detail::hf_tensor_name("output_norm.weight", "llama", f), "model.norm.weight");
  EXPECT_EQ(detail::hf_tensor_name("blk.12.attn_q.biases", "qwen2", f), "model.layers.12.self_attn.q_proj.biases");
  EXPECT_EQ(detail::hf_tensor_name("blk.0.attn_k.bias", "qwen2", f), "model.layers.0.self_attn.k_proj.bias");
  EXPECT_EQ(detail::hf_tensor_name("blk.3.attn_output.weight", "llama", f), "model.layers.3.self_attn.o_proj.weight");
  EXPECT_EQ(detail::hf_tensor_name("blk.3.attn_k_norm.weight", "qwen3", f), "model.layers.3.self_attn.k_norm.weight");
  EXPECT_EQ(detail::hf_tensor_name("blk.1.ffn_norm.weight", "llama", f),
            "model.layers.1.post_attention_layernorm.weight");
  EXPECT_EQ(detail::hf_tensor_name("blk.1.ffn_down.scales", "llama", f), "model.layers.1.mlp.down_proj.scales");
  // Gemma's four norms a layer; the routers and stacked experts of the mixtures.
  EXPECT_EQ(detail::hf_tensor_name("blk.0.ffn_norm.weight", "gemma2", f),
            "model.layers.0.pre_feedforward_layernorm.weight");
  EXPECT_EQ(detail::hf_tensor_name("blk.0.post_attention_norm.weight", "gemma3_text", f),
            "model.layers.0.post_attention_layernorm.weight");
  EXPECT_EQ(detail::hf_tensor_name("blk.4.post_ffw_norm.weight", "gemma2", f),
            "model.layers.4.post_feedforward_layernorm.weight");
  EXPECT_EQ(detail::hf_tensor_name("blk.2.ffn_gate_inp.weight", "mixtral", f),
            "model.layers.2.block_sparse_moe.gate.weight");
  EXPECT_EQ(detail::hf_tensor_name("blk.2.ffn_gate_exps.scales", "mixtral", f),
            "model.layers.2.block_sparse_moe.switch_mlp.gate_proj.scales");
  EXPECT_EQ(detail::hf_tensor_name("blk.0.ffn_gate_inp.weight", "qwen3_moe", f), "model.layers.0.mlp.gate.weight");
  EXPECT_EQ(detail::hf_tensor_name("blk.0.ffn_up_exps.weight", "qwen3_moe", f),
            "model.layers.0.mlp.switch_mlp.up_proj.weight");
  EXPECT_EQ(detail::hf_tensor_name("blk.0.ffn_down_exps.biases", "qwen3_moe", f),
            "model.layers.0.mlp.switch_mlp.down_proj.biases");
  EXPECT_EQ(error_of([&] { detail::hf_tensor_name("blk.0.post_ffw_norm.weight", "llama", f); }),
            "model.gguf: tensor 'blk.0.post_ffw_norm.weight' has no counterpart in a Hugging Face 'llama' model");
  EXPECT_EQ(error_of([&] { detail::hf_tensor_name("blk.1.ffn_gate_exps.weight", "llama", f); }),
            "model.gguf: tensor 'blk.1.ffn_gate_exps.weight' has no counterpart in a Hugging Face 'llama' model");
  EXPECT_EQ(error_of([&] { detail::hf_tensor_name("blk.x.attn_q.weight", "llama", f); }),
            "model.gguf: tensor 'blk.x.attn_q.weight' has no counterpart in a Hugging Face 'llama' model");
}

TEST(GGUFModel, UnpermuteUndoesTheConverter) {
  std::mt19937 rng(7);
  for (auto [heads, head_dim, cols] : {std::tuple{4, 64, 32}, {2, 8, 3}, {3, 2, 1}}) {
    array w = uniform(rng, {heads * head_dim, cols}, -1, 1);
    EXPECT_TRUE(array_equal(detail::unpermute_rope_rows(test::converter_permute(w, heads), heads), w).item<bool>());
    array bias = uniform(rng, {heads * head_dim}, -1, 1);
    EXPECT_TRUE(
        array_equal(detail::unpermute_rope_rows(test::converter_permute(bias, heads), heads), bias).item<bool>());
  }
  EXPECT_EQ(error_of([&] {
              detail::unpermute_rope_rows(zeros({12, 4}), 4);
            }),
            "[load_gguf_model] 12 rows of Q or K do not split into 4 heads of an even size");
}

TEST(GGUFModel, PackedRowsFollowThePermutation) {
  // A quantized Q projection: the loaded codes, scales and biases dequantize to the file's rows, which are Hugging
  // Face's in the converter's order; the model rotates adjacent pairs (rope_traditional) to match.
  json c = tiny_config("llama");
  for (GGMLType type : {GGMLType::Q4_0, GGMLType::Q5_1, GGMLType::Q3_K, GGMLType::Q6_K}) {
    SCOPED_TRACE(type_name(type));
    TinyFile file(
        "packed", c, [&](const std::string&) { return type; }, 2);
    auto [tensors, metadata] = read_file(file.path);
    json config = detail::gguf_hf_config(metadata, tensors, file.path);
    NamedArrays weights = detail::gguf_hf_weights(tensors, config, file.path);
    for (const char* module : {"model.layers.1.self_attn.q_proj", "model.layers.0.self_attn.k_proj",
                               "model.layers.0.mlp.down_proj", "model.embed_tokens"}) {
      const auto& q = config["quantization"][module];
      array w =
          dequantize(weights.at(std::string(module) + ".weight"), weights.at(std::string(module) + ".scales"),
                     weights.at(std::string(module) + ".biases"), q["group_size"].get<int>(), q["bits"].get<int>());
      const std::string name(module);
      if (name.ends_with("q_proj") || name.ends_with("k_proj")) {
        w = detail::unpermute_rope_rows(
            w, name.ends_with("q_proj") ? c["num_attention_heads"].get<int>() : c["num_key_value_heads"].get<int>());
      }
      EXPECT_TRUE(allclose(w, file.reference.at(name + ".weight"), 1e-6, 1e-6).item<bool>()) << module;
    }
    EXPECT_EQ(config["rope_traditional"], true);
    // Groups as the type scales them; 3-, 5- and 6-bit codes one width up.
    const auto* info = io::detail::ggml_type_info(static_cast<uint32_t>(type));
    EXPECT_EQ(config["quantization"]["group_size"], static_cast<int>(info->group));
    EXPECT_EQ(config["quantization"]["bits"], info->bits == 3 ? 4 : info->bits == 4 ? 4 : 8);
  }
}

TEST(GGUFModel, Llama3RopeFrequencies) {
  // The converter stores Llama 3's scaling as rope_freqs; the loaded config rotates as the original one does.
  json c = tiny_config("llama");
  c["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 64}};
  TinyFile file(
      "llama3", c, [](const std::string&) { return GGMLType::F32; }, 3);
  auto [tensors, metadata] = read_file(file.path);
  json mapped = detail::gguf_hf_config(metadata, tensors, file.path);
  EXPECT_EQ(mapped["rope_scaling"]["rope_type"], "longrope");
  std::mt19937 rng(4);
  array x = uniform(rng, {1, 4, 5, 64}, -1, 1);
  for (int offset : {0, 37, 300}) {
    array expected = (*make_rope(64, 10000.0F, c["rope_scaling"], 512))(x, offset);
    array got = (*make_rope(64, 10000.0F, mapped["rope_scaling"], 512))(x, offset);
    EXPECT_TRUE(allclose(got, expected, 1e-5, 1e-5).item<bool>()) << "offset " << offset;
  }
}

/// Overwrites the type code of tensor `name` in a GGUF file.
void set_tensor_type(const std::string& path, const std::string& name, uint32_t type) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::string key(8, '\0');
  const uint64_t length = name.size();
  std::memcpy(key.data(), &length, 8);
  key += name;
  const auto at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  uint32_t dims = 0;
  std::memcpy(&dims, bytes.data() + at + key.size(), 4);
  f.seekp(static_cast<std::streamoff>(at + key.size() + 4 + 8 * dims));
  f.write(reinterpret_cast<const char*>(&type), 4);
}

TEST(GGUFModel, Errors) {
  json c = tiny_config("llama");
  auto f16 = [](const std::string&) { return GGMLType::F16; };
  {
    TinyFile file("mamba", c, f16, 5, {{"general.architecture", std::string("mamba")}});
    EXPECT_EQ(error_of([&] { load_gguf_model(file.path); }),
              file.path +
                  ": general.architecture 'mamba' is not supported (llama, qwen2, qwen3, qwen3moe, phi3, gemma2 and "
                  "gemma3 are)");
  }
  {
    TinyFile file("truncated", c, f16, 5);
    std::filesystem::resize_file(file.path, std::filesystem::file_size(file.path) / 2);
    const std::string message = error_of([&] { load_gguf_model(file.path); });
    EXPECT_TRUE(contains(message, "runs past the end of the file")) << message;
    EXPECT_TRUE(contains(message, file.path)) << message;
  }
  {
    TinyFile file("iq2", c, f16, 5);
    set_tensor_type(file.path, "blk.1.ffn_up.weight", 16);  // IQ2_XXS
    const std::string message = error_of([&] { load_gguf_model(file.path); });
    EXPECT_TRUE(contains(message, "tensor \"blk.1.ffn_up.weight\": unknown or unsupported tensor type 16")) << message;
  }
  {
    TinyFile file("missing", c, f16, 5);
    auto [tensors, metadata] = read_file(file.path);
    metadata.erase("llama.embedding_length");
    EXPECT_EQ(error_of([&] { detail::gguf_hf_config(metadata, tensors, "m.gguf"); }),
              "m.gguf: llama.embedding_length: missing");
    tensors.erase("token_embd.weight");
    EXPECT_EQ(error_of([&] { detail::gguf_hf_config(metadata, tensors, "m.gguf"); }),
              "m.gguf: the tensor token_embd.weight (the token embeddings) is missing or not a matrix");
  }
}

/// The logits (vocab) of the last position, as doubles.
std::vector<double> last_logits(const array& logits) {
  array last = astype(slice(logits, {0, logits.shape(1) - 1, 0}, logits.shape()), float64);
  last.eval();
  return {last.data<double>(), last.data<double>() + last.size()};
}

/// The GGUF-loaded model against the float model built from the original config with the file's weights: logits at
/// every position of a prompt, then greedy decoding through both caches (the file's model must pick a token that the
/// reference ranks first, up to `tol`: random weights can make near-ties). Prompts of 32 tokens and more send a
/// mixture's 64 or more (token, expert) pairs through its expert-sorted products.
void expect_same_model(const TinyFile& file, double tol, int prompt_length = 12) {
  LoadedModel loaded = load_gguf_model(file.path);
  std::shared_ptr<LanguageModel> reference = create_model(file.config);
  load_weights_into(*reference, file.reference, file.config);
  reference->eval();
  std::mt19937 rng(11);
  std::vector<int32_t> prompt(static_cast<size_t>(prompt_length));
  for (auto& id : prompt) {
    id = std::uniform_int_distribution<int32_t>(0, file.config["vocab_size"].get<int>() - 1)(rng);
  }
  const array tokens(prompt.begin(), {1, static_cast<int32_t>(prompt.size())}, int32);
  Cache cache = loaded.model->make_cache();
  Cache reference_cache = reference->make_cache();
  array got = loaded.model->forward(tokens, &cache);
  array expected = reference->forward(tokens, &reference_cache);
  ASSERT_EQ(got.shape(), expected.shape());
  EXPECT_TRUE(allclose(got, expected, tol, tol).item<bool>())
      << "largest difference " << max(abs(astype(got, float32) - expected)).item<float>();
  for (int step = 0; step < 6; ++step) {
    const std::vector<double> ours = last_logits(got);
    const std::vector<double> theirs = last_logits(expected);
    const auto chosen = static_cast<int32_t>(std::max_element(ours.begin(), ours.end()) - ours.begin());
    const double best = *std::max_element(theirs.begin(), theirs.end());
    EXPECT_GE(theirs[static_cast<size_t>(chosen)], best - tol) << "step " << step;
    const array next(&chosen, {1, 1}, int32);
    got = loaded.model->forward(next, &cache);
    expected = reference->forward(next, &reference_cache);
  }
}

/// Every 2-d weight in one type.
std::function<GGMLType(const std::string&)> all(GGMLType type) {
  return [type](const std::string&) { return type; };
}

/// Tolerance of the logits: the file's model computes with the same values in another order (quantized products,
/// float16 weights converted in the product).
constexpr double kTol = 3e-4;

TEST(GGUFModel, LlamaEveryType) {
  for (GGMLType type : kTypes) {
    SCOPED_TRACE(type_name(type));
    TinyFile file("llama_" + type_name(type), tiny_config("llama"), all(type), 20);
    expect_same_model(file, kTol);
  }
}

/// The mode of each quantized layer of a model, by path.
std::map<std::string, std::string> quantized_modes(LanguageModel& model) {
  std::map<std::string, std::string> modes;
  model.apply_to_modules([&](const std::string& path, nn::Module& module) {
    if (auto* linear = dynamic_cast<nn::QuantizedLinear*>(&module)) {
      modes[path] = linear->mode();
    } else if (auto* embedding = dynamic_cast<nn::QuantizedEmbedding*>(&module)) {
      modes[path] = embedding->mode();
    }
  });
  return modes;
}

/// A model built from the loaded config, with the loaded weights, gives the loaded model's logits.
void expect_rebuilt_alike(const LoadedModel& loaded) {
  std::shared_ptr<LanguageModel> rebuilt = create_model(loaded.config);
  const nn::Params params = loaded.model->parameters();
  load_weights_into(*rebuilt, NamedArrays(params.begin(), params.end()), loaded.config);
  const std::vector<int32_t> ids = {5, 17, 200, 3};
  const array tokens(ids.begin(), {1, 4}, int32);
  Cache cache = loaded.model->make_cache();
  Cache rebuilt_cache = rebuilt->make_cache();
  EXPECT_TRUE(
      array_equal(rebuilt->forward(tokens, &rebuilt_cache), loaded.model->forward(tokens, &cache)).item<bool>());
}

// A Q4_0 file's linear layers load as q4_0x16, a Q8_0 file's as q8_0x16 and a Q4_K file's as q4_kx16 (rows
// interleaved in sixteens) where their rows come in whole groups, a Q6_K file's stay q6_k (grouped_layout), the 300-row
// embedding and head stay in the plain format, and the config records the layout: a model built from it takes the
// loaded weights and gives the same logits.
TEST(GGUFModel, LinearLayersLoadInterleaved) {
  for (const auto& [type, plain, grouped] :
       {std::tuple{GGMLType::Q4_0, "q4_0", "q4_0x16"}, std::tuple{GGMLType::Q8_0, "q8_0", "q8_0x16"},
        std::tuple{GGMLType::Q4_K, "q4_k", "q4_kx16"}, std::tuple{GGMLType::Q6_K, "q6_k", "q6_k"}}) {
    SCOPED_TRACE(plain);
    TinyFile file(std::string("llama_interleaved_") + plain, tiny_config("llama"), all(type), 31);
    LoadedModel loaded = load_gguf_model(file.path);
    const auto modes = quantized_modes(*loaded.model);
    EXPECT_EQ(modes.at("model.embed_tokens"), plain);
    EXPECT_EQ(modes.at("lm_head"), plain);
    for (const char* layer : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.o_proj", "mlp.down_proj"}) {
      const std::string path = std::string("model.layers.1.") + layer;
      EXPECT_EQ(modes.at(path), grouped) << path;
      EXPECT_EQ(loaded.config["quantization"][path]["mode"], grouped) << path;
    }
    expect_rebuilt_alike(loaded);
  }
}

// A tied embedding (the output layer) whose rows come in sixteens loads grouped as the linear layers do (q4_0 and q4_k;
// q8_0 and q6_k stay), and an untied one, which only looks up rows, stays as the file holds it: the same logits as the
// reference, and a model rebuilt from the config takes the weights.
TEST(GGUFModel, TiedEmbeddingsLoadInterleaved) {
  json c = tiny_config("llama");
  c["vocab_size"] = 320;
  for (const auto& [type, tied, expected] :
       {std::tuple{GGMLType::Q4_0, true, "q4_0x16"}, std::tuple{GGMLType::Q8_0, true, "q8_0"},
        std::tuple{GGMLType::Q4_K, true, "q4_kx16"}, std::tuple{GGMLType::Q6_K, true, "q6_k"},
        std::tuple{GGMLType::Q4_0, false, "q4_0"}}) {
    SCOPED_TRACE(std::string(expected) + (tied ? " tied" : " untied"));
    c["tie_word_embeddings"] = tied;
    TinyFile file(std::string("llama_embedding_") + expected, c, all(type), 32);
    expect_same_model(file, kTol);
    LoadedModel loaded = load_gguf_model(file.path);
    EXPECT_EQ(quantized_modes(*loaded.model).at("model.embed_tokens"), expected);
    EXPECT_EQ(loaded.config["quantization"]["model.embed_tokens"]["mode"], expected);
    expect_rebuilt_alike(loaded);
  }
}

/// Whether this process maps `path` (/proc/self/maps names each file mapping's path).
bool maps_file(const std::string& path) {
  const std::string canonical = std::filesystem::canonical(path).string();
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.ends_with(" " + canonical)) {
      return true;
    }
  }
  return false;
}

// Weights smaller than a huge page leave the file at load (all of a tiny model's), so that reading one never maps back
// the file's pages around it: the page cache holds the file in folios of up to 2 MiB, mapped whole on a fault. With
// every weight copied, nothing holds the file's mapping.
TEST(GGUFModel, SmallWeightsLeaveTheFile) {
  for (GGMLType type : {GGMLType::F16, GGMLType::Q4_0, GGMLType::Q6_K}) {
    SCOPED_TRACE(type_name(type));
    TinyFile file("llama_small_" + type_name(type), tiny_config("llama"), all(type), 33);
    LoadedModel loaded = load_gguf_model(file.path);
    EXPECT_FALSE(maps_file(file.path));
    expect_rebuilt_alike(loaded);
  }
}

TEST(GGUFModel, LlamaWithBiases) {
  // The converter permutes the Q and K biases with their rows.
  json c = tiny_config("llama");
  c["attention_bias"] = true;
  TinyFile file("llama_bias", c, all(GGMLType::Q4_1), 25);
  expect_same_model(file, kTol);
}

TEST(GGUFModel, Qwen3EveryType) {
  for (GGMLType type : kTypes) {
    SCOPED_TRACE(type_name(type));
    TinyFile file("qwen3_" + type_name(type), tiny_config("qwen3"), all(type), 30);
    expect_same_model(file, kTol);
  }
}

TEST(GGUFModel, Qwen2) {
  for (GGMLType type : {GGMLType::F16, GGMLType::Q8_0, GGMLType::Q4_K, GGMLType::Q6_K}) {
    SCOPED_TRACE(type_name(type));
    TinyFile file("qwen2_" + type_name(type), tiny_config("qwen2"), all(type), 40);
    expect_same_model(file, kTol);
  }
}

TEST(GGUFModel, Phi3) {
  // Fused qkv_proj and gate_up_proj, partial rotary, a sliding window shorter than the prompt, and longrope. The
  // sequences stay within the original context (short factors), so the long factors are checked in the config.
  for (GGMLType type : {GGMLType::F32, GGMLType::Q5_0, GGMLType::Q3_K}) {
    SCOPED_TRACE(type_name(type));
    TinyFile file("phi3_" + type_name(type), tiny_config("phi3"), all(type), 45);
    expect_same_model(file, kTol);
  }
  TinyFile file("phi3_config", tiny_config("phi3"), all(GGMLType::F16), 46);
  auto [tensors, metadata] = read_file(file.path);
  json c = detail::gguf_hf_config(metadata, tensors, file.path);
  for (const char* key : {"partial_rotary_factor", "sliding_window", "original_max_position_embeddings"}) {
    EXPECT_EQ(c[key], file.config[key]) << key;
  }
  for (const char* key : {"short_factor", "long_factor"}) {
    const auto got = c["rope_scaling"][key].get<std::vector<double>>();
    const auto expected = file.config["rope_scaling"][key].get<std::vector<double>>();
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], expected[i], 1e-6) << key << " " << i;  // stored as float32
    }
  }
  // The attention factor the converter stored is the one transformers computes from the contexts.
  EXPECT_NEAR(c["rope_scaling"]["attention_factor"].get<double>(), std::sqrt(1 + std::log(4.0) / std::log(128.0)),
              1e-6);
}

TEST(GGUFModel, MistralLoadsAsLlama) {
  // MistralForCausalLM converts as LlamaModel and keeps no window, so llama.cpp, and the model loaded here, attend to
  // every position; within Mistral's 4096-position window that is what Mistral computes.
  TinyFile file("mistral", tiny_config("mistral"), all(GGMLType::Q4_0), 70);
  expect_same_model(file, kTol);
  auto [tensors, metadata] = read_file(file.path);
  EXPECT_EQ(std::get<std::string>(metadata.at("general.architecture")), "llama");
  json c = detail::gguf_hf_config(metadata, tensors, file.path);
  EXPECT_EQ(c["model_type"], "llama");
  EXPECT_FALSE(c.contains("sliding_window"));
}

/// The config.json a GGUF file's metadata gives.
json config_of(const std::string& path) {
  auto [tensors, metadata] = read_file(path);
  return detail::gguf_hf_config(metadata, tensors, path);
}

TEST(GGUFModel, Gemma2) {
  // Soft caps, the alternating sliding window, four norms a layer stored as 1 + w, tied embeddings; groups of 32
  // and of 16.
  for (GGMLType type : {GGMLType::F32, GGMLType::Q4_0, GGMLType::Q6_K}) {
    SCOPED_TRACE(type_name(type));
    TinyFile file("gemma2_" + type_name(type), tiny_config("gemma2"), all(type), 72);
    expect_same_model(file, kTol);
  }
  TinyFile file("gemma2_config", tiny_config("gemma2"), all(GGMLType::F16), 73);
  auto [tensors, metadata] = read_file(file.path);
  json c = detail::gguf_hf_config(metadata, tensors, file.path);
  EXPECT_EQ(c["model_type"], "gemma2");
  EXPECT_EQ(c["architectures"], json::array({"Gemma2ForCausalLM"}));
  for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping", "sliding_window",
                          "query_pre_attn_scalar", "head_dim", "tie_word_embeddings", "num_key_value_heads"}) {
    EXPECT_EQ(c[key], file.config[key]) << key;
  }
  EXPECT_EQ(c["rope_theta"].get<double>(), 10000.0);  // the converter writes no base for Gemma 2
  // The norms lose the 1 the converter added: the weights are Hugging Face's, to the bit.
  NamedArrays weights = detail::gguf_hf_weights(tensors, c, file.path);
  for (const char* norm :
       {"model.norm.weight", "model.layers.0.input_layernorm.weight", "model.layers.1.post_attention_layernorm.weight",
        "model.layers.0.pre_feedforward_layernorm.weight", "model.layers.1.post_feedforward_layernorm.weight"}) {
    EXPECT_TRUE(array_equal(weights.at(norm), file.reference.at(norm)).item<bool>()) << norm;
    EXPECT_LT(max(abs(weights.at(norm))).item<float>(), 0.21F) << norm;
  }
  // llama.cpp scales the 27B model's queries by its hidden_size / heads (46 layers; here 256 / 8), others by head_dim.
  metadata["gemma2.block_count"] = array(uint32_t{46});
  metadata["gemma2.attention.head_count"] = array(uint32_t{8});
  EXPECT_EQ(detail::gguf_hf_config(metadata, tensors, file.path)["query_pre_attn_scalar"], 32);
  metadata["gemma2.block_count"] = array(uint32_t{42});
  EXPECT_EQ(detail::gguf_hf_config(metadata, tensors, file.path)["query_pre_attn_scalar"], 64);
}

TEST(GGUFModel, Gemma3) {
  // q/k norms, five sliding layers and a global one with their own RoPE bases, linear scaling on the global layer.
  for (GGMLType type : {GGMLType::F32, GGMLType::Q5_1, GGMLType::Q3_K}) {
    SCOPED_TRACE(type_name(type));
    TinyFile file("gemma3_" + type_name(type), tiny_config("gemma3_text"), all(type), 74);
    expect_same_model(file, kTol);
  }
  TinyFile file("gemma3_config", tiny_config("gemma3_text"), all(GGMLType::F16), 75);
  auto [tensors, metadata] = read_file(file.path);
  EXPECT_EQ(std::get<std::string>(metadata.at("general.architecture")), "gemma3");
  json c = detail::gguf_hf_config(metadata, tensors, file.path);
  EXPECT_EQ(c["model_type"], "gemma3_text");
  for (const char* key : {"sliding_window", "sliding_window_pattern", "rope_local_base_freq", "rope_theta",
                          "query_pre_attn_scalar", "num_hidden_layers", "tie_word_embeddings"}) {
    EXPECT_EQ(c[key], file.config[key]) << key;
  }
  EXPECT_EQ(c["rope_scaling"]["rope_type"], "linear");
  EXPECT_EQ(c["rope_scaling"]["factor"], 2.0);
  EXPECT_FALSE(c.contains("final_logit_softcapping"));
  // Files from converters that write no sliding base, or no window: llama.cpp's 10000, and every layer global.
  metadata.erase("gemma3.rope.freq_base_swa");
  metadata.erase("gemma3.attention.sliding_window");
  c = detail::gguf_hf_config(metadata, tensors, file.path);
  EXPECT_EQ(c["rope_local_base_freq"], 10000.0);
  EXPECT_TRUE(c["sliding_window"].is_null());
  metadata["gemma3.block_count"] = array(uint32_t{62});  // the 27B model
  metadata["gemma3.attention.head_count"] = array(uint32_t{8});
  EXPECT_EQ(detail::gguf_hf_config(metadata, tensors, file.path)["query_pre_attn_scalar"], 32);
}

/// The dtype and shape of every parameter of a model.
std::map<std::string, std::pair<Dtype, Shape>> parameter_layout(const LanguageModel& model) {
  std::map<std::string, std::pair<Dtype, Shape>> out;
  for (const auto& [name, value] : model.parameters()) {
    out.emplace(name, std::pair{value.dtype(), value.shape()});
  }
  return out;
}

TEST(GGUFModel, Mixtral) {
  // The llama architecture with experts: permuted Q and K, a float32 router, stacked experts quantized in groups of
  // 32 (Q4_K) and of 16 (Q2_K).
  for (GGMLType type : {GGMLType::F32, GGMLType::Q4_K, GGMLType::Q2_K}) {
    SCOPED_TRACE(type_name(type));
    TinyFile file("mixtral_" + type_name(type), tiny_config("mixtral"), all(type), 76);
    expect_same_model(file, kTol, 40);
  }
  TinyFile file("mixtral_q2_k", tiny_config("mixtral"), all(GGMLType::Q2_K), 77);
  json c = config_of(file.path);
  EXPECT_EQ(c["model_type"], "mixtral");
  EXPECT_EQ(c["architectures"], json::array({"MixtralForCausalLM"}));
  for (const char* key : {"num_local_experts", "num_experts_per_tok", "intermediate_size"}) {
    EXPECT_EQ(c[key], file.config[key]) << key;
  }
  LoadedModel loaded = load_gguf_model(file.path);
  EXPECT_EQ(loaded.model->model_type(), "mixtral");
  EXPECT_EQ(loaded.config["quantization"]["model.layers.1.block_sparse_moe.switch_mlp.down_proj"],
            (json{{"group_size", 16}, {"bits", 2}}));
  const auto layout = parameter_layout(*loaded.model);
  const std::string experts = "model.layers.1.block_sparse_moe.switch_mlp.";
  EXPECT_EQ(layout.at(experts + "gate_proj.weight"), (std::pair{uint32, Shape{4, 256, 16}}));
  EXPECT_EQ(layout.at(experts + "gate_proj.scales"), (std::pair{float32, Shape{4, 256, 16}}));
  EXPECT_EQ(layout.at(experts + "down_proj.biases"), (std::pair{float32, Shape{4, 256, 16}}));
  EXPECT_EQ(layout.at("model.layers.1.block_sparse_moe.gate.weight"), (std::pair{float32, Shape{4, 256}}));
}

TEST(GGUFModel, Qwen3Moe) {
  // q/k norms, an untied output, experts of their own size (expert_feed_forward_length), 6-bit codes of the experts
  // widened to 8.
  for (GGMLType type : {GGMLType::F16, GGMLType::Q8_0, GGMLType::Q6_K}) {
    SCOPED_TRACE(type_name(type));
    TinyFile file("qwen3moe_" + type_name(type), tiny_config("qwen3_moe"), all(type), 78);
    expect_same_model(file, kTol, 40);
  }
  TinyFile file("qwen3moe_q6_k", tiny_config("qwen3_moe"), all(GGMLType::Q6_K), 79);
  auto [tensors, metadata] = read_file(file.path);
  json c = detail::gguf_hf_config(metadata, tensors, file.path);
  EXPECT_EQ(c["model_type"], "qwen3_moe");
  for (const char* key : {"num_experts", "num_experts_per_tok", "moe_intermediate_size", "intermediate_size",
                          "norm_topk_prob", "head_dim", "num_attention_heads"}) {
    EXPECT_EQ(c[key], file.config[key]) << key;
  }
  LoadedModel loaded = load_gguf_model(file.path);
  EXPECT_EQ(loaded.config["quantization"]["model.layers.0.mlp.switch_mlp.down_proj"],
            (json{{"group_size", 16}, {"bits", 8}}));
  const auto layout = parameter_layout(*loaded.model);
  EXPECT_EQ(layout.at("model.layers.0.mlp.switch_mlp.down_proj.weight"), (std::pair{uint32, Shape{4, 256, 64}}));
  EXPECT_EQ(layout.at("model.layers.0.mlp.switch_mlp.up_proj.scales"), (std::pair{float32, Shape{4, 256, 16}}));
  // Without expert_feed_forward_length llama.cpp takes feed_forward_length / expert_used_count.
  metadata.erase("qwen3moe.expert_feed_forward_length");
  EXPECT_EQ(detail::gguf_hf_config(metadata, tensors, file.path)["moe_intermediate_size"], 512 / 2);
  metadata["qwen3moe.expert_used_count"] = array(uint32_t{5});
  EXPECT_EQ(error_of([&] { detail::gguf_hf_config(metadata, tensors, "m.gguf"); }),
            "m.gguf: qwen3moe.expert_used_count: 5 experts a token, more than the 4 of expert_count");
}

TEST(GGUFModel, MixedTypesAsQ4KM) {
  // llama-quantize's Q4_K_M: Q6_K for the output and (some) attn_v and ffn_down tensors, Q4_K for the rest; both
  // stay in the file's blocks, and the config gets an entry with the block format for every quantized module.
  auto q4_k_m = [](const std::string& name) {
    const bool wide = name == "lm_head.weight" || name.find("v_proj") != std::string::npos ||
                      name.find("layers.0.mlp.down_proj") != std::string::npos;
    return wide ? GGMLType::Q6_K : GGMLType::Q4_K;
  };
  TinyFile file("q4_k_m", tiny_config("llama"), q4_k_m, 50);
  expect_same_model(file, kTol);
  LoadedModel loaded = load_gguf_model(file.path);
  const json& q = loaded.config["quantization"];
  EXPECT_FALSE(q.contains("group_size"));  // no affine module to give defaults to
  EXPECT_EQ(q["lm_head"], (json{{"group_size", 256}, {"bits", 6}, {"mode", "q6_k"}}));
  // q4_k's linear layers load with their rows interleaved, q6_k's as the file holds them (LinearLayersLoadInterleaved).
  EXPECT_EQ(q["model.layers.0.mlp.down_proj"], (json{{"group_size", 256}, {"bits", 6}, {"mode", "q6_k"}}));
  EXPECT_EQ(q["model.layers.1.mlp.down_proj"], (json{{"group_size", 256}, {"bits", 4}, {"mode", "q4_kx16"}}));
  // The weights are the file's blocks (uint8 rows), with no scales of their own.
  std::map<std::string, Dtype> dtypes;
  for (const auto& [name, value] : loaded.model->parameters()) {
    dtypes.emplace(name, value.dtype());
  }
  EXPECT_EQ(dtypes.at("lm_head.weight"), uint8);
  EXPECT_EQ(dtypes.at("model.embed_tokens.weight"), uint8);
  EXPECT_EQ(dtypes.count("model.layers.1.self_attn.q_proj.scales"), 0U);
  EXPECT_EQ(dtypes.at("model.norm.weight"), float32);
}

TEST(GGUFModel, Llama3ScalingAndTokenizer) {
  json c = tiny_config("llama");
  c["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 16}};
  TinyFile file("llama3_q8", c, all(GGMLType::Q8_0), 60);
  expect_same_model(file, kTol);
  LoadedModel loaded = load_gguf_model(file.path);
  EXPECT_EQ(loaded.generation.eos_token_ids, std::vector<int32_t>{299});
  EXPECT_EQ(loaded.generation.bos_token_id, 298);
  EXPECT_EQ(loaded.tokenizer.vocab_size(), 300U);
  const std::string text = "the rain in Spain";
  EXPECT_EQ(loaded.tokenizer.decode(loaded.tokenizer.encode(text, false)), text);
  EXPECT_EQ(loaded.model->model_type(), "llama");
  EXPECT_EQ(loaded.model->max_context(), 512);
}

}  // namespace
}  // namespace nuvec::lm
