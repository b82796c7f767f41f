// The array methods MLX offers (a.exp(), a.cumsum(...), ...) that forward to the module function of the same name
// with the array as its first argument, so keywords and defaults are the function's. The per-call ones (reductions,
// reshape, transpose, astype...) are bound on the fast-call path beside their functions instead.

#include "python/src/bindings.h"

namespace nuvec::python {

void init_array_methods(py::module_& m, py::class_<array>& cls) {
  for (const char* name :
       {"abs", "conj",  "cos",   "cummax", "cummin",       "cumprod", "cumsum",    "diag",       "diagonal", "exp",
        "log", "log10", "log1p", "log2",   "logcumsumexp", "maximum", "minimum",   "reciprocal", "round",    "rsqrt",
        "sin", "split", "sqrt",  "square", "tan",          "trace",   "unflatten", "view",       "conjugate"}) {
    py::object fn = m.attr(name);
    cls.def(name, [fn](py::object self, const py::args& args, const py::kwargs& kwargs) {
      return fn(self, *args, **kwargs);
    });
  }
}

}  // namespace nuvec::python
