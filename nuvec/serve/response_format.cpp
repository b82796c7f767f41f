// response_format: free text, any JSON object, or a document matching a JSON schema (OpenAI's structured outputs).

#include <memory>
#include <string>

#include "nuvec/core/error.h"
#include "nuvec/serve/api_error.h"
#include "nuvec/serve/json_fields.h"
#include "nuvec/serve/request.h"

namespace nuvec::serve::detail {
namespace {

/// OpenAI's rule for a schema's name.
bool valid_schema_name(const std::string& name) {
  if (name.empty() || name.size() > 64) {
    return false;
  }
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-')) {
      return false;
    }
  }
  return true;
}

std::shared_ptr<const lm::JsonSchema> parse_json_schema(const nlohmann::json& format) {
  const nlohmann::json* spec = field::find(format, "json_schema");
  if (spec == nullptr || !spec->is_object()) {
    throw invalid_request("'response_format.json_schema' must be an object with a 'schema'; got " +
                              (spec == nullptr ? std::string("nothing") : field::show(*spec)) + ".",
                          "response_format.json_schema");
  }
  const std::string at = "response_format.json_schema.";
  if (const nlohmann::json* name = field::find(*spec, "name")) {
    if (!valid_schema_name(field::string(*name, at + "name"))) {
      throw invalid_request("'" + at + "name' must be 1 to 64 letters, digits, '_' or '-'; got " + name->dump() + ".",
                            at + "name");
    }
  }
  if (const nlohmann::json* description = field::find(*spec, "description")) {
    (void)field::string(*description, at + "description");  // read only to check its type
  }
  const nlohmann::json* strict_field = field::find(*spec, "strict");
  const bool strict = strict_field != nullptr && field::boolean(*strict_field, at + "strict");
  const nlohmann::json* schema = field::find(*spec, "schema");
  if (schema == nullptr) {
    throw invalid_request("'" + at + "schema' is required.", at + "schema");
  }
  try {
    return std::make_shared<const lm::JsonSchema>(lm::JsonSchema::compile(*schema, strict));
  } catch (const nuvec::error& e) {
    throw invalid_request("'" + at + "schema': " + e.what(), at + "schema");
  }
}

}  // namespace

std::shared_ptr<const lm::JsonSchema> parse_response_format(const nlohmann::json& body) {
  const nlohmann::json* format = field::find(body, "response_format");
  if (format == nullptr) {
    return nullptr;
  }
  const nlohmann::json* type = format->is_object() ? field::find(*format, "type") : nullptr;
  if (type == nullptr) {
    throw invalid_request("'response_format' must be an object with a 'type'; got " + field::show(*format) + ".",
                          "response_format");
  }
  const std::string& kind = field::string(*type, "response_format.type");
  if (kind == "text") {
    return nullptr;
  }
  if (kind == "json_object") {
    static const auto any_object = std::make_shared<const lm::JsonSchema>(lm::JsonSchema::any_object());
    return any_object;
  }
  if (kind == "json_schema") {
    return parse_json_schema(*format);
  }
  throw invalid_request(
      "'response_format.type' must be 'text', 'json_object' or 'json_schema'; got " + field::show(*type) + ".",
      "response_format.type");
}

}  // namespace nuvec::serve::detail
