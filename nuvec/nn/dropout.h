#pragma once

// Dropout layers: in training mode each element (Dropout) or each whole channel of a sample (Dropout2d on
// (N, H, W, C), Dropout3d on (N, D, H, W, C)) is zeroed with probability p and the rest scaled by 1 / (1 - p);
// in evaluation mode they pass the input through.

#include <string>

#include "nuvec/nn/module.h"

namespace nuvec::nn {

class DropoutBase : public UnaryModule {
 public:
  [[nodiscard]] std::string type_name() const override { return name_; }
  array forward(const array& x) override;

 protected:
  DropoutBase(std::string name, float p, int spatial);

 private:
  std::string name_;
  float p_;
  int spatial_;  // -1: element-wise
};

class Dropout : public DropoutBase {
 public:
  explicit Dropout(float p = 0.5F) : DropoutBase("Dropout", p, -1) {}
};
class Dropout2d : public DropoutBase {
 public:
  explicit Dropout2d(float p = 0.5F) : DropoutBase("Dropout2d", p, 2) {}
};
class Dropout3d : public DropoutBase {
 public:
  explicit Dropout3d(float p = 0.5F) : DropoutBase("Dropout3d", p, 3) {}
};

}  // namespace nuvec::nn
