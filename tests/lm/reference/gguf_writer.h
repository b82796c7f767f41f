#pragma once

// Writes small models as GGUF files the way llama.cpp's convert_hf_to_gguf.py and llama-quantize write them, from
// Hugging Face-named float weights and a config.json, for the loader's tests: llama.cpp's tensor names and metadata
// keys, the converter's Q/K row permutation for the llama architecture (written here from its definition), Llama 3's
// rope_freqs tensor, Gemma's norm weights with 1 added, the experts of a mixture stacked into one (experts, out, in)
// tensor per projection, a byte-level BPE vocabulary, and every weight in a chosen GGML type (norms, biases and
// routers stay F32, as the converter and llama-quantize leave them). It returns what the file holds, dequantized to
// float32 and put back in Hugging Face's names, row order and per-expert tensors: the weights a float model must
// have to compute what the file computes.

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numbers>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "nuvec/io/gguf.h"
#include "nuvec/io/stream.h"
#include "nuvec/nuvec.h"

namespace nuvec::lm::test {

using NamedArrays = std::unordered_map<std::string, array>;
using Metadata = std::unordered_map<std::string, GGUFMetaData>;

/// For each row r of the file, the row of Hugging Face's layout it holds: llama.cpp's RoPE pairs rows (2j, 2j + 1)
/// of a head where Hugging Face's pairs (j, j + D / 2), so the converter moves row h D + t D / 2 + j to h D + 2 j + t.
inline std::vector<int32_t> converter_row_sources(int rows, int heads) {
  const int d = rows / heads;
  std::vector<int32_t> source(static_cast<size_t>(rows));
  for (int h = 0; h < heads; ++h) {
    for (int j = 0; j < d / 2; ++j) {
      for (int t = 0; t < 2; ++t) {
        source[static_cast<size_t>(h * d + 2 * j + t)] = h * d + t * d / 2 + j;
      }
    }
  }
  return source;
}

/// The converter's permutation of Q or K rows (LlamaModel.permute).
inline array converter_permute(const array& w, int heads) {
  auto source = converter_row_sources(w.shape(0), heads);
  return take(w, array(source.begin(), {static_cast<int32_t>(source.size())}, int32), 0);
}

/// Its inverse: Hugging Face's row order back from the file's.
inline array converter_unpermute(const array& w, int heads) {
  auto source = converter_row_sources(w.shape(0), heads);
  std::vector<int32_t> inverse(source.size());
  for (size_t r = 0; r < source.size(); ++r) {
    inverse[static_cast<size_t>(source[r])] = static_cast<int32_t>(r);
  }
  return take(w, array(inverse.begin(), {static_cast<int32_t>(inverse.size())}, int32), 0);
}

/// The general.architecture the converter writes for a model_type (MistralForCausalLM and MixtralForCausalLM
/// convert as LlamaModel).
inline std::string gguf_architecture(const std::string& model_type) {
  if (model_type == "mistral" || model_type == "mixtral") {
    return "llama";
  }
  if (model_type == "qwen3_moe") {
    return "qwen3moe";
  }
  if (model_type == "gemma3_text") {
    return "gemma3";
  }
  return model_type;
}

inline bool is_gemma(const std::string& model_type) { return model_type.rfind("gemma", 0) == 0; }

/// llama.cpp's name for a Hugging Face tensor name (gguf-py's tensor_mapping for llama, qwen2, qwen3, qwen3moe, phi3,
/// gemma2 and gemma3). Stacked experts go by the names the converter gives them before mapping:
/// model.layers.N.block_sparse_moe.experts.w1 (Mixtral) and model.layers.N.mlp.experts.gate_proj (Qwen).
inline std::string gguf_tensor_name(const std::string& hf, const std::string& model_type) {
  static const std::vector<std::pair<std::string, std::string>> global = {
      {"model.embed_tokens", "token_embd"}, {"model.norm", "output_norm"}, {"lm_head", "output"}};
  // Gemma's norm after the attention is its own tensor; its pre-feed-forward norm takes ffn_norm.
  static const std::vector<std::pair<std::string, std::string>> gemma = {
      {"post_attention_layernorm", "post_attention_norm"},
      {"pre_feedforward_layernorm", "ffn_norm"},
      {"post_feedforward_layernorm", "post_ffw_norm"}};
  static const std::vector<std::pair<std::string, std::string>> block = {
      {"input_layernorm", "attn_norm"},
      {"self_attn.q_proj", "attn_q"},
      {"self_attn.k_proj", "attn_k"},
      {"self_attn.v_proj", "attn_v"},
      {"self_attn.qkv_proj", "attn_qkv"},
      {"mlp.gate_up_proj", "ffn_up"},
      {"self_attn.o_proj", "attn_output"},
      {"self_attn.q_norm", "attn_q_norm"},
      {"self_attn.k_norm", "attn_k_norm"},
      {"post_attention_layernorm", "ffn_norm"},
      {"mlp.gate_proj", "ffn_gate"},
      {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"},
      {"block_sparse_moe.gate", "ffn_gate_inp"},
      {"block_sparse_moe.experts.w1", "ffn_gate_exps"},
      {"block_sparse_moe.experts.w2", "ffn_down_exps"},
      {"block_sparse_moe.experts.w3", "ffn_up_exps"},
      {"mlp.gate", "ffn_gate_inp"},
      {"mlp.experts.gate_proj", "ffn_gate_exps"},
      {"mlp.experts.up_proj", "ffn_up_exps"},
      {"mlp.experts.down_proj", "ffn_down_exps"}};
  const auto dot = hf.rfind('.');
  const std::string base = hf.substr(0, dot);
  const std::string suffix = hf.substr(dot);
  for (const auto& [from, to] : global) {
    if (base == from) {
      return to + suffix;
    }
  }
  const std::string prefix = "model.layers.";
  if (base.rfind(prefix, 0) == 0) {
    const auto layer_end = base.find('.', prefix.size());
    const std::string layer = base.substr(prefix.size(), layer_end - prefix.size());
    const std::string module = base.substr(layer_end + 1);
    for (const auto* table : {is_gemma(model_type) ? &gemma : nullptr, &block}) {
      for (size_t i = 0; table != nullptr && i < table->size(); ++i) {
        if (module == (*table)[i].first) {
          return "blk." + layer + "." + (*table)[i].second + suffix;
        }
      }
    }
  }
  throw std::runtime_error("gguf_writer: no GGUF name for " + hf);
}

/// GPT-2's printable stand-in for each byte (the byte-level BPE alphabet).
inline std::string byte_symbol(int byte) {
  int code = byte;
  if (!((byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF))) {
    int n = 0;
    for (int b = 0; b < byte; ++b) {
      n += (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) ? 0 : 1;
    }
    code = 256 + n;
  }
  std::string utf8;
  if (code < 0x80) {
    utf8 += static_cast<char>(code);
  } else {
    utf8 += static_cast<char>(0xC0 | (code >> 6));
    utf8 += static_cast<char>(0x80 | (code & 0x3F));
  }
  return utf8;
}

/// A byte-level BPE vocabulary of `size` tokens (258 to 402): the 256 bytes, merges of pairs of letters, then <|bos|>
/// and <|eos|> as the last two (control tokens).
inline Metadata byte_level_vocabulary(int size) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(byte_symbol(b));
    types.push_back(1);
  }
  std::vector<std::string> merges;
  const std::string letters = "etaoinshrdlu";  // merges of two of these letters: 144 at most
  for (size_t i = 0; static_cast<int>(tokens.size()) < size - 2; ++i) {
    if (i >= letters.size() * letters.size()) {
      throw std::runtime_error("gguf_writer: a vocabulary of " + std::to_string(size) + " tokens is too large");
    }
    const std::string left(1, letters[i / letters.size()]);
    const std::string right(1, letters[i % letters.size()]);
    merges.push_back(left + " " + right);
    tokens.push_back(left + right);
    types.push_back(1);
  }
  tokens.emplace_back("<|bos|>");
  tokens.emplace_back("<|eos|>");
  types.push_back(3);
  types.push_back(3);
  Metadata m;
  m["tokenizer.ggml.model"] = std::string("gpt2");
  m["tokenizer.ggml.pre"] = std::string("gpt-2");
  m["tokenizer.ggml.tokens"] = tokens;
  m["tokenizer.ggml.token_type"] = array(types.begin(), {static_cast<int32_t>(types.size())}, int32);
  m["tokenizer.ggml.merges"] = merges;
  m["tokenizer.ggml.bos_token_id"] = array(static_cast<uint32_t>(size - 2));
  m["tokenizer.ggml.eos_token_id"] = array(static_cast<uint32_t>(size - 1));
  return m;
}

