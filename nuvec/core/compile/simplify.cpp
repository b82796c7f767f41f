// Simplification of a traced graph: no-op nodes become aliases of their input,
// nodes equal to an earlier one (same primitive, same arguments) become aliases
// of it, and nodes no output needs are dropped. Constant folding happened at
// trace time (constants are evaluated leaves).

#include <map>
#include <string_view>

#include "nuvec/core/compile/graph.h"

namespace nuvec::detail {

namespace {

/// Whether a slice of `shape` takes every element in order.
bool is_full_slice(const Slice& p, const Shape& shape) {
  for (size_t i = 0; i < shape.size(); ++i) {
    if (p.start[i] != 0 || p.strides[i] != 1) {
      return false;
    }
  }
  return true;
}

/// Whether a single-output node returns its argument unchanged: conversions, broadcasts and reshapes to what the
/// argument already is, copies (MLX's compile drops these too), identity transposes and full slices.
bool is_noop(const Graph& g, const GraphNode& n) {
  if (n.outs.size() != 1 || n.args.size() != 1) {
    return false;
  }
  const auto& in = g.values[static_cast<size_t>(n.args[0])];
  const auto& out = g.values[static_cast<size_t>(n.outs[0])];
  if (in.shape != out.shape || in.dtype != out.dtype) {
    return false;
  }
  if (const auto* t = std::get_if<Transpose>(&n.primitive)) {
    for (size_t i = 0; i < t->axes.size(); ++i) {
      if (t->axes[i] != static_cast<int>(i)) {
        return false;
      }
    }
    return true;
  }
  if (const auto* slice = std::get_if<Slice>(&n.primitive)) {
    return is_full_slice(*slice, in.shape);
  }
  return std::holds_alternative<Broadcast>(n.primitive) || std::holds_alternative<AsType>(n.primitive) ||
         std::holds_alternative<Reshape>(n.primitive) || std::holds_alternative<Copy>(n.primitive);
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
