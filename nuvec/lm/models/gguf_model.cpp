#include "nuvec/lm/models/gguf_model.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include "nuvec/core/allocator.h"
#include "nuvec/core/block_code_bits.h"
#include "nuvec/core/error.h"
#include "nuvec/core/ops.h"
#include "nuvec/lm/models/registry.h"
#include "nuvec/lm/tokenizer/tokenizer.h"
#include "nuvec/nn/quantized.h"

namespace nuvec::lm {

namespace {

using nlohmann::json;

/// What each supported general.architecture is called in config.json.
struct Architecture {
  std::string_view gguf;
  std::string_view model_type;
  std::string_view hf_class;
};

/// Mistral's and Mixtral's checkpoints convert to the llama architecture (Mixtral's with experts); Gemma 3's text
/// model is nuvec's gemma3_text.
constexpr Architecture architectures[] = {
    {"llama", "llama", "LlamaForCausalLM"},
    {"qwen2", "qwen2", "Qwen2ForCausalLM"},
    {"qwen3", "qwen3", "Qwen3ForCausalLM"},
    {"qwen3moe", "qwen3_moe", "Qwen3MoeForCausalLM"},
    {"phi3", "phi3", "Phi3ForCausalLM"},
    {"gemma2", "gemma2", "Gemma2ForCausalLM"},
    {"gemma3", "gemma3_text", "Gemma3ForCausalLM"},
};

/// The llama architecture with expert_count.
constexpr Architecture mixtral_architecture = {"llama", "mixtral", "MixtralForCausalLM"};

/// "llama, qwen2, ... and gemma3", for errors.
std::string supported_architectures() {
  std::string names;
  constexpr size_t count = std::size(architectures);
  for (size_t i = 0; i < count; ++i) {
    names += (i == 0 ? "" : i + 1 == count ? " and " : ", ") + std::string(architectures[i].gguf);
  }
  return names;
}

const Architecture* find_architecture(std::string_view name) {
  for (const auto& a : architectures) {
    if (a.gguf == name) {
      return &a;
    }
  }
  return nullptr;
}

/// Typed access to GGUF metadata, with errors that name the file and the key.
class Metadata {
 public:
  Metadata(const detail::GGUFMetadata& values, const std::string& file) : values_(values), file_(file) {}

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    throw_invalid(file_ + ": " + key + ": " + problem);
  }
  [[noreturn]] void unsupported(const std::string& key, const std::string& problem) const {
    throw_unsupported(file_ + ": " + key + ": " + problem);
  }

  [[nodiscard]] std::optional<std::string> string(const std::string& key) const {
    auto it = values_.find(key);
    if (it == values_.end()) {
      return std::nullopt;
    }
    if (const auto* s = std::get_if<std::string>(&it->second)) {
      return *s;
    }
    fail(key, "expected a string");
  }

  /// A number, or one repeated for every layer (llama.cpp writes some per-layer values as arrays).
  [[nodiscard]] std::optional<double> number(const std::string& key) const {
    auto it = values_.find(key);
    if (it == values_.end()) {
      return std::nullopt;
    }
    const auto* a = std::get_if<array>(&it->second);
    if (a == nullptr || a->ndim() > 1 || a->size() == 0) {
      fail(key, "expected a number");
    }
    array values = astype(*a, float64);
    values.eval();
    const double* data = values.data<double>();
    if (!std::all_of(data, data + values.size(), [&](double v) { return v == data[0]; })) {
      unsupported(key, "values that differ between layers are not supported");
    }
    return data[0];
  }

  [[nodiscard]] double required(const std::string& key) const {
    auto v = number(key);
    if (!v) {
      fail(key, "missing");
    }
    return *v;
  }

  [[nodiscard]] int count(const std::string& key, std::optional<int> fallback = std::nullopt) const {
    auto v = number(key);
    if (!v && fallback) {
      return *fallback;
    }
    double d = v ? *v : required(key);
    if (d < 1 || d > 1e9 || d != static_cast<double>(static_cast<int64_t>(d))) {
      fail(key, "expected a positive integer; got " + std::to_string(d));
    }
    return static_cast<int>(d);
  }

