#pragma once

// Splits template source into text and tag tokens, applying Jinja2's whitespace control as transformers configures
// it: trim_blocks and lstrip_blocks on, `-` and `+` markers, no trailing newline kept.

#include <string>
#include <string_view>
#include <vector>

namespace nuvec::lm::jinja {

enum class TokenKind {
  text,            // literal template text, whitespace control applied
  variable_begin,  // {{
  variable_end,    // }}
  block_begin,     // {%
  block_end,       // %}
  name,
  string,  // the literal's value, escapes decoded
  integer,
  floating,
  op,   // an operator or punctuation: + // ** == ( ...
  end,  // end of the source
};

/// One token and the template line it starts on.
struct Token {
  TokenKind kind;
  std::string text;
  int line;
};

/// Throws the nuvec::error of a template syntax error at `line`.
[[noreturn]] void syntax_error(int line, const std::string& message);

/// The tokens of `source`; a malformed tag throws nuvec::error naming the line.
std::vector<Token> tokenize(std::string_view source);

}  // namespace nuvec::lm::jinja
