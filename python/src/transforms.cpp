// Function transforms over pytrees: grad, value_and_grad, vjp, jvp, vmap, compile, custom_function, checkpoint.
// Each Python function becomes a nuvec::Function over the flat list of its arrays; the Python structure around
// the arrays (other arguments, containers) is kept aside and rebuilt around the traced arrays on every call.

#include "nuvec/core/transforms.h"

#include <memory>
#include <string>
#include <unordered_map>

#include "nuvec/core/compile.h"
#include "nuvec/core/random.h"
#include "python/src/bindings.h"
#include "python/src/pytree.h"
#include "python/src/random_state.h"

namespace nuvec::python {
namespace {

/// A Python value owned by C++ code that may drop it without the GIL (a graph node freed during evaluation).
template <class T>
std::shared_ptr<T> held(T value) {
  return std::shared_ptr<T>(new T(std::move(value)), [](T* p) {
    if (Py_IsInitialized() != 0) {
      py::gil_scoped_acquire gil;
      delete p;
    }
  });
}

/// A call of a Python function traced into a graph: the function, its arguments and (once traced) its result.
struct CallState {
  py::function fun;
  py::tuple args;
  py::dict kwargs;
  py::object output;
};

/// The differentiated arguments of a call: positional indices and keyword names, and the arrays they hold.
struct Selected {
  std::vector<int> argnums;
  std::vector<std::string> argnames;
  std::vector<array> leaves;
};

Selected select(const py::tuple& args, const py::dict& kwargs, const std::vector<int>& argnums,
                const std::vector<std::string>& argnames, const char* op) {
  Selected out{{}, argnames, {}};
  for (int i : argnums) {
    int n = static_cast<int>(args.size());
    if (i < -n || i >= n) {
      throw py::value_error(std::string("[")
                                .append(op)
                                .append("] Can't compute the gradient of argument index ")
                                .append(std::to_string(i))
                                .append(" because the function is called with only ")
                                .append(std::to_string(n))
                                .append(" positional arguments."));
    }
    int k = i < 0 ? i + n : i;
    out.argnums.push_back(k);
    auto leaves = tree_leaves(args[k]);
    out.leaves.insert(out.leaves.end(), leaves.begin(), leaves.end());
  }
  for (const auto& name : argnames) {
    if (!kwargs.contains(name)) {
      throw py::value_error(std::string("[")
                                .append(op)
                                .append("] Can't compute the gradient of keyword argument '")
                                .append(name)
                                .append("' because the function is called without it."));
    }
    auto leaves = tree_leaves(kwargs[name.c_str()]);
    out.leaves.insert(out.leaves.end(), leaves.begin(), leaves.end());
  }
  return out;
}

/// args and kwargs with the selected arguments' arrays replaced by `leaves`.
std::pair<py::tuple, py::dict> substitute(const py::tuple& args, const py::dict& kwargs, const Selected& sel,
                                          const std::vector<array>& leaves) {
  py::list new_args(args);
  py::dict new_kwargs(kwargs);
  size_t next = 0;
  for (int i : sel.argnums) {
    new_args[i] = tree_replace(args[i], leaves, next);
  }
  for (const auto& name : sel.argnames) {
    new_kwargs[name.c_str()] = tree_replace(kwargs[name.c_str()], leaves, next);
  }
  return {py::tuple(new_args), new_kwargs};
}

/// argnums as given (None, an int or a sequence): None means the first argument unless argnames are given.
std::vector<int> parse_argnums(const py::object& argnums, bool have_names) {
  if (argnums.is_none()) {
    return have_names ? std::vector<int>{} : std::vector<int>{0};
  }
  if (py::isinstance<py::int_>(argnums)) {
    return {argnums.cast<int>()};
  }
  return argnums.cast<std::vector<int>>();
}

std::vector<std::string> parse_argnames(const py::object& argnames) {
  if (py::isinstance<py::str>(argnames)) {
    return {argnames.cast<std::string>()};
  }
  return argnames.cast<std::vector<std::string>>();
}

/// value_and_grad (with_value) or grad of a Python function of pytrees.
py::cpp_function make_value_and_grad(const py::function& fun, const py::object& argnums_obj,
                                     const py::object& argnames_obj, bool with_value, const char* op) {
  auto argnames = parse_argnames(argnames_obj);
  auto argnums = parse_argnums(argnums_obj, !argnames.empty());
  return py::cpp_function([fun, argnums, argnames, with_value, op](const py::args& args,
                                                                   const py::kwargs& kwargs) -> py::object {
    auto sel = select(args, kwargs, argnums, argnames, op);
    auto output = std::make_shared<py::object>();
    Function traced = [&](const std::vector<array>& xs) {
      auto [a, k] = substitute(args, kwargs, sel, xs);
      *output = fun(*a, **k);
      auto leaves = tree_leaves(*output);
      bool scalar_first =
          !leaves.empty() &&
          (is_array(*output) || ((py::isinstance<py::tuple>(*output) || py::isinstance<py::list>(*output)) &&
                                 py::len(*output) > 0 && is_array((*output)[py::int_(0)])));
      if (!scalar_first) {
        throw py::value_error(
            std::string("[").append(op).append("] The return value of the function whose gradient we want to compute "
                                               "should be a scalar array or a tuple whose first element is one."));
      }
      return leaves;
    };
    std::vector<int> all(sel.leaves.size());
    for (size_t i = 0; i < all.size(); ++i) {
      all[i] = static_cast<int>(i);
    }
    std::vector<array> values;
    std::vector<array> grads;
    if (all.empty()) {
      values = traced(sel.leaves);
    } else {
      std::tie(values, grads) = value_and_grad(traced, all)(sel.leaves);
    }
    size_t next = 0;
    py::list positional;
    for (int i : sel.argnums) {
      positional.append(tree_replace(args[i], grads, next));
    }
    // As MLX: one argument's gradient alone, several in a tuple, None when only keywords are differentiated.
    py::object result = py::none();
    if (positional.size() == 1) {
      result = positional[0];
    } else if (positional.size() > 1) {
      result = py::tuple(positional);
    }
    if (!argnames.empty()) {
      py::dict named;
      for (const auto& name : argnames) {
        named[name.c_str()] = tree_replace(kwargs[name.c_str()], grads, next);
      }
      result = py::make_tuple(result, named);
    }
    if (!with_value) {
      return result;
    }
    size_t first = 0;
    return py::make_tuple(tree_replace(*output, values, first), result);
  });
}

std::vector<array> array_list(const py::handle& seq, const char* op, const char* what) {
  if (is_array(seq)) {
    return {seq.cast<array>()};
  }
  std::vector<array> out;
  for (auto item : seq) {
    if (!is_array(item)) {
      throw py::value_error(std::string("[").append(op).append("] ").append(what).append(" must be arrays."));
    }
    out.push_back(item.cast<array>());
  }
  return out;
}

/// A function of positional arrays returning an array or a sequence of them, as a nuvec Function.
Function positional_function(const py::function& fun) {
  return [fun](const std::vector<array>& xs) {
    py::tuple args(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      args[i] = py::cast(xs[i]);
    }
    return tree_leaves(fun(*args));
  };
}

py::list to_pylist(const std::vector<array>& arrays) {
  py::list out;
  for (const auto& a : arrays) {
    out.append(py::cast(a));
  }
  return out;
}

bool is_sequence(py::handle v) { return py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v); }

/// A container or value in a vmap axes mismatch message: "a tuple of 2", "a dict", "an array".
std::string described(py::handle v) {
  std::string type = py::str(v.get_type().attr("__name__")).cast<std::string>();
  std::string out = std::string(type.find_first_of("aeiou") == 0 ? "an " : "a ").append(type);
  return is_sequence(v) ? out.append(" of ").append(std::to_string(py::len(v))) : out;
}

/// Appends one vmap axis per array of `tree` (-1: not mapped) from `axes`, a prefix of `tree` as MLX's vmap reads
/// in_axes and out_axes: an int or None covers a whole subtree; a list or tuple of the same length, or a dict with
/// the tree's keys, descends alongside it; at an array a one-entry list or tuple stands for its entry. Negative axes
/// count from the end of an array with `extra_rank` more axes (1 for out_axes: the mapped axis is not yet there).
void flat_axes(py::handle tree, py::handle axes, const char* what, int extra_rank, std::vector<int>& out) {
  auto mismatch = [&]() {
    throw py::value_error(std::string("[vmap] ")
                              .append(what)
                              .append(" does not match the structure it maps: ")
                              .append(described(axes))
                              .append(" for ")
                              .append(described(tree))
                              .append("; give a list or tuple of the same length, a dict with the same keys, or an "
                                      "int or None for the whole subtree."));
  };
  bool whole = axes.is_none() || py::isinstance<py::int_>(axes);
  if (is_array(tree)) {
    if (is_sequence(axes) && py::len(axes) == 1) {
      axes = axes[py::int_(0)];
      whole = axes.is_none() || py::isinstance<py::int_>(axes);
    }
    if (!whole) {
      throw py::value_error(std::string("[vmap] Each axis in ")
                                .append(what)
                                .append(" must be an int or None; got ")
                                .append(described(axes))
                                .append(" for an array."));
    }
    if (axes.is_none()) {
      out.push_back(-1);
      return;
    }
    auto a = tree.cast<array>();
    int rank = a.ndim() + extra_rank;
    int axis = axes.cast<int>();
    int k = axis < 0 ? axis + rank : axis;
    if (k < 0 || k >= rank) {
      throw py::value_error(std::string("[vmap] Invalid vectorization axis ")
                                .append(std::to_string(axis))
                                .append(" in ")
                                .append(what)
                                .append(" for array with shape ")
                                .append(shape_string(a.shape()))
                                .append("."));
    }
    out.push_back(k);
  } else if (is_sequence(tree)) {
    if (!whole && !(is_sequence(axes) && py::len(axes) == py::len(tree))) {
      mismatch();
    }
    for (size_t i = 0; i < py::len(tree); ++i) {
      flat_axes(tree[py::int_(i)], whole ? axes : axes[py::int_(i)], what, extra_rank, out);
    }
  } else if (py::isinstance<py::dict>(tree)) {
    if (!whole && !py::isinstance<py::dict>(axes)) {
      mismatch();
    }
    for (auto item : tree.cast<py::dict>()) {
      if (!whole && !axes.cast<py::dict>().contains(item.first)) {
        throw py::value_error(std::string("[vmap] ")
                                  .append(what)
                                  .append(" has no entry for the key ")
                                  .append(py::repr(item.first).cast<std::string>())
                                  .append(" of the dict it maps."));
      }
      flat_axes(item.second, whole ? axes : axes[item.first], what, extra_rank, out);
    }
  }
}

/// `tree` with each array replaced by its axis from `axes` (None when not mapped) and any other leaf by None: the
/// axes a custom vmap rule receives, shaped as its inputs.
py::object axes_like(py::handle tree, const std::vector<int>& axes, size_t& next) {
  if (is_array(tree)) {
    int axis = axes.at(next++);
    return axis < 0 ? py::object(py::none()) : py::object(py::int_(axis));
  }
  if (is_sequence(tree)) {
    py::list items;
    for (auto item : tree) {
      items.append(axes_like(item, axes, next));
    }
    if (py::isinstance<py::list>(tree)) {
      return items;
    }
    return PyTuple_CheckExact(tree.ptr()) != 0 ? py::object(py::tuple(items)) : tree.get_type()(*items);
  }
  if (py::isinstance<py::dict>(tree)) {
    py::dict out;
    for (auto item : tree.cast<py::dict>()) {
      out[item.first] = axes_like(item.second, axes, next);
    }
    return out;
  }
  return py::none();
}

/// vmap of a Python function of pytrees.
py::cpp_function make_vmap(const py::function& fun, const py::object& in_axes, const py::object& out_axes) {
  return py::cpp_function([fun, in_axes, out_axes](const py::args& args) -> py::object {
    std::vector<array> leaves = tree_leaves(args);
    // As MLX's, in_axes describes the only argument itself when there is one; a one-entry list or tuple there may
    // also describe the arguments' tuple, as with several arguments.
    py::object mapped_args = args;
    py::object axes_spec = in_axes;
    if (args.size() == 1) {
      mapped_args = args[0];
      bool one_entry_tree = is_sequence(mapped_args) && py::len(mapped_args) == 1;
      if (is_sequence(in_axes) && py::len(in_axes) == 1 && !one_entry_tree) {
        axes_spec = in_axes[py::int_(0)];
      }
    }
    std::vector<int> axes;
    flat_axes(mapped_args, axes_spec, "in_axes", 0, axes);
    auto output = std::make_shared<py::object>();
    Function traced = [&](const std::vector<array>& xs) {
      size_t next = 0;
      auto new_args = tree_replace(args, xs, next);
      *output = fun(*new_args);
      return tree_leaves(*output);
    };
    auto results = vmap(traced, axes, {})(leaves);
    // Each output comes out mapped along axis 0; out_axes moves it (None: an unmapped output, its first entry).
    std::vector<int> destinations;
    flat_axes(*output, out_axes, "out_axes", 1, destinations);
    for (size_t i = 0; i < results.size(); ++i) {
      if (destinations[i] < 0) {
        results[i] = take(results[i], 0, 0);
      } else if (destinations[i] != 0) {
        results[i] = moveaxis(results[i], 0, destinations[i]);
      }
    }
    size_t next = 0;
    return tree_replace(*output, results, next);
  });
}

/// A structure key for compile's cache: the containers, arrays as placeholders and constants (None, bools, ints,
/// floats, strings) by value, so a new constant retraces as in MLX. Any other leaf of the arguments raises as MLX's
/// compile does (it would be baked into the trace unseen); in the state (inputs=) such leaves are no inputs of the
/// compiled function and are skipped, as MLX skips them.
void structure_key(const py::handle& tree, bool arguments, std::string& key) {
  if (is_array(tree)) {
    key += "A,";
  } else if (py::isinstance<py::list>(tree) || py::isinstance<py::tuple>(tree)) {
    key += py::isinstance<py::list>(tree) ? "[" : "(";
    for (auto item : tree) {
      structure_key(item, arguments, key);
    }
    key += "],";
  } else if (py::isinstance<py::dict>(tree)) {
    key += "{";
    for (auto item : tree.cast<py::dict>()) {
      key.append(py::repr(item.first).cast<std::string>()).append(":");
      structure_key(item.second, arguments, key);
    }
    key += "},";
  } else if (tree.is_none() || py::isinstance<py::int_>(tree) || py::isinstance<py::float_>(tree) ||
             py::isinstance<py::str>(tree)) {
    key.append(py::repr(tree).cast<std::string>()).append(",");
  } else if (arguments) {
    throw py::value_error(std::string("[compile] Function arguments must be trees of arrays or constants (floats, "
                                      "ints, strings, or None), but received type ")
                              .append(py::str(tree.get_type().attr("__name__")).cast<std::string>())
                              .append("."));
  }
}

/// `tree` with a placeholder for each array: what compile's cache keeps of a call, so it holds none of its arrays.
py::object skeleton(const py::handle& tree) {
  std::vector<array> placeholders(tree_leaves(tree).size(), array(false));
  size_t next = 0;
  return tree_replace(tree, placeholders, next);
}

/// Writes `leaves` (from `next` on) over the arrays of `tree` in place: the containers stay, their arrays change.
void tree_assign(const py::handle& tree, const std::vector<array>& leaves, size_t& next) {
  auto assign = [&](const py::handle& container, const py::handle& key, const py::handle& value) {
    if (is_array(value)) {
      container[key] = py::cast(leaves.at(next++));
    } else {
      tree_assign(value, leaves, next);
    }
  };
  if (py::isinstance<py::list>(tree)) {
    auto list = tree.cast<py::list>();
    for (size_t i = 0; i < list.size(); ++i) {
      assign(list, py::int_(i), list[i]);
    }
  } else if (py::isinstance<py::dict>(tree)) {
    for (auto item : py::list(tree.attr("items")())) {
      assign(tree, item[py::int_(0)], item[py::int_(1)]);
    }
  } else if (py::isinstance<py::tuple>(tree)) {
    for (auto item : tree) {
      if (is_array(item)) {
        throw py::value_error("[compile] State arrays must sit in lists or dicts (a tuple cannot be updated).");
      }
      tree_assign(item, leaves, next);
    }
  }
}

/// compile of a Python function of pytrees: one compiled nuvec Function per argument structure. Implicit state
/// (MLX's inputs= and outputs=: model parameters, optimizer state) joins the compiled function's inputs and
/// outputs, and the outputs' new values are written back into their containers after each call.
class Compiled {
 public:
  Compiled(py::function fun, py::object inputs, py::object outputs, bool shapeless)
      : fun_(std::move(fun)),
        state_in_(std::move(inputs)),
        state_out_(std::move(outputs)),
        shapeless_(shapeless),
        random_state_(holds_random_state(state_in_) || holds_random_state(state_out_)) {}

