// nuvec.core: MLX's mlx.core over nuvec.

#include "python/src/bindings.h"

#include "nuvec/core/error.h"

namespace nuvec::python {
namespace {

/// nuvec's errors as Python's: ValueError for invalid arguments, IndexError, OverflowError (a dimension past
/// int32, as MLX), MemoryError, and RuntimeError for io and internal failures; the message is nuvec's.
void translate_errors(std::exception_ptr p) {
  try {
    if (p) {
      std::rethrow_exception(p);
    }
  } catch (const nuvec::error& e) {
    PyObject* type = PyExc_RuntimeError;
    switch (e.kind()) {
      case ErrorKind::invalid_argument:
      case ErrorKind::unsupported:
        type = PyExc_ValueError;
        break;
      case ErrorKind::out_of_range:
        type = PyExc_IndexError;
        break;
      case ErrorKind::overflow:
        type = PyExc_OverflowError;
        break;
      case ErrorKind::out_of_memory:
        type = PyExc_MemoryError;
        break;
      case ErrorKind::io:
      case ErrorKind::internal:
        type = PyExc_RuntimeError;
        break;
    }
    PyErr_SetString(type, e.what());
  }
}

}  // namespace
}  // namespace nuvec::python

PYBIND11_MODULE(core, m) {
  using namespace nuvec::python;
  m.doc() = "nuvec's arrays, ops and transforms with MLX's Python API (import nuvec.core as mx).";
  py::register_exception_translator(translate_errors);
  init_dtypes(m);
  init_device(m);
  auto cls = init_array(m);
  init_operators(cls);
  init_buffer(cls);
  init_dlpack(m, cls);
  init_indexing(cls);
  init_ops_creation(m);
  init_ops_elementwise(m, cls);
  init_ops_reduce(m, cls);
  init_ops_layout(m, cls);
  init_ops_indexing(m);
  init_ops_products(m);
  init_ops_utilities(m);
  init_array_methods(m, cls);
  init_transforms(m);
  init_linalg(m);
  init_fft(m);
  init_random(m);
  init_fast(m);
  init_io(m);
  init_memory(m);
  init_export(m);
  init_distributed(m);
}
