// The C++ optimizers' per-parameter rules (init_single, apply_single) with mlx.optimizers' names, arguments and
// defaults, and the learning-rate schedules. nuvec.optimizers (python/nuvec/optimizers.py) keeps the state as MLX's
// Python does (a tree beside the step and the rate) and runs these rules on each parameter's dict of slots.

#include "nuvec/nn/optimizers.h"

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "python/src/nn_module.h"

namespace nuvec::python {
namespace {

namespace O = optimizers;
using Betas = std::pair<double, double>;

template <class T>
using OptimizerClass = py::class_<T, O::Optimizer, std::shared_ptr<T>>;

/// One parameter's slots from its Python dict.
O::Optimizer::State to_state(const py::dict slots) {
  O::Optimizer::State state;
  for (auto [key, value] : slots) {
    state.emplace(key.cast<std::string>(), array_of(value));
  }
  return state;
}

/// Writes the slots back into the Python dict (the caller's state tree holds it).
void store_state(const O::Optimizer::State& state, py::dict slots) {
  for (const auto& [key, value] : state) {
    slots[py::str(key)] = wrap(value);
  }
}

void init_rules(py::module_& m) {
  py::class_<O::Optimizer, std::shared_ptr<O::Optimizer>>(m, "OptimizerRule",
                                                          "A C++ optimizer's per-parameter update rule.")
      .def(
          "init_single",
          [](O::Optimizer& self, const array& parameter, py::dict slots) {
            auto state = to_state(slots);
            self.init_single(parameter, state);
            store_state(state, slots);
          },
          py::arg("parameter"), py::arg("state"), "Creates the parameter's slots in the dict `state`.")
      .def(
          "apply_single",
          [](O::Optimizer& self, const array& gradient, const array& parameter, py::dict slots, const array& lr,
             const array& step) {
            auto state = to_state(slots);
            auto updated = self.apply_single(gradient, parameter, state, lr, step);
            store_state(state, slots);
            return updated;
          },
          py::arg("gradient"), py::arg("parameter"), py::arg("state"), py::arg("learning_rate"), py::arg("step"),
          "The parameter's new value, its slots in `state` updated; learning_rate a float32 scalar, step the 1-based "
          "step (uint64 scalar).");
  // Each rule is made without a rate: the Python optimizer passes it (fixed or scheduled) at every step.
  OptimizerClass<O::SGD>(m, "SGD").def(
      py::init([](double momentum, double weight_decay, double dampening, bool nesterov) {
        return std::make_shared<O::SGD>(0.0, momentum, weight_decay, dampening, nesterov);
      }),
      py::arg("momentum") = 0.0, py::arg("weight_decay") = 0.0, py::arg("dampening") = 0.0,
      py::arg("nesterov") = false);
  OptimizerClass<O::Adam>(m, "Adam").def(
      py::init([](Betas betas, double eps, bool bias_correction, double weight_decay) {
        return std::make_shared<O::Adam>(0.0, betas, eps, bias_correction, weight_decay);
      }),
      py::arg("betas") = Betas{0.9, 0.999}, py::arg("eps") = 1e-8, py::arg("bias_correction") = false,
      py::arg("weight_decay") = 0.0);
  OptimizerClass<O::AdamW>(m, "AdamW")
      .def(py::init([](Betas betas, double eps, double weight_decay, bool bias_correction) {
             return std::make_shared<O::AdamW>(0.0, betas, eps, weight_decay, bias_correction);
           }),
           py::arg("betas") = Betas{0.9, 0.999}, py::arg("eps") = 1e-8, py::arg("weight_decay") = 0.01,
           py::arg("bias_correction") = false);
  OptimizerClass<O::Adamax>(m, "Adamax")
      .def(py::init([](Betas betas, double eps, double weight_decay) {
             return std::make_shared<O::Adamax>(0.0, betas, eps, weight_decay);
           }),
           py::arg("betas") = Betas{0.9, 0.999}, py::arg("eps") = 1e-8, py::arg("weight_decay") = 0.0);
  OptimizerClass<O::Adagrad>(m, "Adagrad")
      .def(py::init(
               [](double eps, double weight_decay) { return std::make_shared<O::Adagrad>(0.0, eps, weight_decay); }),
           py::arg("eps") = 1e-8, py::arg("weight_decay") = 0.0);
  OptimizerClass<O::AdaDelta>(m, "AdaDelta")
      .def(py::init([](double rho, double eps, double weight_decay) {
             return std::make_shared<O::AdaDelta>(0.0, rho, eps, weight_decay);
           }),
           py::arg("rho") = 0.9, py::arg("eps") = 1e-6, py::arg("weight_decay") = 0.0);
  OptimizerClass<O::RMSprop>(m, "RMSprop")
      .def(py::init([](double alpha, double eps, double weight_decay, double momentum, bool centered) {
             return std::make_shared<O::RMSprop>(0.0, alpha, eps, weight_decay, momentum, centered);
           }),
           py::arg("alpha") = 0.99, py::arg("eps") = 1e-8, py::arg("weight_decay") = 0.0, py::arg("momentum") = 0.0,
           py::arg("centered") = false);
  OptimizerClass<O::Lion>(m, "Lion").def(
      py::init([](Betas betas, double weight_decay) { return std::make_shared<O::Lion>(0.0, betas, weight_decay); }),
      py::arg("betas") = Betas{0.9, 0.99}, py::arg("weight_decay") = 0.0);
  OptimizerClass<O::Adafactor>(m, "Adafactor")
      .def(py::init([](Betas eps, double clip_threshold, double decay_rate, std::optional<double> beta_1,
                       double weight_decay, bool scale_parameter, bool relative_step, bool warmup_init) {
             return std::make_shared<O::Adafactor>(0.0, eps, clip_threshold, decay_rate, beta_1, weight_decay,
                                                   scale_parameter, relative_step, warmup_init);
           }),
           py::arg("eps") = Betas{1e-30, 1e-3}, py::arg("clip_threshold") = 1.0, py::arg("decay_rate") = -0.8,
           py::arg("beta_1") = py::none(), py::arg("weight_decay") = 0.0, py::arg("scale_parameter") = true,
           py::arg("relative_step") = true, py::arg("warmup_init") = false);
  OptimizerClass<O::Muon>(m, "Muon").def(
      py::init([](double momentum, double weight_decay, bool nesterov, int ns_steps) {
        return std::make_shared<O::Muon>(0.0, momentum, weight_decay, nesterov, ns_steps);
      }),
      py::arg("momentum") = 0.95, py::arg("weight_decay") = 0.01, py::arg("nesterov") = true, py::arg("ns_steps") = 5);
}

void init_schedules(py::module_& m) {
  m.def("exponential_decay", &O::exponential_decay, py::arg("init"), py::arg("decay_rate"));
  m.def("step_decay", &O::step_decay, py::arg("init"), py::arg("decay_rate"), py::arg("step_size"));
  m.def("cosine_decay", &O::cosine_decay, py::arg("init"), py::arg("decay_steps"), py::arg("end") = 0.0);
  m.def("linear_schedule", &O::linear_schedule, py::arg("init"), py::arg("end"), py::arg("steps"));
  m.def("join_schedules", &O::join_schedules, py::arg("schedules"), py::arg("boundaries"));
}

}  // namespace

void init_optimizers(py::module_& m) {
  init_rules(m);
  init_schedules(m);
  m.def(
      "clip_grad_norm",
      [](const nn::Params& gradients, double max_norm) { return O::clip_grad_norm(gradients, max_norm); },
      py::arg("gradients"), py::arg("max_norm"),
      "The (name, gradient) list scaled to a global L2 norm of at most max_norm, and the norm before.");
}

}  // namespace nuvec::python
