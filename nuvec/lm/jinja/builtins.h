#pragma once

// The filters, tests and methods templates name: tables keyed by the name the template text uses.

#include <optional>
#include <string>

#include "nuvec/lm/jinja/value.h"

namespace nuvec::lm::jinja {

/// Applies filter `name` (`input | name(args)`); fails for an unknown filter.
Value apply_filter(const std::string& name, const Value& input, Arguments& args);
/// Whether filter `name` exists.
bool has_filter(const std::string& name);
/// Applies test `name` (`value is name(args)`); fails for an unknown test.
bool apply_test(const std::string& name, const Value& value, Arguments& args);
/// Whether test `name` exists.
bool has_test(const std::string& name);
/// `object.name` as a method of a str, list or dict bound to the object; nothing when there is no such method.
std::optional<Value> bound_method(const Value& object, const std::string& name);

}  // namespace nuvec::lm::jinja
