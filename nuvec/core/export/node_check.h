#pragma once

// The import-time check of one node of an exported trace. The ops validate every node they build, but a file can
// hold anything its checksum covers: before a node is replayed, its parameters are checked against its inputs' shapes
// and dtypes (axes in range, sizes non-negative, the input count, what the kernels index) and its recorded outputs
// against the shape and dtype rules, so a crafted file meets a clear error instead of a kernel reading out of bounds.

#include <cstddef>

#include "nuvec/core/compile/graph.h"

namespace nuvec::detail {

/// Throws std::invalid_argument naming the node (its position and primitive) when it does not fit its inputs.
void check_imported_node(const Graph& g, const GraphNode& n, size_t index);

}  // namespace nuvec::detail
