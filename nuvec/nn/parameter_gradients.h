#pragma once

// The shared core of the module gradients (value_and_grad over a module, FullyShard's over its shards): tracers of
// some named arrays stand in for the model's parameters while the loss runs, and the model gets its parameters back
// afterwards, even when the loss throws.

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "nuvec/core/array.h"
#include "nuvec/nn/module.h"
#include "nuvec/nn/value_and_grad.h"

namespace nuvec::nn::detail {

/// The loss of `inputs` and its gradients with respect to `primals`, named as they are. While the loss runs, the
/// model's parameter named as primal i is `as_parameter(tracer_i, i)`; then the model gets `restored()`.
std::pair<array, Params> parameter_value_and_grad(Module& model, const Params& primals,
                                                  const std::function<array(const array&, size_t)>& as_parameter,
                                                  const std::function<Params()>& restored, const LossFn& loss,
                                                  const std::vector<array>& inputs);

}  // namespace nuvec::nn::detail
