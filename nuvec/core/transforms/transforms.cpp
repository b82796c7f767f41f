// The transform drivers: trace the function on fresh handles of its primals,
// record the nodes between those handles and the outputs, then walk them
// backwards (vjp), forwards (jvp) or forwards with mapped inputs (vmap),
// applying one rule per node.

#include "nuvec/core/transforms.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "nuvec/core/error.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/output_shapes.h"
#include "nuvec/core/tracing.h"
#include "nuvec/core/transforms/rules.h"

namespace nuvec {

namespace {

using detail::gradient_flows;

std::string shape_text(const Shape& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return text + (shape.size() == 1 ? ",)" : ")");
}

/// New handles to the primals (identity nodes), so the traced graph can tell them from any other use of the
/// same arrays.
std::vector<array> make_tracers(const std::vector<array>& primals) {
  std::vector<array> tracers;
  tracers.reserve(primals.size());
  for (const auto& p : primals) {
    tracers.push_back(depends({p}, {}).front());
    tracers.back().set_tracer(true);
  }
  return tracers;
}

/// fun on the tracers, with is_tracer() true for them and what is computed from them.
std::vector<array> run_traced(const Function& fun, const std::vector<array>& tracers) {
  detail::TracingScope tracing;
  return fun(tracers);
}

/// Once the outermost transform is done, its results are ordinary arrays again (MLX clears their flag).
void release_tracers(std::vector<array>& arrays) {
  if (!detail::in_tracing()) {
    for (auto& a : arrays) {
      a.set_tracer(false);
    }
  }
}

enum class Walk { derivative, vmap };

/// The nodes on a path from the sources to the outputs, each once (as one of its outputs), inputs first, and the
/// ids of every array that depends on a source. Derivative walks skip inputs that carry no derivative.
struct Tape {
  std::vector<array> nodes;
  std::unordered_set<uintptr_t> dependent;
};

Tape record(const std::vector<array>& outputs, const std::vector<array>& sources, Walk walk) {
  Tape tape;
  for (const auto& s : sources) {
    tape.dependent.insert(s.id());
  }
  std::unordered_set<uintptr_t> visited;
  struct Frame {
    array node;
    size_t next_input;
    size_t num_outputs;
  };
  std::vector<Frame> stack;
  auto flows = [&](const array& node, size_t index, size_t num_outputs) {
    return walk == Walk::vmap || gradient_flows(node.primitive(), index, num_outputs);
  };
  auto visit = [&](const array& a) {
    if (a.has_primitive() && !tape.dependent.contains(a.id()) && visited.insert(a.node_id()).second) {
      auto num_outputs = a.siblings().size() + 1;
      stack.push_back({a, 0, num_outputs});
    }
  };
  for (const auto& out : outputs) {
    visit(out);
    while (!stack.empty()) {
      auto& frame = stack.back();
      const auto& inputs = frame.node.inputs();
      if (frame.next_input < inputs.size()) {
        auto index = frame.next_input++;
        if (flows(frame.node, index, frame.num_outputs)) {
          array input = inputs[index];
          visit(input);
        }
        continue;
      }
      bool depends_on_source = false;
      for (size_t i = 0; i < inputs.size() && !depends_on_source; ++i) {
        depends_on_source = flows(frame.node, i, frame.num_outputs) && tape.dependent.contains(inputs[i].id());
      }
      if (depends_on_source) {
        for (const auto& o : frame.node.outputs()) {
          tape.dependent.insert(o.id());
        }
        tape.nodes.push_back(frame.node);
      }
      stack.pop_back();
    }
  }
  return tape;
}

/// Whether `a` is a broadcast of an evaluated scalar zero (what zeros_like builds).
bool is_zeros(const array& a) {
  if (!a.has_primitive() || !std::holds_alternative<Broadcast>(a.primitive())) {
    return false;
  }
  const auto& scalar = a.inputs()[0];
  return !scalar.has_primitive() && scalar.size() == 1 && scalar.is_available() &&
         detail::read_complex(scalar) == complex64_t{0.0F, 0.0F};
}

/// The update and slice of `a` when it is a slice written into zeros (the cotangent of a slice), else nullptr.
const SliceUpdate* slice_into_zeros(const array& a) {
  if (!a.has_primitive()) {
    return nullptr;
  }
  const auto* p = std::get_if<SliceUpdate>(&a.primitive());
  return p && p->type == ScatterType::none && is_zeros(a.inputs()[0]) ? p : nullptr;
}

/// sum + value. A slice's cotangent added to a sum is added into the sum's slice instead of a full-size zero array
/// (pooling windows, split heads): one buffer, updated in place, instead of one per slice.
array add_cotangent(const array& sum, const array& value) {
  if (const auto* p = slice_into_zeros(value)) {
    return detail::reapply(SliceUpdate{p->start, p->strides, ScatterType::sum}, {sum, value.inputs()[1]},
                           sum.shape(), sum.dtype());
  }
  if (const auto* p = slice_into_zeros(sum)) {
    return detail::reapply(SliceUpdate{p->start, p->strides, ScatterType::sum}, {value, sum.inputs()[1]},
                           value.shape(), value.dtype());
  }
  return add(sum, value);
}

void accumulate(std::unordered_map<uintptr_t, array>& sums, const array& target, array value) {
  if (value.dtype() != target.dtype()) {
    value = astype(value, target.dtype());
  }
  auto [it, inserted] = sums.try_emplace(target.id(), value);
  if (!inserted) {
    it->second = add_cotangent(it->second, value);
  }
}

void check_rule_shape(const array& result, const array& expected, const Primitive& p, std::string_view transform) {
  if (result.shape() != expected.shape()) {
    throw_invalid("[" + std::string(transform) + "] the rule of " + std::string(name(p)) + " gave shape " +
                  shape_text(result.shape()) + " for an array of shape " + shape_text(expected.shape()) + ".");
  }
}

/// vjp where only the first cotangents.size() outputs are differentiated (value_and_grad's auxiliary outputs).
std::pair<std::vector<array>, std::vector<array>> vjp_prefix(const Function& fun, const std::vector<array>& primals,
                                                             const std::vector<array>& cotangents) {
  auto tracers = make_tracers(primals);
  auto outputs = run_traced(fun, tracers);
  if (cotangents.size() > outputs.size()) {
    throw_invalid("[vjp] got " + std::to_string(cotangents.size()) + " cotangents for a function with " +
                  std::to_string(outputs.size()) + " outputs.");
  }
  std::vector<array> differentiated(outputs.begin(), outputs.begin() + static_cast<std::ptrdiff_t>(cotangents.size()));
  auto tape = record(differentiated, tracers, Walk::derivative);

  std::unordered_map<uintptr_t, array> cts;
  for (size_t i = 0; i < cotangents.size(); ++i) {
    if (cotangents[i].shape() != outputs[i].shape()) {
      throw_invalid("[vjp] cotangent " + std::to_string(i) + " has shape " + shape_text(cotangents[i].shape()) +
                    " but output " + std::to_string(i) + " has shape " + shape_text(outputs[i].shape()) + ".");
    }
    if (tape.dependent.contains(outputs[i].id())) {
      accumulate(cts, outputs[i], cotangents[i]);
    }
  }

  std::vector<array> node_cts;
  std::vector<int> argnums;
  for (auto it = tape.nodes.rbegin(); it != tape.nodes.rend(); ++it) {
    auto outs = it->outputs();
    node_cts.clear();
    bool any = false;
    for (const auto& o : outs) {
      auto found = cts.find(o.id());
      if (found == cts.end()) {
        node_cts.push_back(zeros_like(o));
      } else {
        node_cts.push_back(found->second);
        cts.erase(found);
        any = true;
      }
    }
    if (!any) {
      continue;
    }
    const Primitive& p = it->primitive();
    std::vector<array> inputs = it->inputs();
    argnums.clear();
    for (size_t i = 0; i < inputs.size(); ++i) {
      // As MLX, derivatives flow through integer arrays too (an integer primal gets its cotangent).
      if (gradient_flows(p, i, outs.size()) && tape.dependent.contains(inputs[i].id())) {
        argnums.push_back(static_cast<int>(i));
      }
    }
    if (argnums.empty()) {
      continue;
    }
    auto grads = detail::vjp_rule(p, {inputs, outs, node_cts, argnums});
    for (size_t k = 0; k < argnums.size(); ++k) {
      const auto& target = inputs[static_cast<size_t>(argnums[k])];
      check_rule_shape(grads[k], target, p, "vjp");
      accumulate(cts, target, grads[k]);
    }
  }

  std::vector<array> grads;
  grads.reserve(primals.size());
  for (size_t i = 0; i < primals.size(); ++i) {
    auto found = cts.find(tracers[i].id());
    grads.push_back(found == cts.end() ? zeros_like(primals[i]) : found->second);
  }
  release_tracers(outputs);
  release_tracers(grads);
  return {std::move(outputs), std::move(grads)};
}

int mapped_size(const std::vector<array>& inputs, const std::vector<int>& axes) {
  int size = -1;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (axes[i] == -1) {
      continue;
    }
    if (axes[i] < -1 || axes[i] >= inputs[i].ndim()) {
      throw_invalid("[vmap] in_axes " + std::to_string(axes[i]) + " is out of range for input " + std::to_string(i) +
                    " of shape " + shape_text(inputs[i].shape()) + ".");
    }
    int n = inputs[i].shape(axes[i]);
    if (size >= 0 && n != size) {
      throw_invalid("[vmap] mapped axes have different sizes: " + std::to_string(size) + " and " +
                    std::to_string(n) + " (input " + std::to_string(i) + ").");
    }
    size = n;
  }
  if (size < 0) {
    throw_invalid("[vmap] at least one input must be mapped (in_axes all -1).");
  }
  return size;
}

}  // namespace

