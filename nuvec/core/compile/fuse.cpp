// Fusion: element-wise nodes of one output shape that feed each other, or read
// one outside value, form a group (union-find over those edges); a group of two
// or more becomes one Compiled node whose inputs are the values it reads from
// outside and whose outputs are its values read outside (or returned). Sums,
// products, maxima and minima over the last axis join the chain they reduce,
// with what follows at the row shape and broadcasts back: such a row kernel does
// a layer norm or a softmax in one pass over memory. A group that would close a
// cycle through an outside node is left unfused.

#include <algorithm>
#include <concepts>
#include <map>
#include <numeric>
#include <optional>

#include "nuvec/core/compile/codegen.h"
#include "nuvec/core/compile/graph.h"
#include "nuvec/core/compile/jit.h"
#include "nuvec/core/dispatch.h"

namespace nuvec::detail {

namespace {

// How a primitive fuses is a trait of its type, as Elementwise (expressions.h) is: besides the element-wise
// primitives, reductions join the chain they reduce (over its rows), and the row primitives are rewritten as their
// compositions so that they join it too. Every other primitive stays a node of its own.

/// Reductions over the last axis join a row kernel.
template <class P>
concept RowReduction = std::same_as<P, Reduce>;
/// Normalizations over the last axis, with an epsilon.
template <class P>
concept Norm = std::same_as<P, LayerNorm> || std::same_as<P, RMSNorm>;

bool is_row_reduction(const Primitive& p) {
  return std::visit([]<class P>(const P&) { return RowReduction<P>; }, p);
}

/// A norm's epsilon; nullopt for every other primitive.
std::optional<float> norm_eps(const Primitive& p) {
  return std::visit(
      []<class P>(const P& prim) -> std::optional<float> {
        if constexpr (Norm<P>) {
          return prim.eps;
        } else {
          return std::nullopt;
        }
      },
      p);
}

bool fusable(const Graph& g, const GraphNode& n) {
  if (n.outs.size() != 1) {
    return false;
  }
  const auto& out = g.values[static_cast<size_t>(n.outs[0])];
  return std::visit(
      [&]<class P>(const P& p) {
        if constexpr (RowReduction<P>) {
          const auto& in = g.values[static_cast<size_t>(n.args[0])];
          const int last = static_cast<int>(in.shape.size()) - 1;
          return p.type != ReduceType::all && p.type != ReduceType::any && last >= 0 && in.shape.back() > 1 &&
                 p.axes == std::vector<int>{last} && (in.dtype == float32 || in.dtype == float64) &&
                 out.dtype == in.dtype;
        } else {
          std::vector<Dtype> arg_dtypes;
          for (int a : n.args) {
            arg_dtypes.push_back(g.values[static_cast<size_t>(a)].dtype);
          }
          return can_generate(n.primitive, arg_dtypes, out.dtype);
        }
      },
      n.primitive);
}

/// The shape a fusable node iterates over: a reduction's input shape, a broadcast of rows' output shape, otherwise
/// its output shape.
const Shape& base_shape(const Graph& g, const GraphNode& n) {
  if (is_row_reduction(n.primitive)) {
    return g.values[static_cast<size_t>(n.args[0])].shape;
  }
  return g.values[static_cast<size_t>(n.outs[0])].shape;
}

/// Whether the edge from argument a joins node n's group: same shape, a reduction of it, or a broadcast of rows.
bool joins(const Graph& g, const GraphNode& n, int a) {
  const auto& arg = g.values[static_cast<size_t>(a)].shape;
  const auto& out = g.values[static_cast<size_t>(n.outs[0])].shape;
  if (arg == out || is_row_reduction(n.primitive)) {
    return true;
  }
  return std::holds_alternative<Broadcast>(n.primitive) && !out.empty() && out.back() > 1 && arg == row_shape(out);
}

struct UnionFind {
  std::vector<size_t> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), size_t{0}); }
  size_t find(size_t x) {
    while (parent[x] != x) {
      parent[x] = parent[parent[x]];
      x = parent[x];
    }
    return x;
  }
  void unite(size_t a, size_t b) { parent[find(a)] = find(b); }
};

