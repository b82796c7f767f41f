#pragma once

// Helpers the ops share: the wording of their errors (op_prefix, shared beyond the ops, is in core/op_prefix.h),
// and small compositions several families use.

#include <string>
#include <vector>

#include "nuvec/core/array.h"
#include "nuvec/core/op_prefix.h"

namespace nuvec::detail {

/// The dtype's name as a string, for building messages.
std::string dtype_string(Dtype dtype);
/// A list of axes or sizes written as shape_string writes a shape: "(0,-1)".
std::string list_string(const std::vector<int>& values);

/// 0, 1, ..., ndim - 1.
std::vector<int> all_axes(int ndim);
/// The part of `a` in [begin, end) along the non-negative `axis`, a slice.
array slice_axis(const array& a, int axis, int begin, int end, StreamOrDevice s);

}  // namespace nuvec::detail
