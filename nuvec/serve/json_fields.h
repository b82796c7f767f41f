#pragma once

// Typed reads of request fields. Each check throws a 400 ApiError naming the field (`param`, such as "temperature"
// or "messages[2].content") and saying what it expected and what it got. An absent field and a null one read the
// same: the default applies.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace nuvec::serve::field {

/// The value of `key` in `object`, or null when it is absent or null.
const nlohmann::json* find(const nlohmann::json& object, const std::string& key);

/// `value` as a number in [min, max].
double number(const nlohmann::json& value, const std::string& param, double min, double max);
/// `value` as an integer in [min, max] (a float with no fraction counts as one).
int64_t integer(const nlohmann::json& value, const std::string& param, int64_t min, int64_t max);
bool boolean(const nlohmann::json& value, const std::string& param);
const std::string& string(const nlohmann::json& value, const std::string& param);

/// The optional forms: none when `key` is absent or null.
std::optional<double> optional_number(const nlohmann::json& object, const std::string& key, double min, double max);
std::optional<int64_t> optional_integer(const nlohmann::json& object, const std::string& key, int64_t min, int64_t max);
std::optional<bool> optional_boolean(const nlohmann::json& object, const std::string& key);
std::optional<std::string> optional_string(const nlohmann::json& object, const std::string& key);

/// A short rendering of `value` for messages (long values cut).
std::string show(const nlohmann::json& value);

}  // namespace nuvec::serve::field
