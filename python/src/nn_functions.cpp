// The C++ nn library's functions with mlx.nn's names and arguments: activations (nuvec._nn), losses
// (nuvec._nn.losses, reduction= as a string) and initializers (nuvec._nn.init, each returning a function).

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <string>

#include "nuvec/core/error.h"
#include "nuvec/nn/activations.h"
#include "nuvec/nn/init.h"
#include "nuvec/nn/losses.h"
#include "python/src/nn_module.h"

namespace pybind11::detail {

/// reduction="none" | "mean" | "sum", as mlx.nn.losses takes it.
template <>
struct type_caster<nuvec::nn::losses::Reduction> {
  PYBIND11_TYPE_CASTER(nuvec::nn::losses::Reduction, const_name("str"));

  bool load(handle src, bool /*convert*/) {
    if (PyUnicode_Check(src.ptr()) == 0) {
      return false;
    }
    const auto name = src.cast<std::string>();
    using nuvec::nn::losses::Reduction;
    if (name == "none" || name == "mean" || name == "sum") {
      value = name == "none" ? Reduction::none : name == "mean" ? Reduction::mean : Reduction::sum;
      return true;
    }
    nuvec::throw_invalid("[losses] Invalid reduction '" + name + "'; use 'none', 'mean' or 'sum'.");
  }
  static handle cast(nuvec::nn::losses::Reduction reduction, return_value_policy /*policy*/, handle /*parent*/) {
    using nuvec::nn::losses::Reduction;
    switch (reduction) {
      case Reduction::none:
        return pybind11::str("none").release();
      case Reduction::mean:
        return pybind11::str("mean").release();
      case Reduction::sum:
        return pybind11::str("sum").release();
    }
    return {};
  }
};

/// mode="fan_in" | "fan_out" of the He initializers.
template <>
struct type_caster<nuvec::nn::init::FanMode> {
  PYBIND11_TYPE_CASTER(nuvec::nn::init::FanMode, const_name("str"));

  bool load(handle src, bool /*convert*/) {
    if (PyUnicode_Check(src.ptr()) == 0) {
      return false;
    }
    const auto name = src.cast<std::string>();
    if (name != "fan_in" && name != "fan_out") {
      nuvec::throw_invalid("[init] Invalid mode '" + name + "'; use 'fan_in' or 'fan_out'.");
    }
    value = name == "fan_in" ? nuvec::nn::init::FanMode::fan_in : nuvec::nn::init::FanMode::fan_out;
    return true;
  }
  static handle cast(nuvec::nn::init::FanMode mode, return_value_policy /*policy*/, handle /*parent*/) {
    return pybind11::str(mode == nuvec::nn::init::FanMode::fan_in ? "fan_in" : "fan_out").release();
  }
};

}  // namespace pybind11::detail