std::pair<std::vector<array>, std::vector<array>> vjp(const Function& fun, const std::vector<array>& primals,
                                                      const std::vector<array>& cotangents) {
  auto tracers_outputs = vjp_prefix(fun, primals, cotangents);
  if (cotangents.size() != tracers_outputs.first.size()) {
    throw_invalid("[vjp] got " + std::to_string(cotangents.size()) + " cotangents for a function with " +
                  std::to_string(tracers_outputs.first.size()) + " outputs.");
  }
  return tracers_outputs;
}

std::pair<array, array> vjp(const std::function<array(const array&)>& fun, const array& primal,
                            const array& cotangent) {
  auto [outs, grads] = vjp([&](const std::vector<array>& xs) { return std::vector<array>{fun(xs[0])}; }, {primal},
                           {cotangent});
  return {outs[0], grads[0]};
}

std::pair<std::vector<array>, std::vector<array>> jvp(const Function& fun, const std::vector<array>& primals,
                                                      const std::vector<array>& tangents) {
  if (tangents.size() != primals.size()) {
    throw_invalid("[jvp] got " + std::to_string(tangents.size()) + " tangents for " + std::to_string(primals.size()) +
                  " primals.");
  }
  for (size_t i = 0; i < primals.size(); ++i) {
    if (tangents[i].shape() != primals[i].shape()) {
      throw_invalid("[jvp] tangent " + std::to_string(i) + " has shape " + shape_text(tangents[i].shape()) +
                    " but primal " + std::to_string(i) + " has shape " + shape_text(primals[i].shape()) + ".");
    }
  }
  auto tracers = make_tracers(primals);
  auto outputs = run_traced(fun, tracers);
  auto tape = record(outputs, tracers, Walk::derivative);

  std::unordered_map<uintptr_t, array> tans;
  // As MLX, integer primals carry their tangents too (an index's tangent is an error in the rule that reads it).
  for (size_t i = 0; i < primals.size(); ++i) {
    tans.emplace(tracers[i].id(), astype(tangents[i], primals[i].dtype()));
  }
  std::vector<int> argnums;
  std::vector<array> node_tans;
  for (const auto& node : tape.nodes) {
    const Primitive& p = node.primitive();
    std::vector<array> inputs = node.inputs();
    auto outs = node.outputs();
    argnums.clear();
    node_tans.clear();
    for (size_t i = 0; i < inputs.size(); ++i) {
      auto found = tans.find(inputs[i].id());
      if (found != tans.end() && gradient_flows(p, i, outs.size())) {
        argnums.push_back(static_cast<int>(i));
        node_tans.push_back(found->second);
      }
    }
    if (argnums.empty()) {
      continue;
    }
    auto results = detail::jvp_rule(p, {inputs, outs, node_tans, argnums});
    for (size_t k = 0; k < outs.size(); ++k) {
      check_rule_shape(results[k], outs[k], p, "jvp");
      tans.insert_or_assign(outs[k].id(),
                            results[k].dtype() == outs[k].dtype() ? results[k] : astype(results[k], outs[k].dtype()));
    }
  }
  std::vector<array> out_tangents;
  out_tangents.reserve(outputs.size());
  for (const auto& o : outputs) {
    auto found = tans.find(o.id());
    out_tangents.push_back(found == tans.end() ? zeros_like(o) : found->second);
  }
  release_tracers(outputs);
  release_tracers(out_tangents);
  return {std::move(outputs), std::move(out_tangents)};
}

