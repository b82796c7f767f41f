#include "nuvec/nn/containers.h"

namespace nuvec::nn {

Sequential::Sequential(std::vector<std::shared_ptr<UnaryModule>> layers) {
  for (auto& layer : layers) {
    append(std::move(layer));
  }
}

Sequential& Sequential::append(std::shared_ptr<UnaryModule> layer) {
  if (!layer) {
    throw_invalid(describe() + " cannot append an empty layer.");
  }
  const size_t index = layers_.size();
  layers_.push_back(std::move(layer));
  add_child(
      std::to_string(index), [this, index]() -> Module* { return layers_[index].get(); },
      [this, index](const std::string& name, const std::shared_ptr<Module>& m) {
        auto typed = std::dynamic_pointer_cast<UnaryModule>(m);
        if (!typed) {
          throw_invalid(describe() + " child '" + name + "' must be a unary module; given a " + m->type_name() + ".");
        }
        layers_[index] = std::move(typed);
      });
  return *this;
}

array Sequential::forward(const array& x) {
  array y = x;
  for (const auto& layer : layers_) {
    y = layer->forward(y);
  }
  return y;
}

}  // namespace nuvec::nn
