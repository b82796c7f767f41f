// nuvec._nn: the C++ nn library (layers, activations, losses, initializers, optimizers, schedules) for nuvec.nn and
// nuvec.optimizers, which keep mlx.nn's Python semantics over it (python/nuvec/nn/module.py). A module of its own,
// loaded by `import nuvec.nn`.

#include <pybind11/stl.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "python/src/nn_module.h"

namespace nuvec::python {
namespace {

/// Appends the arrays of a Python module's dict (and of the dicts and lists of dicts below it) to `out` by dotted
/// name: the layout of mlx.nn's parameters(), which the C++ layers share.
void collect(py::handle tree, std::string& prefix, nn::Params& out) {
  if (PyList_Check(tree.ptr()) != 0) {
    // Children the C++ layer keeps in a vector ("layers.0", "layers.1"), a list in the Python module.
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(tree.ptr()); ++i) {
      PyObject* item = PyList_GET_ITEM(tree.ptr(), i);
      if (PyDict_Check(item) != 0) {
        const size_t size = prefix.size();
        prefix.append(std::to_string(i)).push_back('.');
        collect(item, prefix, out);
        prefix.resize(size);
      }
    }
    return;
  }
  PyObject* key = nullptr;
  PyObject* value = nullptr;
  Py_ssize_t pos = 0;
  while (PyDict_Next(tree.ptr(), &pos, &key, &value) != 0) {
    if (PyUnicode_Check(key) == 0) {
      continue;
    }
    if (is_array(value)) {
      out.emplace_back(prefix + PyUnicode_AsUTF8(key), array_of(value));
    } else if (PyDict_Check(value) != 0 || PyList_Check(value) != 0) {
      const size_t size = prefix.size();
      prefix.append(PyUnicode_AsUTF8(key)).push_back('.');
      collect(value, prefix, out);
      prefix.resize(size);
    }
  }
}

/// The parameters of `module` that parameters() lists and trainable_parameters() does not: its buffers.
nn::Params buffers(const nn::Module& module) {
  const auto trainable = module.trainable_parameters();
  nn::Params out;
  for (auto& [name, value] : module.parameters()) {
    if (nn::find_param(trainable, name) == nullptr) {
      out.emplace_back(std::move(name), std::move(value));
    }
  }
  return out;
}

}  // namespace

void init_nn_module(py::module_& m) {
  py::class_<nn::Module, std::shared_ptr<nn::Module>>(m, "Module", "A C++ layer, wrapped by nuvec.nn's CppModule.")
      .def("type_name", &nn::Module::type_name, "The layer's class name (\"Linear\").")
      .def_property_readonly("training", &nn::Module::training, "Whether the layer is in training mode.")
      .def(
          "_local_parameters",
          [](const nn::Module& self) {
            const auto buffer_list = buffers(self);
            std::vector<std::tuple<std::string, array, bool>> out;
            for (auto& [name, value] : self.parameters()) {
              if (name.find('.') == std::string::npos) {
                const bool buffer = nn::find_param(buffer_list, name) != nullptr;
                out.emplace_back(std::move(name), std::move(value), buffer);
              }
            }
            return out;
          },
          "The layer's own parameters (not its children's) as (name, value, is_buffer).")
      .def("_children", &nn::Module::children, py::return_value_policy::reference_internal,
           "The direct child layers as (name, layer).")
      .def(
          "_buffers", [](const nn::Module& self) { return buffers(self); },
          "Every buffer of the tree (running statistics) as (dotted name, value).")
      .def(
          "_load",
          [](nn::Module& self, py::handle tree, bool training) {
            nn::Params params;
            std::string prefix;
            collect(tree, prefix, params);
            self.update(params);
            if (self.training() != training) {
              self.train(training);
            }
          },
          py::arg("tree"), py::arg("training"),
          "Sets the parameters of the tree from a dict of arrays and dicts (mlx.nn's layout, dotted names as "
          "parameters()) and the training mode; an array the layer does not have throws.")
      .def("_set_child", &nn::Module::set_child, py::arg("name"), py::arg("module"),
           "Replaces a direct child layer with another C++ layer of a fitting type.");
  py::class_<nn::UnaryModule, nn::Module, std::shared_ptr<nn::UnaryModule>>(m, "UnaryModule")
      .def("__call__", &nn::UnaryModule::forward, py::arg("x"), "The layer's forward on x.");
}

}  // namespace nuvec::python

PYBIND11_MODULE(_nn, m) {
  using namespace nuvec::python;
  m.doc() = "The C++ nn library (layers, activations, losses, initializers, optimizers and schedules) for nuvec.nn.";
  // Arrays and dtypes pass as nuvec.core's objects, whose types this module finds there.
  auto core = py::module_::import("nuvec.core");
  set_array_type(core.attr("array"));
  init_nn_module(m);
  init_nn_layers(m);
  init_nn_functions(m);
  init_optimizers(m);
}
