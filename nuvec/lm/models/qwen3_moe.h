#pragma once

// Qwen's Qwen3 MoE: a Qwen3 transformer (q/k norms) whose feed-forwards are sparse mixtures of experts
// (model.layers.N.mlp: a router `gate` and experts gate_proj, up_proj and down_proj), except the layers
// mlp_only_layers lists or decoder_sparse_step skips, which keep a dense MLP.

#include <memory>
#include <nlohmann/json.hpp>

#include "nuvec/lm/models/language_model.h"

namespace nuvec::lm {

/// The qwen3_moe model config.json describes: num_experts experts of moe_intermediate_size, num_experts_per_tok
/// per token, their probabilities renormalized when norm_topk_prob says so.
std::shared_ptr<LanguageModel> make_qwen3_moe(const nlohmann::json& config);

}  // namespace nuvec::lm
