#pragma once

// Helpers the ops share: the wording of their errors, and small compositions several families use.

#include <string>
#include <vector>

#include "nuvec/core/array.h"

namespace nuvec::detail {

/// "[op] ", the prefix of an op's error messages.
std::string op_prefix(const std::string& op);
/// A list of axes or sizes written as shape_string writes a shape: "(0,-1)".
std::string list_string(const std::vector<int>& values);

/// 0, 1, ..., ndim - 1.
std::vector<int> all_axes(int ndim);
/// The part of `a` in [begin, end) along the non-negative `axis`, a slice.
array slice_axis(const array& a, int axis, int begin, int end, StreamOrDevice s);

}  // namespace nuvec::detail
