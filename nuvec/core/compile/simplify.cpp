// Simplification of a traced graph: no-op nodes become aliases of their input,
// nodes equal to an earlier one (same primitive, same arguments) become aliases
// of it, and nodes no output needs are dropped. Constant folding happened at
// trace time (constants are evaluated leaves).

#include <map>
#include <string_view>

#include "nuvec/core/compile/graph.h"

namespace nuvec::detail {

namespace {

// The primitives that can return their one argument unchanged, each with the rule that says when, given an output
// of the argument's own shape and dtype: conversions, broadcasts and reshapes always, copies (MLX's compile drops
// these too), transposes that keep the axes in order and slices that take every element in order.
bool keeps_argument(const AsType&, const Shape&) { return true; }
bool keeps_argument(const Broadcast&, const Shape&) { return true; }
bool keeps_argument(const Reshape&, const Shape&) { return true; }
bool keeps_argument(const Copy&, const Shape&) { return true; }
bool keeps_argument(const Transpose& p, const Shape&) {
  for (size_t i = 0; i < p.axes.size(); ++i) {
    if (p.axes[i] != static_cast<int>(i)) {
      return false;
    }
  }
  return true;
}
bool keeps_argument(const Slice& p, const Shape& shape) {
  for (size_t i = 0; i < shape.size(); ++i) {
    if (p.start[i] != 0 || p.strides[i] != 1) {
      return false;
    }
  }
  return true;
}

/// Whether a single-output node returns its argument unchanged.
bool is_noop(const Graph& g, const GraphNode& n) {
  if (n.outs.size() != 1 || n.args.size() != 1) {
    return false;
  }
  const auto& in = g.values[static_cast<size_t>(n.args[0])];
  const auto& out = g.values[static_cast<size_t>(n.outs[0])];
  if (in.shape != out.shape || in.dtype != out.dtype) {
    return false;
  }
  return std::visit(
      [&]<class P>(const P& p) {
        if constexpr (requires { keeps_argument(p, in.shape); }) {
          return keeps_argument(p, in.shape);
        } else {
          return false;
        }
      },
      n.primitive);
}

}  // namespace

void simplify_graph(Graph& g) {
  std::vector<int> alias(g.values.size());
  for (size_t v = 0; v < alias.size(); ++v) {
    alias[v] = static_cast<int>(v);
  }
  auto resolve = [&](int v) { return alias[static_cast<size_t>(v)]; };
  std::map<std::pair<std::string_view, std::vector<int>>, std::vector<size_t>> seen;
  std::vector<GraphNode> kept;
  for (auto& n : g.nodes) {
    for (auto& a : n.args) {
      a = resolve(a);
    }
    if (is_noop(g, n)) {
      alias[static_cast<size_t>(n.outs[0])] = n.args[0];
      continue;
    }
    auto& candidates = seen[{name(n.primitive), n.args}];
    bool merged = false;
    for (size_t c : candidates) {
      const auto& other = kept[c];
      bool same = other.primitive == n.primitive && other.outs.size() == n.outs.size();
      for (size_t i = 0; same && i < n.outs.size(); ++i) {
        const auto& a = g.values[static_cast<size_t>(other.outs[i])];
        const auto& b = g.values[static_cast<size_t>(n.outs[i])];
        same = a.shape == b.shape && a.dtype == b.dtype;
      }
      if (same) {
        for (size_t i = 0; i < n.outs.size(); ++i) {
          alias[static_cast<size_t>(n.outs[i])] = other.outs[i];
        }
        merged = true;
        break;
      }
    }
    if (!merged) {
      candidates.push_back(kept.size());
      kept.push_back(std::move(n));
    }
  }
  for (auto& o : g.outputs) {
    o = resolve(o);
  }
  // Drop nodes no output needs, walking backwards.
  std::vector<bool> needed(g.values.size(), false);
  for (int o : g.outputs) {
    needed[static_cast<size_t>(o)] = true;
  }
  std::vector<GraphNode> live;
  for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
    bool used = false;
    for (int o : it->outs) {
      used = used || needed[static_cast<size_t>(o)];
    }
    if (used) {
      for (int a : it->args) {
        needed[static_cast<size_t>(a)] = true;
      }
      live.push_back(std::move(*it));
    }
  }
  g.nodes.assign(std::make_move_iterator(live.rbegin()), std::make_move_iterator(live.rend()));
}

}  // namespace nuvec::detail
