#pragma once

// Sequential: unary modules applied in order, named "0", "1", ... as PyTorch's nn.Sequential (so its state dicts
// load by name).

#include <memory>
#include <string>
#include <vector>

#include "nuvec/nn/module.h"

namespace nuvec::nn {

class Sequential : public UnaryModule {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<UnaryModule>> layers);
  [[nodiscard]] std::string type_name() const override { return "Sequential"; }
  array forward(const array& x) override;

  /// Appends a layer (named by its position) and returns this container for chaining.
  Sequential& append(std::shared_ptr<UnaryModule> layer);
  [[nodiscard]] size_t size() const { return layers_.size(); }
  [[nodiscard]] const std::shared_ptr<UnaryModule>& operator[](size_t i) const { return layers_.at(i); }

 private:
  // Child slots capture indices rather than addresses, so growing the vector does not invalidate them.
  std::vector<std::shared_ptr<UnaryModule>> layers_;
};

}  // namespace nuvec::nn
