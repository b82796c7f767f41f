// The chat request's tools: OpenAI's function tools, tool_choice and parallel_tool_calls, and the tool calls of
// earlier assistant turns as chat templates read them.

#include <algorithm>
#include <string>
#include <vector>

#include "nuvec/serve/api_error.h"
#include "nuvec/serve/json_fields.h"
#include "nuvec/serve/request.h"

namespace nuvec::serve {

namespace {

/// OpenAI's rule for function names: letters, digits, underscores and dashes, at most 64.
bool valid_function_name(const std::string& name) {
  if (name.empty() || name.size() > 64) {
    return false;
  }
  for (char c : name) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!word && c != '-') {
      return false;
    }
  }
  return true;
}

const nlohmann::json& required_object(const nlohmann::json& object, const std::string& key, const std::string& at) {
  const std::string param = std::string(at).append(".").append(key);
  const nlohmann::json* value = field::find(object, key);
  if (value == nullptr) {
    throw invalid_request("'" + param + "' is required.", param);
  }
  if (!value->is_object()) {
    throw invalid_request("'" + param + "' must be an object; got " + field::show(*value) + ".", param);
  }
  return *value;
}

const std::string& required_string(const nlohmann::json& object, const std::string& key, const std::string& at) {
  const std::string param = std::string(at).append(".").append(key);
  const nlohmann::json* value = field::find(object, key);
  if (value == nullptr) {
    throw invalid_request("'" + param + "' is required.", param);
  }
  return field::string(*value, param);
}

void expect_function_type(const nlohmann::json& object, const std::string& at) {
  const std::string& type = required_string(object, "type", at);
  if (type != "function") {
    throw invalid_request("'" + at + ".type' must be 'function'; got \"" + type + "\".", at + ".type");
  }
}

/// Returns the tool's function name.
std::string check_tool(const nlohmann::json& tool, const std::string& at) {
  if (!tool.is_object()) {
    throw invalid_request("'" + at + "' must be an object; got " + field::show(tool) + ".", at);
  }
  expect_function_type(tool, at);
  const nlohmann::json& function = required_object(tool, "function", at);
  const std::string fn = at + ".function";
  const std::string& name = required_string(function, "name", fn);
  if (!valid_function_name(name)) {
    throw invalid_request(
        "'" + fn + ".name' must be 1 to 64 letters, digits, underscores or dashes; got \"" + name + "\".",
        fn + ".name");
  }
  if (const nlohmann::json* description = field::find(function, "description")) {
    (void)field::string(*description, fn + ".description");
  }
  if (const nlohmann::json* strict = field::find(function, "strict")) {
    (void)field::boolean(*strict, fn + ".strict");
  }
  if (const nlohmann::json* parameters = field::find(function, "parameters"); parameters && !parameters->is_object()) {
    throw invalid_request("'" + fn + ".parameters' must be a JSON Schema object; got " + field::show(*parameters) + ".",
                          fn + ".parameters");
  }
  return name;
}

void parse_tool_choice(const nlohmann::json& value, const std::vector<std::string>& names, ToolFields& fields) {
  if (names.empty()) {
    throw invalid_request("'tool_choice' is only allowed when 'tools' are specified.", "tool_choice");
  }
  if (value.is_string()) {
    const std::string& choice = value.get_ref<const std::string&>();
    if (choice == "none" || choice == "auto" || choice == "required") {
      fields.choice = choice == "none"   ? ToolChoice::none
                      : choice == "auto" ? ToolChoice::automatic
                                         : ToolChoice::required;
      return;
    }
  } else if (value.is_object()) {
    expect_function_type(value, "tool_choice");
    const std::string& name =
        required_string(required_object(value, "function", "tool_choice"), "name", "tool_choice.function");
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      throw invalid_request("'tool_choice.function.name' names \"" + name + "\", which is not among the tools.",
                            "tool_choice.function.name");
    }
    fields.choice = ToolChoice::named;
    fields.function = name;
    return;
  }
  throw invalid_request(
      "'tool_choice' must be 'none', 'auto', 'required' or {\"type\": \"function\", \"function\": {\"name\": ...}}; "
      "got " +
          field::show(value) + ".",
      "tool_choice");
}

}  // namespace

namespace detail {

ToolFields parse_tool_fields(const nlohmann::json& body, const nlohmann::ordered_json& ordered) {
  ToolFields fields;
  std::vector<std::string> names;
  if (const nlohmann::json* tools = field::find(body, "tools")) {
    if (!tools->is_array() || tools->empty()) {
      throw invalid_request("'tools' must be a non-empty list of tools; got " + field::show(*tools) + ".", "tools");
    }
    for (size_t i = 0; i < tools->size(); ++i) {
      names.push_back(check_tool((*tools)[i], "tools[" + std::to_string(i) + "]"));
    }
    fields.tools = ordered.at("tools");
  }
  if (const nlohmann::json* choice = field::find(body, "tool_choice")) {
    parse_tool_choice(*choice, names, fields);
  }
  fields.parallel = field::optional_boolean(body, "parallel_tool_calls").value_or(true);
  if (field::find(body, "functions") != nullptr) {
    throw unsupported_field("functions", "The deprecated 'functions' (use 'tools')");
  }
  return fields;
}

nlohmann::ordered_json parse_message_tool_calls(const nlohmann::json& calls, const nlohmann::ordered_json& ordered,
                                                const std::string& param) {
  if (!calls.is_array()) {
    throw invalid_request("'" + param + "' must be a list; got " + field::show(calls) + ".", param);
  }
  nlohmann::ordered_json out = ordered;
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string at = param + "[" + std::to_string(i) + "]";
    const nlohmann::json& call = calls[i];
    if (!call.is_object()) {
      throw invalid_request("'" + at + "' must be an object; got " + field::show(call) + ".", at);
    }
    (void)required_string(call, "id", at);
    expect_function_type(call, at);
    const nlohmann::json& function = required_object(call, "function", at);
    (void)required_string(function, "name", at + ".function");
    const std::string& arguments = required_string(function, "arguments", at + ".function");
    // transformers' templates read arguments as a mapping (vLLM parses them the same way); text that is not a JSON
    // object reaches the template as it came.
    nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(arguments, nullptr, false);
    if (parsed.is_object()) {
      out[i]["function"]["arguments"] = std::move(parsed);
    }
  }
  return out;
}

}  // namespace detail

}  // namespace nuvec::serve
