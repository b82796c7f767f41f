#pragma once

// The prefix of nuvec's error messages: "[op] " names the op, loss, layer, file or caller a message comes from.

#include <string>
#include <string_view>

namespace nuvec::detail {

/// "[op] ".
inline std::string op_prefix(std::string_view op) { return std::string("[").append(op).append("] "); }

}  // namespace nuvec::detail
