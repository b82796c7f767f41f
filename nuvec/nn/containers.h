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
  /// The layers in order; an empty pointer throws.
  explicit Sequential(std::vector<std::shared_ptr<UnaryModule>> layers);
  [[nodiscard]] std::string type_name() const override { return "Sequential"; }
  /// Each layer's forward applied to the previous one's output (x itself with no layers).
  array forward(const array& x) override;

  /// Appends a layer (named by its position) and returns this container for chaining; an empty pointer throws.
  Sequential& append(std::shared_ptr<UnaryModule> layer);
  /// The number of layers.
  [[nodiscard]] size_t size() const { return layers_.size(); }
  /// Layer i; an index past the end throws std::out_of_range.
  [[nodiscard]] const std::shared_ptr<UnaryModule>& operator[](size_t i) const { return layers_.at(i); }

 private:
  // Child slots capture indices rather than addresses, so growing the vector does not invalidate them.
  std::vector<std::shared_ptr<UnaryModule>> layers_;
};

}  // namespace nuvec::nn
