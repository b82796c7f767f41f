#pragma once

// Max and average pooling over 1 to 3 spatial axes, channels-last: input (N, spatial..., C) or (spatial..., C)
// without a batch. Max pooling pads with -inf, average pooling with zeros that count in the mean (PyTorch's
// count_include_pad=True). The stride defaults to the kernel size. NaN propagates through max pooling, and among
// equal maxima the first in window order is the maximum (its gradient goes there), as in PyTorch.

#include <optional>
#include <string>
#include <vector>

#include "nuvec/nn/conv.h"
#include "nuvec/nn/module.h"

namespace nuvec::nn {

class PoolBase : public UnaryModule {
 public:
  [[nodiscard]] std::string type_name() const override { return name_; }
  array forward(const array& x) override;

 protected:
  PoolBase(std::string name, int spatial, bool max, const Sizes& kernel, const std::optional<Sizes>& stride,
           const Sizes& padding);

 private:
  std::string name_;
  int spatial_;
  bool max_;
  std::vector<int> kernel_;
  std::vector<int> stride_;
  std::vector<int> padding_;
};

class MaxPool1d : public PoolBase {
 public:
  explicit MaxPool1d(const Sizes& kernel_size, const std::optional<Sizes>& stride = std::nullopt,
                     const Sizes& padding = 0)
      : PoolBase("MaxPool1d", 1, true, kernel_size, stride, padding) {}
};
class MaxPool2d : public PoolBase {
 public:
  explicit MaxPool2d(const Sizes& kernel_size, const std::optional<Sizes>& stride = std::nullopt,
                     const Sizes& padding = 0)
      : PoolBase("MaxPool2d", 2, true, kernel_size, stride, padding) {}
};
class MaxPool3d : public PoolBase {
 public:
  explicit MaxPool3d(const Sizes& kernel_size, const std::optional<Sizes>& stride = std::nullopt,
                     const Sizes& padding = 0)
      : PoolBase("MaxPool3d", 3, true, kernel_size, stride, padding) {}
};
class AvgPool1d : public PoolBase {
 public:
  explicit AvgPool1d(const Sizes& kernel_size, const std::optional<Sizes>& stride = std::nullopt,
                     const Sizes& padding = 0)
      : PoolBase("AvgPool1d", 1, false, kernel_size, stride, padding) {}
};
class AvgPool2d : public PoolBase {
 public:
  explicit AvgPool2d(const Sizes& kernel_size, const std::optional<Sizes>& stride = std::nullopt,
                     const Sizes& padding = 0)
      : PoolBase("AvgPool2d", 2, false, kernel_size, stride, padding) {}
};
class AvgPool3d : public PoolBase {
 public:
  explicit AvgPool3d(const Sizes& kernel_size, const std::optional<Sizes>& stride = std::nullopt,
                     const Sizes& padding = 0)
      : PoolBase("AvgPool3d", 3, false, kernel_size, stride, padding) {}
};

/// Upsampling of the spatial axes of (N, spatial..., C) by a scale per axis: "nearest" (the source index is
/// floor(out_index / scale), PyTorch's nearest), "linear" (bi/trilinear) or "cubic" (Keys' kernel with a = -0.75,
/// PyTorch's bicubic), each axis interpolated in turn, with PyTorch's align_corners semantics.
class Upsample : public UnaryModule {
 public:
  explicit Upsample(std::vector<float> scale_factor, std::string mode = "nearest", bool align_corners = false);
  [[nodiscard]] std::string type_name() const override { return "Upsample"; }
  array forward(const array& x) override;

 private:
  std::vector<float> scale_;
  std::string mode_;
  bool align_corners_;
};

}  // namespace nuvec::nn