  py::object call(const py::args& args, const py::kwargs& kwargs) {
    if (!random_state_) {
      return run(args, kwargs);
    }
    // mx.random.state in the state: the key goes in as an input and its successor comes out. A call that throws
    // leaves the key sequence where it was, not on a placeholder of the trace.
    refresh_random_state();
    const auto key = random::KeySequence::default_().state();
    try {
      return run(args, kwargs);
    } catch (...) {
      random::KeySequence::default_().set_state(key);
      throw;
    }
  }

 private:
  py::object run(const py::args& args, const py::kwargs& kwargs) {
    auto inputs = py::make_tuple(args, kwargs);
    auto state = tree_leaves(state_in_);
    std::string key;
    structure_key(inputs, true, key);
    structure_key(state_in_, false, key);
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      auto entry = std::make_shared<Entry>();
      entry->inputs = skeleton(inputs);
      std::weak_ptr<Entry> weak = entry;
      auto fun = held(fun_);
      auto state_in = held(state_in_);
      auto state_out = held(state_out_);
      entry->compiled = compile(
          [fun, weak, state_in, state_out, random_state = random_state_](const std::vector<array>& xs) {
            auto e = weak.lock();
            size_t next = 0;
            auto rebuilt = tree_replace(e->inputs, xs, next);
            tree_assign(*state_in, xs, next);  // the key's placeholder goes to the sequence
            auto result = (*fun)(*rebuilt[py::int_(0)], **rebuilt[py::int_(1)]);
            if (random_state) {
              refresh_random_state();  // the key after the trace's draws, an output
            }
            auto outs = tree_leaves(result);
            e->output = skeleton(result);
            e->output_count = outs.size();
            auto new_state = tree_leaves(*state_out);
            outs.insert(outs.end(), new_state.begin(), new_state.end());
            return outs;
          },
          shapeless_);
      it = entries_.emplace(key, entry).first;
    }
    auto& entry = *it->second;
    auto flat = tree_leaves(inputs);
    flat.insert(flat.end(), state.begin(), state.end());
    auto results = entry.compiled(flat);
    // Tracing put placeholders into the state's containers: the inputs get their values back (unless tracing
    // added state, as an optimizer's first step does), then the outputs their new ones.
    size_t next = 0;
    if (tree_leaves(state_in_).size() == state.size()) {
      tree_assign(state_in_, state, next);
    }
    next = entry.output_count;
    tree_assign(state_out_, results, next);  // the call's new key continues the sequence
    next = 0;
    return tree_replace(entry.output, results, next);
  }