/// Whether the groups (group[n] per node, -1 for none) can be ordered with the other nodes: no path leaves a group
/// and comes back. Returns a group on a cycle, or -1.
long group_on_cycle(const Graph& g, const std::vector<long>& group, const std::vector<int>& producer) {
  // Super nodes: a group id, or a node's own index offset past the groups.
  const size_t n = g.nodes.size();
  auto super = [&](size_t node) { return group[node] >= 0 ? static_cast<size_t>(group[node]) : n + node; };
  std::map<size_t, std::vector<size_t>> edges;
  std::map<size_t, int> indegree;
  for (size_t i = 0; i < n; ++i) {
    indegree.try_emplace(super(i), 0);
    for (int a : g.nodes[i].args) {
      int from = producer[static_cast<size_t>(a)];
      if (from >= 0 && super(static_cast<size_t>(from)) != super(i)) {
        edges[super(static_cast<size_t>(from))].push_back(super(i));
        ++indegree[super(i)];
      }
    }
  }
  std::vector<size_t> ready;
  for (const auto& [s, d] : indegree) {
    if (d == 0) {
      ready.push_back(s);
    }
  }
  while (!ready.empty()) {
    size_t s = ready.back();
    ready.pop_back();
    for (size_t t : edges[s]) {
      if (--indegree[t] == 0) {
        ready.push_back(t);
      }
    }
  }
  for (const auto& [s, d] : indegree) {
    if (d > 0 && s < n) {
      return static_cast<long>(s);
    }
  }
  return -1;
}

/// The nodes in an order where each follows the producers of its arguments (the order given, where it allows).
std::vector<GraphNode> sorted(const Graph& g, std::vector<GraphNode> nodes) {
  std::vector<int> producer(g.values.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int o : nodes[i].outs) {
      producer[static_cast<size_t>(o)] = static_cast<int>(i);
    }
  }
  std::vector<int> state(nodes.size(), 0);  // 0 new, 1 on the stack, 2 placed
  std::vector<size_t> order;
  for (size_t root = 0; root < nodes.size(); ++root) {
    std::vector<std::pair<size_t, size_t>> stack{{root, 0}};
    while (!stack.empty()) {
      auto& [i, next] = stack.back();
      if (state[i] == 2) {
        stack.pop_back();
        continue;
      }
      state[i] = 1;
      if (next < nodes[i].args.size()) {
        int from = producer[static_cast<size_t>(nodes[i].args[next++])];
        if (from >= 0 && state[static_cast<size_t>(from)] == 0) {
          stack.emplace_back(static_cast<size_t>(from), 0);
        }
        continue;
      }
      state[i] = 2;
      order.push_back(i);
      stack.pop_back();
    }
  }
  std::vector<GraphNode> result;
  result.reserve(order.size());
  for (size_t i : order) {
    result.push_back(std::move(nodes[i]));
  }
  return result;
}

/// The one value of a traced constant that holds one (a 0-d array or a broadcast of one), where a double holds it
/// exactly: the generated code has it as a literal, which lets the compiler fold it (power's exponent chooses its
/// form by it).
std::optional<double> literal(const Graph& g, int v) {
  if (!g.is_constant(v)) {
    return std::nullopt;
  }
  const array& c = g.constants[static_cast<size_t>(v - g.num_inputs)];
  if (c.data_size() != 1 || c.dtype() == complex64) {
    return std::nullopt;
  }
  return dispatch(c.dtype(), [&]<class T>(type_tag<T>) -> std::optional<double> {
    const T x = c.data<T>()[0];
    if constexpr (std::same_as<T, double> || std::same_as<T, float>) {
      return x;
    } else if constexpr (std::is_integral_v<T>) {
      // Integers beyond 2^53 have no exact double.
      const auto d = static_cast<double>(x);
      constexpr double limit = 0x1p53;
      return d <= limit && d >= -limit ? std::optional<double>(d) : std::nullopt;
    } else if constexpr (std::is_convertible_v<T, float>) {
      return static_cast<float>(x);
    } else {
      return std::nullopt;
    }
  });
}

/// Appends evaluated constants to the graph's constant values, renumbering the values after them; returns their
/// numbers.
std::vector<int> add_constants(Graph& g, std::vector<array> arrays) {
  const int at = g.num_inputs + static_cast<int>(g.constants.size());
  const int count = static_cast<int>(arrays.size());
  auto shift = [&](int& v) { v += v >= at ? count : 0; };
  for (auto& n : g.nodes) {
    for (int& a : n.args) {
      shift(a);
    }
    for (int& o : n.outs) {
      shift(o);
    }
    if (n.shape_source >= 0) {
      shift(n.shape_source);
    }
  }
  for (int& o : g.outputs) {
    shift(o);
  }
  std::vector<int> numbers;
  for (int i = 0; i < count; ++i) {
    auto& c = arrays[static_cast<size_t>(i)];
    c.eval();
    g.values.insert(g.values.begin() + at + i, GraphValue{c.shape(), c.dtype()});
    g.constants.push_back(std::move(c));
    numbers.push_back(at + i);
  }
  return numbers;
}

