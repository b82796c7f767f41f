// The array methods MLX offers (a.diagonal(), a.trace(), a.unflatten()) that forward to the module function of the
// same name with the array as its first argument, so keywords and defaults are the function's. The per-call ones
// (element-wise math, reductions, cumulative ops, reshape, transpose, astype, round, split, diag, view...) are bound
// on the fast-call path beside their functions instead.

#include "python/src/bindings.h"

namespace nuvec::python {

void init_array_methods(py::module_& m, ArrayClass& cls) {
  for (const char* name : {"diagonal", "trace", "unflatten"}) {
    py::object fn = m.attr(name);
    cls.def(name, [fn](const py::object& self, const py::args& args, const py::kwargs& kwargs) {
      return fn(self, *args, **kwargs);
    });
  }
}

}  // namespace nuvec::python
