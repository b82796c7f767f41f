#pragma once

// The JSON a completion answers with, in OpenAI's shapes: chat.completion and text_completion objects, their
// streamed chunks (chat.completion.chunk, text_completion), usage, and log-probabilities (chat's "content" list,
// the completions' parallel lists). Model text goes out with invalid UTF-8 (a token's partial character in
// log-probabilities) replaced, so a response can always be written.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "nuvec/lm/generate/generate.h"
#include "nuvec/lm/tokenizer/tokenizer.h"
#include "nuvec/serve/request.h"
#include "nuvec/serve/tool_calls.h"

namespace nuvec::serve {

/// What every object of one response shares.
struct ResponseContext {
  Endpoint endpoint = Endpoint::completion;
  std::string id;
  int64_t created = 0;
  std::string model;
  const lm::Tokenizer* tokenizer = nullptr;
  /// Whether tokens carry their log-probabilities (and how many of the most likely tokens come with each).
  bool logprobs = false;
  bool include_usage = false;
  /// Chat with tools: the family whose calls are parsed out of the output; none: the output is all content.
  std::optional<ToolCallFormat> tool_calls;
  /// parallel_tool_calls: false keeps only an answer's first call.
  bool parallel_tool_calls = true;
};

/// One choice, built from the tokens of its sequence.
struct ChoiceOutput {
  std::string text;
  std::vector<lm::GenerationResponse> tokens;
  std::string finish_reason;
  int prompt_tokens = 0;

  void add(const lm::GenerationResponse& response);
};

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
};

/// A fresh id with OpenAI's prefix for the endpoint ("chatcmpl-", "cmpl-").
std::string make_response_id(Endpoint endpoint);

nlohmann::json usage_json(const Usage& usage);
/// The whole response: choices in index order; `prefixes` (echo) go before each choice's text when not empty.
nlohmann::json completion_body(const ResponseContext& context, const std::vector<ChoiceOutput>& choices,
                               const Usage& usage, const std::vector<std::string>& prefixes);
/// Streamed chunks: a chat choice's opening (its role), a piece of text with its tokens' log-probabilities, a
/// choice's end, and the closing usage chunk (no choices).
nlohmann::json role_chunk(const ResponseContext& context, int index);
nlohmann::json text_chunk(const ResponseContext& context, int index, const std::string& text,
                          const std::vector<lm::GenerationResponse>& tokens);
/// A chat choice's tool call, `call_index` counting the choice's calls.
nlohmann::json tool_call_chunk(const ResponseContext& context, int index, int call_index, const ToolCall& call);
nlohmann::json finish_chunk(const ResponseContext& context, int index, const std::string& finish_reason);
nlohmann::json usage_chunk(const ResponseContext& context, const Usage& usage);

/// JSON text with invalid UTF-8 replaced by U+FFFD.
std::string dump(const nlohmann::json& value);
/// A server-sent event: "data: <json>\n\n"; and the stream's end, "data: [DONE]\n\n".
std::string sse_event(const nlohmann::json& value);
std::string sse_done();

}  // namespace nuvec::serve
