// Tracing and replay of a compiled function's graph.

#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "nuvec/core/fused.h"
#include "nuvec/core/output_shapes.h"
#include "nuvec/core/compile/graph.h"
#include "nuvec/core/error.h"
#include "nuvec/core/eval.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/tracing.h"

namespace nuvec::detail {

namespace {

// The per-primitive rules behind follows_shape_source, shape_from_source and set_output_shape.
Shape followed_shape(const Broadcast&, const Shape& input, const Shape& source) {
  return broadcast_shapes(input, source);
}
void retarget(Broadcast& p, const Shape& shape) { p.shape = shape; }

template <class P>
concept FollowsShapeSource = requires(P& p, const Shape& s) {
  followed_shape(p, s, s);
  retarget(p, s);
};

}  // namespace

bool follows_shape_source(const Primitive& p) {
  return std::visit([]<class P>(const P&) { return FollowsShapeSource<P>; }, p);
}

Shape shape_from_source(const Primitive& p, const Shape& input, const Shape& source) {
  return std::visit(
      [&]<class P>(const P& prim) -> Shape {
        if constexpr (FollowsShapeSource<P>) {
          return followed_shape(prim, input, source);
        } else {
          throw_invalid(std::string("[compile] ").append(name(p)).append(" does not follow a shape source."));
        }
      },
      p);
}

void set_output_shape(Primitive& p, const Shape& shape) {
  std::visit(
      [&]<class P>(P& prim) {
        if constexpr (FollowsShapeSource<P>) {
          retarget(prim, shape);
        }
      },
      p);
}

Graph trace_graph(const TracedFunction& fun, const std::vector<array>& inputs) {
  Graph g;
  g.num_inputs = static_cast<int>(inputs.size());
  std::unordered_map<uintptr_t, int> value_of;  // array id -> value
  std::vector<array> tracers;
  for (const auto& x : inputs) {
    tracers.push_back(depends({x}, {}).front());
    value_of.emplace(tracers.back().id(), static_cast<int>(g.values.size()));
    g.values.push_back({x.shape(), x.dtype()});
  }
  std::vector<array> outputs;
  {
    // As in MLX, the traced function sees tracers standing for inputs of any value: evaluating them throws.
    PlaceholderScope placeholders(tracers);
    outputs = fun(tracers);
  }

  // Post-order walk from the outputs; a node joins the graph when one of its inputs depends on a tracer.
  struct Frame {
    array node;
    size_t next;
  };
  std::unordered_set<uintptr_t> visited;  // node ids seen
  std::vector<array> constant_arrays;
  std::vector<GraphNode> nodes;
  std::vector<std::vector<array>> node_outputs;
  auto dependent = [&](const array& a) {
    auto found = value_of.find(a.id());
    return found != value_of.end() && found->second >= 0;
  };
  auto value = [&](const array& a) {
    auto [it, inserted] = value_of.try_emplace(a.id(), -1);
    if (inserted) {  // a constant: numbered once the walk is over
      constant_arrays.push_back(a);
      it->second = -static_cast<int>(constant_arrays.size()) - 1;
    }
    return it->second;
  };
  // Provisional numbers until the constants are counted: constants -2, -3, ..., node outputs from node_base.
  constexpr int node_base = 1 << 30;
  int num_node_values = 0;
  std::vector<Frame> stack;
  auto visit = [&](const array& a) {
    if (!value_of.contains(a.id()) && a.has_primitive() && !visited.contains(a.node_id())) {
      visited.insert(a.node_id());
      stack.push_back({a, 0});
    }
  };
  for (const auto& out : outputs) {
    visit(out);
    while (!stack.empty()) {
      auto& frame = stack.back();
      const auto& ins = frame.node.inputs();
      if (frame.next < ins.size()) {
        array in = ins[frame.next++];
        visit(in);
        continue;
      }
      array node = frame.node;
      stack.pop_back();
      bool depends_on_input = false;
      for (const auto& in : node.inputs()) {
        depends_on_input = depends_on_input || dependent(in);
      }
      if (!depends_on_input) {
        continue;
      }
      GraphNode gn{node.primitive(), node.stream(), {}, {}, -1};
      for (const auto& in : node.inputs()) {
        gn.args.push_back(value(in));
      }
      node_outputs.push_back(node.outputs());
      for (const auto& o : node_outputs.back()) {
        value_of[o.id()] = node_base + num_node_values++;
      }
      nodes.push_back(std::move(gn));
    }
  }

  // Outputs that depend on no input are constants too.
  for (const auto& out : outputs) {
    if (!dependent(out)) {
      value(out);
    }
  }
  // Number the constants after the inputs, then the node outputs in order.
  for (const auto& c : constant_arrays) {
    g.values.push_back({c.shape(), c.dtype()});
  }
  g.constants = constant_arrays;
  const int num_constants = static_cast<int>(constant_arrays.size());
  auto renumber = [&](int v) {
    return v < -1 ? g.num_inputs + (-v - 2) : v >= node_base ? g.num_inputs + num_constants + (v - node_base) : v;
  };
  for (auto& [id, v] : value_of) {
    v = renumber(v);
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (auto& a : nodes[n].args) {
      a = renumber(a);
    }
    for (const auto& o : node_outputs[n]) {
      nodes[n].outs.push_back(static_cast<int>(g.values.size()));
      g.values.push_back({o.shape(), o.dtype()});
    }
  }
  g.nodes = std::move(nodes);
  for (const auto& out : outputs) {
    g.outputs.push_back(value_of.at(out.id()));
  }
  eval(g.constants);  // constant folding: what does not depend on the inputs is computed once

  // The shape source of each node that follows one, for shapeless replay: the first earlier value of its shape.
  for (auto& n : g.nodes) {
    if (follows_shape_source(n.primitive)) {
      const Shape& shape = g.values[static_cast<size_t>(n.outs.front())].shape;
      for (int v = 0; v < n.outs.front(); ++v) {
        if (g.values[static_cast<size_t>(v)].shape == shape && !g.is_constant(v)) {
          n.shape_source = v;
          break;
        }
      }
    }
  }
  return g;
}

namespace {

[[noreturn]] void throw_shapeless(const Primitive& p) {
  throw_invalid("[compile] shapeless: the output shape of " + std::string(name(p)) +
                " is fixed by its parameters and cannot follow new input shapes; compile with shapeless=false.");
}

/// Output shapes of a node on inputs of new shapes.
std::vector<Shape> infer_shapes(const Graph& g, const GraphNode& n, const std::vector<array>& args,
                                const std::vector<std::optional<array>>& vals) {
  bool same = true;
  for (size_t i = 0; i < args.size(); ++i) {
    same = same && args[i].shape() == g.values[static_cast<size_t>(n.args[i])].shape;
  }
  std::vector<Shape> shapes;
  if (same) {
    for (int o : n.outs) {
      shapes.push_back(g.values[static_cast<size_t>(o)].shape);
    }
    return shapes;
  }
  const Primitive& p = n.primitive;
  if (follows_shape_source(p) && n.shape_source >= 0) {
    return {shape_from_source(p, args[0].shape(), vals[static_cast<size_t>(n.shape_source)]->shape())};
  }
  if (shape_is_parameter(p)) {
    throw_shapeless(p);
  }
  shapes = output_shapes(p, args);
  shapes.resize(n.outs.size());  // Depends: its outputs are its first inputs
  return shapes;
}

}  // namespace

std::vector<array> replay_graph(const Graph& g, const std::vector<array>& inputs, bool shapeless) {
  // Values by number: simplification and fusion leave gaps and reorder nodes, so outputs are placed, not appended.
  std::vector<std::optional<array>> vals(g.values.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    vals[i] = inputs[i];
  }
  for (size_t i = 0; i < g.constants.size(); ++i) {
    vals[inputs.size() + i] = g.constants[i];
  }
  auto at = [&](int v) -> const array& { return *vals[static_cast<size_t>(v)]; };
  std::vector<array> args;
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (const auto& n : g.nodes) {
    args.clear();
    for (int a : n.args) {
      args.push_back(at(a));
    }
    dtypes.clear();
    for (int o : n.outs) {
      dtypes.push_back(g.values[static_cast<size_t>(o)].dtype);
    }
    if (shapeless) {
      shapes = infer_shapes(g, n, args, vals);
    } else {
      shapes.clear();
      for (int o : n.outs) {
        shapes.push_back(g.values[static_cast<size_t>(o)].shape);
      }
    }
    Primitive p = n.primitive;
    set_output_shape(p, shapes.front());
    if (n.outs.size() == 1) {
      vals[static_cast<size_t>(n.outs[0])] = array(shapes.front(), dtypes.front(), std::move(p), args, n.stream);
    } else {
      auto outs = array::make_arrays(shapes, dtypes, std::move(p), args, n.stream);
      for (size_t k = 0; k < outs.size(); ++k) {
        vals[static_cast<size_t>(n.outs[k])] = outs[k];
      }
    }
  }
  std::vector<array> outputs;
  for (int o : g.outputs) {
    outputs.push_back(at(o));
  }
  return outputs;
}

Shape row_shape(Shape shape) {
  if (!shape.empty()) {
    shape.back() = 1;
  }
  return shape;
}

Shape iteration_shape(const FusedKernel& k, const std::vector<array>& inputs, const std::vector<array>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!k.row_values[static_cast<size_t>(k.outputs[i])]) {
      return outputs[i].shape();
    }
  }
  Shape s;
  for (const auto& in : inputs) {
    s = broadcast_shapes(s, in.shape());
  }
  return s.size() == k.shape.size() && row_shape(s) != s ? s : k.shape;
}

std::vector<array> replay_fused(const FusedKernel& k, const std::vector<array>& inputs, const Shape& shape) {
  std::vector<array> vals(inputs);
  const Stream stream = default_stream(default_device());
  const Shape rows = row_shape(shape);
  for (size_t i = 0; i < k.steps.size(); ++i) {
    const auto& s = k.steps[i];
    const Shape& step_shape = k.row_values[inputs.size() + i] ? rows : shape;
    std::vector<array> args;
    for (int a : s.args) {
      args.push_back(vals[static_cast<size_t>(a)]);
    }
    Primitive p = s.primitive;
    set_output_shape(p, step_shape);
    vals.emplace_back(step_shape, s.dtype, std::move(p), std::move(args), stream);
  }
  std::vector<array> outputs;
  for (int o : k.outputs) {
    outputs.push_back(vals[static_cast<size_t>(o)]);
  }
  return outputs;
}

}  // namespace nuvec::detail
