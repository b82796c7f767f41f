#pragma once

// The tokenizer's commands: `nuvec tokenize`, `nuvec detokenize` and `nuvec chat-template` (see nuvec help).

#include <cstdio>
#include <optional>
#include <string>

namespace nuvec::tokenize {

struct TokenizeOptions {
  std::string tokenizer;  // a tokenizer.json, a model folder or a .gguf
  bool add_special_tokens = false;
  bool jsonl = false;  // each input line a JSON string, each output line a JSON array of ids
};

struct DetokenizeOptions {
  std::string tokenizer;
  bool skip_special_tokens = false;
  bool clean_up_spaces = false;
  bool jsonl = false;  // each input line a JSON array of ids, each output line a JSON string
};

struct ChatTemplateCommandOptions {
  std::string tokenizer;
  std::string messages;              // a JSON file: the list of messages
  std::optional<std::string> tools;  // a JSON file: the list of tools
  std::optional<std::string> vars;   // a JSON file: an object of more template variables (enable_thinking, ...)
  std::optional<std::string> name;   // which of several named templates ("tool_use", ...)
  bool add_generation_prompt = false;
};

/// Plain: the whole input is one text and the output one JSON array of ids; --jsonl: one per line.
void run_tokenize(const TokenizeOptions& options, std::FILE* in, std::FILE* out);
/// Plain: the input is one JSON array of ids and the output its text; --jsonl: a JSON string per line.
void run_detokenize(const DetokenizeOptions& options, std::FILE* in, std::FILE* out);
/// Writes the rendered prompt.
void run_chat_template(const ChatTemplateCommandOptions& options, std::FILE* out);

}  // namespace nuvec::tokenize