  struct Entry {
    py::object inputs;  // the structure the function was traced with, without its arrays
    py::object output;  // the structure of its result, without its arrays
    size_t output_count = 0;
    Function compiled;
  };
  py::function fun_;
  py::object state_in_;
  py::object state_out_;
  bool shapeless_;
  bool random_state_;  // the state holds mx.random.state
  std::unordered_map<std::string, std::shared_ptr<Entry>> entries_;
};

/// mx.custom_function: a function with its own vjp, jvp and vmap, given by decorators.
class CustomFunction {
 public:
  explicit CustomFunction(py::function fun) : fun_(std::move(fun)) {}
  py::function set_vjp(py::function f) {
    vjp_ = f;
    return f;
  }
  py::function set_jvp(py::function f) {
    jvp_ = f;
    return f;
  }
  py::function set_vmap(py::function f) {
    vmap_ = f;
    return f;
  }

  py::object call(const py::args& args, const py::kwargs& kwargs) {
    auto leaves = tree_leaves(args);
    auto state = held(CallState{fun_, args, kwargs, py::none()});
    Function traced = [state](const std::vector<array>& xs) {
      py::gil_scoped_acquire gil;
      size_t next = 0;
      auto rebuilt = tree_replace(state->args, xs, next);
      state->output = state->fun(*rebuilt, **state->kwargs);
      return tree_leaves(state->output);
    };
    std::optional<CustomVJPFn> vjp_rule;
    if (vjp_) {
      auto rule = held(*vjp_);
      vjp_rule = [rule, state](const std::vector<array>& primals, const std::vector<array>& cotangents,
                               const std::vector<array>& outputs) {
        py::gil_scoped_acquire gil;
        size_t next = 0;
        auto p = tree_replace(state->args, primals, next);
        next = 0;
        auto c = tree_replace(state->output, cotangents, next);
        next = 0;
        auto o = tree_replace(state->output, outputs, next);
        auto grads = (*rule)(p, c, o);
        return tree_leaves(state->args.size() == 1 && is_array(grads) ? py::make_tuple(grads) : grads);
      };
    }
    std::optional<CustomJVPFn> jvp_rule;
    if (jvp_) {
      auto rule = held(*jvp_);
      jvp_rule = [rule, state](const std::vector<array>& primals, const std::vector<array>& tangents,
                               const std::vector<int>& argnums) {
        py::gil_scoped_acquire gil;
        // The rule sees a tangent for every primal: zeros for those not differentiated.
        std::vector<array> all;
        all.reserve(primals.size());
        for (const auto& p : primals) {
          all.push_back(zeros_like(p));
        }
        for (size_t i = 0; i < argnums.size(); ++i) {
          all[argnums[i]] = tangents[i];
        }
        size_t next = 0;
        auto p = tree_replace(state->args, primals, next);
        next = 0;
        auto t = tree_replace(state->args, all, next);
        return tree_leaves((*rule)(p, t));
      };
    }
    std::optional<CustomVmapFn> vmap_rule;
    if (vmap_) {
      auto rule = held(*vmap_);
      vmap_rule = [rule, state](const std::vector<array>& inputs, const std::vector<int>& axes) {
        py::gil_scoped_acquire gil;
        size_t next = 0;
        auto in = tree_replace(state->args, inputs, next);
        next = 0;
        auto in_axes = axes_like(state->args, axes, next);
        // As MLX's: the only argument and its axes alone, else the arguments' tuple and a tuple of their axes.
        auto returned = state->args.size() == 1 ? (*rule)(in[py::int_(0)], in_axes[py::int_(0)]) : (*rule)(in, in_axes);
        if (!py::isinstance<py::tuple>(returned) || py::len(returned) != 2) {
          throw py::value_error(
              "[custom vmap] The vmap function should return a tuple of 2 items: the outputs and "
              "their vectorization axes.");
        }
        auto result = returned.cast<py::tuple>();
        auto outs = tree_leaves(result[0]);
        std::vector<int> out_axes;
        flat_axes(result[0], result[1], "the custom vmap's output axes", 0, out_axes);
        return std::make_pair(outs, out_axes);
      };
    }
    auto results = custom_function(traced, vjp_rule, jvp_rule, vmap_rule)(leaves);
    size_t next = 0;
    return tree_replace(state->output, results, next);
  }

