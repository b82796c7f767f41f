#pragma once

// Gradients of a loss with respect to a module's trainable parameters (mlx.nn.value_and_grad): the parameters are
// swapped for the transform's tracers while the loss runs, then restored.

#include <functional>
#include <utility>
#include <vector>

#include "nuvec/core/array.h"
#include "nuvec/nn/module.h"

namespace nuvec::nn {

/// A loss of a model's inputs (a 0-d array), reading the model's parameters through the model.
using LossFn = std::function<array(const std::vector<array>&)>;
/// (inputs) -> (loss, gradients named as trainable_parameters()).
using ModuleValueAndGradFn = std::function<std::pair<array, Params>(const std::vector<array>&)>;

/// `loss` and its gradient with respect to every trainable parameter of `model` (which must outlive the result).
/// The call throws when the model has no trainable parameters or the loss is not 0-d; the parameters are restored
/// either way.
ModuleValueAndGradFn value_and_grad(Module& model, LossFn loss);

}  // namespace nuvec::nn
