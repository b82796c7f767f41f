#pragma once

// Pytrees: nested lists, tuples and dicts whose leaves are arrays (other leaves pass through unchanged).

#include <vector>

#include "python/src/convert.h"

namespace nuvec::python {

/// The arrays of `tree`, depth first (dicts in insertion order).
std::vector<array> tree_leaves(py::handle tree);
/// `tree` with its arrays replaced, in tree_leaves' order, by `leaves` starting at `next` (advanced past them).
py::object tree_replace(py::handle tree, const std::vector<array>& leaves, size_t& next);

}  // namespace nuvec::python
