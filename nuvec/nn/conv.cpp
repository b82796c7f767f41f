#include "nuvec/nn/conv.h"

#include <cmath>
#include <numeric>

#include "nuvec/core/op_prefix.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/random.h"

namespace nuvec::nn {

std::vector<int> Sizes::per_axis(int spatial, const std::string& layer, const char* what) const {
  if (values.size() == 1) {
    return std::vector<int>(spatial, values[0]);
  }
  if (static_cast<int>(values.size()) != spatial) {
    throw_invalid(nuvec::detail::op_prefix(layer) + what + " needs 1 or " + std::to_string(spatial) +
                  " values; given " + std::to_string(values.size()) + ".");
  }
  return values;
}

ConvBase::ConvBase(std::string name, int spatial, bool transposed, int in_channels, int out_channels,
                   const Sizes& kernel, const Sizes& stride, const Sizes& padding, const Sizes& dilation,
                   const Sizes& output_padding, int groups, bool bias)
    : weight(array(0.0F)),
      name_(std::move(name)),
      spatial_(spatial),
      transposed_(transposed),
      in_channels_(in_channels),
      stride_(stride.per_axis(spatial, name_, "stride")),
      padding_(padding.per_axis(spatial, name_, "padding")),
      dilation_(dilation.per_axis(spatial, name_, "dilation")),
      output_padding_(output_padding.per_axis(spatial, name_, "output_padding")),
      groups_(groups) {
  if (groups < 1 || in_channels % groups != 0 || out_channels % groups != 0) {
    throw_invalid(nuvec::detail::op_prefix(name_) + "groups (" + std::to_string(groups) +
                  ") must divide in_channels (" + std::to_string(in_channels) + ") and out_channels (" +
                  std::to_string(out_channels) + ").");
  }
  auto kernel_sizes = kernel.per_axis(spatial, name_, "kernel_size");
  int receptive = std::accumulate(kernel_sizes.begin(), kernel_sizes.end(), 1, std::multiplies<>());
  // As PyTorch: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = C_in / groups * prod(kernel).
  double scale = 1.0 / std::sqrt(static_cast<double>(in_channels) / groups * receptive);
  Shape shape{out_channels};
  shape.insert(shape.end(), kernel_sizes.begin(), kernel_sizes.end());
  shape.push_back(in_channels / groups);
  weight = random::uniform(-scale, scale, shape);
  if (bias) {
    this->bias = random::uniform(-scale, scale, {out_channels});
  }
  register_parameter("weight", weight);
  register_parameter("bias", this->bias);
}

array ConvBase::forward(const array& x) {
  if (!is_floating(x.dtype())) {
    fail("expected a floating-point input; given dtype " + std::string(dtype_name(x.dtype())) + ".");
  }
  if (x.ndim() != spatial_ + 2 || x.shape(-1) != in_channels_) {
    std::string expected = "(N";
    for (int i = 0; i < spatial_; ++i) {
      expected += ", " + std::string(1, "DHW"[3 - spatial_ + i]);
    }
    fail("expected input of shape " + expected + ", " + std::to_string(in_channels_) + ") (channels last); given " +
         shape_string(x.shape()) + ".");
  }
  array y = x;
  if (!transposed_) {
    y = conv_general(x, weight, stride_, padding_, padding_, dilation_, std::vector<int>{}, groups_);
  } else if (spatial_ == 1) {
    y = conv_transpose1d(x, weight, stride_[0], padding_[0], dilation_[0], output_padding_[0], groups_);
  } else if (spatial_ == 2) {
    y = conv_transpose2d(x, weight, {stride_[0], stride_[1]}, {padding_[0], padding_[1]}, {dilation_[0], dilation_[1]},
                         {output_padding_[0], output_padding_[1]}, groups_);
  } else {
    y = conv_transpose3d(x, weight, {stride_[0], stride_[1], stride_[2]}, {padding_[0], padding_[1], padding_[2]},
                         {dilation_[0], dilation_[1], dilation_[2]},
                         {output_padding_[0], output_padding_[1], output_padding_[2]}, groups_);
  }
  return bias ? y + *bias : y;
}

}  // namespace nuvec::nn
