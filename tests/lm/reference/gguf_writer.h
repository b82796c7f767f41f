#pragma once

// Writes small models as GGUF files the way llama.cpp's convert_hf_to_gguf.py and llama-quantize write them, from
// Hugging Face-named float weights and a config.json, for the loader's tests: llama.cpp's tensor names and metadata
// keys, the converter's Q/K row permutation for the llama architecture (written here from its definition), Llama 3's
// rope_freqs tensor, a byte-level BPE vocabulary, and every weight in a chosen GGML type (norms and biases stay F32,
// as llama-quantize leaves 1-d tensors). It returns what the file holds, dequantized to float32 and put back in
// Hugging Face's names and row order: the weights a float model must have to compute what the file computes.

#include <algorithm>
#include <cmath>
#include <functional>
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

/// llama.cpp's name for a Hugging Face tensor name (gguf-py's tensor_mapping for llama, qwen2, qwen3 and phi3).
inline std::string gguf_tensor_name(const std::string& hf) {
  static const std::vector<std::pair<std::string, std::string>> global = {
      {"model.embed_tokens", "token_embd"}, {"model.norm", "output_norm"}, {"lm_head", "output"}};
  static const std::vector<std::pair<std::string, std::string>> block = {
      {"input_layernorm", "attn_norm"},    {"self_attn.q_proj", "attn_q"},
      {"self_attn.k_proj", "attn_k"},      {"self_attn.v_proj", "attn_v"},
      {"self_attn.qkv_proj", "attn_qkv"},  {"mlp.gate_up_proj", "ffn_up"},
      {"self_attn.o_proj", "attn_output"}, {"self_attn.q_norm", "attn_q_norm"},
      {"self_attn.k_norm", "attn_k_norm"}, {"post_attention_layernorm", "ffn_norm"},
      {"mlp.gate_proj", "ffn_gate"},       {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"}};
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
    for (const auto& [from, to] : block) {
      if (base.substr(layer_end + 1) == from) {
        return "blk." + layer + "." + to + suffix;
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

/// The metadata the converter writes for a config.json of the llama, qwen2, qwen3 or phi3 architecture.
inline Metadata model_metadata(const nlohmann::json& config) {
  const std::string arch = config["model_type"].get<std::string>();
  const std::string a = arch + ".";
  auto u32 = [&](const char* key) { return array(static_cast<uint32_t>(config[key].get<int>())); };
  Metadata m;
  m["general.architecture"] = arch;
  m["general.name"] = std::string("tiny ") + arch;
  m[a + "context_length"] = u32("max_position_embeddings");
  m[a + "embedding_length"] = u32("hidden_size");
  m[a + "block_count"] = u32("num_hidden_layers");
  m[a + "feed_forward_length"] = u32("intermediate_size");
  m[a + "attention.head_count"] = u32("num_attention_heads");
  m[a + "attention.head_count_kv"] = u32("num_key_value_heads");
  m[a + "attention.layer_norm_rms_epsilon"] = array(config["rms_norm_eps"].get<float>());
  m[a + "rope.freq_base"] = array(config["rope_theta"].get<float>());
  if (config.contains("head_dim")) {
    m[a + "attention.key_length"] = u32("head_dim");
    m[a + "attention.value_length"] = u32("head_dim");
    m[a + "rope.dimension_count"] = u32("head_dim");
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

/// Writes the model as a GGUF file at `path`: each 2-d weight in type_of(its Hugging Face name), 1-d tensors in F32,
/// `extra` metadata (a vocabulary) added. Returns the weights the file computes with, dequantized, Hugging Face's
/// names and row order.
inline NamedArrays write_gguf_model(const std::string& path, const nlohmann::json& config, const NamedArrays& weights,
                                    const std::function<io::GGMLType(const std::string&)>& type_of,
                                    const Metadata& extra) {
  const bool llama = config["model_type"] == "llama";
  const int heads = config["num_attention_heads"].get<int>();
  const int kv_heads = config["num_key_value_heads"].get<int>();
  std::vector<io::GGUFTensor> tensors;
  NamedArrays stored;
  std::vector<std::string> names;
  for (const auto& [name, w] : weights) {
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    array w = astype(weights.at(name), float32);
    int permute_heads = 0;
    if (llama && name.find("self_attn.q_proj.") != std::string::npos) {
      permute_heads = heads;
    } else if (llama && name.find("self_attn.k_proj.") != std::string::npos) {
      permute_heads = kv_heads;
    }
    array in_file = permute_heads > 0 ? converter_permute(w, permute_heads) : w;
    const io::GGMLType type = w.ndim() == 1 ? io::GGMLType::F32 : type_of(name);
    const auto* info = io::detail::ggml_type_info(static_cast<uint32_t>(type));
    array data = info->bits == 0 ? in_file : io::quantize_blocks(in_file, type);
    data.eval();
    tensors.push_back({gguf_tensor_name(name), type, in_file.shape(), data});
    array values = stored_values(in_file, type);
    stored.insert_or_assign(name, permute_heads > 0 ? converter_unpermute(values, permute_heads) : values);
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