 private:
  py::function fun_;
  std::optional<py::function> vjp_;
  std::optional<py::function> jvp_;
  std::optional<py::function> vmap_;
};

}  // namespace

void init_transforms(py::module_& m) {
  m.def(
      "value_and_grad",
      [](const py::function& fun, const py::object& argnums, const py::object& argnames) {
        return make_value_and_grad(fun, argnums, argnames, true, "value_and_grad");
      },
      py::arg("fun"), py::arg("argnums") = py::none(), py::arg("argnames") = py::list(),
      "A function returning fun's value and its gradient with respect to the arguments in argnums (default the "
      "first) and argnames; each may be a nested list, tuple or dict of arrays.");
  m.def(
      "grad",
      [](const py::function& fun, const py::object& argnums, const py::object& argnames) {
        return make_value_and_grad(fun, argnums, argnames, false, "grad");
      },
      py::arg("fun"), py::arg("argnums") = py::none(), py::arg("argnames") = py::list(),
      "A function returning the gradient of fun (a scalar, or a tuple whose first element is the scalar) with "
      "respect to the arguments in argnums and argnames.");
  m.def(
      "vjp",
      [](const py::function& fun, const py::object& primals, const py::object& cotangents) {
        auto [outputs, vjps] = vjp(positional_function(fun), array_list(primals, "vjp", "primals"),
                                   array_list(cotangents, "vjp", "cotangents"));
        return py::make_tuple(to_pylist(outputs), to_pylist(vjps));
      },
      py::arg("fun"), py::arg("primals"), py::arg("cotangents"),
      "fun's outputs at primals and the vector-Jacobian products of the cotangents.");
  m.def(
      "jvp",
      [](const py::function& fun, const py::object& primals, const py::object& tangents) {
        auto [outputs, jvps] = jvp(positional_function(fun), array_list(primals, "jvp", "primals"),
                                   array_list(tangents, "jvp", "tangents"));
        return py::make_tuple(to_pylist(outputs), to_pylist(jvps));
      },
      py::arg("fun"), py::arg("primals"), py::arg("tangents"),
      "fun's outputs at primals and the Jacobian-vector products of the tangents.");
  m.def("vmap", &make_vmap, py::arg("fun"), py::arg("in_axes") = 0, py::arg("out_axes") = 0,
        "fun mapped over an axis of its inputs (in_axes: an int, None, or a tree of them matching the arguments) "
        "with the mapped axis of its outputs at out_axes (likewise matching the outputs).");
  m.def(
      "checkpoint",
      [](const py::function& fun) {
        return py::cpp_function([fun](const py::args& args, const py::kwargs& kwargs) {
          auto state = held(CallState{fun, args, kwargs, py::none()});
          Function traced = [state](const std::vector<array>& xs) {
            py::gil_scoped_acquire gil;
            size_t next = 0;
            auto rebuilt = tree_replace(state->args, xs, next);
            state->output = state->fun(*rebuilt, **state->kwargs);
            return tree_leaves(state->output);
          };
          auto results = checkpoint(traced)(tree_leaves(args));
          size_t next = 0;
          return tree_replace(state->output, results, next);
        });
      },
      py::arg("fun"), "fun, recomputed in the backward pass instead of keeping its intermediates.");

  py::class_<Compiled, std::shared_ptr<Compiled>>(m, "_Compiled").def("__call__", &Compiled::call);
  m.def(
      "compile",
      [](const py::function& fun, const py::object& inputs, const py::object& outputs, bool shapeless) {
        return std::make_shared<Compiled>(fun, inputs, outputs, shapeless);
      },
      py::arg("fun"), py::arg("inputs") = py::none(), py::arg("outputs") = py::none(), py::arg("shapeless") = false,
      "fun traced once per argument structure, constant (None, bool, int, float, str), shape and dtype (any shape "
      "with shapeless) and replayed as a fused graph; inputs= and outputs= name state (trees of arrays) read before "
      "and written after each call.");
  m.def("disable_compile", &disable_compile);
  m.def("enable_compile", &enable_compile);

  py::class_<CustomFunction>(m, "custom_function",
                             "A function with its own vjp, jvp and vmap, set with the decorators of the same names.")
      .def(py::init<py::function>(), py::arg("fun"))
      .def("vjp", &CustomFunction::set_vjp, py::arg("f"))
      .def("jvp", &CustomFunction::set_jvp, py::arg("f"))
      .def("vmap", &CustomFunction::set_vmap, py::arg("f"))
      .def("__call__", &CustomFunction::call);
}

}  // namespace nuvec::python
