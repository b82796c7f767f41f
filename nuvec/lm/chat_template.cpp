#include "nuvec/lm/chat_template.h"

#include <cstdint>

#include "nuvec/core/error.h"
#include "nuvec/lm/jinja/interpreter.h"
#include "nuvec/lm/jinja/parser.h"

namespace nuvec::lm {
namespace {

// JSON as the Python objects json.loads gives: ordered dicts, lists, str, int, float, bool, None.
jinja::Value to_value(const nlohmann::ordered_json& j) {
  using nlohmann::ordered_json;
  switch (j.type()) {
    case ordered_json::value_t::null:
      return jinja::Value(jinja::None{});
    case ordered_json::value_t::boolean:
      return jinja::Value(j.get<bool>());
    case ordered_json::value_t::number_integer:
      return jinja::Value(j.get<int64_t>());
    case ordered_json::value_t::number_unsigned: {
      auto u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) {
        return jinja::Value(static_cast<double>(u));
      }
      return jinja::Value(static_cast<int64_t>(u));
    }
    case ordered_json::value_t::number_float:
      return jinja::Value(j.get<double>());
    case ordered_json::value_t::string:
      return jinja::Value(j.get<std::string>());
    case ordered_json::value_t::array: {
      std::vector<jinja::Value> items;
      items.reserve(j.size());
      for (const auto& x : j) {
        items.push_back(to_value(x));
      }
      return jinja::make_list(std::move(items));
    }
    case ordered_json::value_t::object: {
      jinja::Value dict = jinja::make_dict();
      auto& entries = dict.as<jinja::Dict>()->items;
      for (const auto& [key, x] : j.items()) {
        entries.emplace_back(jinja::Value(key), to_value(x));
      }
      return dict;
    }
    default:
      throw_invalid("chat template variables must be JSON values, not binary data");
  }
}

}  // namespace

ChatTemplate::ChatTemplate(std::string source)
    : source_(std::move(source)), body_(std::make_shared<const jinja::Body>(jinja::parse(source_))) {}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, const ChatTemplateOptions& options) const {
  std::vector<std::pair<std::string, jinja::Value>> variables;
  variables.emplace_back("messages", to_value(messages));
  variables.emplace_back("tools", to_value(options.tools));
  variables.emplace_back("documents", to_value(options.documents));
  variables.emplace_back("add_generation_prompt", jinja::Value(options.add_generation_prompt));
  variables.emplace_back("bos_token", jinja::Value(options.bos_token));
  variables.emplace_back("eos_token", jinja::Value(options.eos_token));
  if (!options.extra.is_null() && !options.extra.is_object()) {
    throw_invalid("chat template extra variables must be an object");
  }
  for (const auto& [key, value] : options.extra.items()) {
    if (key == "messages" || key == "tools" || key == "documents" || key == "add_generation_prompt") {
      throw_invalid("chat template extra variable '" + key + "' repeats a named option");
    }
    variables.emplace_back(key, to_value(value));
  }
  return jinja::render(*body_, variables);
}

}  // namespace nuvec::lm
