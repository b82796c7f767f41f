#include "apps/train/step.h"

#include "nuvec/core/eval.h"

namespace nuvec::train {

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