std::pair<array, array> jvp(const std::function<array(const array&)>& fun, const array& primal,
                            const array& tangent) {
  auto [outs, tans] = jvp([&](const std::vector<array>& xs) { return std::vector<array>{fun(xs[0])}; }, {primal},
                          {tangent});
  return {outs[0], tans[0]};
}

ValueAndGradFn value_and_grad(const Function& fun, const std::vector<int>& argnums) {
  if (argnums.empty()) {
    throw_invalid("[value_and_grad] argnums must name at least one input.");
  }
  return [fun, given = argnums](const std::vector<array>& inputs) {
    // As MLX: negative numbers count from the end, and the gradients come in increasing input order.
    const int n = static_cast<int>(inputs.size());
    std::vector<int> argnums;
    for (int a : given) {
      if (a < -n || a >= n) {
        throw_invalid("[value_and_grad] argnum " + std::to_string(a) + " is out of range for " + std::to_string(n) +
                      " inputs.");
      }
      argnums.push_back(a < 0 ? a + n : a);
    }
    std::sort(argnums.begin(), argnums.end());
    if (auto twice = std::adjacent_find(argnums.begin(), argnums.end()); twice != argnums.end()) {
      throw_invalid("[value_and_grad] argnums name input " + std::to_string(*twice) + " twice.");
    }
    std::vector<array> gprimals;
    for (int a : argnums) {
      gprimals.push_back(inputs[static_cast<size_t>(a)]);
    }
    auto inner = [&](const std::vector<array>& traced) {
      auto all = inputs;
      for (size_t k = 0; k < argnums.size(); ++k) {
        all[static_cast<size_t>(argnums[k])] = traced[k];
      }
      auto outs = fun(all);
      if (outs.empty() || outs[0].size() != 1 || outs[0].ndim() != 0) {
        throw_invalid("[value_and_grad] the function's first output must be a scalar (0-d array)" +
                      (outs.empty() ? std::string(", it returned nothing.")
                                    : ", it has shape " + shape_text(outs[0].shape()) + "."));
      }
      return outs;
    };
    // A float32 one as the seed: the driver casts it to the output's dtype.
    auto [values, grads] = vjp_prefix(inner, gprimals, {array(1.0F)});
    return std::make_pair(std::move(values), std::move(grads));
  };
}

