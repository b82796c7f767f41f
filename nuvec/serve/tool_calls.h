#pragma once

// Tool calls in a model's output, for the chat-template families that write them: Hermes and Qwen
// (`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, one block per call), Llama 3.1/3.2 (the whole answer is
// `{"name": ..., "parameters": {...}}`, optionally after <|python_tag|>, several joined by ";") and Mistral
// (`[TOOL_CALLS] [{"name": ..., "arguments": {...}}, ...]`). The family is picked from the markers its chat template
// holds. Text that does not parse as a call stays content. Adding a family: an enumerator, its markers in
// tool_call_format, and its scan in tool_calls.cpp.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nuvec::serve {

enum class ToolCallFormat { hermes, llama_json, mistral };

struct ToolCall {
  std::string id;
  std::string name;
  /// The arguments as JSON text (OpenAI's function.arguments).
  std::string arguments;
};

/// A model's output split into the text the user reads and the calls it made.
struct ParsedOutput {
  std::string content;
  std::vector<ToolCall> calls;
};

/// The family whose markers `chat_template` holds; none for a template that writes no tool calls.
std::optional<ToolCallFormat> tool_call_format(std::string_view chat_template);
/// Whether the family's marker is a special token, which the detokenizer must keep for the parser to see it.
bool needs_special_tokens(ToolCallFormat format);
/// A fresh call id: "call_" and random characters; Mistral's 9 alphanumerics, which its template insists on.
std::string make_tool_call_id(ToolCallFormat format);
/// The calls in a whole output, each with a fresh id; stretches of spaces alone around calls are not content.
ParsedOutput parse_tool_calls(ToolCallFormat format, std::string_view text);

/// The same parse over an output that arrives in pieces: text before a call's marker is released as content as soon
/// as it cannot be the start of one; a call is released once it is complete, or at the end.
class ToolCallStream {
 public:
  explicit ToolCallStream(ToolCallFormat format) : format_(format) {}

  /// Takes the next piece of output and returns what it decided.
  ParsedOutput add(std::string_view text);
  /// The output ended: everything still held, decided.
  ParsedOutput finish();

 private:
  ParsedOutput scan(bool final);

  ToolCallFormat format_;
  /// Output not decided yet.
  std::string held_;
  /// Spaces that began a stretch of text between calls: content only if text follows (or no call ever came).
  std::string spaces_;
  bool segment_has_text_ = false;
  bool called_ = false;
  /// Whether nothing was released yet (a Llama call must be the whole answer).
  bool at_start_ = true;
};

}  // namespace nuvec::serve
