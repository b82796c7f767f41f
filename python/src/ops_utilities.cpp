// Utilities over arrays: result_type, number_of_elements and depends.

#include "python/src/bindings.h"

namespace nuvec::python {

void init_ops_utilities(py::module_& m) {
  m.def(
      "result_type",
      [](const py::args& arrays) {
        std::vector<array> xs;
        for (auto a : arrays) {
          xs.push_back(to_array(a));
        }
        return result_type(xs);
      },
      "The dtype the arrays promote to together.");
  m.def(
      "number_of_elements",
      [](const py::object& a, std::vector<int> axes, bool inverted, Dtype dtype, StreamOrDevice s) {
        return number_of_elements(to_array(a), std::move(axes), inverted, dtype, s);
      },
      py::arg("a"), py::arg("axes"), py::arg("inverted") = false, py::arg("dtype") = int32, py::kw_only(),
      py::arg("stream") = py::none(), "The product of the sizes of axes (or its inverse) as a scalar of dtype.");
  m.def(
      "depends",
      [](const py::object& inputs, const py::object& dependencies) {
        auto to_list = [](const py::object& value) {
          std::vector<array> xs;
          if (is_array(value)) {
            xs.push_back(value.cast<array>());
          } else {
            for (auto x : value.cast<py::sequence>()) {
              xs.push_back(to_array(x));
            }
          }
          return xs;
        };
        return depends(to_list(inputs), to_list(dependencies));
      },
      py::arg("inputs"), py::arg("dependencies"), "inputs, evaluated only after dependencies.");
}

}  // namespace nuvec::python
