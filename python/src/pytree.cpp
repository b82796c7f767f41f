#include "python/src/pytree.h"

namespace nuvec::python {
namespace {

void collect(py::handle tree, std::vector<array>& out) {
  if (is_array(tree)) {
    out.push_back(array_of(tree));
  } else if (py::isinstance<py::list>(tree) || py::isinstance<py::tuple>(tree)) {
    for (auto item : tree) {
      collect(item, out);
    }
  } else if (py::isinstance<py::dict>(tree)) {
    for (auto item : tree.cast<py::dict>()) {
      collect(item.second, out);
    }
  }
}

}  // namespace

std::vector<array> tree_leaves(py::handle tree) {
  std::vector<array> out;
  collect(tree, out);
  return out;
}

py::object tree_replace(py::handle tree, const std::vector<array>& leaves, size_t& next) {
  if (is_array(tree)) {
    return py::cast(leaves.at(next++));
  }
  if (py::isinstance<py::list>(tree)) {
    py::list out;
    for (auto item : tree) {
      out.append(tree_replace(item, leaves, next));
    }
    return out;
  }
  if (py::isinstance<py::tuple>(tree)) {
    py::list items;
    for (auto item : tree) {
      items.append(tree_replace(item, leaves, next));
    }
    // Named tuples keep their type.
    if (PyTuple_CheckExact(tree.ptr()) == 0) {
      return tree.get_type()(*items);
    }
    return py::tuple(items);
  }
  if (py::isinstance<py::dict>(tree)) {
    py::dict out;
    for (auto item : tree.cast<py::dict>()) {
      out[item.first] = tree_replace(item.second, leaves, next);
    }
    return out;
  }
  return py::reinterpret_borrow<py::object>(tree);
}

}  // namespace nuvec::python