/// A scalar constant of a floating dtype.
array scalar(double value, Dtype dtype) {
  const std::vector<double> data{value};
  return array(data.begin(), Shape{}, dtype);
}

bool is_half(Dtype d) { return d == float16 || d == bfloat16; }

/// The dtype a row primitive over `d` computes in: float32 for the 16-bit floats (as their eager kernels do).
Dtype arithmetic_dtype(Dtype d) { return is_half(d) ? float32 : d; }

/// Builds the composition that replaces one row primitive node: its nodes go to `nodes`, new values to the graph.
/// The composition computes in `dtype` (float32 for 16-bit rows); its last node writes `out`, the replaced node's
/// value, or a new value that is then converted back to the stored dtype.
struct RowExpansion {
  Graph& g;
  std::vector<GraphNode>& nodes;
  const GraphNode& n;
  Shape shape;  // x's
  Shape rows;   // x's with the last axis 1
  Dtype stored;
  Dtype dtype;
  std::vector<int> last;  // the reduced axis
  int length = -1;        // the norms' row length and epsilon, as constants
  int eps = -1;
  int x = -1;    // x in the arithmetic dtype
  int out = -1;  // the value the last node writes (-1: a new one)

  RowExpansion(Graph& graph, std::vector<GraphNode>& into, const GraphNode& node)
      : g(graph),
        nodes(into),
        n(node),
        shape(graph.values[static_cast<size_t>(node.args[0])].shape),
        rows(row_shape(shape)),
        stored(graph.values[static_cast<size_t>(node.args[0])].dtype),
        dtype(arithmetic_dtype(stored)),
        last{static_cast<int>(shape.size()) - 1},
        x(arithmetic(node.args[0])),
        out(half() ? -1 : node.outs[0]) {}

  [[nodiscard]] bool half() const { return stored != dtype; }
  /// A node of the composition producing `value` (a new one when -1).
  int add(Primitive p, std::vector<int> args, const Shape& shape_of, Dtype type, int source = -1, int value = -1) {
    if (value < 0) {
      value = static_cast<int>(g.values.size());
      g.values.push_back({shape_of, type});
    }
    nodes.push_back({std::move(p), n.stream, std::move(args), {value}, source});
    return value;
  }
  int op(Primitive p, std::vector<int> args, const Shape& shape_of, int value = -1) {
    return add(std::move(p), std::move(args), shape_of, dtype, -1, value);
  }
  int reduce(ReduceType type, int v) { return op(Reduce{type, last, dtype}, {v}, rows); }
  int to_rows(int v, int like) { return add(Broadcast{rows}, {v}, rows, dtype, like); }
  int to_shape(int v) { return add(Broadcast{shape}, {v}, shape, dtype, n.args[0]); }
  /// A 16-bit operand in float32 (a step of the row kernel rather than a node of its own).
  int arithmetic(int v) { return half() ? add(AsType{dtype}, {v}, shape, dtype) : v; }
  /// A weight or bias, broadcast to x's shape before its conversion.
  int param(int v) { return arithmetic(add(Broadcast{shape}, {v}, shape, stored, n.args[0])); }
};

