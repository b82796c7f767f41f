#pragma once

// A traced function as compile keeps it: values numbered inputs first, then
// constants (evaluated once at trace time: constant folding), then the outputs
// of the nodes in topological order.

#include <functional>
#include <string>
#include <vector>

#include "nuvec/core/array.h"

namespace nuvec::detail {

struct GraphValue {
  Shape shape;
  Dtype dtype;
};

struct GraphNode {
  Primitive primitive;
  Stream stream;
  std::vector<int> args;
  std::vector<int> outs;
  /// For a primitive that follows a shape source (below): an earlier value whose shape is its output's (-1: none).
  int shape_source = -1;
};

// A primitive whose output shape is one of its parameters cannot follow new input shapes in a shapeless replay,
// unless that shape was another value's: broadcast_to(x, y.shape()) follows y. Such primitives have the overloads
// `shape_from_source` and `set_output_shape` (trace.cpp); these visit them.

/// Whether `p`'s output shape follows the value named by its node's shape_source in a shapeless replay.
bool follows_shape_source(const Primitive& p);
/// The output shape of such a primitive on an input of shape `input` when its source has shape `source`; throws when
/// they do not fit.
Shape shape_from_source(const Primitive& p, const Shape& input, const Shape& source);
/// Sets the output-shape parameter of such a primitive; every other primitive stays as it is.
void set_output_shape(Primitive& p, const Shape& shape);

struct Graph {
  int num_inputs = 0;
  std::vector<GraphValue> values;
  std::vector<array> constants;  // value num_inputs + i
  std::vector<GraphNode> nodes;
  std::vector<int> outputs;

  [[nodiscard]] bool is_constant(int v) const {
    return v >= num_inputs && v < num_inputs + static_cast<int>(constants.size());
  }
};

using TracedFunction = std::function<std::vector<array>(const std::vector<array>&)>;

/// Runs fun on stand-ins of the inputs and records the graph from them to its outputs.
Graph trace_graph(const TracedFunction& fun, const std::vector<array>& inputs);

/// Drops no-op conversions, broadcasts and reshapes, merges common subexpressions and unused nodes.
void simplify_graph(Graph& graph);

/// Replaces element-wise chains by Compiled nodes with generated kernels (none when no compiler runs). With
/// shapeless, nothing is expanded that bakes a traced shape in (the norms' row length).
void fuse_graph(Graph& graph, bool shapeless);

/// The graph's outputs for new inputs; with shapeless, shapes are inferred from the inputs.
std::vector<array> replay_graph(const Graph& graph, const std::vector<array>& inputs, bool shapeless);

}  // namespace nuvec::detail