namespace nuvec::python {
namespace {

using Reduction = nn::losses::Reduction;

void init_activation_functions(py::module_& m) {
  m.def("relu", &nn::relu, py::arg("x"));
  m.def("leaky_relu", &nn::leaky_relu, py::arg("x"), py::arg("negative_slope") = 0.01F);
  m.def("relu6", &nn::relu6, py::arg("x"));
  m.def("elu", &nn::elu, py::arg("x"), py::arg("alpha") = 1.0F);
  m.def("selu", &nn::selu, py::arg("x"));
  m.def("celu", &nn::celu, py::arg("x"), py::arg("alpha") = 1.0F);
  m.def("gelu", &nn::gelu, py::arg("x"));
  m.def("gelu_approx", &nn::gelu_approx, py::arg("x"));
  m.def("gelu_fast_approx", &nn::gelu_fast_approx, py::arg("x"));
  m.def("silu", &nn::silu, py::arg("x"));
  m.def("mish", &nn::mish, py::arg("x"));
  m.def("softplus", &nn::softplus, py::arg("x"));
  m.def("softsign", &nn::softsign, py::arg("x"));
  m.def("hardswish", &nn::hardswish, py::arg("x"));
  m.def("hard_sigmoid", &nn::hard_sigmoid, py::arg("x"));
  m.def("hard_tanh", &nn::hard_tanh, py::arg("x"), py::arg("min_val") = -1.0F, py::arg("max_val") = 1.0F);
  m.def("softshrink", &nn::softshrink, py::arg("x"), py::arg("lambd") = 0.5F);
  m.def("hard_shrink", &nn::hard_shrink, py::arg("x"), py::arg("lambd") = 0.5F);
  m.def("softmin", &nn::softmin, py::arg("x"), py::arg("axis") = -1);
  m.def("prelu", &nn::prelu, py::arg("x"), py::arg("alpha"));
  m.def("glu", &nn::glu, py::arg("x"), py::arg("axis") = -1);
  m.def("log_sigmoid", &nn::log_sigmoid, py::arg("x"));
  m.def("log_softmax", &nn::log_softmax, py::arg("x"), py::arg("axis") = -1);
  m.def("step", &nn::step, py::arg("x"), py::arg("threshold") = 0.0F);
}

void init_losses(py::module_& m) {
  namespace L = nn::losses;
  m.def("cross_entropy", &L::cross_entropy, py::arg("logits"), py::arg("targets"), py::arg("weights") = py::none(),
        py::arg("axis") = -1, py::arg("label_smoothing") = 0.0F, py::arg("reduction") = Reduction::none);
  m.def("binary_cross_entropy", &L::binary_cross_entropy, py::arg("inputs"), py::arg("targets"),
        py::arg("weights") = py::none(), py::arg("with_logits") = true, py::arg("reduction") = Reduction::mean);
  m.def("nll_loss", &L::nll_loss, py::arg("inputs"), py::arg("targets"), py::arg("axis") = -1,
        py::arg("reduction") = Reduction::none);
  m.def("mse_loss", &L::mse_loss, py::arg("predictions"), py::arg("targets"), py::arg("reduction") = Reduction::mean);
  m.def("l1_loss", &L::l1_loss, py::arg("predictions"), py::arg("targets"), py::arg("reduction") = Reduction::mean);
  m.def("smooth_l1_loss", &L::smooth_l1_loss, py::arg("predictions"), py::arg("targets"), py::arg("beta") = 1.0F,
        py::arg("reduction") = Reduction::mean);
  m.def("huber_loss", &L::huber_loss, py::arg("inputs"), py::arg("targets"), py::arg("delta") = 1.0F,
        py::arg("reduction") = Reduction::none);
  m.def("kl_div_loss", &L::kl_div_loss, py::arg("inputs"), py::arg("targets"), py::arg("axis") = -1,
        py::arg("reduction") = Reduction::none);
  m.def("log_cosh_loss", &L::log_cosh_loss, py::arg("inputs"), py::arg("targets"),
        py::arg("reduction") = Reduction::none);
  m.def("cosine_similarity_loss", &L::cosine_similarity_loss, py::arg("x1"), py::arg("x2"), py::arg("axis") = 1,
        py::arg("eps") = 1e-8F, py::arg("reduction") = Reduction::none);
  m.def("hinge_loss", &L::hinge_loss, py::arg("inputs"), py::arg("targets"), py::arg("reduction") = Reduction::none);
  m.def("margin_ranking_loss", &L::margin_ranking_loss, py::arg("inputs1"), py::arg("inputs2"), py::arg("targets"),
        py::arg("margin") = 0.0F, py::arg("reduction") = Reduction::none);
  m.def("triplet_loss", &L::triplet_loss, py::arg("anchors"), py::arg("positives"), py::arg("negatives"),
        py::arg("axis") = -1, py::arg("p") = 2, py::arg("margin") = 1.0F, py::arg("eps") = 1e-6F,
        py::arg("reduction") = Reduction::none);
  m.def("gaussian_nll_loss", &L::gaussian_nll_loss, py::arg("inputs"), py::arg("targets"), py::arg("vars"),
        py::arg("full") = false, py::arg("eps") = 1e-6F, py::arg("reduction") = Reduction::mean);
}

void init_initializers(py::module_& m) {
  namespace I = nn::init;
  m.def("constant", &I::constant, py::arg("value"), py::arg("dtype") = float32);
  m.def("normal", &I::normal, py::arg("mean") = 0.0, py::arg("std") = 1.0, py::arg("dtype") = float32);
  m.def("uniform", &I::uniform, py::arg("low") = 0.0, py::arg("high") = 1.0, py::arg("dtype") = float32);
  m.def("identity", &I::identity, py::arg("dtype") = float32);
  m.def("glorot_normal", &I::glorot_normal, py::arg("dtype") = float32);
  m.def("glorot_uniform", &I::glorot_uniform, py::arg("dtype") = float32);
  m.def("he_normal", &I::he_normal, py::arg("dtype") = float32);
  m.def("he_uniform", &I::he_uniform, py::arg("dtype") = float32);
}

}  // namespace

void init_nn_functions(py::module_& m) {
  init_activation_functions(m);
  auto losses = m.def_submodule("losses", "mlx.nn.losses over nuvec::nn::losses.");
  init_losses(losses);
  auto init = m.def_submodule("init", "mlx.nn.init over nuvec::nn::init: each returns an initializer function.");
  init_initializers(init);
}

}  // namespace nuvec::python
