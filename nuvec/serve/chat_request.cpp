// POST /v1/chat/completions: the messages and the chat-only fields.

#include <string>

#include "nuvec/lm/sample/sampling.h"
#include "nuvec/serve/api_error.h"
#include "nuvec/serve/json_fields.h"
#include "nuvec/serve/request.h"

namespace nuvec::serve {

namespace {

bool known_role(const std::string& role) {
  return role == "system" || role == "developer" || role == "user" || role == "assistant" || role == "tool";
}

/// The text of a content given as a list of parts, joined by newlines as vLLM joins them for text-only templates.
std::string join_parts(const nlohmann::json& parts, const std::string& param) {
  std::string text;
  for (size_t j = 0; j < parts.size(); ++j) {
    const nlohmann::json& part = parts[j];
    const std::string at = param + "[" + std::to_string(j) + "]";
    if (!part.is_object()) {
      throw invalid_request("'" + at + "' must be an object; got " + field::show(part) + ".", at);
    }
    const nlohmann::json* type = field::find(part, "type");
    if (type == nullptr) {
      throw invalid_request("'" + at + ".type' is required.", at + ".type");
    }
    const std::string& kind = field::string(*type, at + ".type");
    std::string piece;
    if (kind == "text" || kind == "refusal") {
      const nlohmann::json* value = field::find(part, kind);
      const std::string param = std::string(at).append(".").append(kind);
      if (value == nullptr) {
        throw invalid_request(
            std::string("'").append(param).append("' is required for a part of type '").append(kind) + "'.", param);
      }
      piece = field::string(*value, param);
    } else if (kind == "image_url" || kind == "input_audio" || kind == "file") {
      throw unsupported_field(at, "Content of type '" + kind + "' (this server serves text-only models)");
    } else {
      throw invalid_request("'" + at + ".type' must be 'text', 'refusal', 'image_url', 'input_audio' or 'file'; got " +
                                field::show(*type) + ".",
                            at + ".type");
    }
    if (j > 0) {
      text.push_back('\n');
    }
    text.append(piece);
  }
  return text;
}

/// `ordered` is `message` in the client's key order.
nlohmann::ordered_json parse_message(const nlohmann::json& message, const nlohmann::ordered_json& ordered,
                                     size_t index) {
  const std::string at = "messages[" + std::to_string(index) + "]";
  if (!message.is_object()) {
    throw invalid_request("'" + at + "' must be an object; got " + field::show(message) + ".", at);
  }
  const nlohmann::json* role_value = field::find(message, "role");
  if (role_value == nullptr) {
    throw invalid_request("'" + at + ".role' is required.", at + ".role");
  }
  std::string role = field::string(*role_value, at + ".role");
  if (!known_role(role)) {
    throw invalid_request("'" + at + ".role' must be 'system', 'developer', 'user', 'assistant' or 'tool'; got " +
                              field::show(*role_value) + ".",
                          at + ".role");
  }
  // Chat templates know "system"; OpenAI's newer "developer" role means the same.
  nlohmann::ordered_json out = {{"role", role == "developer" ? "system" : role}};
  const nlohmann::json* content = field::find(message, "content");
  const nlohmann::json* tool_calls = field::find(message, "tool_calls");
  if (content == nullptr) {
    if (role != "assistant" || tool_calls == nullptr) {
      throw invalid_request("'" + at + ".content' is required.", at + ".content");
    }
    // Templates read content as text (Qwen3's searches it for "</think>"); vLLM passes "" as well.
    out["content"] = "";
  } else if (content->is_string()) {
    out["content"] = content->get<std::string>();
  } else if (content->is_array()) {
    out["content"] = join_parts(*content, at + ".content");
  } else {
    throw invalid_request(
        "'" + at + ".content' must be a string or a list of content parts; got " + field::show(*content) + ".",
        at + ".content");
  }
  if (const nlohmann::json* name = field::find(message, "name")) {
    out["name"] = field::string(*name, at + ".name");
  }
  if (tool_calls != nullptr) {
    out["tool_calls"] = detail::parse_message_tool_calls(*tool_calls, ordered.at("tool_calls"), at + ".tool_calls");
  }
  const nlohmann::json* id = field::find(message, "tool_call_id");
  if (id == nullptr && role == "tool") {
    throw invalid_request("'" + at + ".tool_call_id' is required for a message of role 'tool'.", at + ".tool_call_id");
  }
  if (id != nullptr) {
    out["tool_call_id"] = field::string(*id, at + ".tool_call_id");
  }
  return out;
}

}  // namespace

CompletionRequest parse_chat_request(const nlohmann::ordered_json& ordered) {
  const nlohmann::json body(ordered);
  CompletionRequest request;
  request.endpoint = Endpoint::chat;
  detail::parse_common_fields(body, request);
  const nlohmann::json* messages = field::find(body, "messages");
  if (messages == nullptr) {
    throw invalid_request("'messages' is required.", "messages");
  }
  if (!messages->is_array() || messages->empty()) {
    throw invalid_request("'messages' must be a non-empty list of messages; got " + field::show(*messages) + ".",
                          "messages");
  }
  request.messages = nlohmann::ordered_json::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    request.messages.push_back(parse_message((*messages)[i], ordered.at("messages")[i], i));
  }
  request.logprobs = field::optional_boolean(body, "logprobs").value_or(false);
  if (auto top = field::optional_integer(body, "top_logprobs", 0, lm::max_top_logprobs)) {
    if (!request.logprobs && *top > 0) {
      throw invalid_request("'top_logprobs' needs 'logprobs' set to true.", "top_logprobs");
    }
    request.top_logprobs = static_cast<int>(*top);
  }
  request.tools = detail::parse_tool_fields(body, ordered);
  if (const nlohmann::json* variables = field::find(body, "chat_template_kwargs")) {
    if (!variables->is_object()) {
      throw invalid_request("'chat_template_kwargs' must be an object; got " + field::show(*variables) + ".",
                            "chat_template_kwargs");
    }
    request.template_variables = nlohmann::ordered_json(*variables);
  }
  return request;
}

}  // namespace nuvec::serve
