#pragma once

// The pieces of nuvec._nn (the C++ nn library under nuvec.nn and nuvec.optimizers), one per binding file; nn.cpp
// calls them in order. C++ layers are bound with their base, Module, whose `_load` takes the Python module (a dict
// of arrays and child dicts, mlx.nn's layout) and sets the C++ parameters from it before a forward.

#include <pybind11/pybind11.h>

#include <memory>

#include "nuvec/nn/module.h"
#include "python/src/array_object.h"

namespace nuvec::python {

/// A C++ layer class as Python sees it: shared ownership, a Module (or UnaryModule) base.
template <class T, class Base = nn::UnaryModule>
using LayerClass = py::class_<T, Base, std::shared_ptr<T>>;

void init_nn_module(py::module_& m);
void init_nn_layers(py::module_& m);
void init_nn_functions(py::module_& m);
void init_optimizers(py::module_& m);

}  // namespace nuvec::python
