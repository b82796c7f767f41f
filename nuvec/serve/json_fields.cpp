#include "nuvec/serve/json_fields.h"

#include <cmath>
#include <sstream>

#include "nuvec/serve/api_error.h"

namespace nuvec::serve::field {

namespace {

std::string range(double min, double max) {
  std::ostringstream out;
  out << min << " and " << max;
  return out.str();
}

}  // namespace

const nlohmann::json* find(const nlohmann::json& object, const std::string& key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    return nullptr;
  }
  return &*it;
}

std::string show(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  constexpr size_t longest = 60;
  if (text.size() > longest) {
    text.resize(longest);
    text.append("...");
  }
  return text;
}

double number(const nlohmann::json& value, const std::string& param, double min, double max) {
  if (!value.is_number()) {
    throw invalid_request("'" + param + "' must be a number; got " + show(value) + ".", param);
  }
  const double x = value.get<double>();
  if (!(x >= min && x <= max)) {
    throw invalid_request("'" + param + "' must be between " + range(min, max) + "; got " + show(value) + ".", param);
  }
  return x;
}

int64_t integer(const nlohmann::json& value, const std::string& param, int64_t min, int64_t max) {
  const bool integral = value.is_number_integer() || (value.is_number_float() && std::isfinite(value.get<double>()) &&
                                                      std::trunc(value.get<double>()) == value.get<double>());
  if (!integral) {
    throw invalid_request("'" + param + "' must be an integer; got " + show(value) + ".", param);
  }
  bool in_range = false;
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    in_range = max >= 0 && u <= static_cast<uint64_t>(max) && (min <= 0 || u >= static_cast<uint64_t>(min));
  } else if (value.is_number_integer()) {
    in_range = value.get<int64_t>() >= min && value.get<int64_t>() <= max;
  } else {
    in_range = value.get<double>() >= static_cast<double>(min) && value.get<double>() <= static_cast<double>(max);
  }
  if (!in_range) {
    throw invalid_request("'" + param + "' must be an integer between " + std::to_string(min) + " and " +
                              std::to_string(max) + "; got " + show(value) + ".",
                          param);
  }
  return value.is_number_float() ? static_cast<int64_t>(value.get<double>()) : value.get<int64_t>();
}

bool boolean(const nlohmann::json& value, const std::string& param) {
  if (!value.is_boolean()) {
    throw invalid_request("'" + param + "' must be a boolean; got " + show(value) + ".", param);
  }
  return value.get<bool>();
}

const std::string& string(const nlohmann::json& value, const std::string& param) {
  if (!value.is_string()) {
    throw invalid_request("'" + param + "' must be a string; got " + show(value) + ".", param);
  }
  return value.get_ref<const std::string&>();
}

std::optional<double> optional_number(const nlohmann::json& object, const std::string& key, double min, double max) {
  const nlohmann::json* value = find(object, key);
  return value != nullptr ? std::optional(number(*value, key, min, max)) : std::nullopt;
}

std::optional<int64_t> optional_integer(const nlohmann::json& object, const std::string& key, int64_t min,
                                        int64_t max) {
  const nlohmann::json* value = find(object, key);
  return value != nullptr ? std::optional(integer(*value, key, min, max)) : std::nullopt;
}

std::optional<bool> optional_boolean(const nlohmann::json& object, const std::string& key) {
  const nlohmann::json* value = find(object, key);
  return value != nullptr ? std::optional(boolean(*value, key)) : std::nullopt;
}

std::optional<std::string> optional_string(const nlohmann::json& object, const std::string& key) {
  const nlohmann::json* value = find(object, key);
  return value != nullptr ? std::optional(string(*value, key)) : std::nullopt;
}

}  // namespace nuvec::serve::field
