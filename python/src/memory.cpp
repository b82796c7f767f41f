// eval, async_eval and the allocator's statistics and limits.

#include "nuvec/core/allocator.h"
#include "nuvec/core/eval.h"
#include "python/src/bindings.h"
#include "python/src/pytree.h"

namespace nuvec::python {

void init_memory(py::module_& m) {
  m.def(
      "eval",
      [](const py::args& args) {
        // One array, the common case, skips the tree walk (this is on the per-op path of eager-style code).
        if (args.size() == 1 && py::isinstance<array>(args[0])) {
          auto a = args[0].cast<array>();
          eval_released(a);
          return;
        }
        auto outputs = tree_leaves(args);
        py::gil_scoped_release release;
        eval(outputs);
      },
      "Computes the arrays in the arguments (nested lists, tuples and dicts of arrays), releasing the GIL.");
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