/// Llama 3's rope_freqs: the divisor of each frequency (convert_hf_to_gguf.py's LlamaModel.generate_extra_tensors).
inline array llama3_rope_factors(const nlohmann::json& config) {
  const auto& s = config["rope_scaling"];
  const double base = config.value("rope_theta", 10000.0);
  const int dim = config.value("head_dim", config["hidden_size"].get<int>() / config["num_attention_heads"].get<int>());
  const double factor = s.value("factor", 8.0);
  const double low = s.value("low_freq_factor", 1.0);
  const double high = s.value("high_freq_factor", 4.0);
  const double old_context = s.value("original_max_position_embeddings", 8192.0);
  std::vector<float> factors;
  for (int i = 0; i < dim; i += 2) {
    const double freq = 1.0 / std::pow(base, static_cast<double>(i) / dim);
    const double wavelen = 2 * std::numbers::pi / freq;
    if (wavelen < old_context / high) {
      factors.push_back(1.0F);
    } else if (wavelen > old_context / low) {
      factors.push_back(static_cast<float>(factor));
    } else {
      const double smooth = (old_context / wavelen - low) / (high - low);
      factors.push_back(static_cast<float>(1 / ((1 - smooth) / factor + smooth)));
    }
  }
  return array(factors.begin(), {static_cast<int32_t>(factors.size())}, float32);
}

