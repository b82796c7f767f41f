#include "nuvec/serve/tool_calls.h"

#include <nlohmann/json.hpp>
#include <random>
#include <variant>

namespace nuvec::serve {

namespace {

constexpr std::string_view hermes_open = "<tool_call>";
constexpr std::string_view hermes_close = "</tool_call>";
constexpr std::string_view mistral_open = "[TOOL_CALLS]";
constexpr std::string_view python_tag = "<|python_tag|>";

/// What has been decided of the text scanned, in order (text and calls), and how much of the text that was.
struct Scan {
  std::vector<std::variant<std::string, ToolCall>> pieces;
  size_t consumed = 0;

  void text(std::string_view t) {
    if (!t.empty()) {
      pieces.emplace_back(std::string(t));
    }
  }
  void call(ToolCall c) { pieces.emplace_back(std::move(c)); }
};

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

size_t skip_space(std::string_view text, size_t pos) {
  while (pos < text.size() && is_space(text[pos])) {
    ++pos;
  }
  return pos;
}

bool all_space(std::string_view text) { return skip_space(text, 0) == text.size(); }

/// The length of the longest end of `text` that could begin `marker`: text to hold back until it is decided.
size_t partial_marker(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (marker.starts_with(text.substr(text.size() - n))) {
      return n;
    }
  }
  return 0;
}

enum class Extent { complete, incomplete, invalid };

/// Where the JSON object or array opening with `open` after `pos` (and spaces) ends. Strings are read through, so
/// brackets and markers inside them do not count; whether the value is valid JSON is left to the parser.
std::pair<Extent, size_t> json_value_end(std::string_view text, size_t pos, char open) {
  pos = skip_space(text, pos);
  if (pos == text.size()) {
    return {Extent::incomplete, pos};
  }
  if (text[pos] != open) {
    return {Extent::invalid, pos};
  }
  int depth = 0;
  bool in_string = false;
  for (size_t i = pos; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return {Extent::complete, i + 1};
    }
  }
  return {Extent::incomplete, text.size()};
}

/// A call from its JSON: {"name": "...", ARGUMENTS_KEY: {...}}; none when it has another shape.
std::optional<ToolCall> call_from_json(const nlohmann::ordered_json& value, ToolCallFormat format) {
  if (!value.is_object() || !value.contains("name") || !value["name"].is_string()) {
    return std::nullopt;
  }
  const char* key = value.contains("arguments") ? "arguments" : "parameters";
  if (!value.contains(key) || !value[key].is_object()) {
    return std::nullopt;
  }
  ToolCall call;
  call.id = make_tool_call_id(format);
  call.name = value["name"].get<std::string>();
  call.arguments = value[key].dump();
  return call;
}

nlohmann::ordered_json parse_json(std::string_view text) {
  return nlohmann::ordered_json::parse(text, nullptr, false);  // discarded (not an exception) when malformed
}

/// The calls a Hermes block or a Mistral list holds; none unless all of them parse.
std::optional<std::vector<ToolCall>> calls_from(std::string_view json_text, ToolCallFormat format) {
  const nlohmann::ordered_json value = parse_json(json_text);
  std::vector<ToolCall> calls;
  for (const auto& item : value.is_array() ? value : nlohmann::ordered_json::array({value})) {
    std::optional<ToolCall> call = call_from_json(item, format);
    if (!call) {
      return std::nullopt;
    }
    calls.push_back(std::move(*call));
  }
  if (calls.empty()) {
    return std::nullopt;
  }
  return calls;
}

/// A family that opens each call, or list of calls, with a marker: the marker, the bracket its JSON opens with, and
/// the tag that closes it (none for Mistral).
struct TaggedSyntax {
  std::string_view open;
  char bracket;
  std::string_view close;
};

Scan scan_tagged(std::string_view text, bool final, const TaggedSyntax& syntax, ToolCallFormat format) {
  Scan s;
  size_t pos = 0;
  while (true) {
    const size_t start = text.find(syntax.open, pos);
    if (start == std::string_view::npos) {
      const size_t keep = final ? 0 : partial_marker(text.substr(pos), syntax.open);
      s.text(text.substr(pos, text.size() - pos - keep));
      s.consumed = text.size() - keep;
      return s;
    }
    s.text(text.substr(pos, start - pos));
    const size_t body = start + syntax.open.size();
    const auto [extent, end] = json_value_end(text, body, syntax.bracket);
    if (extent == Extent::incomplete && !final) {
      s.consumed = start;
      return s;
    }
    if (extent == Extent::complete) {
      const size_t tag = skip_space(text, end);
      const std::string_view rest = text.substr(tag);
      const bool closed = syntax.close.empty() || rest.starts_with(syntax.close);
      if (!closed && !final && syntax.close.starts_with(rest)) {
        s.consumed = start;  // the closing tag may still come
        return s;
      }
      // A block the output ended in before its closing tag (the model stopped at its end of turn) still counts.
      if (closed || (final && rest.empty())) {
        if (auto calls = calls_from(text.substr(body, end - body), format)) {
          for (ToolCall& call : *calls) {
            s.call(std::move(call));
          }
          pos = closed ? tag + syntax.close.size() : tag;
          continue;
        }
      }
    }
    // Not a call: the block stays text, up to its closing tag or the end of its JSON.
    size_t stop = extent == Extent::complete ? end : body;
    if (!syntax.close.empty()) {
      const size_t close = text.find(syntax.close, body);
      if (close == std::string_view::npos && !final) {
        s.consumed = start;
        return s;
      }
      stop = close == std::string_view::npos ? text.size() : close + syntax.close.size();
    } else if (extent == Extent::incomplete) {
      stop = text.size();
    }
    s.text(text.substr(start, stop - start));
    pos = stop;
  }
}

