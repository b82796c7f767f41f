#include "nuvec/lm/constrain/json_matcher.h"

#include <utility>

namespace nuvec::lm {
namespace {

/// How many parses are followed at most: schemas whose anyOf branches stay open long keep the first ones.
constexpr size_t max_parses = 64;
/// Numbers end within this many bytes, so a model cannot loop on digits.
constexpr int max_number_bytes = 32;
/// anyOf nested deeper than this (through references to themselves) is not expanded further.
constexpr int max_any_of_depth = 32;

const std::vector<std::string> booleans = {"true", "false"};
const std::vector<std::string> nulls = {"null"};

bool is_space(uint8_t c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
bool is_hex(uint8_t c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// A number's steps: 0 nothing yet, 1 after '-', 2 a leading 0, 3 integer digits, 4 after '.', 5 fraction digits,
// 6 after 'e', 7 after the exponent's sign, 8 exponent digits. -1: the byte cannot come next.
int number_step(int step, uint8_t c, bool integer) {
  const bool digit = is_digit(c);
  const bool fraction = !integer && c == '.';
  const bool exponent = !integer && (c == 'e' || c == 'E');
  switch (step) {
    case 0:
      return c == '-' ? 1 : c == '0' ? 2 : digit ? 3 : -1;
    case 1:
      return c == '0' ? 2 : digit ? 3 : -1;
    case 2:
      return fraction ? 4 : exponent ? 6 : -1;
    case 3:
      return digit ? 3 : fraction ? 4 : exponent ? 6 : -1;
    case 4:
      return digit ? 5 : -1;
    case 5:
      return digit ? 5 : exponent ? 6 : -1;
    case 6:
      return c == '+' || c == '-' ? 7 : digit ? 8 : -1;
    case 7:
    case 8:
      return digit ? 8 : -1;
    default:
      return -1;
  }
}

bool number_whole(int step) { return step == 2 || step == 3 || step == 5 || step == 8; }

/// Whether a literal's text so far begins one of the texts it may be (`prefix`) or is one (`exact`).
struct LiteralMatch {
  bool prefix = false;
  bool exact = false;
  int index = -1;  // the text it is
};

template <class Frame>
LiteralMatch match_literal(const Frame& frame, std::string_view text) {
  LiteralMatch match;
  const std::vector<std::string>& options = *frame.options;
  for (size_t i = 0; i < options.size(); ++i) {
    if (frame.key && ((frame.seen >> i) & 1U) != 0) {
      continue;  // a key given already
    }
    if (options[i].starts_with(text)) {
      match.prefix = true;
      if (options[i].size() == text.size()) {
        match.exact = true;
        match.index = static_cast<int>(i);
      }
    }
  }
  return match;
}

}  // namespace

JsonMatcher::JsonMatcher(const JsonSchema& schema) : schema_(&schema) {
  Parse start;
  start.frames.push_back(Frame{});
  parses_.push_back(std::move(start));
}

bool JsonMatcher::feed(std::string_view bytes) {
  Parses next = parses_;
  for (char c : bytes) {
    next = step(next, static_cast<uint8_t>(c));
    if (next.empty()) {
      return false;
    }
  }
  parses_ = std::move(next);
  return true;
}

bool JsonMatcher::accepts(std::string_view bytes) const {
  if (bytes.empty()) {
    return true;
  }
  Parses next = step(parses_, static_cast<uint8_t>(bytes.front()));
  for (size_t i = 1; i < bytes.size() && !next.empty(); ++i) {
    next = step(next, static_cast<uint8_t>(bytes[i]));
  }
  return !next.empty();
}

bool JsonMatcher::complete() const {
  for (const Parse& parse : parses_) {
    if (parse.frames.empty()) {
      return true;
    }
    // A number or literal at the top level is whole once its bytes are, though more could extend it.
    const Frame& top = parse.frames.back();
    if (parse.frames.size() == 1 && ((top.kind == Frame::Kind::number && number_whole(top.step)) ||
                                     (top.kind == Frame::Kind::literal && match_literal(top, top.text).exact))) {
      return true;
    }
  }
  return false;
}

bool JsonMatcher::in_free_string() const {
  for (const Parse& parse : parses_) {
    if (parse.frames.empty() || parse.frames.back().kind != Frame::Kind::string || parse.frames.back().step != 0) {
      return false;
    }
  }
  return true;
}

JsonMatcher::Parses JsonMatcher::step(const Parses& parses, uint8_t c) const {
  Parses out;
  for (const Parse& parse : parses) {
    advance(parse, c, out);
    if (out.size() >= max_parses) {
      break;
    }
  }
  return out;
}

void JsonMatcher::advance(Parse parse, uint8_t c, Parses& out) const {
  if (parse.frames.empty()) {
    return;  // the document is whole: nothing may follow
  }
  switch (parse.frames.back().kind) {
    case Frame::Kind::value:
      if (is_space(c)) {
        if (parse.spaces < max_whitespace) {
          ++parse.spaces;
          out.push_back(std::move(parse));
        }
        return;
      }
      parse.spaces = 0;
      start_value(std::move(parse), c, out);
      return;
    case Frame::Kind::object:
      object(std::move(parse), c, out);
      return;
    case Frame::Kind::array:
      array(std::move(parse), c, out);
      return;
    case Frame::Kind::string:
      string(std::move(parse), c, out);
      return;
    case Frame::Kind::number:
      number(std::move(parse), c, out);
      return;
    case Frame::Kind::literal:
      literal(std::move(parse), c, out);
      return;
  }
}

void JsonMatcher::expand(int node, std::vector<int>& alternatives, int depth) const {
  const JsonSchema::Node& n = schema_->node(node);
  if (n.any_of.empty()) {
    alternatives.push_back(node);
    return;
  }
  if (depth < max_any_of_depth) {
    for (int branch : n.any_of) {
      expand(branch, alternatives, depth + 1);
    }
  }
}

void JsonMatcher::start_value(Parse parse, uint8_t c, Parses& out) const {
  const int node = parse.frames.back().node;
  parse.frames.pop_back();
  std::vector<int> alternatives;
  expand(node, alternatives, 0);
  for (int alternative : alternatives) {
    begin(parse, alternative, c, out);
  }
}

void JsonMatcher::begin(Parse parse, int node, uint8_t c, Parses& out) const {
  const JsonSchema::Node& n = schema_->node(node);
  Frame frame;
  frame.node = node;
  auto push = [&](Frame::Kind kind) {
    frame.kind = kind;
    parse.frames.push_back(std::move(frame));
  };
  if (!n.literals.empty()) {
    frame.options = &n.literals;
    push(Frame::Kind::literal);
    literal(std::move(parse), c, out);
  } else if (c == '{' && (n.types & JsonSchema::object) != 0) {
    push(Frame::Kind::object);
    out.push_back(std::move(parse));
  } else if (c == '[' && (n.types & JsonSchema::array) != 0) {
    push(Frame::Kind::array);
    out.push_back(std::move(parse));
  } else if (c == '"' && (n.types & JsonSchema::string) != 0) {
    push(Frame::Kind::string);
    out.push_back(std::move(parse));
  } else if ((c == '-' || is_digit(c)) && (n.types & (JsonSchema::number | JsonSchema::integer)) != 0) {
    frame.integer = (n.types & JsonSchema::number) == 0;
    push(Frame::Kind::number);
    number(std::move(parse), c, out);
  } else if ((c == 't' || c == 'f') && (n.types & JsonSchema::boolean) != 0) {
    frame.options = &booleans;
    push(Frame::Kind::literal);
    literal(std::move(parse), c, out);
  } else if (c == 'n' && (n.types & JsonSchema::null) != 0) {
    frame.options = &nulls;
    push(Frame::Kind::literal);
    literal(std::move(parse), c, out);
  }
}

// An object's steps: 0 after '{', 1 after ',', 2 after a key, 3 in a value, 4 after a value.
void JsonMatcher::object(Parse parse, uint8_t c, Parses& out) const {
  Frame& frame = parse.frames.back();
  const JsonSchema::Node& n = schema_->node(frame.node);
  if (is_space(c)) {
    if (parse.spaces < max_whitespace) {
      ++parse.spaces;
      out.push_back(std::move(parse));
    }
    return;
  }
  parse.spaces = 0;
  const bool can_close = (frame.seen & n.required) == n.required;
  const uint64_t all_keys = n.keys.size() == 64 ? ~uint64_t{0} : (uint64_t{1} << n.keys.size()) - 1;
  const bool more_keys = n.additional >= 0 || frame.seen != all_keys;
  if ((frame.step == 0 || frame.step == 1) && c == '"') {
    Frame key;
    key.key = true;
    if (n.additional < 0) {
      // Only the schema's keys may come: the key is one of their texts.
      key.kind = Frame::Kind::literal;
      key.options = &n.keys;
      key.seen = frame.seen;
      parse.frames.push_back(std::move(key));
      literal(std::move(parse), c, out);
      return;
    }
    key.kind = Frame::Kind::string;
    parse.frames.push_back(std::move(key));
    out.push_back(std::move(parse));
  } else if (frame.step == 2 && c == ':') {
    frame.step = 3;
    Frame value;
    value.node = frame.value;
    parse.frames.push_back(std::move(value));
    out.push_back(std::move(parse));
  } else if (frame.step == 4 && c == ',' && more_keys) {
    frame.step = 1;
    out.push_back(std::move(parse));
  } else if ((frame.step == 0 || frame.step == 4) && c == '}' && can_close) {
    if (finish(parse)) {
      out.push_back(std::move(parse));
    }
  }
}

// An array's steps: 0 after '[', 1 in an item, 2 after an item.
void JsonMatcher::array(Parse parse, uint8_t c, Parses& out) const {
  Frame& frame = parse.frames.back();
  if (is_space(c)) {
    if (parse.spaces < max_whitespace) {
      ++parse.spaces;
      out.push_back(std::move(parse));
    }
    return;
  }
  parse.spaces = 0;
  if ((frame.step == 0 || frame.step == 2) && c == ']') {
    if (finish(parse)) {
      out.push_back(std::move(parse));
    }
    return;
  }
  const bool first = frame.step == 0;
  if (first || (frame.step == 2 && c == ',')) {
    frame.step = 1;
    Frame item;
    item.node = schema_->node(frame.node).items;
    parse.frames.push_back(std::move(item));
    if (first) {
      advance(std::move(parse), c, out);  // the byte begins the first item
    } else {
      out.push_back(std::move(parse));
    }
  }
}

// A string's steps: 0 in its text, 1 after a backslash, 2 in a \u escape (count digits left).
void JsonMatcher::string(Parse parse, uint8_t c, Parses& out) const {
  Frame& frame = parse.frames.back();
  parse.spaces = 0;
  bool ok = true;
  if (frame.step == 0) {
    if (c == '"') {
      if (finish(parse)) {
        out.push_back(std::move(parse));
      }
      return;
    }
    ok = c >= 0x20;
    frame.step = c == '\\' ? 1 : 0;
  } else if (frame.step == 1) {
    ok = c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't' || c == 'u';
    frame.step = c == 'u' ? 2 : 0;
    frame.count = 4;
  } else {
    ok = is_hex(c);
    frame.step = --frame.count == 0 ? 0 : 2;
  }
  if (ok) {
    if (frame.key) {
      frame.text += static_cast<char>(c);
    }
    out.push_back(std::move(parse));
  }
}

void JsonMatcher::number(Parse parse, uint8_t c, Parses& out) const {
  Frame& frame = parse.frames.back();
  const int next = number_step(frame.step, c, frame.integer);
  if (next >= 0 && frame.count < max_number_bytes) {
    parse.spaces = 0;
    frame.step = static_cast<uint8_t>(next);
    ++frame.count;
    out.push_back(std::move(parse));
  } else if (number_whole(frame.step) && finish(parse)) {
    advance(std::move(parse), c, out);  // the byte after the number belongs to its parent
  }
}

void JsonMatcher::literal(Parse parse, uint8_t c, Parses& out) const {
  Frame& frame = parse.frames.back();
  frame.text += static_cast<char>(c);
  if (match_literal(frame, frame.text).prefix) {
    parse.spaces = 0;
    out.push_back(std::move(parse));
    return;
  }
  frame.text.pop_back();
  if (match_literal(frame, frame.text).exact && finish(parse)) {
    advance(std::move(parse), c, out);  // the byte after the literal belongs to its parent
  }
}

bool JsonMatcher::finish(Parse& parse) const {
  Frame done = std::move(parse.frames.back());
  parse.frames.pop_back();
  if (parse.frames.empty()) {
    return true;
  }
  Frame& parent = parse.frames.back();
  if (parent.kind == Frame::Kind::array) {
    parent.step = 2;
    return true;
  }
  if (!done.key) {
    parent.step = 4;
    return true;
  }
  const JsonSchema::Node& n = schema_->node(parent.node);
  int index = -1;
  if (done.kind == Frame::Kind::literal) {
    index = match_literal(done, done.text).index;
  } else {
    const std::string key = "\"" + done.text + "\"";
    for (size_t i = 0; i < n.keys.size() && index < 0; ++i) {
      index = n.keys[i] == key ? static_cast<int>(i) : -1;
    }
  }
  if (index >= 0) {
    const uint64_t bit = uint64_t{1} << index;
    if ((parent.seen & bit) != 0) {
      return false;  // a key given twice
    }
    parent.seen |= bit;
    parent.value = n.key_nodes[static_cast<size_t>(index)];
  } else {
    parent.value = n.additional;
  }
  parent.step = 2;
  return true;
}

}  // namespace nuvec::lm