/// The metadata the converter writes for a config.json (TextModel.set_gguf_parameters and each family's additions).
inline Metadata model_metadata(const nlohmann::json& config) {
  const std::string type = config["model_type"].get<std::string>();
  const std::string arch = gguf_architecture(type);
  const std::string a = arch + ".";
  auto u32 = [&](const char* key) { return array(static_cast<uint32_t>(config[key].get<int>())); };
  auto f32 = [&](const char* key) { return array(config[key].get<float>()); };
  Metadata m;
  m["general.architecture"] = arch;
  m["general.name"] = std::string("tiny ") + type;
  m[a + "context_length"] = u32("max_position_embeddings");
  m[a + "embedding_length"] = u32("hidden_size");
  m[a + "block_count"] = u32("num_hidden_layers");
  m[a + "feed_forward_length"] = u32("intermediate_size");
  m[a + "attention.head_count"] = u32("num_attention_heads");
  m[a + "attention.head_count_kv"] = u32("num_key_value_heads");
  m[a + "attention.layer_norm_rms_epsilon"] = f32("rms_norm_eps");
  if (type != "gemma2") {  // Gemma2Model writes no RoPE base: llama.cpp's default, 10000, is Gemma 2's
    m[a + "rope.freq_base"] = f32("rope_theta");
  }
  if (config.contains("head_dim")) {
    m[a + "attention.key_length"] = u32("head_dim");
    m[a + "attention.value_length"] = u32("head_dim");
  }
  if (arch == "llama") {  // LlamaModel.set_gguf_parameters
    m[a + "vocab_size"] = u32("vocab_size");
    m[a + "rope.dimension_count"] =
        config.contains("head_dim")
            ? u32("head_dim")
            : array(static_cast<uint32_t>(config["hidden_size"].get<int>() / config["num_attention_heads"].get<int>()));
  }
  for (const char* experts : {"num_local_experts", "num_experts"}) {
    if (config.contains(experts)) {
      m[a + "expert_count"] = u32(experts);
    }
  }
  if (config.contains("num_experts_per_tok")) {
    m[a + "expert_used_count"] = u32("num_experts_per_tok");
  }
  if (config.contains("moe_intermediate_size")) {  // Qwen2MoeModel.set_gguf_parameters
    m[a + "expert_feed_forward_length"] = u32("moe_intermediate_size");
  }
  if (type == "gemma2") {  // Gemma2Model.set_gguf_parameters
    m[a + "attn_logit_softcapping"] = f32("attn_logit_softcapping");
    m[a + "final_logit_softcapping"] = f32("final_logit_softcapping");
    m[a + "attention.sliding_window"] = u32("sliding_window");
  }
  if (type == "gemma3_text") {  // Gemma3Model.set_gguf_parameters
    if (!config.value("final_logit_softcapping", nlohmann::json()).is_null()) {
      m[a + "final_logit_softcapping"] = f32("final_logit_softcapping");
    }
    if (config.value("sliding_window_pattern", 0) != 1) {
      m[a + "attention.sliding_window"] = u32("sliding_window");
    }
    // TextModel writes the sliding layers' base where transformers' rope_parameters give it one.
    if (config.contains("rope_local_base_freq")) {
      m[a + "rope.freq_base_swa"] = f32("rope_local_base_freq");
    }
  }
  if (arch == "phi3") {  // Phi3MiniModel.set_gguf_parameters
    const int hidden = config["hidden_size"].get<int>();
    const int heads = config["num_attention_heads"].get<int>();
    const double rotated = config.value("partial_rotary_factor", 1.0);
    m[a + "rope.dimension_count"] = array(static_cast<uint32_t>(static_cast<int>(rotated * hidden) / heads));
    m[a + "rope.scaling.original_context_length"] = u32("original_max_position_embeddings");
    m[a + "attention.sliding_window"] = array(static_cast<uint32_t>(config.value("sliding_window", 0)));
  }
  const auto& scaling = config.value("rope_scaling", nlohmann::json());
  if (arch == "phi3" && scaling.is_object()) {
    const double scale =
        config["max_position_embeddings"].get<double>() / config["original_max_position_embeddings"].get<double>();
    const double original = config["original_max_position_embeddings"].get<double>();
    m[a + "rope.scaling.attn_factor"] =
        array(static_cast<float>(scale > 1 ? std::sqrt(1 + std::log(scale) / std::log(original)) : 1.0));
  }
  if (scaling.is_object() && scaling.value("rope_type", "") == "linear") {
    m[a + "rope.scaling.type"] = std::string("linear");
    m[a + "rope.scaling.factor"] = array(scaling["factor"].get<float>());
  }
  if (scaling.is_object() && scaling.value("rope_type", "") == "yarn") {
    m[a + "rope.scaling.type"] = std::string("yarn");
    m[a + "rope.scaling.factor"] = array(scaling["factor"].get<float>());
    m[a + "rope.scaling.original_context_length"] =
        array(static_cast<uint32_t>(scaling["original_max_position_embeddings"].get<int>()));
  }
  return m;
}

