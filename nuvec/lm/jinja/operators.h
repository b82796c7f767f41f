#pragma once

// Python's operators on template values: arithmetic, `in`, slicing, printf-style `%` formatting.

#include <string>
#include <vector>

#include "nuvec/lm/jinja/value.h"

namespace nuvec::lm::jinja {

/// `a op b` for op in + - * / // % ** ~, with Python's int/float rules and errors.
Value binary_op(const std::string& op, const Value& a, const Value& b);
/// `-a` or `+a`.
Value unary_op(const std::string& op, const Value& a);
/// Python's `item in container`.
bool contains(const Value& container, const Value& item);
/// Python's `object[start:stop:step]` on a list, tuple or str; none bounds are open.
Value slice(const Value& object, const Value& start, const Value& stop, const Value& step);
/// Python's `format % args` (%s %r %d %i %f %x %%, with flags, width and precision).
std::string percent_format(const std::string& format, const std::vector<Value>& args);

}  // namespace nuvec::lm::jinja
