#pragma once

// The subset of JSON Schema that constrained decoding follows (what OpenAI's structured outputs and most servers
// support): type (one or a list), properties, required, additionalProperties (false, true or a schema), items, enum,
// const, anyOf, $ref to #/$defs or #/definitions (recursion included), nested freely. Annotations (title,
// description, default, examples, $comment, $schema, $id) are ignored; any other keyword is refused, by name.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nuvec::lm {

class JsonSchema {
 public:
  /// The JSON types a node admits, as bits.
  enum Type : uint8_t {
    object = 1,
    array = 2,
    string = 4,
    number = 8,
    integer = 16,
    boolean = 32,
    null = 64,
    any_type = 127,
  };

  struct Node {
    uint8_t types = any_type;
    /// properties: each name as a JSON string, quotes included (how the output spells it), and its value's node.
    std::vector<std::string> keys;
    std::vector<int> key_nodes;
    /// Bit i: keys[i] is required (at most 64 properties).
    uint64_t required = 0;
    /// The schema of keys not in `keys` (any_node: any value); -1 when no other key may appear.
    int additional = any_node;
    /// The schema of array items.
    int items = any_node;
    /// enum and const: the values as compact JSON texts; when not empty the value must be one of them.
    std::vector<std::string> literals;
    /// anyOf: the value matches one of these nodes (and nothing else is said about it).
    std::vector<int> any_of;
  };

  /// The node every value matches, in every schema.
  static constexpr int any_node = 1;

  /// Any JSON document whose top level is an object (response_format "json_object").
  static JsonSchema any_object();
  /// Compiles `schema`. Throws nuvec::error: unsupported for keywords outside the subset (naming them and where),
  /// invalid for malformed values. `strict` (OpenAI's): objects without additionalProperties allow no other keys.
  static JsonSchema compile(const nlohmann::json& schema, bool strict);

  [[nodiscard]] const Node& root() const { return nodes_[0]; }
  [[nodiscard]] const Node& node(int index) const { return nodes_[static_cast<size_t>(index)]; }

 private:
  class Compiler;
  JsonSchema();
  std::vector<Node> nodes_;
};

}  // namespace nuvec::lm