/// What a tensor of the file holds, as float32: `w` stored in `type` and read back.
inline array stored_values(const array& w, io::GGMLType type) {
  const auto* info = io::detail::ggml_type_info(static_cast<uint32_t>(type));
  if (info->bits == 0) {
    return astype(astype(w, info->dtype), float32);
  }
  array blocks = io::quantize_blocks(w, type);
  blocks.eval();
  return io::detail::dequantize_blocks(*info, blocks.data<uint8_t>(), w.shape());
}

/// A tensor as the converter writes it: one weight, or the experts of one projection stacked on a first axis.
struct ConverterTensor {
  std::string name;
  array value;
  /// The per-expert Hugging Face names of a stack's rows, in order; empty for other tensors.
  std::vector<std::string> experts;
};

/// The tensors the converter writes for Hugging Face weights, by name: each projection's experts
/// (<block>.experts.E.<projection>.weight) stacked as <block>.experts.<projection>.weight, Gemma 2's lm_head
/// dropped (its output is the embedding).
inline std::vector<ConverterTensor> converter_tensors(const nlohmann::json& config, const NamedArrays& weights) {
  std::vector<std::string> names;
  for (const auto& [name, w] : weights) {
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  std::vector<ConverterTensor> out;
  std::map<std::string, std::map<int, std::string>> stacks;
  for (const auto& name : names) {
    if (config["model_type"] == "gemma2" && name == "lm_head.weight") {
      continue;
    }
    const auto at = name.find(".experts.");
    if (at == std::string::npos) {
      out.push_back({name, weights.at(name), {}});
      continue;
    }
    const auto index_start = at + 9;
    const auto index_end = name.find('.', index_start);
    const int expert = std::stoi(name.substr(index_start, index_end - index_start));
    stacks[name.substr(0, index_start) + name.substr(index_end + 1)][expert] = name;
  }
  for (const auto& [stacked, experts] : stacks) {
    ConverterTensor t{stacked, array(0.0F), {}};
    std::vector<array> parts;
    for (const auto& [expert, name] : experts) {
      if (expert != static_cast<int>(parts.size())) {
        throw std::runtime_error("gguf_writer: expert " + std::to_string(parts.size()) + " of " + stacked +
                                 " is missing");
      }
      parts.push_back(weights.at(name));
      t.experts.push_back(name);
    }
    t.value = stack(parts, 0);
    out.push_back(std::move(t));
  }
  return out;
}

/// Writes the model as a GGUF file at `path`: each weight of 2 or more axes in type_of(its name as the converter
/// has it; stacked experts as <block>.experts.<projection>.weight), 1-d tensors and routers in F32, `extra` metadata
/// (a vocabulary) added. Returns the weights the file computes with, dequantized, in Hugging Face's names, row order
/// and per-expert tensors.
inline NamedArrays write_gguf_model(const std::string& path, const nlohmann::json& config, const NamedArrays& weights,
                                    const std::function<io::GGMLType(const std::string&)>& type_of,
                                    const Metadata& extra) {
  const std::string model_type = config["model_type"].get<std::string>();
  const bool llama = gguf_architecture(model_type) == "llama";
  const bool gemma = is_gemma(model_type);
  const int heads = config["num_attention_heads"].get<int>();
  const int kv_heads = config["num_key_value_heads"].get<int>();
  auto ends_with = [](const std::string& s, const std::string& end) {
    return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
  };
  std::vector<io::GGUFTensor> tensors;
  NamedArrays stored;
  for (const auto& [name, value, experts] : converter_tensors(config, weights)) {
    array w = astype(value, float32);
    int permute_heads = 0;
    if (llama && name.find("self_attn.q_proj.") != std::string::npos) {
      permute_heads = heads;
    } else if (llama && name.find("self_attn.k_proj.") != std::string::npos) {
      permute_heads = kv_heads;
    }
    // Gemma's RMSNorm scales by 1 + w; the converter stores 1 + w.
    const bool shifted = gemma && ends_with(name, "norm.weight");
    if (shifted) {
      w = add(w, array(1.0F));
    }
    array in_file = permute_heads > 0 ? converter_permute(w, permute_heads) : w;
    const bool router = ends_with(name, "block_sparse_moe.gate.weight") || ends_with(name, "mlp.gate.weight");
    const io::GGMLType type = w.ndim() == 1 || router ? io::GGMLType::F32 : type_of(name);
    const auto* info = io::detail::ggml_type_info(static_cast<uint32_t>(type));
    array data = info->bits == 0 ? in_file : io::quantize_blocks(in_file, type);
    data.eval();
    tensors.push_back({gguf_tensor_name(name, model_type), type, in_file.shape(), data});
    array values = stored_values(in_file, type);
    if (permute_heads > 0) {
      values = converter_unpermute(values, permute_heads);
    }
    if (shifted) {
      values = subtract(values, array(1.0F));
    }
    if (experts.empty()) {
      stored.insert_or_assign(name, values);
    }
    for (size_t e = 0; e < experts.size(); ++e) {
      stored.insert_or_assign(experts[e], take(values, static_cast<int>(e), 0));
    }
  }
  const auto& scaling = config.value("rope_scaling", nlohmann::json());
  if (llama && scaling.is_object() && scaling.value("rope_type", "") == "llama3") {
    array factors = llama3_rope_factors(config);
    factors.eval();
    tensors.push_back({"rope_freqs.weight", io::GGMLType::F32, factors.shape(), factors});
  }
  if (config["model_type"] == "phi3" && scaling.is_object()) {
    for (const char* which : {"long", "short"}) {
      std::vector<float> factors = scaling[std::string(which) + "_factor"].get<std::vector<float>>();
      array tensor(factors.begin(), {static_cast<int32_t>(factors.size())}, float32);
      tensors.push_back({std::string("rope_factors_") + which + ".weight", io::GGMLType::F32, tensor.shape(), tensor});
    }
  }
  Metadata metadata = model_metadata(config);
  for (const auto& [key, value] : extra) {
    metadata[key] = value;
  }
  io::FileWriter out(path);
  io::save_gguf(out, tensors, metadata);
  return stored;
}

}  // namespace nuvec::lm::test
