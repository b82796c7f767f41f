// The array methods MLX offers (a.sum(), a.reshape(2, 3), ...): each forwards to the module function of the same
// name with the array as its first argument, so keywords and defaults are the function's.

#include "python/src/bindings.h"

namespace nuvec::python {
namespace {

/// a.reshape(2, 3) and a.reshape((2, 3)); likewise transpose(1, 0).
py::object packed(const py::args& args) {
  if (args.size() == 1 && (py::isinstance<py::tuple>(args[0]) || py::isinstance<py::list>(args[0]) ||
                           args[0].is_none())) {
    return args[0];
  }
  return args;
}

}  // namespace

void init_array_methods(py::module_& m, py::class_<array>& cls) {
  for (const char* name : {"abs",      "all",      "any",       "argmax",  "argmin",     "conj",         "cos",
                           "cummax",   "cummin",   "cumprod",   "cumsum",  "diag",       "diagonal",     "exp",
                           "flatten",  "log",      "log10",     "log1p",   "log2",       "logcumsumexp", "logsumexp",
                           "max",      "mean",     "min",       "moveaxis", "prod",      "reciprocal",   "round",
                           "rsqrt",    "sin",      "split",     "sqrt",    "square",     "squeeze",      "std",
                           "sum",      "swapaxes", "var",       "view",    "maximum",    "minimum",      "tan",
                           "trace",    "unflatten", "conjugate", "median", "count_nonzero"}) {
    py::object fn = m.attr(name);
    cls.def(name, [fn](py::object self, const py::args& args, const py::kwargs& kwargs) {
      return fn(self, *args, **kwargs);
    });
  }
  py::object reshape_fn = m.attr("reshape");
  cls.def("reshape", [reshape_fn](py::object self, const py::args& shape, const py::kwargs& kwargs) {
    return reshape_fn(self, packed(shape), **kwargs);
  });
  py::object transpose_fn = m.attr("transpose");
  cls.def("transpose", [transpose_fn](py::object self, const py::args& axes, const py::kwargs& kwargs) {
    return axes.size() == 0 ? transpose_fn(self, **kwargs) : transpose_fn(self, packed(axes), **kwargs);
  });
}

}  // namespace nuvec::python
