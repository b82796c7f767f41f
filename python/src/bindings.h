#pragma once

// The pieces of the nuvec.core module, one per binding file; module.cpp calls them in order.

#include "python/src/convert.h"

namespace nuvec::python {

void init_dtypes(py::module_& m);
void init_device(py::module_& m);
ArrayClass init_array(py::module_& m);
void init_operators(ArrayClass& cls);
void init_buffer(ArrayClass& cls);
void init_dlpack(py::module_& m, ArrayClass& cls);
void init_indexing(ArrayClass& cls);
void init_ops_creation(py::module_& m);
void init_ops_elementwise(py::module_& m, ArrayClass& cls);
void init_ops_reduce(py::module_& m, ArrayClass& cls);
void init_ops_layout(py::module_& m, ArrayClass& cls);
void init_ops_indexing(py::module_& m);
void init_ops_products(py::module_& m);
void init_ops_utilities(py::module_& m);
void init_array_methods(py::module_& m, ArrayClass& cls);
void init_transforms(py::module_& m);
void init_linalg(py::module_& m);
void init_fft(py::module_& m);
void init_random(py::module_& m);
void init_fast(py::module_& m);
void init_io(py::module_& m);
void init_memory(py::module_& m);
void init_export(py::module_& m);
void init_distributed(py::module_& m);

}  // namespace nuvec::python