ValueAndGradFn value_and_grad(const Function& fun, int argnum) {
  return value_and_grad(fun, std::vector<int>{argnum});
}

std::function<std::pair<array, array>(const array&)> value_and_grad(const std::function<array(const array&)>& fun) {
  auto vg = value_and_grad([fun](const std::vector<array>& xs) { return std::vector<array>{fun(xs[0])}; }, 0);
  return [vg](const array& x) {
    auto [values, grads] = vg({x});
    return std::make_pair(values[0], grads[0]);
  };
}

SimpleValueAndGradFn value_and_grad(const std::function<array(const std::vector<array>&)>& fun,
                                    const std::vector<int>& argnums) {
  auto vg = value_and_grad([fun](const std::vector<array>& xs) { return std::vector<array>{fun(xs)}; }, argnums);
  return [vg](const std::vector<array>& xs) {
    auto [values, grads] = vg(xs);
    return std::make_pair(values[0], std::move(grads));
  };
}

SimpleValueAndGradFn value_and_grad(const std::function<array(const std::vector<array>&)>& fun, int argnum) {
  return value_and_grad(fun, std::vector<int>{argnum});
}

std::function<std::vector<array>(const std::vector<array>&)> grad(
    const std::function<array(const std::vector<array>&)>& fun, const std::vector<int>& argnums) {
  auto vg = value_and_grad(fun, argnums);
  return [vg](const std::vector<array>& xs) { return vg(xs).second; };
}

std::function<std::vector<array>(const std::vector<array>&)> grad(
    const std::function<array(const std::vector<array>&)>& fun, int argnum) {
  return grad(fun, std::vector<int>{argnum});
}

std::function<array(const array&)> grad(const std::function<array(const array&)>& fun) {
  auto vg = value_and_grad(fun);
  return [vg](const array& x) { return vg(x).second; };
}

