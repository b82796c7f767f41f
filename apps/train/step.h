#pragma once

// A training step (loss and gradients on a batch, optional gradient clipping, one optimizer update), eager or
// compiled whole, and its end: the loss, the updated parameters and the optimizer state computed together.

#include <functional>
#include <vector>

#include "nuvec/nn/nn.h"

namespace nuvec::train {

/// One step on a batch: updates the model's parameters and the optimizer's state (lazily) and returns the loss.
using TrainStep = std::function<array(const std::vector<array>& batch)>;

/// The step as written: value_and_grad of `loss`, gradients clipped to global norm `max_norm` when it is above 0,
/// optimizer.update. `model` and `optimizer` must outlive the step.
TrainStep eager_step(nn::Module& model, optimizers::Optimizer& optimizer, nn::LossFn loss, double max_norm = 0.0);

/// eager_step compiled whole (forward, backward, clipping, update): the model's trainable parameters and the
/// optimizer's state (its step and learning rate included, so schedules keep moving) are the compiled function's
/// state, read from the model and optimizer at every call and stored back. Traced once per batch shape; the loss
/// must not draw random numbers (dropout), which a trace would repeat.
TrainStep compiled_step(nn::Module& model, optimizers::Optimizer& optimizer, nn::LossFn loss, double max_norm = 0.0);

/// A data-parallel step: `loss` on this rank's shard must be scaled so that the ranks' losses sum to the whole
/// batch's (the shard's sum over examples times size / batch size); the gradients are averaged over `group`
/// (nn::average_gradients) before the update. Returns the whole batch's loss.
TrainStep data_parallel_step(nn::Module& model, optimizers::Optimizer& optimizer, nn::LossFn loss,
                             distributed::Group group);

/// Evaluates `loss`, every parameter of `model` and `optimizer`'s state in one graph walk.
void eval_step(const array& loss, const nn::Module& model, const optimizers::Optimizer& optimizer);

}  // namespace nuvec::train
