#pragma once

// From config.json to a model: one factory per model_type, listed in registry.cpp's table (adding an
// architecture adds one line there).

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nuvec/lm/models/language_model.h"

namespace nuvec::lm {

/// Builds a model with freshly initialized weights from a config.json.
using ModelFactory = std::function<std::shared_ptr<LanguageModel>(const nlohmann::json& config)>;

/// The model config.json's model_type names; throws for a missing or unknown model_type, listing the supported ones.
std::shared_ptr<LanguageModel> create_model(const nlohmann::json& config);
/// The model_types create_model knows, sorted.
std::vector<std::string> supported_model_types();

}  // namespace nuvec::lm