Function vmap(const Function& fun, const std::vector<int>& in_axes, const std::vector<int>& out_axes) {
  return [fun, in_axes, out_axes](const std::vector<array>& inputs) {
    std::vector<int> axes = in_axes.empty() ? std::vector<int>(inputs.size(), 0) : in_axes;
    if (axes.size() != inputs.size()) {
      throw_invalid("[vmap] got " + std::to_string(axes.size()) + " in_axes for " + std::to_string(inputs.size()) +
                    " inputs.");
    }
    int size = mapped_size(inputs, axes);
    std::vector<array> traced;
    std::vector<array> sources;
    std::unordered_map<uintptr_t, std::pair<array, int>> mapped;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (axes[i] < 0) {
        traced.push_back(inputs[i]);
        continue;
      }
      auto tracer = depends({take(inputs[i], 0, axes[i])}, {}).front();
      traced.push_back(tracer);
      sources.push_back(tracer);
      mapped.insert_or_assign(tracer.id(), std::make_pair(inputs[i], axes[i]));
    }
    std::vector<array> outputs;
    {
      detail::PlaceholderScope placeholders(sources);
      outputs = fun(traced);
    }
    auto tape = record(outputs, sources, Walk::vmap);
    std::vector<array> node_inputs;
    std::vector<int> node_axes;
    for (const auto& node : tape.nodes) {
      node_inputs.clear();
      node_axes.clear();
      for (const auto& in : node.inputs()) {
        auto found = mapped.find(in.id());
        if (found == mapped.end()) {
          node_inputs.push_back(in);
          node_axes.push_back(-1);
        } else {
          node_inputs.push_back(found->second.first);
          node_axes.push_back(found->second.second);
        }
      }
      auto outs = node.outputs();
      auto [results, result_axes] = detail::vmap_rule(node.primitive(), {node_inputs, node_axes, outs, size});
      for (size_t k = 0; k < outs.size(); ++k) {
        mapped.insert_or_assign(outs[k].id(), std::make_pair(results[k], result_axes[k]));
      }
    }
    std::vector<int> oaxes = out_axes.empty() ? std::vector<int>(outputs.size(), 0) : out_axes;
    if (oaxes.size() != outputs.size()) {
      throw_invalid("[vmap] got " + std::to_string(oaxes.size()) + " out_axes for " +
                    std::to_string(outputs.size()) + " outputs.");
    }
    std::vector<array> results;
    for (size_t j = 0; j < outputs.size(); ++j) {
      auto found = mapped.find(outputs[j].id());
      if (oaxes[j] < 0 || oaxes[j] > outputs[j].ndim()) {
        throw_invalid("[vmap] out_axes " + std::to_string(oaxes[j]) + " is out of range for output " +
                      std::to_string(j) + " of shape " + shape_text(outputs[j].shape()) + ".");
      }
      if (found == mapped.end()) {
        results.push_back(moveaxis(detail::with_front_axis(outputs[j], size), 0, oaxes[j]));
      } else {
        results.push_back(moveaxis(found->second.first, found->second.second, oaxes[j]));
      }
    }
    return results;
  };
}

std::function<array(const array&)> vmap(const std::function<array(const array&)>& fun, int in_axis, int out_axis) {
  auto mapped = vmap([fun](const std::vector<array>& xs) { return std::vector<array>{fun(xs[0])}; }, {in_axis},
                     {out_axis});
  return [mapped](const array& x) { return mapped({x})[0]; };
}

std::function<array(const array&, const array&)> vmap(const std::function<array(const array&, const array&)>& fun,
                                                       int in_axis_a, int in_axis_b, int out_axis) {
  auto mapped = vmap([fun](const std::vector<array>& xs) { return std::vector<array>{fun(xs[0], xs[1])}; },
                     {in_axis_a, in_axis_b}, {out_axis});
  return [mapped](const array& a, const array& b) { return mapped({a, b})[0]; };
}

Function custom_function(Function fun, std::optional<CustomVJPFn> fun_vjp, std::optional<CustomJVPFn> fun_jvp,
                         std::optional<CustomVmapFn> fun_vmap) {
  auto rules = std::make_shared<const detail::CustomRules>(
      detail::CustomRules{fun, std::move(fun_vjp), std::move(fun_jvp), std::move(fun_vmap)});
  return [rules](const std::vector<array>& primals) {
    auto outs = rules->fun(primals);
    if (outs.empty()) {
      return outs;
    }
    auto num_outputs = static_cast<int>(outs.size());
    auto stream = outs.front().stream();
    outs.insert(outs.end(), primals.begin(), primals.end());
    return detail::make_nodes(Custom{num_outputs, rules}, std::move(outs), stream);
  };
}

Function custom_vjp(Function fun, CustomVJPFn fun_vjp) {
  return custom_function(std::move(fun), std::move(fun_vjp));
}

Function checkpoint(Function fun) {
  auto recompute = [fun](const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<array>&) {
    // Tying the primals to the cotangents delays the second forward pass until the backward pass reaches it.
    return vjp(fun, depends(primals, cotangents), cotangents).second;
  };
  return custom_function(fun, recompute);
}

}  // namespace nuvec
