#pragma once

// Modules: a tree of named parameters and named child modules, as mlx.nn.Module and torch.nn.Module. A module
// registers its array members and child-module members by name in its constructor (one call each); the tree is
// then walked by name (`layers.0.attn.q_proj.weight`) for flattening, updating, freezing, loading and quantizing.
// Modules hold pointers to their own members, so they are neither copied nor moved: create them with
// std::make_shared, or as members of other modules.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "nuvec/core/array.h"
#include "nuvec/core/error.h"

namespace nuvec::nn {

/// A flat list of (dotted name, array), in registration order: the form parameters, gradients and optimizer state
/// travel in.
using Params = std::vector<std::pair<std::string, array>>;

/// A nested view of a parameter list: each level maps a name part to a sub-tree, leaves hold arrays.
struct ParamTree {
  std::optional<array> value;
  std::map<std::string, ParamTree> children;
};
/// Splits dotted names into a nested tree (`a.b.c` becomes children a -> b -> c).
ParamTree tree_unflatten(const Params& flat);
/// Joins a tree back into dotted names (children in name order).
Params tree_flatten(const ParamTree& tree);
/// The entry of `params` called `name`, or nullptr.
const array* find_param(const Params& params, const std::string& name);

/// What a non-strict load found: names absent from the weights, names the model does not have, and entries whose
/// shape differs ("name: expected (a,b), given (c,d)").
struct LoadReport {
  std::vector<std::string> missing;
  std::vector<std::string> unexpected;
  std::vector<std::string> mismatched;
};

/// The base of every layer: named parameters, buffers and children, a training flag, and the tree walks built on
/// them. Errors name the layer as "[Type path]" and throw nuvec::error (invalid argument).
class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Module(Module&&) = delete;
  Module& operator=(Module&&) = delete;
  virtual ~Module() = default;

  /// The class name used in messages ("Linear").
  [[nodiscard]] virtual std::string type_name() const = 0;
  /// This module's dotted path from the root of its tree ("" for the root).
  [[nodiscard]] const std::string& path() const { return path_; }
  /// "[Linear layers.0.fc]": how error messages name a layer.
  [[nodiscard]] std::string describe() const;

  /// Every parameter of the tree, with dotted names (buffers such as running statistics included).
  [[nodiscard]] Params parameters() const;
  /// The parameters that are not frozen (what gradients and optimizers see).
  [[nodiscard]] Params trainable_parameters() const;
  /// parameters() as a nested tree.
  [[nodiscard]] ParamTree parameter_tree() const { return tree_unflatten(parameters()); }
  /// The direct children, by name (slots holding no module are skipped).
  [[nodiscard]] std::vector<std::pair<std::string, Module*>> children() const;
  /// Every module of the tree with its path, this one first (depth first, registration order).
  [[nodiscard]] std::vector<std::pair<std::string, Module*>> modules();

  /// Replaces parameters (and buffers) by dotted name, the arrays taken as given. Any unknown name throws, listing
  /// them all, before anything changes; shapes and dtypes are not checked (see load_weights).
  void update(const Params& params);
  /// update() from a nested tree.
  void update(const ParamTree& tree) { update(tree_flatten(tree)); }
  /// Loads weights by name, each keeping its own dtype. Strict (default): any missing, unexpected or mis-shaped
  /// entry throws one error listing all of them and nothing is changed. Not strict: loads the entries whose name
  /// and shape match, reports the rest.
  LoadReport load_weights(const Params& weights, bool strict = true);
  /// Saves parameters() to a safetensors file (PyTorch and Hugging Face state-dict names); a file that cannot be
  /// written throws an io error.
  void save_weights(const std::string& file) const;
  /// load_weights from a safetensors file; a missing or malformed file throws an io error.
  LoadReport load_weights(const std::string& file, bool strict = true);

  /// Maps every parameter and buffer (all of them, or those `filter` accepts, given the dotted name and value)
  /// through fn: casts, copies, re-initialization.
  void apply(const std::function<array(const std::string&, const array&)>& fn,
             const std::function<bool(const std::string&, const array&)>& filter = {});
  /// Calls fn on every module of the tree with its path relative to this one ("" for this one), this one first.
  void apply_to_modules(const std::function<void(const std::string&, Module&)>& fn);

  /// Freezes parameters so trainable_parameters() leaves them out: all of them, or those whose local name (in
  /// this module, or in every module of the tree when `recurse`) is in `keys`. Keys no module has are ignored.
  void freeze(bool recurse = true, const std::vector<std::string>& keys = {});
  /// Undoes freeze() for all parameters, or for the local names in `keys`, in this module or the whole tree.
  void unfreeze(bool recurse = true, const std::vector<std::string>& keys = {});

  /// Training mode (dropout active, batch statistics) or evaluation mode, for the whole tree; modules start in
  /// training mode.
  void train(bool mode = true);
  /// train(false).
  void eval() { train(false); }
  /// Whether this module is in training mode.
  [[nodiscard]] bool training() const { return training_; }

  /// Replaces the child called `name` (a direct child), giving the new module this tree's path and mode; throws if
  /// there is no such child or the new module does not fit the member's type.
  void set_child(const std::string& name, std::shared_ptr<Module> module);

 protected:
  /// Registers an array member as a parameter called `name` (trained unless frozen).
  void register_parameter(std::string name, array& member);
  /// Registers an optional array member; it counts as a parameter while it holds a value.
  void register_parameter(std::string name, std::optional<array>& member);
  /// Registers a state array that is saved and loaded but never trained (running statistics).
  void register_buffer(std::string name, array& member);
  /// Registers a child-module member called `name`; `quantize` and set_child may later swap in a subclass of T.
  template <class T>
  void register_module(std::string name, std::shared_ptr<T>& member) {
    add_child(
        std::move(name), [&member]() -> Module* { return member.get(); },
        [&member, this](const std::string& child, const std::shared_ptr<Module>& m) {
          auto typed = std::dynamic_pointer_cast<T>(m);
          if (!typed) {
            throw_invalid(describe() + " cannot put a " + m->type_name() + " in place of child '" + child + "'.");
          }
          member = std::move(typed);
        });
  }
  /// Registers one child-module slot with how to read and replace it (containers use this).
  void add_child(std::string name, std::function<Module*()> get,
                 std::function<void(const std::string&, std::shared_ptr<Module>)> set);

  /// Throws "[Type path] message" (invalid argument).
  [[noreturn]] void fail(const std::string& message) const;
  /// Checks that `x` is floating point and has at least `min_ndim` axes, with `last` on its last axis when given.
  void check_input(const array& x, int min_ndim, std::optional<int> last, const char* what = "input") const;

 private:
  struct ParamSlot {
    std::string name;
    array* value;
    std::optional<array>* optional_value;
    bool buffer;
    array* get() const;
  };
  struct ChildSlot {
    std::string name;
    std::function<Module*()> get;
    std::function<void(const std::string&, std::shared_ptr<Module>)> set;
  };

  void collect(const std::string& prefix, bool trainable_only, Params& out) const;
  void set_paths(const std::string& path);
  ParamSlot* find_slot(const std::string& name);
  static std::string join(const std::string& prefix, const std::string& name);

  std::string path_;
  bool training_ = true;
  std::vector<ParamSlot> params_;
  std::vector<ChildSlot> children_;
  std::set<std::string> frozen_;
};

/// A module with one input and one output: what Sequential chains and the activations are.
class UnaryModule : public Module {
 public:
  /// The layer's output for x.
  virtual array forward(const array& x) = 0;
  /// forward(x).
  array operator()(const array& x) { return forward(x); }
};

}  // namespace nuvec::nn