 private:
  const detail::GGUFMetadata& values_;
  const std::string& file_;
};

/// rope_scaling of config.json from rope.scaling.* (llama.cpp writes Llama 3's scaling as the rope_freqs tensor).
json rope_scaling(const Metadata& meta, const std::string& arch) {
  auto type = meta.string(arch + ".rope.scaling.type");
  if (!type) {
    if (auto linear = meta.number(arch + ".rope.scale_linear")) {  // the key of older files
      return {{"type", "linear"}, {"rope_type", "linear"}, {"factor", *linear}};
    }
    return nullptr;
  }
  if (*type == "none") {
    return nullptr;
  }
  const std::string factor_key = arch + ".rope.scaling.factor";
  if (*type == "linear") {
    return {{"type", "linear"}, {"rope_type", "linear"}, {"factor", meta.required(factor_key)}};
  }
  if (*type == "yarn") {
    json yarn = {{"type", "yarn"},
                 {"rope_type", "yarn"},
                 {"factor", meta.required(factor_key)},
                 {"original_max_position_embeddings", meta.count(arch + ".rope.scaling.original_context_length")}};
    if (auto beta = meta.number(arch + ".rope.scaling.yarn_beta_fast")) {
      yarn["beta_fast"] = *beta;
    }
    if (auto beta = meta.number(arch + ".rope.scaling.yarn_beta_slow")) {
      yarn["beta_slow"] = *beta;
    }
    return yarn;
  }
  meta.unsupported(arch + ".rope.scaling.type",
                   "the RoPE scaling '" + *type + "' is not supported (none, linear and yarn are)");
}

/// A tensor of one factor per rotated pair of features (rope_freqs, rope_factors_long, rope_factors_short).
std::vector<double> pair_factors(const detail::NamedArrays& tensors, const std::string& name, const json& config,
                                 const std::string& file) {
  const array& factors = tensors.at(name);
  const auto rotated = static_cast<int>(config["head_dim"].get<double>() * config.value("partial_rotary_factor", 1.0));
  if (factors.ndim() != 1 || factors.shape(0) != rotated / 2) {
    throw_invalid(file + ": " + name + " has shape " + shape_string(factors.shape()) + "; expected (" +
                  std::to_string(rotated / 2) + "), one factor per rotated pair of features");
  }
  array values = astype(factors, float64);
  values.eval();
  return {values.data<double>(), values.data<double>() + values.size()};
}

/// Llama 3's RoPE scaling, which the converter stores as a divisor of each frequency (rope_freqs), as the scaling
/// that takes explicit per-frequency factors: longrope's, with the same factors for short and long sequences and no
/// attention scaling. (Llama 3's own parameters cannot be recovered: the factors depend on fewer combinations.)
json rope_freqs_scaling(const detail::NamedArrays& tensors, const json& config, const std::string& file) {
  if (!config["rope_scaling"].is_null()) {
    throw_unsupported(file + ": rope_freqs.weight together with rope.scaling.type is not supported");
  }
  std::vector<double> factors = pair_factors(tensors, "rope_freqs.weight", config, file);
  return {{"rope_type", "longrope"}, {"short_factor", factors}, {"long_factor", factors}, {"attention_factor", 1.0}};
}

/// Phi-3's longrope, which the converter stores as the rope_factors_long and rope_factors_short tensors and the
/// original context as rope.scaling.original_context_length.
void phi3_fields(const Metadata& meta, const detail::NamedArrays& tensors, json& config, const std::string& file) {
  if (auto window = meta.number("phi3.attention.sliding_window"); window && *window > 0) {
    config["sliding_window"] = static_cast<int>(*window);  // 0 marks models without one (Phi-4)
  }
  if (auto original = meta.number("phi3.rope.scaling.original_context_length")) {
    config["original_max_position_embeddings"] = static_cast<int>(*original);
  }
  const bool has_long = tensors.contains("rope_factors_long.weight");
  if (has_long != tensors.contains("rope_factors_short.weight")) {
    throw_invalid(file + ": rope_factors_long.weight and rope_factors_short.weight come together");
  }
  if (has_long) {
    config["rope_scaling"] = {{"type", "longrope"},
                              {"rope_type", "longrope"},
                              {"long_factor", pair_factors(tensors, "rope_factors_long.weight", config, file)},
                              {"short_factor", pair_factors(tensors, "rope_factors_short.weight", config, file)}};
    if (auto factor = meta.number("phi3.rope.scaling.attn_factor")) {
      config["rope_scaling"]["attention_factor"] = *factor;
    }
  }
}

/// Gemma's query_pre_attn_scalar, which the converter does not store: llama.cpp scales queries by 1 / sqrt(head_dim),
/// except in the 27B models (46 layers in Gemma 2, 62 in Gemma 3), by 1 / sqrt(hidden_size / heads).
int gemma_query_pre_attn_scalar(const json& config, bool gemma3) {
  const bool is_27b = config["num_hidden_layers"].get<int>() == (gemma3 ? 62 : 46);
  return is_27b ? config["hidden_size"].get<int>() / config["num_attention_heads"].get<int>()
                : config["head_dim"].get<int>();
}

/// Gemma 2's soft caps and sliding window (transformers' and llama.cpp's defaults, 50, 30 and 4096, where the file
/// has none).
void gemma2_fields(const Metadata& meta, json& config) {
  config["query_pre_attn_scalar"] = gemma_query_pre_attn_scalar(config, false);
  if (auto cap = meta.number("gemma2.attn_logit_softcapping")) {
    config["attn_logit_softcapping"] = *cap;
  }
  if (auto cap = meta.number("gemma2.final_logit_softcapping")) {
    config["final_logit_softcapping"] = *cap;
  }
  if (auto window = meta.number("gemma2.attention.sliding_window")) {
    config["sliding_window"] = static_cast<int>(*window);
  }
}

/// Gemma 3: llama.cpp slides on five layers of every six when the file has a window (every layer is global without
/// one), and rotates the sliding layers with a base of 10000 unless the file says otherwise (rope.freq_base_swa).
void gemma3_fields(const Metadata& meta, json& config) {
  config["query_pre_attn_scalar"] = gemma_query_pre_attn_scalar(config, true);
  if (auto window = meta.number("gemma3.attention.sliding_window"); window && *window > 0) {
    config["sliding_window"] = static_cast<int>(*window);
    config["sliding_window_pattern"] = 6;
  } else {
    config["sliding_window"] = nullptr;
  }
  config["rope_local_base_freq"] = meta.number("gemma3.rope.freq_base_swa").value_or(10000.0);
  if (auto cap = meta.number("gemma3.final_logit_softcapping")) {
    config["final_logit_softcapping"] = *cap;
  }
}

/// The experts of Mixtral (the llama architecture with expert_count) and Qwen3-MoE. llama.cpp renormalizes the
/// chosen experts' probabilities in both (the converter keeps no norm_topk_prob), and routes every Qwen3-MoE layer
/// through experts of expert_feed_forward_length (else feed_forward_length / expert_used_count).
void moe_fields(const Metadata& meta, const std::string& arch, json& config) {
  const int experts = meta.count(arch + ".expert_count");
  const int used = meta.count(arch + ".expert_used_count");
  if (used > experts) {
    meta.fail(arch + ".expert_used_count",
              std::to_string(used) + " experts a token, more than the " + std::to_string(experts) + " of expert_count");
  }
  config["num_experts_per_tok"] = used;
  if (arch == "llama") {
    config["num_local_experts"] = experts;
    return;
  }
  config["num_experts"] = experts;
  config["moe_intermediate_size"] =
      meta.count(arch + ".expert_feed_forward_length", config["intermediate_size"].get<int>() / used);
  config["norm_topk_prob"] = true;
  config["decoder_sparse_step"] = 1;
}

/// Tensors the config holds (RoPE factors), not weights of the model.
bool is_rope_tensor(const std::string& name) {
  return name == "rope_freqs.weight" || name == "rope_factors_long.weight" || name == "rope_factors_short.weight";
}

/// The Hugging Face module of a GGUF tensor base name inside block N ("attn_q" -> "self_attn.q_proj").
std::optional<std::string_view> block_module(std::string_view name) {
  static const std::map<std::string_view, std::string_view> names = {
      {"attn_norm", "input_layernorm"},
      {"attn_q", "self_attn.q_proj"},
      {"attn_k", "self_attn.k_proj"},
      {"attn_v", "self_attn.v_proj"},
      {"attn_qkv", "self_attn.qkv_proj"},
      {"attn_output", "self_attn.o_proj"},
      {"attn_q_norm", "self_attn.q_norm"},
      {"attn_k_norm", "self_attn.k_norm"},
      {"ffn_norm", "post_attention_layernorm"},
      {"ffn_gate", "mlp.gate_proj"},
      {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"},
  };
  auto it = names.find(name);
  return it == names.end() ? std::nullopt : std::optional<std::string_view>(it->second);
}

/// Modules whose GGUF name depends on the family: Gemma's four norms a layer (its ffn_norm comes before the
/// feed-forward, after the post-attention norm) and the routers and stacked experts of the mixtures.
std::optional<std::string_view> family_module(std::string_view name, std::string_view model_type) {
  struct Entry {
    std::string_view model_type;
    std::string_view gguf;
    std::string_view hf;
  };
  static constexpr Entry entries[] = {
      {"gemma", "post_attention_norm", "post_attention_layernorm"},
      {"gemma", "ffn_norm", "pre_feedforward_layernorm"},
      {"gemma", "post_ffw_norm", "post_feedforward_layernorm"},
      {"phi3", "ffn_up", "mlp.gate_up_proj"},  // Phi-3 has no ffn_gate: its ffn_up is the fused gate_up_proj
      {"mixtral", "ffn_gate_inp", "block_sparse_moe.gate"},
      {"mixtral", "ffn_gate_exps", "block_sparse_moe.switch_mlp.gate_proj"},
      {"mixtral", "ffn_up_exps", "block_sparse_moe.switch_mlp.up_proj"},
      {"mixtral", "ffn_down_exps", "block_sparse_moe.switch_mlp.down_proj"},
      {"qwen3_moe", "ffn_gate_inp", "mlp.gate"},
      {"qwen3_moe", "ffn_gate_exps", "mlp.switch_mlp.gate_proj"},
      {"qwen3_moe", "ffn_up_exps", "mlp.switch_mlp.up_proj"},
      {"qwen3_moe", "ffn_down_exps", "mlp.switch_mlp.down_proj"},
  };
  const std::string_view family = model_type.starts_with("gemma") ? "gemma" : model_type;
  for (const auto& e : entries) {
    if (e.model_type == family && e.gguf == name) {
      return e.hf;
    }
  }
  return std::nullopt;
}

std::optional<std::string_view> global_module(std::string_view name) {
  static const std::map<std::string_view, std::string_view> names = {
      {"token_embd", "model.embed_tokens"},
      {"output_norm", "model.norm"},
      {"output", "lm_head"},
  };
  auto it = names.find(name);
  return it == names.end() ? std::nullopt : std::optional<std::string_view>(it->second);
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

/// The width a product streams `bits`-wide codes at: nuvec's quantized products unpack 2-, 4- and 8-bit codes with
/// SIMD (and AVX-512 VNNI); 3-, 5- and 6-bit codes take a generic path about 40 times slower (a 2048 x 2048 decode
/// product: 13.5 ms against 0.3 to 0.45 ms), so those codes are rewritten one width up, exactly.
int kernel_bits(int bits) {
  switch (bits) {
    case 3:
      return 4;
    case 5:
    case 6:
      return 8;
    default:
      return bits;
  }
}

/// The length of the rows of a linear module's weight (its input features), from the config.
int input_features(const std::string& module, const json& config) {
  const int hidden = config["hidden_size"].get<int>();
  if (ends_with(module, ".o_proj")) {
    return config["num_attention_heads"].get<int>() * config["head_dim"].get<int>();
  }
  if (ends_with(module, ".down_proj")) {
    // Qwen3-MoE's experts have their own size (Mixtral's are intermediate_size).
    const bool expert = module.find(".switch_mlp.") != std::string::npos;
    return expert ? config.value("moe_intermediate_size", config["intermediate_size"].get<int>())
                  : config["intermediate_size"].get<int>();
  }
  return hidden;
}

/// The layout whose groups of rows the CPU's kernels stream faster, for a block format that has one and a weight of
/// `rows` rows: q4_0x16 (q4_0x8 where the rows come in eights but not sixteens), q8_0x16 (as fast as q8_0 for one row
/// of x, 1.7-2.2x for 8 to 16 rows: batched decoding, 1.15-1.3x for a prompt) and q4_kx16. Not q6_kx16: one
/// row of x (a decoding step) streamed it slower than q6_k at every shape the models have (1.3x at 8192 values a
/// row, 1.4x at 2048, 2.5x at 512), and the small model's output layer in it cost 8-38% of its decoding speed; it pays
/// only from four rows of x (8 sequences decoded together gained a fifth with the output layer in it).
std::optional<QuantizationMode> grouped_layout(const std::string& mode, int rows) {
  if (mode == "q4_0") {
    return rows % 16 == 0 ? QuantizationMode::q4_0x16 : QuantizationMode::q4_0x8;
  }
  if (mode == "q8_0") {
    return QuantizationMode::q8_0x16;
  }
  if (mode == "q4_k") {
    return QuantizationMode::q4_kx16;
  }
  return std::nullopt;
}

/// Rewrites the model's linear layers and a tied embedding (the output layer; an embedding that only looks up rows has
/// nothing to gain) in their grouped layouts (grouped_layout: each group of rows one run of memory, a lossless
/// repacking), where their rows come in whole groups, and records the layout in the config's quantization so that a
/// saved folder loads it back. A few megabytes of rows at a time, each slice giving back the file's pages it was read
/// from, so that the resident memory stays about the file's size (a table repacked whole held both copies at once).
void interleave_rows(LanguageModel& model, json& config, const io::Blob& file) {
  const bool tied = config.value("tie_word_embeddings", false);
  const auto interleave = [&](const std::string& path, auto& layer) {
    const auto grouped = grouped_layout(layer.mode(), layer.weight.shape(0));
    if (!grouped || layer.weight.shape(0) % block_rows(*grouped) != 0) {
      return;
    }
    const std::string mode(mode_name(*grouped));
    const int group = block_rows(*grouped);
    constexpr int64_t slice_bytes = int64_t{4} << 20;
    const int rows = group * static_cast<int>(std::max<int64_t>(1, slice_bytes / (group * layer.weight.shape(1))));
    layer.repack(mode, rows, [&](const array& source) {
      // release keeps to the file's own bytes: a source held elsewhere gives back nothing.
      if (source.flags().row_contiguous) {
        file.release(source.data<unsigned char>(), source.nbytes());
      }
    });
    config["quantization"][path] = {{"group_size", layer.group_size()}, {"bits", layer.bits()}, {"mode", mode}};
  };
  model.apply_to_modules([&](const std::string& path, nn::Module& module) {
    if (auto* linear = dynamic_cast<nn::QuantizedLinear*>(&module)) {
      interleave(path, *linear);
    } else if (auto* embedding = dynamic_cast<nn::QuantizedEmbedding*>(&module);
               embedding != nullptr && tied && embedding->mode() != "q8_0") {
      // A tied q8_0 table stays: one row of x streams it no faster grouped, and repacked at load it is resident
      // through a prompt's prefill beside the activations, where a plain table's file pages come in as the output
      // layer first reads them, after the prefill (1B Q8_0, a 512-token prompt: 1446 against 1344 MiB at the peak).
      interleave(path, *embedding);
    }
  });
}

/// Copies the weights read from the file that are smaller than a huge page (norms, biases, small tables) into memory
/// of their own and gives their pages back. The page cache holds the file in folios of up to 2 MiB, and a fault maps
/// the whole folio: each layer's norm read by the first prompt mapped back 2 MiB of the repacked weights beside it
/// (44 MiB of a 1B Q4_0 model's file, 6% over its size).
void own_small_weights(detail::NamedArrays& weights, const LoadPlan& plan, const io::Blob& file) {
  constexpr size_t huge_page = size_t{2} << 20;
  const unsigned char* const first = file.data();
  const unsigned char* const last = first + file.size();
  for (auto& [name, weight] : weights) {
    // A weight the rank keeps a part of is left to be cut first (copied whole, it would be held whole).
    if (plan.region(name) != nullptr || !weight.is_available() || !weight.flags().row_contiguous ||
        weight.nbytes() >= huge_page) {
      continue;
    }
    const auto* bytes = weight.data<unsigned char>();
    if (bytes < first || bytes + weight.nbytes() > last) {
      continue;
    }
    array owned(allocator::malloc(weight.nbytes()), weight.shape(), weight.dtype());
    std::memcpy(owned.data<unsigned char>(), bytes, weight.nbytes());
    file.release(bytes, weight.nbytes());
    weight = owned;
  }
}

}  // namespace

namespace detail {

json gguf_hf_config(const GGUFMetadata& metadata, const NamedArrays& tensors, const std::string& file) {
  Metadata meta(metadata, file);
  auto arch_name = meta.string("general.architecture");
  if (!arch_name) {
    meta.fail("general.architecture", "missing");
  }
  const Architecture* arch = find_architecture(*arch_name);
  if (arch == nullptr) {
    throw_unsupported(file + ": general.architecture '" + *arch_name + "' is not supported (" +
                      supported_architectures() + " are)");
  }
  const std::string a = *arch_name + ".";
  if (arch->gguf == "llama" && meta.number(a + "expert_count").value_or(0) > 0) {
    arch = &mixtral_architecture;
  }
  auto embedding = tensors.find("token_embd.weight");
  if (embedding == tensors.end() || embedding->second.ndim() != 2) {
    throw_invalid(file + ": the tensor token_embd.weight (the token embeddings) is missing or not a matrix");
  }
  const int hidden = meta.count(a + "embedding_length");
  const int heads = meta.count(a + "attention.head_count");
  json config = {
      {"model_type", arch->model_type},
      {"architectures", {arch->hf_class}},
      {"hidden_size", hidden},
      {"num_hidden_layers", meta.count(a + "block_count")},
      {"intermediate_size", meta.count(a + "feed_forward_length")},
      {"num_attention_heads", heads},
      {"num_key_value_heads", meta.count(a + "attention.head_count_kv", heads)},
      {"head_dim", meta.count(a + "attention.key_length", hidden / heads)},
      {"rms_norm_eps", meta.required(a + "attention.layer_norm_rms_epsilon")},
      {"rope_theta", meta.number(a + "rope.freq_base").value_or(10000.0)},
      {"max_position_embeddings", meta.count(a + "context_length", 0)},
      // The embedding's rows: the vocabulary the weights were trained with (tokenizer.ggml.tokens may be shorter).
      {"vocab_size", embedding->second.shape(0)},
      {"tie_word_embeddings", tensors.count("output.weight") == 0},
      {"rope_scaling", rope_scaling(meta, *arch_name)},
  };
  if (auto rope_dims = meta.number(a + "rope.dimension_count")) {
    const double head_dim = config["head_dim"].get<double>();
    if (*rope_dims != head_dim) {
      config["partial_rotary_factor"] = *rope_dims / head_dim;
    }
  }
  if (tensors.contains("rope_freqs.weight")) {
    config["rope_scaling"] = rope_freqs_scaling(tensors, config, file);
  }
  if (arch->gguf == "phi3") {
    phi3_fields(meta, tensors, config, file);
  }
  if (arch->gguf == "llama") {
    config["attention_bias"] = tensors.count("blk.0.attn_q.bias") != 0;
    config["mlp_bias"] = false;
  }
  if (arch->model_type == "mixtral" || arch->model_type == "qwen3_moe") {
    moe_fields(meta, *arch_name, config);
  }
  if (arch->model_type == "gemma2") {
    gemma2_fields(meta, config);
  }
  if (arch->model_type == "gemma3_text") {
    gemma3_fields(meta, config);
  }
  if (auto bos = meta.number("tokenizer.ggml.bos_token_id")) {
    config["bos_token_id"] = static_cast<int>(*bos);
  }
  json eos = json::array();
  for (const char* key :
       {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    if (auto id = meta.number(key); id && std::find(eos.begin(), eos.end(), static_cast<int>(*id)) == eos.end()) {
      eos.push_back(static_cast<int>(*id));
    }
  }
  if (!eos.empty()) {
    config["eos_token_id"] = eos.size() == 1 ? eos[0] : eos;
  }
  return config;
}

std::string hf_tensor_name(const std::string& gguf_name, const std::string& model_type, const std::string& file) {
  auto unknown = [&]() -> std::string {
    throw_unsupported(file + ": tensor '" + gguf_name + "' has no counterpart in a Hugging Face '" + model_type +
                      "' model");
  };
  const auto dot = gguf_name.rfind('.');
  if (dot == std::string::npos) {
    return unknown();
  }
  const std::string_view base(gguf_name.data(), dot);
  const std::string_view suffix = std::string_view(gguf_name).substr(dot);
  if (suffix != ".weight" && suffix != ".bias" && suffix != ".scales" && suffix != ".biases") {
    return unknown();
  }
  if (auto module = global_module(base)) {
    return std::string(*module) + std::string(suffix);
  }
  if (base.substr(0, 4) != "blk.") {
    return unknown();
  }
  const auto layer_end = base.find('.', 4);
  const std::string_view layer = base.substr(4, layer_end == std::string_view::npos ? 0 : layer_end - 4);
  if (layer.empty() || !std::all_of(layer.begin(), layer.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return unknown();
  }
  const std::string_view tensor = base.substr(layer_end + 1);
  auto module = family_module(tensor, model_type);
  if (!module) {
    module = block_module(tensor);
  }
  if (!module) {
    return unknown();
  }
  return "model.layers." + std::string(layer) + "." + std::string(*module) + std::string(suffix);
}

array unpermute_rope_rows(const array& rows, int heads) {
  const int n = rows.shape(0);
  if (heads <= 0 || n % heads != 0 || (n / heads) % 2 != 0) {
    throw_invalid("[load_gguf_model] " + std::to_string(n) + " rows of Q or K do not split into " +
                  std::to_string(heads) + " heads of an even size");
  }
  // Row h * D + 2 j + t of the file is row h * D + t * D / 2 + j of Hugging Face's layout.
  Shape split = rows.shape();
  split.erase(split.begin());
  split.insert(split.begin(), {heads, n / heads / 2, 2});
  return contiguous(reshape(swapaxes(reshape(rows, split), 1, 2), rows.shape()));
}

GGUFWeights gguf_hf_sources(const NamedArrays& tensors, json& config, const std::string& file,
                            const std::unordered_map<std::string, QuantizationMode>& block_formats,
                            const BlockParts& blocks) {
  const std::string arch = config["model_type"].get<std::string>();
  const int heads = config["num_attention_heads"].get<int>();
  const int kv_heads = config["num_key_value_heads"].get<int>();
  const bool permuted_rows =
      (arch == "llama" || arch == "mixtral") && config.value("partial_rotary_factor", 1.0) != 1.0;
  if ((arch == "llama" || arch == "mixtral") && !permuted_rows) {
    config["rope_traditional"] = true;
  }
  GGUFWeights result;
  NamedArrays& out = result.weights;
  auto& conversions = result.conversions;
  json quantization = json::object();
  for (const auto& [name, stored] : tensors) {
    if (is_rope_tensor(name)) {
      continue;  // in the config's rope_scaling
    }
    std::string hf = hf_tensor_name(name, arch, file);
    const std::string module = hf.substr(0, hf.rfind('.'));
    if (auto format = block_formats.find(name); format != block_formats.end()) {
      const BlockLayout layout = block_layout(format->second);
      quantization[module] = {{"group_size", layout.values},
                              {"bits", block_code_bits(format->second)},
                              {"mode", mode_name(format->second)}};
    }
    GGUFConversion c(stored);
    if (auto part = blocks.find(name); part != blocks.end()) {
      c.blocks = part->second.first;
      c.part = part->second.second;
    }
    // The converter permutes the Q and K rows of the llama architecture only (Qwen's files keep HF's order), so that
    // RoPE on adjacent pairs of features gives Hugging Face's rotation of the two halves. The model then rotates
    // adjacent pairs itself (rope_traditional) and computes with the file's rows, uncopied; only a partial rotation,
    // which the permutation does not match, gets Hugging Face's rows back.
    if (permuted_rows) {
      if (ends_with(module, ".q_proj")) {
        c.heads = heads;
      } else if (ends_with(module, ".k_proj")) {
        c.heads = kv_heads;
      }
    }
    // The converter stores Gemma's norm weights with the 1 its RMSNorm adds (1 + w) already added.
    if (arch.starts_with("gemma") && ends_with(hf, "norm.weight")) {
      if (!is_floating(stored.dtype())) {
        throw_invalid(std::string(file).append(": the norm weight ").append(name).append(" is quantized"));
      }
      c.minus_one = true;
    }
    if (c.blocks || c.heads > 0 || c.minus_one) {
      // A stand-in of the converted weight's shape and dtype until the conversion runs.
      out.insert_or_assign(hf, zeros(stored.shape(), c.minus_one ? float32 : stored.dtype()));
      conversions.insert_or_assign(hf, std::move(c));
    } else {
      out.insert_or_assign(hf, stored);
    }
  }
  // Quantized modules: the packed width and the number of groups of a row give the bits and the group size.
  // (`out` gains no element in the loop, so its iteration stays valid while a weight is replaced.)
  std::map<std::pair<int, int>, int> uses;
  for (const auto& [name, scales] : out) {
    if (!ends_with(name, ".scales")) {
      continue;
    }
    const std::string module = name.substr(0, name.size() - 7);
    auto weight = out.find(module + ".weight");
    // Matrices, or the (experts, out, in) stacks of a mixture's experts.
    if (weight == out.end() || scales.ndim() < 2 || scales.ndim() > 3 || weight->second.ndim() != scales.ndim()) {
      throw_invalid(std::string(file).append(": the quantized tensor of ").append(module).append(" is incomplete"));
    }
    const int k = input_features(module, config);
    const int groups = scales.shape(-1);
    const int64_t bits_total = int64_t{weight->second.shape(-1)} * 32;
    if (groups == 0 || k % groups != 0 || bits_total % k != 0) {
      std::ostringstream message;
      message << file << ": the quantized weight of " << module << " (shape " << shape_string(weight->second.shape())
              << ", " << groups << " groups a row) does not match its " << k << " input features";
      throw_invalid(message.str());
    }
    const int group = k / groups;
    const auto stored_bits = static_cast<int>(bits_total / k);
    const int bits = kernel_bits(stored_bits);
    if (bits != stored_bits) {
      conversions.try_emplace(weight->first, weight->second);
      Shape wide = weight->second.shape();
      wide.back() = static_cast<int32_t>(int64_t{k} * bits / 32);
      weight->second = zeros(wide, uint32);
    }
    for (const char* part : {".weight", ".scales", ".biases"}) {
      if (auto c = conversions.find(module + part); c != conversions.end()) {
        c->second.packed = true;
        c->second.group = group;
        c->second.stored_bits = stored_bits;
        c->second.bits = bits;
      }
    }
    quantization[module] = {{"group_size", group}, {"bits", bits}};
    ++uses[{group, bits}];
  }
  if (!uses.empty()) {
    auto common = std::max_element(uses.begin(), uses.end(), [](auto& x, auto& y) { return x.second < y.second; });
    quantization["group_size"] = common->first.first;
    quantization["bits"] = common->first.second;
  }
  if (!quantization.empty()) {
    config["quantization"] = quantization;
  }
  return result;
}

NamedArrays gguf_hf_weights(const NamedArrays& tensors, json& config, const std::string& file,
                            const std::unordered_map<std::string, QuantizationMode>& block_formats) {
  GGUFWeights sources = gguf_hf_sources(tensors, config, file, block_formats);
  convert_gguf_weights(sources.weights, sources.conversions, LoadPlan());
  return std::move(sources.weights);
}

}  // namespace detail

LoadedModel load_gguf_model(const std::string& path, const std::optional<Placement>& placement) {
  io::GGUFTensors file = io::load_gguf_tensors(path);
  detail::NamedArrays tensors;
  std::unordered_map<std::string, QuantizationMode> block_formats;
  detail::BlockParts blocks;
  for (io::GGUFTensor& t : file.tensors) {
    const auto* info = io::detail::ggml_type_info(static_cast<uint32_t>(t.type));
    auto format = io::block_format(t.type);
    if (info->bits == 0 || (format && t.shape.size() == 2)) {
      if (format) {
        block_formats.emplace(t.name, *format);
      }
      tensors.insert_or_assign(t.name, std::move(t.data));
      continue;
    }
    // Other types, and stacked experts, as affine quantization (as io::load_gguf's packed_all gives them), repacked
    // once the model knows what this rank keeps of them: stand-ins of the repacked shapes until then.
    auto source = std::make_shared<const detail::GGUFBlocks>(detail::GGUFBlocks{t.data, info, t.shape});
    Shape codes = t.shape;
    Shape scales = t.shape;
    codes.back() = static_cast<int32_t>(int64_t{t.shape.back()} * info->bits / 32);
    scales.back() = static_cast<int32_t>(t.shape.back() / static_cast<int32_t>(info->group));
    std::string base = t.name;
    if (base.ends_with(".weight")) {
      base.resize(base.size() - 7);
    }
    const std::string names[] = {t.name, base + ".scales", base + ".biases"};
    for (int part = 0; part < 3; ++part) {
      tensors.insert_or_assign(names[part], zeros(part == 0 ? codes : scales, part == 0 ? uint32 : float32));
      blocks.insert_or_assign(names[part], std::pair{source, part});
    }
  }
  file.tensors.clear();
  const std::shared_ptr<const io::Blob> mapped = file.blob;
  const detail::GGUFMetadata& metadata = file.metadata;
  json config = detail::gguf_hf_config(metadata, tensors, path);
  detail::GGUFWeights sources = detail::gguf_hf_sources(tensors, config, path, block_formats, blocks);
  tensors.clear();  // the renamed weights hold what is still needed; the rest is freed before the model is built
  blocks.clear();
  std::shared_ptr<LanguageModel> model = create_model(config);
  load_weights_into(*model, std::move(sources.weights), config, placement,
                    [&](detail::NamedArrays& weights, const LoadPlan& plan) {
                      // The copies first: the conversions' transient buffers then come on top of all the rank keeps.
                      own_small_weights(weights, plan, *mapped);
                      detail::convert_gguf_weights(weights, sources.conversions, plan);
                    });
  sources.conversions.clear();
  model->eval();
  // The tokenizer before the repacking, and the load's transient buffers (its tables, the repacked slices) given back
  // after it: left in the caches, a 1B model's 50 MiB of them stayed resident beside the weights until a prefill.
  Tokenizer tokenizer = Tokenizer::from_gguf(path);
  interleave_rows(*model, config, *mapped);
  clear_cache();
  GenerationConfig generation = GenerationConfig::from_json(nullptr, config);
  return LoadedModel{std::move(model), std::move(tokenizer), std::move(generation), std::move(config)};
}

}  // namespace nuvec::lm
