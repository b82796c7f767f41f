#include "nuvec/nn/module.h"

#include <algorithm>

#include "nuvec/core/ops.h"

namespace nuvec::nn {

namespace {

void flatten_into(const ParamTree& tree, const std::string& prefix, Params& out) {
  if (tree.value) {
    out.emplace_back(prefix, *tree.value);
  }
  for (const auto& [name, child] : tree.children) {
    flatten_into(child, prefix.empty() ? name : prefix + "." + name, out);
  }
}

std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

}  // namespace

ParamTree tree_unflatten(const Params& flat) {
  ParamTree root;
  for (const auto& [name, value] : flat) {
    ParamTree* node = &root;
    size_t start = 0;
    while (true) {
      auto dot = name.find('.', start);
      node = &node->children[name.substr(start, dot == std::string::npos ? std::string::npos : dot - start)];
      if (dot == std::string::npos) {
        break;
      }
      start = dot + 1;
    }
    node->value = value;
  }
  return root;
}

Params tree_flatten(const ParamTree& tree) {
  Params out;
  flatten_into(tree, "", out);
  return out;
}

const array* find_param(const Params& params, const std::string& name) {
  for (const auto& [key, value] : params) {
    if (key == name) {
      return &value;
    }
  }
  return nullptr;
}

array* Module::ParamSlot::get() const {
  if (value != nullptr) {
    return value;
  }
  return optional_value->has_value() ? &**optional_value : nullptr;
}

std::string Module::join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

std::string Module::describe() const {
  // Appending in place (rather than chained operator+) also avoids a false -Wrestrict in GCC 12.
  std::string out = "[";
  out += type_name();
  if (!path_.empty()) {
    out += ' ';
    out += path_;
  }
  out += ']';
  return out;
}

void Module::fail(const std::string& message) const { throw_invalid(describe() + " " + message); }

void Module::check_input(const array& x, int min_ndim, std::optional<int> last, const char* what) const {
  if (!is_floating(x.dtype())) {
    fail(std::string("expected a floating-point ") + what + "; given dtype " + std::string(dtype_name(x.dtype())) +
         ".");
  }
  if (x.ndim() < min_ndim || (last && x.shape(-1) != *last)) {
    std::string expected = "at least " + std::to_string(min_ndim) + " axes";
    if (last) {
      expected = "shape (..., " + std::to_string(*last) + ")";
    }
    fail(std::string("expected ") + what + " of " + expected + "; given shape " + shape_string(x.shape()) + ".");
  }
}

void Module::register_parameter(std::string name, array& member) {
  params_.push_back({std::move(name), &member, nullptr, false});
}

void Module::register_parameter(std::string name, std::optional<array>& member) {
  params_.push_back({std::move(name), nullptr, &member, false});
}

void Module::register_buffer(std::string name, array& member) {
  params_.push_back({std::move(name), &member, nullptr, true});
}

void Module::add_child(std::string name, std::function<Module*()> get,
                       std::function<void(const std::string&, std::shared_ptr<Module>)> set) {
  if (Module* child = get()) {
    child->set_paths(join(path_, name));
  }
  children_.push_back({std::move(name), std::move(get), std::move(set)});
}

void Module::set_paths(const std::string& path) {
  path_ = path;
  for (const auto& slot : children_) {
    if (Module* child = slot.get()) {
      child->set_paths(join(path_, slot.name));
    }
  }
}

void Module::set_child(const std::string& name, std::shared_ptr<Module> module) {
  for (auto& slot : children_) {
    if (slot.name == name) {
      module->set_paths(join(path_, name));
      module->train(training_);
      slot.set(name, std::move(module));
      return;
    }
  }
  fail("has no child called '" + name + "'.");
}

void Module::collect(const std::string& prefix, bool trainable_only, Params& out) const {
  for (const auto& slot : params_) {
    const array* value = slot.get();
    if (value == nullptr || (trainable_only && (slot.buffer || frozen_.contains(slot.name)))) {
      continue;
    }
    out.emplace_back(join(prefix, slot.name), *value);
  }
  for (const auto& slot : children_) {
    if (const Module* child = slot.get()) {
      child->collect(join(prefix, slot.name), trainable_only, out);
    }
  }
}

Params Module::parameters() const {
  Params out;
  collect("", false, out);
  return out;
}

Params Module::trainable_parameters() const {
  Params out;
  collect("", true, out);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::children() const {
  std::vector<std::pair<std::string, Module*>> out;
  for (const auto& slot : children_) {
    if (Module* child = slot.get()) {
      out.emplace_back(slot.name, child);
    }
  }
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::modules() {
  std::vector<std::pair<std::string, Module*>> out;
  apply_to_modules([&out](const std::string& path, Module& m) { out.emplace_back(path, &m); });
  return out;
}

void Module::apply_to_modules(const std::function<void(const std::string&, Module&)>& fn) {
  std::function<void(const std::string&, Module&)> walk = [&](const std::string& prefix, Module& m) {
    fn(prefix, m);
    for (const auto& [name, child] : m.children()) {
      walk(join(prefix, name), *child);
    }
  };
  walk("", *this);
}

Module::ParamSlot* Module::find_slot(const std::string& name) {
  auto dot = name.find('.');
  if (dot == std::string::npos) {
    for (auto& slot : params_) {
      if (slot.name == name) {
        return &slot;
      }
    }
    return nullptr;
  }
  // Child names may hold dots themselves only through containers, which name children "0", "1", ...: match the
  // longest child name that prefixes `name`.
  for (const auto& slot : children_) {
    if (name.size() > slot.name.size() && name.compare(0, slot.name.size(), slot.name) == 0 &&
        name[slot.name.size()] == '.') {
      if (Module* child = slot.get()) {
        if (auto* found = child->find_slot(name.substr(slot.name.size() + 1))) {
          return found;
        }
      }
    }
  }
  return nullptr;
}

void Module::update(const Params& params) {
  std::vector<std::pair<ParamSlot*, const array*>> targets;
  std::vector<std::string> unknown;
  for (const auto& [name, value] : params) {
    ParamSlot* slot = find_slot(name);
    if (slot == nullptr) {
      unknown.push_back(name);
    } else {
      targets.emplace_back(slot, &value);
    }
  }
  if (!unknown.empty()) {
    fail("has no parameters called: " + join_list(unknown) + ".");
  }
  for (auto [slot, value] : targets) {
    if (slot->value != nullptr) {
      *slot->value = *value;
    } else {
      *slot->optional_value = *value;
    }
  }
}

LoadReport Module::load_weights(const Params& weights, bool strict) {
  LoadReport report;
  Params current = parameters();
  Params accepted;
  std::set<std::string> given;
  for (const auto& [name, value] : weights) {
    given.insert(name);
    const array* have = find_param(current, name);
    if (have == nullptr) {
      report.unexpected.push_back(name);
    } else if (have->shape() != value.shape()) {
      report.mismatched.push_back(name + ": expected " + shape_string(have->shape()) + ", given " +
                                  shape_string(value.shape()));
    } else {
      accepted.emplace_back(name, value);
    }
  }
  for (const auto& [name, value] : current) {
    if (!given.contains(name)) {
      report.missing.push_back(name);
    }
  }
  bool clean = report.missing.empty() && report.unexpected.empty() && report.mismatched.empty();
  if (strict && !clean) {
    std::string message = "cannot load the weights:";
    if (!report.missing.empty()) {
      message += " missing " + join_list(report.missing) + ";";
    }
    if (!report.unexpected.empty()) {
      message += " unexpected " + join_list(report.unexpected) + ";";
    }
    if (!report.mismatched.empty()) {
      message += " mis-shaped " + join_list(report.mismatched) + ";";
    }
    message.back() = '.';
    fail(message);
  }
  update(accepted);
  return report;
}

void Module::apply(const std::function<array(const std::string&, const array&)>& fn,
                   const std::function<bool(const std::string&, const array&)>& filter) {
  Params mapped;
  for (const auto& [name, value] : parameters()) {
    if (!filter || filter(name, value)) {
      mapped.emplace_back(name, fn(name, value));
    }
  }
  update(mapped);
}

void Module::freeze(bool recurse, const std::vector<std::string>& keys) {
  auto mark = [&keys](Module& m) {
    for (const auto& slot : m.params_) {
      if (keys.empty() || std::find(keys.begin(), keys.end(), slot.name) != keys.end()) {
        m.frozen_.insert(slot.name);
      }
    }
  };
  if (recurse) {
    apply_to_modules([&](const std::string&, Module& m) { mark(m); });
  } else {
    mark(*this);
  }
}

void Module::unfreeze(bool recurse, const std::vector<std::string>& keys) {
  auto clear = [&keys](Module& m) {
    if (keys.empty()) {
      m.frozen_.clear();
    } else {
      for (const auto& key : keys) {
        m.frozen_.erase(key);
      }
    }
  };
  if (recurse) {
    apply_to_modules([&](const std::string&, Module& m) { clear(m); });
  } else {
    clear(*this);
  }
}

void Module::train(bool mode) {
  apply_to_modules([mode](const std::string&, Module& m) { m.training_ = mode; });
}

}  // namespace nuvec::nn
