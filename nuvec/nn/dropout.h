#pragma once

// Dropout layers: in training mode each element (Dropout) or each whole channel of a sample (Dropout2d on
// (N, H, W, C), Dropout3d on (N, D, H, W, C)) is zeroed with probability p and the rest scaled by 1 / (1 - p);
// in evaluation mode they pass the input through. The masks come from the global key sequence (random::seed). p must
// be in [0, 1) (default 0.5); another value throws when the layer is made.

#include <string>

#include "nuvec/nn/module.h"

namespace nuvec::nn {

/// The shared body of the dropout layers.
class DropoutBase : public UnaryModule {
 public:
  [[nodiscard]] std::string type_name() const override { return name_; }
  /// x with dropped elements (or channels) zeroed and the rest scaled, in training mode; x unchanged in evaluation
  /// mode. Dropout2d/3d throw for inputs that are not (N, spatial..., C) or (spatial..., C).
  array forward(const array& x) override;

 protected:
  /// `spatial`: the number of spatial axes whose elements share one draw, or -1 for element-wise dropout.
  DropoutBase(std::string name, float p, int spatial);

 private:
  std::string name_;
  float p_;
  int spatial_;  // -1: element-wise
};

/// Zeroes each element with probability p.
class Dropout : public DropoutBase {
 public:
  explicit Dropout(float p = 0.5F) : DropoutBase("Dropout", p, -1) {}
};
/// Zeroes whole channels of (N, H, W, C) or (H, W, C) inputs with probability p.
class Dropout2d : public DropoutBase {
 public:
  explicit Dropout2d(float p = 0.5F) : DropoutBase("Dropout2d", p, 2) {}
};
/// Zeroes whole channels of (N, D, H, W, C) or (D, H, W, C) inputs with probability p.
class Dropout3d : public DropoutBase {
 public:
  explicit Dropout3d(float p = 0.5F) : DropoutBase("Dropout3d", p, 3) {}
};

}  // namespace nuvec::nn
