#include "apps/train/step.h"

#include <memory>
#include <string>

#include "nuvec/core/compile.h"
#include "nuvec/core/eval.h"
#include "nuvec/distributed/ops.h"

namespace nuvec::train {

TrainStep eager_step(nn::Module& model, optimizers::Optimizer& optimizer, nn::LossFn loss, double max_norm) {
  auto value_and_grad = nn::value_and_grad(model, std::move(loss));
  return [&model, &optimizer, value_and_grad, max_norm](const std::vector<array>& batch) {
    auto [value, grads] = value_and_grad(batch);
    if (max_norm > 0.0) {
      grads = optimizers::clip_grad_norm(grads, max_norm).first;
    }
    optimizer.update(model, grads);
    return value;
  };
}

TrainStep compiled_step(nn::Module& model, optimizers::Optimizer& optimizer, nn::LossFn loss, double max_norm) {
  // The trainable parameters wait here between calls, where compile's state can point at them.
  auto params = std::make_shared<nn::Params>(model.trainable_parameters());
  optimizer.init(*params);
  auto step = eager_step(model, optimizer, std::move(loss), max_norm);
  auto traced = [&model, params, step](const std::vector<array>& batch) {
    model.update(*params);
    auto value = step(batch);
    auto updated = model.trainable_parameters();
    for (size_t i = 0; i < params->size(); ++i) {
      (*params)[i].second = updated[i].second;
    }
    return std::vector<array>{value};
  };
  auto state = [params, &optimizer] {
    std::vector<array*> slots;
    for (auto& [name, value] : *params) {
      slots.push_back(&value);
    }
    for (auto* slot : optimizer.state_arrays()) {
      slots.push_back(slot);
    }
    return slots;
  };
  auto compiled = compile(traced, state);
  return [&model, params, compiled](const std::vector<array>& batch) {
    // The model stays the parameters' owner: whatever it holds now (loaded weights, say) is what the step reads.
    auto current = model.trainable_parameters();
    if (current.size() != params->size()) {
      throw_invalid("[compiled_step] the model had " + std::to_string(params->size()) +
                    " trainable parameters when the step was made and has " + std::to_string(current.size()) +
                    " now; make a new step after freezing or unfreezing.");
    }
    for (size_t i = 0; i < params->size(); ++i) {
      (*params)[i].second = current[i].second;
    }
    std::vector<array> loss;
    try {
      loss = compiled(batch);
    } catch (...) {
      model.update(*params);  // a failed trace leaves its stand-ins in the model
      throw;
    }
    model.update(*params);
    return loss.front();
  };
}

TrainStep data_parallel_step(nn::Module& model, optimizers::Optimizer& optimizer, nn::LossFn loss,
                             distributed::Group group) {
  auto value_and_grad = nn::value_and_grad(model, std::move(loss));
  return [&model, &optimizer, value_and_grad, group](const std::vector<array>& batch) {
    auto [value, grads] = value_and_grad(batch);
    optimizer.update(model, nn::average_gradients(grads, group));
    return distributed::all_sum(value, group) / array(static_cast<float>(group.size()));
  };
}

void eval_step(const array& loss, const nn::Module& model, const optimizers::Optimizer& optimizer) {
  std::vector<array> pending{loss};
  for (const auto& [name, p] : model.parameters()) {
    pending.push_back(p);
  }
  for (const auto& [name, s] : optimizer.state()) {
    pending.push_back(s);
  }
  eval(std::move(pending));
}

}  // namespace nuvec::train
