#include "nuvec/lm/tokenizer/json_field.h"

#include <cmath>

#include "nuvec/core/error.h"

namespace nuvec::lm::detail {

JsonField::JsonField(const nlohmann::json& value, std::string source, std::string path)
    : value_(&value), source_(std::move(source)), path_(std::move(path)) {}

JsonField JsonField::operator[](std::string_view key) const {
  auto found = find(key);
  if (!found) {
    fail("missing field '" + std::string(key) + "'");
  }
  return *found;
}

std::optional<JsonField> JsonField::find(std::string_view key) const {
  if (!value_->is_object()) {
    fail(std::string("expected an object, got ") + value_->type_name());
  }
  auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) {
    return std::nullopt;
  }
  return JsonField(*it, source_, path_.empty() ? std::string(key) : path_ + "." + std::string(key));
}

JsonField JsonField::at(size_t index) const {
  if (index >= size()) {
    fail("index " + std::to_string(index) + " out of range");
  }
  return JsonField((*value_)[index], source_, path_ + "[" + std::to_string(index) + "]");
}

size_t JsonField::size() const {
  if (!value_->is_array()) {
    fail(std::string("expected an array, got ") + value_->type_name());
  }
  return value_->size();
}

std::string JsonField::string() const {
  if (!value_->is_string()) {
    fail(std::string("expected a string, got ") + value_->type_name());
  }
  return value_->get<std::string>();
}

bool JsonField::boolean() const {
  if (!value_->is_boolean()) {
    fail(std::string("expected true or false, got ") + value_->type_name());
  }
  return value_->get<bool>();
}

int64_t JsonField::integer() const {
  if (value_->is_number_integer()) {
    return value_->get<int64_t>();
  }
  if (value_->is_number_float()) {
    double v = value_->get<double>();
    if (std::floor(v) == v && std::abs(v) < 9.0e15) {
      return static_cast<int64_t>(v);
    }
  }
  fail(std::string("expected an integer, got ") + (value_->is_number() ? value_->dump() : value_->type_name()));
}

double JsonField::number() const {
  if (!value_->is_number()) {
    fail(std::string("expected a number, got ") + value_->type_name());
  }
  return value_->get<double>();
}

std::string JsonField::string_or(std::string_view key, std::string_view fallback) const {
  auto found = find(key);
  return found ? found->string() : std::string(fallback);
}

bool JsonField::boolean_or(std::string_view key, bool fallback) const {
  auto found = find(key);
  return found ? found->boolean() : fallback;
}

int64_t JsonField::integer_or(std::string_view key, int64_t fallback) const {
  auto found = find(key);
  return found ? found->integer() : fallback;
}

double JsonField::number_or(std::string_view key, double fallback) const {
  auto found = find(key);
  return found ? found->number() : fallback;
}

void JsonField::fail(std::string_view problem) const {
  throw_error(ErrorKind::invalid_argument,
              source_ + ": " + (path_.empty() ? std::string("(root)") : path_) + ": " + std::string(problem));
}

void JsonField::unsupported(std::string_view problem) const {
  throw_error(ErrorKind::unsupported,
              source_ + ": " + (path_.empty() ? std::string("(root)") : path_) + ": " + std::string(problem));
}

}  // namespace nuvec::lm::detail
