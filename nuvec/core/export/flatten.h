#pragma once

// What the exporter does to a traced graph before writing it: nodes that carry C++ state are replaced by the plain
// primitives they stand for, so the file holds only primitives with parameters.

#include "nuvec/core/compile/graph.h"

namespace nuvec::detail {

/// Replaces each Custom node (custom_function, custom_vjp, checkpoint) by a Depends (its forward pass: output i is
/// input i; the user's transforms are dropped) and each Compiled node by the element-wise tape it fused, as MLX
/// exports compiled functions by inlining them. Broadcasts get their shapeless shape source (graph.h).
void flatten_graph(Graph& graph);

}  // namespace nuvec::detail
