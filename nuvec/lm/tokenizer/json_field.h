#pragma once

// A JSON value together with its path from the document's root, so that every error in a tokenizer file names the
// file, the path to the field and what was wrong: "tokenizer.json: model.merges[3]: expected a string or a pair".

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace nuvec::lm::detail {

class JsonField {
 public:
  /// `source` names the document in errors ("tokenizer.json", "tokenizer_config.json").
  JsonField(const nlohmann::json& value, std::string source, std::string path = {});

  [[nodiscard]] const nlohmann::json& value() const { return *value_; }
  /// The path from the root, "" for the root itself ("model.vocab", "added_tokens[2].content").
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] bool is_null() const { return value_->is_null(); }

  /// The member `key`; throws naming the path when it is missing.
  [[nodiscard]] JsonField operator[](std::string_view key) const;
  /// The member `key`, or nothing when it is missing or null.
  [[nodiscard]] std::optional<JsonField> find(std::string_view key) const;
  /// Element `index` of an array.
  [[nodiscard]] JsonField at(size_t index) const;
  /// The number of elements of an array (throws when the value is not an array).
  [[nodiscard]] size_t size() const;

  [[nodiscard]] std::string string() const;
  [[nodiscard]] bool boolean() const;
  [[nodiscard]] int64_t integer() const;
  [[nodiscard]] double number() const;

  /// Optional members with a default when missing or null.
  [[nodiscard]] std::string string_or(std::string_view key, std::string_view fallback) const;
  [[nodiscard]] bool boolean_or(std::string_view key, bool fallback) const;
  [[nodiscard]] int64_t integer_or(std::string_view key, int64_t fallback) const;
  [[nodiscard]] double number_or(std::string_view key, double fallback) const;

  /// Throws nuvec::error (invalid_argument) "<source>: <path>: <problem>".
  [[noreturn]] void fail(std::string_view problem) const;
  /// Throws nuvec::error (unsupported) for a well-formed value nuvec does not handle: "<source>: <path>: <problem>".
  [[noreturn]] void unsupported(std::string_view problem) const;

 private:
  const nlohmann::json* value_;
  std::string source_;
  std::string path_;
};

}  // namespace nuvec::lm::detail
