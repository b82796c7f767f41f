#include "nuvec/lm/models/registry.h"

#include <map>

#include "nuvec/core/error.h"
#include "nuvec/lm/models/gemma.h"
#include "nuvec/lm/models/llama.h"
#include "nuvec/lm/models/mixtral.h"
#include "nuvec/lm/models/qwen3_moe.h"

namespace nuvec::lm {

namespace {

const std::map<std::string, ModelFactory>& factories() {
  static const std::map<std::string, ModelFactory> table = {
      {"llama", make_llama},     {"mistral", make_mistral},
      {"phi3", make_phi3},       {"qwen2", make_qwen2},
      {"qwen3", make_qwen3},     {"gemma2", make_gemma2},
      {"gemma3", make_gemma3},   {"gemma3_text", make_gemma3_text},
      {"mixtral", make_mixtral}, {"qwen3_moe", make_qwen3_moe},
  };
  return table;
}

std::string supported_list() {
  std::string names;
  for (const auto& name : supported_model_types()) {
    names += (names.empty() ? "" : ", ") + name;
  }
  return names;
}

}  // namespace

std::vector<std::string> supported_model_types() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : factories()) {
    names.push_back(name);
  }
  return names;
}

std::shared_ptr<LanguageModel> create_model(const nlohmann::json& config) {
  auto type = config.find("model_type");
  if (type == config.end() || !type->is_string()) {
    throw_invalid("[config.json] model_type is missing; supported: " + supported_list() + ".");
  }
  auto factory = factories().find(type->get<std::string>());
  if (factory == factories().end()) {
    throw_invalid("[config.json] unsupported model_type '" + type->get<std::string>() +
                  "'; supported: " + supported_list() + ".");
  }
  return factory->second(config);
}

}  // namespace nuvec::lm