// The compositions, one per row primitive, in the order of operations of their eager kernels (cpu/softmax.cpp,
// cpu/norm.cpp). Each returns the value of its last node.
int compose(const Softmax&, RowExpansion& r) {
  const int e = r.op(Exp{}, {r.op(Subtract{}, {r.x, r.to_shape(r.reduce(ReduceType::max, r.x))}, r.shape)}, r.shape);
  return r.op(Divide{}, {e, r.to_shape(r.reduce(ReduceType::sum, e))}, r.shape, r.out);
}
/// Non-finite maxima give the eager result: NaN, or the maximum.
int compose(const LogSumExp&, RowExpansion& r) {
  const int m = r.reduce(ReduceType::max, r.x);
  const int e = r.op(Exp{}, {r.op(Subtract{}, {r.x, r.to_shape(m)}, r.shape)}, r.shape);
  const int lse = r.op(Add{}, {m, r.op(Log{}, {r.reduce(ReduceType::sum, e)}, r.rows)}, r.rows);
  return r.op(Select{}, {r.add(IsInf{}, {m}, r.rows, bool_), m, lse}, r.rows, r.out);
}
int compose_norm(bool centered, bool has_weight, bool has_bias, RowExpansion& r) {
  int xc = r.x;
  if (centered) {
    const int sum = r.reduce(ReduceType::sum, r.x);
    xc = r.op(Subtract{}, {r.x, r.to_shape(r.op(Divide{}, {sum, r.to_rows(r.length, sum)}, r.rows))}, r.shape);
  }
  const int squares = r.reduce(ReduceType::sum, r.op(Multiply{}, {xc, xc}, r.shape));
  const int var = r.op(Divide{}, {squares, r.to_rows(r.length, squares)}, r.rows);
  const int inv = r.op(Rsqrt{}, {r.op(Add{}, {var, r.to_rows(r.eps, var)}, r.rows)}, r.rows);
  int y = r.op(Multiply{}, {xc, r.to_shape(inv)}, r.shape, !has_weight && !has_bias ? r.out : -1);
  if (has_weight) {
    y = r.op(Multiply{}, {y, r.param(r.n.args[1])}, r.shape, has_bias ? -1 : r.out);
  }
  if (has_bias) {
    y = r.op(Add{}, {y, r.param(r.n.args[has_weight ? 2 : 1])}, r.shape, r.out);
  }
  return y;
}
int compose(const LayerNorm& p, RowExpansion& r) { return compose_norm(true, p.has_weight, p.has_bias, r); }
int compose(const RMSNorm& p, RowExpansion& r) { return compose_norm(false, p.has_weight, false, r); }

/// Row primitives rewritten as their compositions by expand_row_primitives: those with a compose overload.
template <class P>
concept RowComposite = requires(const P& p, RowExpansion& r) { compose(p, r); };

/// Whether a row primitive is rewritten: float32 or float64 throughout (the norms also float16 or bfloat16), rows
/// longer than one element; the norms not in shapeless graphs (their row length would be the traced one).
bool expandable(const Graph& g, const GraphNode& n, bool shapeless) {
  const bool norm = norm_eps(n.primitive).has_value();
  const bool composite = std::visit([]<class P>(const P&) { return RowComposite<P>; }, n.primitive);
  if (!composite || (norm && shapeless)) {
    return false;
  }
  const auto& x = g.values[static_cast<size_t>(n.args[0])];
  if ((x.dtype != float32 && x.dtype != float64 && !(norm && is_half(x.dtype))) || x.shape.empty() ||
      x.shape.back() < 2 || n.outs.size() != 1 || g.values[static_cast<size_t>(n.outs[0])].dtype != x.dtype) {
    return false;
  }
  return std::all_of(n.args.begin(), n.args.end(),
                     [&](int a) { return g.values[static_cast<size_t>(a)].dtype == x.dtype; });
}

/// Softmax, LogSumExp, LayerNorm and RMSNorm nodes rewritten as their compositions, so that they fuse with the chain
/// that feeds them into one row kernel. The norms of float16 and bfloat16 rows convert x, weight and bias to float32,
/// compute the float32 composition and round once at the end, as their eager kernels do.
void expand_row_primitives(Graph& g, bool shapeless) {
  // The norms' row lengths and epsilons become constants first (numbering values anew), then nodes are expanded.
  std::vector<array> needed;
  for (const auto& n : g.nodes) {
    if (!expandable(g, n, shapeless)) {
      continue;
    }
    if (const auto eps = norm_eps(n.primitive)) {
      const auto& x = g.values[static_cast<size_t>(n.args[0])];
      needed.push_back(scalar(static_cast<double>(x.shape.back()), arithmetic_dtype(x.dtype)));
      needed.push_back(scalar(static_cast<double>(*eps), arithmetic_dtype(x.dtype)));
    }
  }
  const std::vector<int> constants = needed.empty() ? std::vector<int>{} : add_constants(g, std::move(needed));
  size_t next_constant = 0;
  std::vector<GraphNode> nodes;
  for (auto& n : g.nodes) {
    if (!expandable(g, n, shapeless)) {
      nodes.push_back(std::move(n));
      continue;
    }
    RowExpansion r(g, nodes, n);
    if (norm_eps(n.primitive)) {
      r.length = constants[next_constant++];
      r.eps = constants[next_constant++];
    }
    const int y = std::visit(
        [&]<class P>(const P& p) {
          if constexpr (RowComposite<P>) {
            return compose(p, r);
          } else {
            return -1;  // not reached: expandable() holds only for RowComposite primitives
          }
        },
        n.primitive);
    if (r.half()) {
      r.add(AsType{r.stored}, {y}, r.shape, r.stored, -1, n.outs[0]);
    }
  }
  g.nodes = std::move(nodes);
}

}  // namespace

