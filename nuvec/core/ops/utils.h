#pragma once

// Message helpers the ops' argument checks share, so that every op words its errors alike.

#include <string>
#include <vector>

namespace nuvec::detail {

/// "[op] ", the prefix of an op's error messages.
std::string op_prefix(const std::string& op);
/// A list of axes or sizes written as shape_string writes a shape: "(0,-1)".
std::string list_string(const std::vector<int>& values);

}  // namespace nuvec::detail
