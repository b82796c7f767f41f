// eval, async_eval and the allocator's statistics and limits.

#include "nuvec/core/allocator.h"
#include "nuvec/core/eval.h"
#include "python/src/bindings.h"
#include "python/src/pytree.h"

namespace nuvec::python {

namespace {

/// eval(*args), called by Python without pybind11's dispatcher: in eager-style code it follows every op.
PyObject* eval_args(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  try {
    if (nargs == 1 && is_array(args[0])) {
      eval_released(array_of(args[0]));
      Py_RETURN_NONE;
    }
    std::vector<array> outputs;
    for (Py_ssize_t i = 0; i < nargs; ++i) {
      auto leaves = tree_leaves(args[i]);
      outputs.insert(outputs.end(), leaves.begin(), leaves.end());
    }
    {
      py::gil_scoped_release release;
      eval(std::move(outputs));
    }
    Py_RETURN_NONE;
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

// The first line is the signature, as pybind11 writes it (the stubs read it).
PyMethodDef eval_def = {
    "eval", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&eval_args)), METH_FASTCALL,
    "eval(*args) -> None\n\nComputes the arrays in the arguments (nested lists, tuples and dicts of arrays), "
    "releasing the GIL.\n"};

}  // namespace

void init_memory(py::module_& m) {
  auto eval_fn = py::reinterpret_steal<py::object>(PyCFunction_NewEx(&eval_def, nullptr, m.attr("__name__").ptr()));
  if (!eval_fn) {
    throw py::error_already_set();
  }
  m.add_object("eval", eval_fn);
  m.def(
      "async_eval",
      [](const py::args& args) {
        auto outputs = tree_leaves(args);
        py::gil_scoped_release release;
        async_eval(outputs);
      },
      "Starts computing the arrays in the arguments and returns at once.");
  m.def("get_active_memory", &get_active_memory);
  m.def("get_peak_memory", &get_peak_memory);
  m.def("reset_peak_memory", &reset_peak_memory);
  m.def("get_cache_memory", &get_cache_memory);
  m.def("get_memory_limit", &get_memory_limit);
  m.def("set_memory_limit", &set_memory_limit, py::arg("limit"));
  m.def("set_cache_limit", &set_cache_limit, py::arg("limit"));
  m.def("clear_cache", &clear_cache);
}

}  // namespace nuvec::python
