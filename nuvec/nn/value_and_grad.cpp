#include "nuvec/nn/value_and_grad.h"

#include <numeric>

#include "nuvec/core/error.h"
#include "nuvec/core/transforms.h"
#include "nuvec/nn/parameter_gradients.h"

namespace nuvec::nn {

namespace detail {

std::pair<array, Params> parameter_value_and_grad(Module& model, const Params& primals,
                                                  const std::function<array(const array&, size_t)>& as_parameter,
                                                  const std::function<Params()>& restored, const LossFn& loss,
                                                  const std::vector<array>& inputs) {
  const size_t n = primals.size();
  std::vector<array> args;
  args.reserve(n + inputs.size());
  for (const auto& [name, value] : primals) {
    args.push_back(value);
  }
  args.insert(args.end(), inputs.begin(), inputs.end());
  std::vector<int> argnums(n);
  std::iota(argnums.begin(), argnums.end(), 0);
  auto traced = [&](const std::vector<array>& tracers) -> std::vector<array> {
    Params parameters;
    parameters.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      parameters.emplace_back(primals[i].first, as_parameter(tracers[i], i));
    }
    model.update(parameters);
    return {loss(std::vector<array>(tracers.begin() + static_cast<std::ptrdiff_t>(n), tracers.end()))};
  };
  struct Restore {
    Module& model;
    const std::function<Params()>& restored;
    ~Restore() { model.update(restored()); }
  } restore{model, restored};
  auto [values, grads] = nuvec::value_and_grad(traced, argnums)(args);
  Params named;
  named.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    named.emplace_back(primals[i].first, grads[i]);
  }
  return std::pair{values.at(0), named};
}

}  // namespace detail

ModuleValueAndGradFn value_and_grad(Module& model, LossFn loss) {
  return [&model, loss = std::move(loss)](const std::vector<array>& inputs) {
    const Params trainable = model.trainable_parameters();
    if (trainable.empty()) {
      throw_invalid(model.describe() + " has no trainable parameters to differentiate.");
    }
    return detail::parameter_value_and_grad(
        model, trainable, [](const array& tracer, size_t) { return tracer; }, [&] { return trainable; }, loss, inputs);
  };
}

}  // namespace nuvec::nn