/// Llama 3.1/3.2: calls are the whole answer, one JSON object or several joined by ";", so they are decided at
/// the end; an answer that cannot start one is content at once.
Scan scan_llama(std::string_view text, bool final, bool at_start) {
  Scan s;
  const size_t first = skip_space(text, 0);
  const std::string_view rest = text.substr(first);
  const bool may_be_call =
      rest.empty() || rest.starts_with('{') || rest.starts_with(python_tag) || python_tag.starts_with(rest);
  if (!at_start || !may_be_call) {
    s.text(text);
    s.consumed = text.size();
    return s;
  }
  if (!final) {
    return s;
  }
  s.consumed = text.size();
  size_t pos = rest.starts_with(python_tag) ? first + python_tag.size() : first;
  while (true) {
    const auto [extent, end] = json_value_end(text, pos, '{');
    std::optional<ToolCall> call;
    if (extent == Extent::complete) {
      call = call_from_json(parse_json(text.substr(pos, end - pos)), ToolCallFormat::llama_json);
    }
    if (!call) {
      s.pieces.clear();
      s.text(text);
      return s;
    }
    s.call(std::move(*call));
    pos = skip_space(text, end);
    if (pos < text.size() && text[pos] == ';') {
      pos = skip_space(text, pos + 1);
    }
    if (pos == text.size()) {
      return s;
    }
  }
}

Scan scan(ToolCallFormat format, std::string_view text, bool final, bool at_start) {
  switch (format) {
    case ToolCallFormat::hermes:
      return scan_tagged(text, final, {hermes_open, '{', hermes_close}, format);
    case ToolCallFormat::mistral:
      return scan_tagged(text, final, {mistral_open, '[', {}}, format);
    case ToolCallFormat::llama_json:
      return scan_llama(text, final, at_start);
  }
  return {};
}

}  // namespace

std::optional<ToolCallFormat> tool_call_format(std::string_view chat_template) {
  if (chat_template.find(hermes_open) != std::string_view::npos) {
    return ToolCallFormat::hermes;
  }
  if (chat_template.find(mistral_open) != std::string_view::npos) {
    return ToolCallFormat::mistral;
  }
  // Llama 3.2's template asks for {"name": ..., "parameters": ...} in words; 3.1's also names <|python_tag|>.
  if (chat_template.find(python_tag) != std::string_view::npos ||
      chat_template.find("\"parameters\"") != std::string_view::npos) {
    return ToolCallFormat::llama_json;
  }
  return std::nullopt;
}

bool needs_special_tokens(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::hermes:
      return false;  // <tool_call> is an ordinary added token in Qwen's and Hermes' vocabularies
    case ToolCallFormat::llama_json:
    case ToolCallFormat::mistral:
      return true;
  }
  return false;
}

std::string make_tool_call_id(ToolCallFormat format) {
  static constexpr std::string_view alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 engine{std::random_device{}()};
  const bool mistral = format == ToolCallFormat::mistral;
  std::string id = mistral ? "" : "call_";
  for (int i = 0; i < (mistral ? 9 : 24); ++i) {
    id.push_back(alphabet[engine() % alphabet.size()]);
  }
  return id;
}

ParsedOutput parse_tool_calls(ToolCallFormat format, std::string_view text) {
  // The stream's parse over a single piece, so that whole and streamed responses say the same.
  ToolCallStream stream(format);
  ParsedOutput out = stream.add(text);
  ParsedOutput rest = stream.finish();
  out.content.append(rest.content);
  out.calls.insert(out.calls.end(), rest.calls.begin(), rest.calls.end());
  return out;
}

ParsedOutput ToolCallStream::add(std::string_view text) {
  held_.append(text);
  return scan(false);
}

ParsedOutput ToolCallStream::finish() { return scan(true); }

ParsedOutput ToolCallStream::scan(bool final) {
  Scan s = serve::scan(format_, held_, final, at_start_);
  held_.erase(0, s.consumed);
  ParsedOutput out;
  for (auto& piece : s.pieces) {
    at_start_ = false;
    if (auto* call = std::get_if<ToolCall>(&piece)) {
      // Spaces alone between calls, or between text and a call, are layout rather than content.
      spaces_.clear();
      segment_has_text_ = false;
      called_ = true;
      out.calls.push_back(std::move(*call));
      continue;
    }
    const std::string& text = std::get<std::string>(piece);
    if (segment_has_text_) {
      out.content.append(text);
    } else if (all_space(text)) {
      spaces_.append(text);
    } else {
      out.content.append(spaces_).append(text);
      spaces_.clear();
      segment_has_text_ = true;
    }
  }
  if (final && !called_) {
    out.content.append(spaces_);
    spaces_.clear();
  }
  return out;
}

}  // namespace nuvec::serve
