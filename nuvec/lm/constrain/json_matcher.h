#pragma once

// Which texts can begin a JSON document that matches a schema: a pushdown automaton over bytes, fed as the model
// writes. Where anyOf leaves the branch open, each branch is followed as a parse of its own until the bytes settle
// it. Whitespace between tokens is bounded, so a model cannot loop on it, and nothing may follow a whole document.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nuvec/lm/constrain/json_schema.h"

namespace nuvec::lm {

class JsonMatcher {
 public:
  /// The most whitespace bytes in a row between tokens of the document.
  static constexpr int max_whitespace = 12;

  /// At the start of a document; `schema` must outlive the matcher and its copies.
  explicit JsonMatcher(const JsonSchema& schema);

  /// Feeds `bytes`; returns false, leaving the matcher as it was, when the text would no longer begin a matching
  /// document.
  bool feed(std::string_view bytes);
  /// Whether feed(bytes) would succeed.
  [[nodiscard]] bool accepts(std::string_view bytes) const;
  /// Whether the text so far is a whole matching document.
  [[nodiscard]] bool complete() const;
  /// Whether every parse is inside a string whose bytes are free (not an enum's nor a fixed key's): any byte but a
  /// quote, a backslash or a control character keeps the text valid there.
  [[nodiscard]] bool in_free_string() const;

 private:
  /// One open value: what it is, how far it has got, and what its schema still allows.
  struct Frame {
    enum class Kind : uint8_t { value, object, array, string, number, literal };
    Kind kind = Kind::value;
    uint8_t step = 0;                                   // where in the value's grammar (per kind)
    bool key = false;                                   // string, literal: an object's key
    bool integer = false;                               // number: no fraction or exponent
    int node = 0;                                       // value, object, array: the schema node
    int value = 0;                                      // object: the node of the current key's value
    int count = 0;                                      // number: bytes so far; string: \u digits left
    uint64_t seen = 0;                                  // object: the properties given; key literal: the object's
    const std::vector<std::string>* options = nullptr;  // literal: the texts it may be
    std::string text;                                   // literal: the bytes so far; free key: its bytes
  };
  /// One way of reading the text: the open values, innermost last, and the whitespace bytes just before.
  struct Parse {
    std::vector<Frame> frames;
    int spaces = 0;
  };
  using Parses = std::vector<Parse>;

  /// The parses `parses` becomes after byte `c` (none when it cannot follow).
  [[nodiscard]] Parses step(const Parses& parses, uint8_t c) const;
  void advance(Parse parse, uint8_t c, Parses& out) const;
  void start_value(Parse parse, uint8_t c, Parses& out) const;
  void begin(Parse parse, int node, uint8_t c, Parses& out) const;
  void object(Parse parse, uint8_t c, Parses& out) const;
  void array(Parse parse, uint8_t c, Parses& out) const;
  void string(Parse parse, uint8_t c, Parses& out) const;
  void number(Parse parse, uint8_t c, Parses& out) const;
  void literal(Parse parse, uint8_t c, Parses& out) const;
  /// Pops the finished top frame and tells its parent; false when the parent refuses it (a repeated key).
  [[nodiscard]] bool finish(Parse& parse) const;
  void expand(int node, std::vector<int>& alternatives, int depth) const;

  const JsonSchema* schema_;
  std::vector<Parse> parses_;
};

}  // namespace nuvec::lm
