#pragma once

// Convolutions, channels-last as MLX: input (N, spatial..., C_in), weight (C_out, kernel..., C_in / groups),
// output (N, spatial..., C_out). Transposed convolutions take the same weight layout. Each size argument is one
// value for every spatial axis or one value per axis. Weights and biases start as PyTorch's (MLX starts biases at
// zero): U(-k, k) with k = 1 / sqrt(C_in / groups * prod(kernel)). groups must divide C_in and C_out; a bad groups
// or size count throws when the layer is made. forward takes a floating input of exactly that rank with C_in
// channels, else throws.

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "nuvec/nn/module.h"

namespace nuvec::nn {

/// A size per spatial axis, written as one int (every axis) or a braced list.
struct Sizes {
  Sizes(int value) : values{value} {}  // NOLINT(google-explicit-constructor)
  Sizes(std::initializer_list<int> list) : values(list) {}
  /// One value per axis of `spatial`; a wrong count throws naming `layer` and the argument (`what`).
  [[nodiscard]] std::vector<int> per_axis(int spatial, const std::string& layer, const char* what) const;
  std::vector<int> values;
};

/// The shared body of Conv1d/2d/3d and ConvTranspose1d/2d/3d.
class ConvBase : public UnaryModule {
 public:
  /// The convolution of x with weight (conv_general or conv_transpose1d/2d/3d), plus bias when present.
  array forward(const array& x) override;
  [[nodiscard]] std::string type_name() const override { return name_; }

  array weight;
  std::optional<array> bias;

 protected:
  /// A layer of `spatial` axes named `name`, transposed or not, with its weight (and bias) drawn.
  ConvBase(std::string name, int spatial, bool transposed, int in_channels, int out_channels, const Sizes& kernel,
           const Sizes& stride, const Sizes& padding, const Sizes& dilation, const Sizes& output_padding, int groups,
           bool bias);

 private:
  std::string name_;
  int spatial_;
  bool transposed_;
  int in_channels_;
  std::vector<int> stride_;
  std::vector<int> padding_;
  std::vector<int> dilation_;
  std::vector<int> output_padding_;
  int groups_;
};

/// Convolution over (N, L, C_in); stride, padding (zeros, both sides) and dilation default to 1, 0 and 1.
class Conv1d : public ConvBase {
 public:
  Conv1d(int in_channels, int out_channels, const Sizes& kernel_size, const Sizes& stride = 1, const Sizes& padding = 0,
         const Sizes& dilation = 1, int groups = 1, bool bias = true)
      : ConvBase("Conv1d", 1, false, in_channels, out_channels, kernel_size, stride, padding, dilation, 0, groups,
                 bias) {}
};
/// Convolution over (N, H, W, C_in); arguments as Conv1d, per axis or one for both.
class Conv2d : public ConvBase {
 public:
  Conv2d(int in_channels, int out_channels, const Sizes& kernel_size, const Sizes& stride = 1, const Sizes& padding = 0,
         const Sizes& dilation = 1, int groups = 1, bool bias = true)
      : ConvBase("Conv2d", 2, false, in_channels, out_channels, kernel_size, stride, padding, dilation, 0, groups,
                 bias) {}
};
/// Convolution over (N, D, H, W, C_in); arguments as Conv1d, per axis or one for all.
class Conv3d : public ConvBase {
 public:
  Conv3d(int in_channels, int out_channels, const Sizes& kernel_size, const Sizes& stride = 1, const Sizes& padding = 0,
         const Sizes& dilation = 1, int groups = 1, bool bias = true)
      : ConvBase("Conv3d", 3, false, in_channels, out_channels, kernel_size, stride, padding, dilation, 0, groups,
                 bias) {}
};
/// Transposed convolution over (N, L, C_in) (the gradient of Conv1d with respect to its input); output_padding
/// (default 0) adds to one side of the output.
class ConvTranspose1d : public ConvBase {
 public:
  ConvTranspose1d(int in_channels, int out_channels, const Sizes& kernel_size, const Sizes& stride = 1,
                  const Sizes& padding = 0, const Sizes& dilation = 1, const Sizes& output_padding = 0, int groups = 1,
                  bool bias = true)
      : ConvBase("ConvTranspose1d", 1, true, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 output_padding, groups, bias) {}
};
/// Transposed convolution over (N, H, W, C_in); arguments as ConvTranspose1d.
class ConvTranspose2d : public ConvBase {
 public:
  ConvTranspose2d(int in_channels, int out_channels, const Sizes& kernel_size, const Sizes& stride = 1,
                  const Sizes& padding = 0, const Sizes& dilation = 1, const Sizes& output_padding = 0, int groups = 1,
                  bool bias = true)
      : ConvBase("ConvTranspose2d", 2, true, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 output_padding, groups, bias) {}
};
/// Transposed convolution over (N, D, H, W, C_in); arguments as ConvTranspose1d.
class ConvTranspose3d : public ConvBase {
 public:
  ConvTranspose3d(int in_channels, int out_channels, const Sizes& kernel_size, const Sizes& stride = 1,
                  const Sizes& padding = 0, const Sizes& dilation = 1, const Sizes& output_padding = 0, int groups = 1,
                  bool bias = true)
      : ConvBase("ConvTranspose3d", 3, true, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 output_padding, groups, bias) {}
};

}  // namespace nuvec::nn
