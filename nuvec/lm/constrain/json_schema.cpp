#include "nuvec/lm/constrain/json_schema.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "nuvec/core/error.h"

namespace nuvec::lm {
namespace {

/// Keywords that say nothing about which values match.
const std::set<std::string> annotations = {"title", "description", "default", "examples", "$comment", "$schema", "$id"};
/// Keywords that do, and are followed.
const std::set<std::string> followed = {"type",  "properties", "required",   "additionalProperties",
                                        "items", "enum",       "const",      "anyOf",
                                        "$ref",  "$defs",      "definitions"};

constexpr size_t max_properties = 64;

[[noreturn]] void malformed(const std::string& at, const std::string& what) {
  throw_invalid("[json_schema] " + what + " at " + at + ".");
}

uint8_t type_bit(const nlohmann::json& name, const std::string& at) {
  static const std::map<std::string, uint8_t> bits = {
      {"object", JsonSchema::object}, {"array", JsonSchema::array},     {"string", JsonSchema::string},
      {"number", JsonSchema::number}, {"integer", JsonSchema::integer}, {"boolean", JsonSchema::boolean},
      {"null", JsonSchema::null}};
  const auto it = name.is_string() ? bits.find(name.get<std::string>()) : bits.end();
  if (it == bits.end()) {
    malformed(at + "/type",
              "'type' must name object, array, string, number, integer, boolean or null; got " + name.dump());
  }
  return it->second;
}

}  // namespace

class JsonSchema::Compiler {
 public:
  Compiler(JsonSchema& out, const nlohmann::json& root, bool strict) : out_(out), root_(root), strict_(strict) {}

  /// Compiles `schema` into node `index`.
  void fill(int index, const nlohmann::json& schema, const std::string& at) {
    if (schema.is_boolean() && schema.get<bool>()) {
      return;  // `true` matches anything: the node stays as made
    }
    if (!schema.is_object()) {
      malformed(at, "a schema must be an object; got " + schema.dump());
    }
    check_keywords(schema, at);
    Node node;
    if (const auto ref = schema.find("$ref"); ref != schema.end()) {
      node.any_of.push_back(resolve(*ref, at + "/$ref"));
    }
    if (const auto any_of = schema.find("anyOf"); any_of != schema.end()) {
      if (!any_of->is_array() || any_of->empty()) {
        malformed(at + "/anyOf", "'anyOf' must be a non-empty array of schemas");
      }
      for (size_t i = 0; i < any_of->size(); ++i) {
        node.any_of.push_back(child((*any_of)[i], at + "/anyOf/" + std::to_string(i)));
      }
    }
    if (const auto type = schema.find("type"); type != schema.end()) {
      node.types = 0;
      for (const nlohmann::json& name : type->is_array() ? *type : nlohmann::json::array({*type})) {
        node.types |= type_bit(name, at);
      }
      if (node.types == 0) {
        malformed(at + "/type", "'type' must name at least one type");
      }
      // An integer is a number too.
      if ((node.types & number) != 0) {
        node.types |= integer;
      }
    }
    read_literals(schema, at, node);
    read_object(schema, at, node);
    if (const auto items = schema.find("items"); items != schema.end()) {
      if (!items->is_object() && !items->is_boolean()) {
        throw_unsupported("[json_schema] 'items' must be one schema (tuples are not supported) at " + at + "/items.");
      }
      node.items = child(*items, at + "/items");
    }
    if (!node.any_of.empty() && (node.types != any_type || !node.literals.empty() || !node.keys.empty())) {
      throw_unsupported("[json_schema] anyOf or $ref beside type, enum, const or properties is not supported at " + at +
                        "; move the other keywords into each branch.");
    }
    out_.nodes_[static_cast<size_t>(index)] = std::move(node);
  }

 private:
  int add() {
    out_.nodes_.emplace_back();
    return static_cast<int>(out_.nodes_.size()) - 1;
  }

  int child(const nlohmann::json& schema, const std::string& at) {
    const int index = add();
    fill(index, schema, at);
    return index;
  }