void fuse_graph(Graph& g, bool shapeless) {
  if (g.nodes.empty() || !compiler_available()) {
    return;
  }
  expand_row_primitives(g, shapeless);
  const size_t n = g.nodes.size();
  if (n < 2) {
    return;
  }
  std::vector<int> producer(g.values.size(), -1);
  for (size_t i = 0; i < n; ++i) {
    for (int o : g.nodes[i].outs) {
      producer[static_cast<size_t>(o)] = static_cast<int>(i);
    }
  }
  std::vector<bool> can(n);
  for (size_t i = 0; i < n; ++i) {
    can[i] = fusable(g, g.nodes[i]);
  }
  // The number of unfusable nodes on the longest path from the inputs: only nodes of one level join, so no group
  // can leave through an unfusable node and come back.
  std::vector<int> level(n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (int a : g.nodes[i].args) {
      int from = producer[static_cast<size_t>(a)];
      if (from >= 0) {
        const auto f = static_cast<size_t>(from);
        level[i] = std::max(level[i], level[f] + (can[f] ? 0 : 1));
      }
    }
  }
  UnionFind uf(n);
  for (size_t i = 0; i < n; ++i) {
    if (!can[i]) {
      continue;
    }
    for (int a : g.nodes[i].args) {
      int from = producer[static_cast<size_t>(a)];
      if (from >= 0 && can[static_cast<size_t>(from)] && level[static_cast<size_t>(from)] == level[i] &&
          joins(g, g.nodes[i], a)) {
        uf.unite(i, static_cast<size_t>(from));
      }
    }
  }
  // Chains of one level and shape that read a common outside value join too: the value is read once.
  std::map<std::pair<int, std::pair<int, Shape>>, size_t> reader;  // (value, (level, shape)) -> a node reading it
  for (size_t i = 0; i < n; ++i) {
    if (!can[i]) {
      continue;
    }
    const auto& shape = base_shape(g, g.nodes[i]);
    for (int a : g.nodes[i].args) {
      int from = producer[static_cast<size_t>(a)];
      if (from < 0 || !can[static_cast<size_t>(from)]) {
        auto [it, inserted] = reader.try_emplace({a, {level[i], shape}}, i);
        if (!inserted) {
          uf.unite(i, it->second);
        }
      }
    }
  }
  std::map<size_t, std::vector<size_t>> members;
  for (size_t i = 0; i < n; ++i) {
    if (can[i]) {
      members[uf.find(i)].push_back(i);
    }
  }
  // A group iterates over one shape S: its members have shape S or, with reductions, S's rows.
  std::vector<long> group(n, -1);
  std::map<long, std::pair<Shape, bool>> space;  // group -> (S, row kernel)
  for (const auto& [root, list] : members) {
    if (list.size() < 2) {
      continue;
    }
    Shape s;
    for (size_t i : list) {
      if (is_row_reduction(g.nodes[i].primitive)) {
        s = base_shape(g, g.nodes[i]);
      }
    }
    for (size_t i : list) {
      const auto& o = g.values[static_cast<size_t>(g.nodes[i].outs[0])].shape;
      if (s.empty() && std::holds_alternative<Broadcast>(g.nodes[i].primitive) && !o.empty() && o.back() > 1) {
        s = o;
      }
    }
    if (s.empty()) {
      s = g.values[static_cast<size_t>(g.nodes[list.front()].outs[0])].shape;
    }
    bool rows = false;
    bool valid = true;
    for (size_t i : list) {
      const auto& o = g.values[static_cast<size_t>(g.nodes[i].outs[0])].shape;
      const bool row = o != s && o == row_shape(s);
      rows = rows || row;
      valid = valid && (is_row_reduction(g.nodes[i].primitive) ? base_shape(g, g.nodes[i]) == s && row : o == s || row);
    }
    if (!valid) {
      continue;
    }
    space[static_cast<long>(root)] = {s, rows};
    for (size_t i : list) {
      group[i] = static_cast<long>(root);
    }
  }
  for (long bad = group_on_cycle(g, group, producer); bad >= 0; bad = group_on_cycle(g, group, producer)) {
    for (auto& x : group) {
      if (x == bad) {
        x = -1;
      }
    }
  }

  // Which values are read outside their group (or returned).
  std::vector<bool> read_outside(g.values.size(), false);
  for (int o : g.outputs) {
    read_outside[static_cast<size_t>(o)] = true;
  }
  for (size_t i = 0; i < n; ++i) {
    for (int a : g.nodes[i].args) {
      int from = producer[static_cast<size_t>(a)];
      if (from >= 0 && (group[i] < 0 || group[static_cast<size_t>(from)] != group[i])) {
        read_outside[static_cast<size_t>(a)] = true;
      }
    }
  }

  // Build each group's kernel; it takes the place of the group's last member (its inputs all come earlier).
  std::map<long, GraphNode> fused;
  std::map<long, size_t> last;
  for (size_t i = 0; i < n; ++i) {
    if (group[i] >= 0) {
      last[group[i]] = i;
    }
  }
  for (const auto& [gid, at] : last) {
    auto kernel = std::make_shared<FusedKernel>();
    std::map<int, int> local;  // graph value -> kernel value
    std::vector<int> inputs;
    for (size_t i = 0; i < n; ++i) {
      if (group[i] != gid) {
        continue;
      }
      for (int a : g.nodes[i].args) {
        int from = producer[static_cast<size_t>(a)];
        if ((from < 0 || group[static_cast<size_t>(from)] != gid) && !local.contains(a)) {
          local[a] = -static_cast<int>(inputs.size()) - 1;
          inputs.push_back(a);
        }
      }
    }
    const auto& [shape, rows] = space.at(gid);
    kernel->rows = rows;
    kernel->shape = shape;
    kernel->num_inputs = static_cast<int>(inputs.size());
    for (size_t k = 0; k < inputs.size(); ++k) {
      const auto& v = g.values[static_cast<size_t>(inputs[k])];
      local[inputs[k]] = static_cast<int>(k);
      kernel->input_dtypes.push_back(v.dtype);
      kernel->scalar_inputs.push_back(shape_size(v.shape) == 1);
      kernel->literals.push_back(literal(g, inputs[k]));
      kernel->row_values.push_back(rows && (v.shape.empty() || v.shape.back() == 1));
    }
    GraphNode node{Compiled{}, g.nodes[at].stream, inputs, {}, -1};
    for (size_t i = 0; i < n; ++i) {
      if (group[i] != gid) {
        continue;
      }
      FusedStep step{g.nodes[i].primitive, {}, g.values[static_cast<size_t>(g.nodes[i].outs[0])].dtype};
      for (int a : g.nodes[i].args) {
        step.args.push_back(local.at(a));
      }
      const int out = g.nodes[i].outs[0];
      local[out] = kernel->num_inputs + static_cast<int>(kernel->steps.size());
      kernel->steps.push_back(std::move(step));
      kernel->row_values.push_back(rows && g.values[static_cast<size_t>(out)].shape != shape);
      if (read_outside[static_cast<size_t>(out)]) {
        kernel->outputs.push_back(local[out]);
        node.outs.push_back(out);
      }
    }
    kernel->source = generate_source(*kernel);
    auto loaded = load_kernel(kernel->source);
    if (!loaded) {
      continue;  // left unfused
    }
    kernel->library = loaded->library;
    kernel->contiguous = loaded->contiguous;
    kernel->strided = loaded->strided;
    node.primitive = Compiled{std::move(kernel)};
    fused.emplace(gid, std::move(node));
  }
  std::vector<GraphNode> nodes;
  for (size_t i = 0; i < n; ++i) {
    auto f = group[i] >= 0 ? fused.find(group[i]) : fused.end();
    if (f == fused.end()) {
      nodes.push_back(std::move(g.nodes[i]));
    } else if (last[group[i]] == i) {
      nodes.push_back(std::move(f->second));
    }
  }
  g.nodes = sorted(g, std::move(nodes));
}

}  // namespace nuvec::detail
