#include "nuvec/core/export/flatten.h"

#include <utility>

#include "nuvec/core/fused.h"

namespace nuvec::detail {

namespace {

/// The iteration shape of a fused node from its traced value shapes (fused.h's iteration_shape, on shapes).
Shape traced_iteration_shape(const Graph& g, const GraphNode& n, const FusedKernel& k) {
  for (size_t i = 0; i < n.outs.size(); ++i) {
    if (!k.row_values[static_cast<size_t>(k.outputs[i])]) {
      return g.values[static_cast<size_t>(n.outs[i])].shape;
    }
  }
  Shape s;
  for (int a : n.args) {
    s = broadcast_shapes(s, g.values[static_cast<size_t>(a)].shape);
  }
  return s.size() == k.shape.size() && row_shape(s) != s ? s : k.shape;
}

int add_value(Graph& g, Shape shape, Dtype dtype) {
  g.values.push_back({std::move(shape), dtype});
  return static_cast<int>(g.values.size()) - 1;
}

/// The nodes of a fused chain's tape, writing the chain's outputs into the node's output values.
void inline_fused(Graph& g, const GraphNode& n, const FusedKernel& k, std::vector<GraphNode>& nodes) {
  const Shape shape = traced_iteration_shape(g, n, k);
  const Shape rows = row_shape(shape);
  std::vector<int> value_of(n.args);  // chain value -> graph value
  std::vector<bool> output_taken(n.outs.size(), false);
  for (size_t i = 0; i < k.steps.size(); ++i) {
    const auto& step = k.steps[i];
    const int chain_value = k.num_inputs + static_cast<int>(i);
    const Shape& step_shape = k.row_values[static_cast<size_t>(chain_value)] ? rows : shape;
    int out = -1;
    for (size_t o = 0; o < n.outs.size() && out < 0; ++o) {
      if (k.outputs[o] == chain_value && !output_taken[o]) {
        output_taken[o] = true;
        out = n.outs[o];
      }
    }
    if (out < 0) {
      out = add_value(g, step_shape, step.dtype);
    }
    GraphNode node{step.primitive, n.stream, {}, {out}, -1};
    for (int a : step.args) {
      node.args.push_back(value_of[static_cast<size_t>(a)]);
    }
    set_output_shape(node.primitive, step_shape);
    value_of.push_back(out);
    nodes.push_back(std::move(node));
  }
  // Outputs that are a chain input, or a value output twice: an identity.
  for (size_t o = 0; o < n.outs.size(); ++o) {
    if (!output_taken[o]) {
      nodes.push_back(GraphNode{Depends{}, n.stream, {value_of[static_cast<size_t>(k.outputs[o])]}, {n.outs[o]}, -1});
    }
  }
}

}  // namespace

void flatten_graph(Graph& g) {
  std::vector<GraphNode> nodes;
  for (auto& n : g.nodes) {
    if (const auto* c = std::get_if<Compiled>(&n.primitive)) {
      inline_fused(g, n, *c->kernel, nodes);
      continue;
    }
    if (std::holds_alternative<Custom>(n.primitive)) {
      n.primitive = Depends{};
    }
    nodes.push_back(std::move(n));
  }
  g.nodes = std::move(nodes);

  // The shapeless shape sources: for each node that follows one, the first value of its output's shape computed
  // before it (as trace_graph picks).
  std::vector<bool> defined(g.values.size(), false);
  for (int v = 0; v < g.num_inputs + static_cast<int>(g.constants.size()); ++v) {
    defined[static_cast<size_t>(v)] = !g.is_constant(v);
  }
  for (auto& n : g.nodes) {
    if (follows_shape_source(n.primitive) && n.shape_source < 0) {
      const Shape& shape = g.values[static_cast<size_t>(n.outs.front())].shape;
      for (size_t v = 0; v < g.values.size(); ++v) {
        if (defined[v] && g.values[v].shape == shape) {
          n.shape_source = static_cast<int>(v);
          break;
        }
      }
    }
    for (int o : n.outs) {
      defined[static_cast<size_t>(o)] = true;
    }
  }
}

}  // namespace nuvec::detail
