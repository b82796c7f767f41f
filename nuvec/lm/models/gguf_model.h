#pragma once

// Language models from GGUF files as llama.cpp's converter (convert_hf_to_gguf.py) and llama-quantize write them.
// The metadata becomes the Hugging Face config.json the file came from (what the converter drops, such as Gemma's
// query scale or Gemma 3's sliding-window pattern, as llama.cpp assumes it), the tensors get their Hugging Face
// names (the Q and K rows of the llama architecture their Hugging Face order back, Gemma's norms their offset from 1,
// a mixture's stacked experts mlx-lm's switch_mlp names), and the model is built by the same code as a Hugging Face
// folder. Quantized tensors stay quantized, stacked experts included. Matrices of Q4_0, Q8_0, Q4_K and Q6_K are
// computed from the file's own blocks (GGML's block formats, nuvec/core/quantization_mode.h): no copy, no repacking,
// the mapped pages read on first use. The other types, and stacked experts, decode exactly into groups of codes with
// a float32 scale and bias, nuvec's affine quantization, with groups of 32 (Q4_1, Q5_0, Q5_1, Q5_K, ...) or 16 (Q2_K,
// Q3_K, Q6_K), in the layout of an MLX-quantized folder; their codes of 3, 5 and 6 bits are stored one width up (4 or
// 8 bits), which nuvec's products stream much faster.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "nuvec/io/gguf.h"
#include "nuvec/lm/models/gguf_convert.h"
#include "nuvec/lm/models/load.h"

namespace nuvec::lm {

/// Loads a GGUF file: the model, its tokenizer and its EOS ids. Architectures: llama (Llama, Mistral, and Mixtral when
/// it has experts), qwen2, qwen3, qwen3moe, phi3, gemma2 and gemma3 (its text model). With a placement the model is
/// split before its weights load, and only the parts this rank keeps are read and converted.
LoadedModel load_gguf_model(const std::string& path, const std::optional<Placement>& placement = std::nullopt);

namespace detail {

using GGUFMetadata = std::unordered_map<std::string, GGUFMetaData>;
using NamedArrays = std::unordered_map<std::string, array>;

/// The config.json of the model a GGUF file holds, from its metadata and the shapes of its tensors (as
/// io::load_gguf gives them); `file` names the file in errors.
nlohmann::json gguf_hf_config(const GGUFMetadata& metadata, const NamedArrays& tensors, const std::string& file);

/// The Hugging Face name of a GGUF tensor in a model of `model_type` ("blk.3.attn_q.weight" ->
/// "model.layers.3.self_attn.q_proj.weight"; a mixture's "blk.3.ffn_up_exps.weight" -> its stacked experts
/// "...switch_mlp.up_proj.weight"; ".scales" and ".biases" of packed tensors keep their suffix).
std::string hf_tensor_name(const std::string& gguf_name, const std::string& model_type, const std::string& file);

/// Undoes the converter's permutation of Q and K rows for the llama architecture: within each of `heads` heads,
/// llama.cpp's RoPE rotates adjacent rows (2i, 2i + 1), Hugging Face's rows i and i + head_dim / 2. Moves whole rows
/// (the first axis), so it applies to packed quantized weights and their scales and biases alike.
array unpermute_rope_rows(const array& rows, int heads);

/// The repacked blocks a file's tensor name stands for: the blocks and which of codes, scales or biases it is.
using BlockParts = std::unordered_map<std::string, std::pair<std::shared_ptr<const GGUFBlocks>, int>>;

/// A model's weights from a GGUF file before they are read: stand-ins (of the converted shapes and dtypes) for the
/// weights that need converting, and how each is converted.
struct GGUFWeights {
  NamedArrays weights;
  std::unordered_map<std::string, GGUFConversion> conversions;
};

/// The tensors of a GGUF file (as io::load_gguf packs them, left in their blocks: `block_formats` names those tensors
/// and their formats, or stand-ins for blocks to repack: `blocks` names them) under their Hugging Face names, with
/// the conversions to Hugging Face's layout (Gemma's norm weights less the 1 the converter added) and to codes of 4
/// or 8 bits (from 3, 5 and 6); records the group size and bits (and the mode of block formats) of every quantized
/// module in config["quantization"]. Reads no tensor.
GGUFWeights gguf_hf_sources(const NamedArrays& tensors, nlohmann::json& config, const std::string& file,
                            const std::unordered_map<std::string, QuantizationMode>& block_formats = {},
                            const BlockParts& blocks = {});

/// gguf_hf_sources' weights, all converted whole.
NamedArrays gguf_hf_weights(const NamedArrays& tensors, nlohmann::json& config, const std::string& file,
                            const std::unordered_map<std::string, QuantizationMode>& block_formats = {});

}  // namespace detail

}  // namespace nuvec::lm
