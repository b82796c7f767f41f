#pragma once

// Renders a parsed template: Jinja2's semantics as transformers' sandboxed chat-template environment has them.

#include <string>
#include <utility>
#include <vector>

#include "nuvec/lm/jinja/ast.h"

namespace nuvec::lm::jinja {

/// Renders `body` with `variables` on top of the globals (range, namespace, dict, raise_exception, strftime_now).
/// An error throws nuvec::error naming the template line. Reentrant: all state lives in the call.
std::string render(const Body& body, const std::vector<std::pair<std::string, Value>>& variables);

}  // namespace nuvec::lm::jinja
