#pragma once

// The end of a training step: the loss, the updated parameters and the optimizer state computed together.

#include "nuvec/nn/nn.h"

namespace nuvec::train {

/// Evaluates `loss`, every parameter of `model` and `optimizer`'s state in one graph walk.
void eval_step(const array& loss, const nn::Module& model, const optimizers::Optimizer& optimizer);

}  // namespace nuvec::train
