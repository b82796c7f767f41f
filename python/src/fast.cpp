// nuvec.core.fast: the fused ops (each has a composition that gives its transforms).

#include "nuvec/core/fast.h"
#include "python/src/bindings.h"

namespace nuvec::python {

void init_fast(py::module_& parent) {
  auto m = parent.def_submodule("fast", "Fused operations.");
  m.def(
      "rms_norm",
      [](py::object x, py::object weight, float eps, StreamOrDevice s) {
        return fast::rms_norm(to_array(x), to_optional_array(weight), eps, s);
      },
      py::arg("x"), py::arg("weight"), py::arg("eps"), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "layer_norm",
      [](py::object x, py::object weight, py::object bias, float eps, StreamOrDevice s) {
        return fast::layer_norm(to_array(x), to_optional_array(weight), to_optional_array(bias), eps, s);
      },
      py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("eps"), py::kw_only(), py::arg("stream") = py::none());
  m.def(
      "rope",
      [](py::object a, int dims, bool traditional, std::optional<float> base, float scale, py::object offset,
         py::object freqs, StreamOrDevice s) {
        auto x = to_array(a);
        auto f = to_optional_array(freqs);
        if (py::isinstance<py::int_>(offset)) {
          return fast::rope(x, dims, traditional, base, scale, offset.cast<int>(), f, s);
        }
        return fast::rope(x, dims, traditional, base, scale, to_array(offset), f, s);
      },
      py::arg("a"), py::arg("dims"), py::kw_only(), py::arg("traditional"), py::arg("base"), py::arg("scale"),
      py::arg("offset"), py::arg("freqs") = py::none(), py::arg("stream") = py::none());
  m.def(
      "scaled_dot_product_attention",
      [](py::object q, py::object k, py::object v, float scale, py::object mask, py::object sinks, StreamOrDevice s) {
        std::string mode;
        std::optional<array> mask_array;
        if (py::isinstance<py::str>(mask)) {
          mode = mask.cast<std::string>();
        } else if (!mask.is_none()) {
          mode = "array";
          mask_array = to_array(mask);
        }
        return fast::scaled_dot_product_attention(to_array(q), to_array(k), to_array(v), scale, mode, mask_array,
                                                  to_optional_array(sinks), false, s);
      },
      py::arg("q"), py::arg("k"), py::arg("v"), py::kw_only(), py::arg("scale"), py::arg("mask") = py::none(),
      py::arg("sinks") = py::none(), py::arg("stream") = py::none());
}

}  // namespace nuvec::python
