#include "nuvec/nn/value_and_grad.h"

#include <numeric>

#include "nuvec/core/transforms.h"

namespace nuvec::nn {

ModuleValueAndGradFn value_and_grad(Module& model, LossFn loss) {
  return [&model, loss = std::move(loss)](const std::vector<array>& inputs) {
    const Params trainable = model.trainable_parameters();
    const size_t n = trainable.size();
    if (n == 0) {
      throw_invalid(model.describe() + " has no trainable parameters to differentiate.");
    }
    std::vector<array> primals;
    primals.reserve(n + inputs.size());
    for (const auto& [name, value] : trainable) {
      primals.push_back(value);
    }
    primals.insert(primals.end(), inputs.begin(), inputs.end());
    std::vector<int> argnums(n);
    std::iota(argnums.begin(), argnums.end(), 0);

    auto traced = [&](const std::vector<array>& args) -> std::vector<array> {
      Params tracers;
      tracers.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        tracers.emplace_back(trainable[i].first, args[i]);
      }
      model.update(tracers);
      return {loss(std::vector<array>(args.begin() + static_cast<std::ptrdiff_t>(n), args.end()))};
    };
    // The model must get its own parameters back even when the loss throws.
    struct Restore {
      Module& model;
      const Params& params;
      ~Restore() { model.update(params); }
    } restore{model, trainable};
    auto [values, grads] = nuvec::value_and_grad(traced, argnums)(primals);
    Params named;
    named.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      named.emplace_back(trainable[i].first, grads[i]);
    }
    return std::pair{values.at(0), named};
  };
}

}  // namespace nuvec::nn
