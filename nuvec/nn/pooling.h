#pragma once

// Max and average pooling over 1 to 3 spatial axes, channels-last: input (N, spatial..., C) or (spatial..., C)
// without a batch. Max pooling pads with -inf, average pooling with zeros that count in the mean (PyTorch's
// count_include_pad=True). The stride defaults to the kernel size. NaN propagates through max pooling, and among
// equal maxima the first in window order is the maximum (its gradient goes there), as in PyTorch. Output sizes are
// floor((size + 2 padding - kernel) / stride) + 1. Kernel and stride must be >= 1 and padding in [0, kernel / 2]
// (checked when the layer is made); forward throws for a non-floating input, another rank, or a kernel larger than
// a padded axis.

#include <optional>
#include <string>
#include <vector>

#include "nuvec/nn/conv.h"
#include "nuvec/nn/module.h"

namespace nuvec::nn {

/// The shared body of the pooling layers.
class PoolBase : public UnaryModule {
 public:
  [[nodiscard]] std::string type_name() const override { return name_; }
  /// The pooled input, in its dtype.
  array forward(const array& x) override;

 protected:
  /// A max (or average) pooling of `spatial` axes named `name`; stride defaults to the kernel size.
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

/// Max pooling over L of (N, L, C) or (L, C).
class MaxPool1d : public PoolBase {
 public:
  explicit MaxPool1d(const Sizes& kernel_size, const std::optional<Sizes>& stride = std::nullopt,
                     const Sizes& padding = 0)
      : PoolBase("MaxPool1d", 1, true, kernel_size, stride, padding) {}
};
/// Max pooling over H and W of (N, H, W, C) or (H, W, C).
class MaxPool2d : public PoolBase {
 public:
  explicit MaxPool2d(const Sizes& kernel_size, const std::optional<Sizes>& stride = std::nullopt,
                     const Sizes& padding = 0)
      : PoolBase("MaxPool2d", 2, true, kernel_size, stride, padding) {}
};
/// Max pooling over D, H and W of (N, D, H, W, C) or (D, H, W, C).
class MaxPool3d : public PoolBase {
 public:
  explicit MaxPool3d(const Sizes& kernel_size, const std::optional<Sizes>& stride = std::nullopt,
                     const Sizes& padding = 0)
      : PoolBase("MaxPool3d", 3, true, kernel_size, stride, padding) {}
};
/// Average pooling over L of (N, L, C) or (L, C).
class AvgPool1d : public PoolBase {
 public:
  explicit AvgPool1d(const Sizes& kernel_size, const std::optional<Sizes>& stride = std::nullopt,
                     const Sizes& padding = 0)
      : PoolBase("AvgPool1d", 1, false, kernel_size, stride, padding) {}
};
/// Average pooling over H and W of (N, H, W, C) or (H, W, C).
class AvgPool2d : public PoolBase {
 public:
  explicit AvgPool2d(const Sizes& kernel_size, const std::optional<Sizes>& stride = std::nullopt,
                     const Sizes& padding = 0)
      : PoolBase("AvgPool2d", 2, false, kernel_size, stride, padding) {}
};
/// Average pooling over D, H and W of (N, D, H, W, C) or (D, H, W, C).
class AvgPool3d : public PoolBase {
 public:
  explicit AvgPool3d(const Sizes& kernel_size, const std::optional<Sizes>& stride = std::nullopt,
                     const Sizes& padding = 0)
      : PoolBase("AvgPool3d", 3, false, kernel_size, stride, padding) {}
};

/// Upsampling of the spatial axes of (N, spatial..., C) by a scale per axis: "nearest" (the source index is
/// floor(out_index / scale), PyTorch's nearest), "linear" (bi/trilinear) or "cubic" (Keys' kernel with a = -0.75,
/// PyTorch's bicubic), each axis interpolated in turn, with PyTorch's align_corners semantics (ignored by
/// "nearest"). Each output axis has floor(size * scale) entries.
class Upsample : public UnaryModule {
 public:
  /// One scale for every spatial axis or one per axis (1 to 3 values); another mode or count throws.
  explicit Upsample(std::vector<float> scale_factor, std::string mode = "nearest", bool align_corners = false);
  [[nodiscard]] std::string type_name() const override { return "Upsample"; }
  /// Throws for an input that is not floating (N, spatial..., C) with 1 to 3 spatial axes, or a scale count that
  /// does not match them.
  array forward(const array& x) override;

 private:
  std::vector<float> scale_;
  std::string mode_;
  bool align_corners_;
};

}  // namespace nuvec::nn
