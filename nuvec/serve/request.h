#pragma once

// The requests of POST /v1/chat/completions and POST /v1/completions, parsed and checked field by field (OpenAI's
// names and ranges, plus vLLM's top_k, min_p and repetition_penalty). Parsing needs no model: what depends on one
// (the model's name, logit_bias ids, the context) is checked when the request is served.

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nuvec/lm/constrain/json_schema.h"

namespace nuvec::serve {

/// Which endpoint a request came to; it decides the response's shape.
enum class Endpoint { chat, completion };

/// Sampling fields as the client gave them; what is left unset comes from the model's generation_config.json,
/// else from OpenAI's defaults (temperature 1, top_p 1).
struct SamplingFields {
  std::optional<float> temperature;
  std::optional<float> top_p;
  std::optional<int> top_k;
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;
  float presence_penalty = 0.0F;
  float frequency_penalty = 0.0F;
  std::map<int32_t, float> logit_bias;
  std::optional<uint64_t> seed;
};

/// tool_choice: the model may call tools, must not, must call one, or must call the one named.
enum class ToolChoice { automatic, none, required, named };

/// The chat request's tools (tools, tool_choice, parallel_tool_calls).
struct ToolFields {
  /// OpenAI's function tools as the client wrote them (the chat template reads this shape); null when none.
  nlohmann::ordered_json tools;
  ToolChoice choice = ToolChoice::automatic;
  /// The function ToolChoice::named names.
  std::string function;
  /// parallel_tool_calls: false keeps only the first call of an answer.
  bool parallel = true;
};

/// One prompt of /v1/completions: text, or token ids.
struct PromptInput {
  std::optional<std::string> text;
  std::vector<int32_t> ids;
};

struct CompletionRequest {
  Endpoint endpoint = Endpoint::completion;
  /// The model's name; unset serves the first model.
  std::optional<std::string> model;
  /// Chat: the messages as the chat template reads them (text parts joined, "developer" read as "system").
  nlohmann::ordered_json messages;
  /// Completions: each prompt gets `n` choices.
  std::vector<PromptInput> prompts;
  /// max_completion_tokens, else max_tokens; unset: up to the end of the context.
  std::optional<int> max_tokens;
  SamplingFields sampling;
  std::vector<std::string> stop;
  int n = 1;
  /// Whether each token's log-probability is reported, and how many of the most likely tokens with it.
  bool logprobs = false;
  int top_logprobs = 0;
  bool stream = false;
  /// stream_options.include_usage: a last chunk carries the usage.
  bool include_usage = false;
  /// Completions: the prompt's text comes before the generated text.
  bool echo = false;
  /// Chat: extra variables for the chat template (vLLM's chat_template_kwargs, e.g. enable_thinking).
  nlohmann::ordered_json template_variables = nlohmann::ordered_json::object();
  /// Chat: the tools the model may call.
  ToolFields tools;
  /// response_format json_object (any object) or json_schema (compiled): the document the output must be, by
  /// constrained decoding; null for free text.
  std::shared_ptr<const lm::JsonSchema> response_schema;
};

/// Parses a /v1/chat/completions body; throws a 400 ApiError naming the first bad field. The body keeps the client's
/// key order, which templates show when they print tools and arguments as JSON.
CompletionRequest parse_chat_request(const nlohmann::ordered_json& body);
/// Parses a /v1/completions body; throws a 400 ApiError naming the first bad field.
CompletionRequest parse_completion_request(const nlohmann::json& body);

/// The body as JSON, in the client's key order: a 400 ApiError for text that is not JSON or JSON that is not an
/// object.
nlohmann::ordered_json parse_body(const std::string& body);

namespace detail {
/// Reads the fields both endpoints share (model, sampling, stop, n, max_tokens, stream) into `request`.
void parse_common_fields(const nlohmann::json& body, CompletionRequest& request);
/// Reads response_format: null for "text" (or none), else the schema the output must match (a 400 naming the field
/// for a malformed format or a schema keyword outside the supported subset).
std::shared_ptr<const lm::JsonSchema> parse_response_format(const nlohmann::json& body);
/// Reads tools, tool_choice and parallel_tool_calls; `ordered` is `body` in the client's key order.
ToolFields parse_tool_fields(const nlohmann::json& body, const nlohmann::ordered_json& ordered);
/// An assistant message's tool_calls (at `param`) in the shape transformers gives templates: each call as the client
/// wrote it, its function.arguments an object when the string holds a JSON object.
nlohmann::ordered_json parse_message_tool_calls(const nlohmann::json& calls, const nlohmann::ordered_json& ordered,
                                                const std::string& param);
}  // namespace detail

}  // namespace nuvec::serve
