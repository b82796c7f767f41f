#pragma once

// The dense Llama-family architectures on TransformerModel: llama (Llama 2, 3, 3.1, 3.2), mistral (sliding
// window), qwen2 (q/k/v biases), qwen3 (q/k norms) and phi3 (fused qkv_proj and gate_up_proj, partial rotary,
// longrope). They differ only in config.json's defaults and a few switches of the shared blocks.

#include <memory>
#include <nlohmann/json.hpp>

#include "nuvec/lm/models/config.h"
#include "nuvec/lm/models/transformer.h"

namespace nuvec::lm {

/// How a dense family stores its projections.
struct DenseLayout {
  /// One qkv_proj instead of q_proj, k_proj and v_proj.
  bool fused_qkv = false;
  /// One gate_up_proj instead of gate_proj and up_proj.
  bool fused_gate_up = false;
};

/// A pre-norm transformer of TransformerBlocks with gated MLPs and RMSNorms, as `config` describes it.
std::shared_ptr<TransformerModel> make_dense_transformer(const TransformerConfig& config,
                                                         const DenseLayout& layout = {});

/// The models of each model_type, from config.json.
std::shared_ptr<LanguageModel> make_llama(const nlohmann::json& config);
std::shared_ptr<LanguageModel> make_mistral(const nlohmann::json& config);
std::shared_ptr<LanguageModel> make_qwen2(const nlohmann::json& config);
std::shared_ptr<LanguageModel> make_qwen3(const nlohmann::json& config);
std::shared_ptr<LanguageModel> make_phi3(const nlohmann::json& config);

}  // namespace nuvec::lm
