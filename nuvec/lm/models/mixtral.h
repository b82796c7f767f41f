#pragma once

// Mistral's Mixtral: a Mistral transformer whose feed-forwards are sparse mixtures of experts
// (model.layers.N.block_sparse_moe: a router `gate` and experts w1 (gate), w3 (up) and w2 (down)), the chosen
// experts' router logits softmaxed among themselves.

#include <memory>
#include <nlohmann/json.hpp>

#include "nuvec/lm/models/language_model.h"

namespace nuvec::lm {

/// The mixtral model config.json describes: num_local_experts experts, num_experts_per_tok per token.
std::shared_ptr<LanguageModel> make_mixtral(const nlohmann::json& config);

}  // namespace nuvec::lm
