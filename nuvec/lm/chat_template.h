#pragma once

// Chat templates: a model's Jinja prompt format rendered exactly as Hugging Face transformers renders it.

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nuvec::lm {

namespace jinja {
struct Stmt;
}

/// The variables a chat template sees besides `messages`.
struct ChatTemplateOptions {
  nlohmann::ordered_json tools;      // null, or a list of tool definitions
  nlohmann::ordered_json documents;  // null, or a list (RAG templates)
  bool add_generation_prompt = false;
  std::string bos_token, eos_token;                                 // the tokenizer's strings
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();  // more variables: enable_thinking, date_string, ...
};

/// A parsed chat template. Rendering follows transformers' apply_chat_template: Jinja2's sandbox with trim_blocks,
/// lstrip_blocks, loop controls, its tojson filter and the raise_exception and strftime_now globals.
/// strftime_now reads the clock, or NUVEC_CHAT_TEMPLATE_NOW (seconds since the epoch) when that is set.
class ChatTemplate {
 public:
  /// Parses `source` once; a syntax error throws nuvec::error naming the template line.
  explicit ChatTemplate(std::string source);

  /// The prompt for `messages` (a list of message objects). Template errors, raise_exception among them, throw
  /// nuvec::error with the message and the template line. Thread-safe.
  std::string render(const nlohmann::ordered_json& messages, const ChatTemplateOptions& options) const;

  /// The template text as given.
  [[nodiscard]] const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::shared_ptr<const std::vector<jinja::Stmt>> body_;
};

}  // namespace nuvec::lm
