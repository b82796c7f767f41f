#pragma once

// Builds the statement tree of a template from its tokens.

#include <string_view>

#include "nuvec/lm/jinja/ast.h"

namespace nuvec::lm::jinja {

/// The statements of `source`; a syntax error throws nuvec::error naming the template line.
Body parse(std::string_view source);

}  // namespace nuvec::lm::jinja