  static void check_keywords(const nlohmann::json& schema, const std::string& at) {
    std::string refused;
    for (const auto& [key, value] : schema.items()) {
      if (!followed.contains(key) && !annotations.contains(key)) {
        refused += (refused.empty() ? "" : ", ") + key;
      }
    }
    if (!refused.empty()) {
      throw_unsupported("[json_schema] unsupported keywords at " + at + ": " + refused +
                        ". Supported: type, properties, required, additionalProperties, items, enum, const, anyOf, "
                        "$ref, $defs.");
    }
  }

  /// The node of a "#/..." reference, compiled once (so recursive schemas work).
  int resolve(const nlohmann::json& ref, const std::string& at) {
    if (!ref.is_string() || !ref.get<std::string>().starts_with("#")) {
      throw_unsupported("[json_schema] only local references (\"#/$defs/...\") are supported at " + at + "; got " +
                        ref.dump() + ".");
    }
    const std::string pointer = ref.get<std::string>().substr(1);
    if (const auto it = refs_.find(pointer); it != refs_.end()) {
      return it->second;
    }
    const nlohmann::json* target = nullptr;
    try {
      target = &root_.at(nlohmann::json::json_pointer(pointer));
    } catch (const nlohmann::json::exception&) {
      malformed(at, "the reference " + ref.dump() + " names nothing in the schema");
    }
    const int index = add();
    refs_.emplace(pointer, index);
    fill(index, *target, "#" + pointer);
    return index;
  }

  static void read_literals(const nlohmann::json& schema, const std::string& at, Node& node) {
    if (const auto values = schema.find("enum"); values != schema.end()) {
      if (!values->is_array() || values->empty()) {
        malformed(at + "/enum", "'enum' must be a non-empty array");
      }
      for (const nlohmann::json& value : *values) {
        node.literals.push_back(value.dump());
      }
    }
    if (const auto value = schema.find("const"); value != schema.end()) {
      node.literals = {value->dump()};
    }
  }

  void read_object(const nlohmann::json& schema, const std::string& at, Node& node) {
    if (const auto properties = schema.find("properties"); properties != schema.end()) {
      if (!properties->is_object()) {
        malformed(at + "/properties", "'properties' must be an object");
      }
      if (properties->size() > max_properties) {
        throw_unsupported("[json_schema] at most " + std::to_string(max_properties) + " properties are supported at " +
                          at + "; got " + std::to_string(properties->size()) + ".");
      }
      for (const auto& [name, value] : properties->items()) {
        node.keys.push_back(nlohmann::json(name).dump());
        node.key_nodes.push_back(child(value, std::string(at).append("/properties/").append(name)));
      }
    }
    if (const auto required = schema.find("required"); required != schema.end()) {
      if (!required->is_array()) {
        malformed(at + "/required", "'required' must be an array of property names");
      }
      for (const nlohmann::json& name : *required) {
        const std::string key = name.is_string() ? name.dump() : "";
        const auto it = std::find(node.keys.begin(), node.keys.end(), key);
        if (it == node.keys.end()) {
          throw_unsupported("[json_schema] required names " + name.dump() + ", which is not in 'properties', at " + at +
                            "/required.");
        }
        node.required |= uint64_t{1} << (it - node.keys.begin());
      }
    }
    node.additional = strict_ ? -1 : any_node;
    if (const auto additional = schema.find("additionalProperties"); additional != schema.end()) {
      if (additional->is_boolean()) {
        node.additional = additional->get<bool>() ? any_node : -1;
      } else {
        node.additional = child(*additional, at + "/additionalProperties");
      }
    }
  }

  JsonSchema& out_;
  const nlohmann::json& root_;
  bool strict_;
  std::map<std::string, int> refs_;
};

JsonSchema::JsonSchema() : nodes_(2) {}

JsonSchema JsonSchema::any_object() {
  JsonSchema schema;
  schema.nodes_[0].types = object;
  return schema;
}

JsonSchema JsonSchema::compile(const nlohmann::json& schema, bool strict) {
  JsonSchema out;
  Compiler(out, schema, strict).fill(0, schema, "#");
  return out;
}

}  // namespace nuvec::lm
