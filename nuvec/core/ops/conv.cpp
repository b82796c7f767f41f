// Convolutions: conv_general checks its arguments and builds the one Convolution primitive; conv1d/2d/3d fill in
// its parameters, and the transposed convolutions are convolutions over the input spread apart by the stride
// (input dilation) with the kernel flipped and the padding mirrored, as MLX composes them.
//
// Where nuvec differs from MLX or says more:
// - groups > 1 is accepted for 3-d convolutions too (MLX 0.32 rejects it);
// - conv1d/2d/3d reject an input whose rank does not match their dimension (MLX derives the dimension from the
//   input's rank in every case);
// - stride, dilations and groups must be positive, and conv_transpose's output_padding must be non-negative and
//   smaller than its stride or its dilation (PyTorch's rule: larger values would add rows nothing reaches).

#include <algorithm>
#include <sstream>

#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/output_shapes.h"

namespace nuvec {

using nuvec::detail::list_string;

namespace {

/// One value per spatial axis from a vector of 0 (the default), 1 (for every axis) or `spatial` values.
std::vector<int> per_axis(const std::vector<int>& values, int spatial, int fallback, const char* what) {
  if (values.empty()) {
    return std::vector<int>(spatial, fallback);
  }
  if (values.size() == 1) {
    return std::vector<int>(spatial, values[0]);
  }
  if (static_cast<int>(values.size()) != spatial) {
    throw_invalid("[conv] Expected " + std::string(what) + " with 1 or " + std::to_string(spatial) + " values for " +
                  std::to_string(spatial) + "D convolution; got " + list_string(values) + ".");
  }
  return values;
}

void check_positive(const std::vector<int>& values, const char* what) {
  for (int v : values) {
    if (v < 1) {
      throw_invalid("[conv] The " + std::string(what) + " must be positive; got " + list_string(values) + ".");
    }
  }
}

void check_rank(const array& input, const array& weight, int spatial) {
  if (input.ndim() != spatial + 2) {
    throw_invalid("[conv] Invalid input array with " + std::to_string(input.ndim()) + " dimensions for " +
                  std::to_string(spatial) + "D convolution. Expected an array with " + std::to_string(spatial + 2) +
                  " dimensions following the format [N, ..., C_in].");
  }
  if (weight.ndim() != spatial + 2) {
    throw_invalid("[conv] Invalid weight array with " + std::to_string(weight.ndim()) + " dimensions for " +
                  std::to_string(spatial) + "D convolution. Expected an array with " + std::to_string(spatial + 2) +
                  " dimensions following the format [C_out, ..., C_in].");
  }
}

void check_channels(const array& input, const array& weight, int groups) {
  const int c_in = input.shape(-1);
  const int c_out = weight.shape(0);
  if (groups < 1) {
    throw_invalid("[conv] The number of groups must be positive; got " + std::to_string(groups) + ".");
  }
  if (c_in % groups != 0) {
    throw_invalid("[conv] The input channels must be divisible by the number of groups. Got input with shape " +
                  shape_string(input.shape()) + " and " + std::to_string(groups) + " groups.");
  }
  if (c_out % groups != 0) {
    throw_invalid("[conv] The output channels must be divisible by the number of groups. Got " + std::to_string(c_out) +
                  " output channels and " + std::to_string(groups) + " groups.");
  }
  if (c_in != groups * weight.shape(-1)) {
    if (groups == 1) {
      throw_invalid("[conv] Expect the input channels in the input and weight array to match but got shapes - input: " +
                    shape_string(input.shape()) + " and weight: " + shape_string(weight.shape()) + ".");
    }
    throw_invalid("[conv] Given groups=" + std::to_string(groups) + " and weights of shape " +
                  shape_string(weight.shape()) + ", expected to have " + std::to_string(groups * weight.shape(-1)) +
                  " input channels but got " + std::to_string(c_in) + " input channels instead.");
  }
}

Dtype conv_dtype(const array& input, const array& weight) {
  const Dtype dtype = promote_types(input.dtype(), weight.dtype());
  if (!is_floating(input.dtype()) || !is_floating(dtype)) {
    throw_invalid("[conv] Invalid input array with type " + std::string(dtype_name(input.dtype())) +
                  " and weight with type " + std::string(dtype_name(weight.dtype())) +
                  ". Convolution currently only supports floating point types.");
  }
  return dtype;
}

/// One spatial axis of a transposed convolution, as the convolution that computes it.
struct TransposedAxis {
  int padding_lo;
  int padding_hi;
};

TransposedAxis transposed_axis(int kernel, int stride, int padding, int dilation, int output_padding) {
  if (output_padding < 0 || (output_padding >= stride && output_padding >= dilation)) {
    throw_invalid(
        "[conv_transpose] The output padding must be non-negative and smaller than either the stride or "
        "the dilation; got output_padding=" +
        std::to_string(output_padding) + ", stride=" + std::to_string(stride) +
        " and dilation=" + std::to_string(dilation) + ".");
  }
  const int span = dilation * (kernel - 1);  // the dilated kernel's extent minus one
  return {span - padding, span - padding + output_padding};
}

array conv_transpose_general(const array& input, const array& weight, const std::vector<int>& stride,
                             const std::vector<int>& padding, const std::vector<int>& dilation,
                             const std::vector<int>& output_padding, int groups, StreamOrDevice s) {
  const int spatial = static_cast<int>(stride.size());
  check_rank(input, weight, spatial);
  check_positive(stride, "stride");
  check_positive(dilation, "kernel dilation");
  std::vector<int> lo(spatial);
  std::vector<int> hi(spatial);
  for (int i = 0; i < spatial; ++i) {
    auto axis = transposed_axis(weight.shape(i + 1), stride[i], padding[i], dilation[i], output_padding[i]);
    lo[i] = axis.padding_lo;
    hi[i] = axis.padding_hi;
  }
  return conv_general(input, weight, std::vector<int>(spatial, 1), lo, hi, dilation, stride, groups, true, s);
}

}  // namespace

array conv_general(array input, array weight, std::vector<int> stride, std::vector<int> padding_lo,
                   std::vector<int> padding_hi, std::vector<int> kernel_dilation, std::vector<int> input_dilation,
                   int groups, bool flip, StreamOrDevice s) {
  const int spatial = input.ndim() - 2;
  if (spatial < 1 || spatial > 3) {
    throw_invalid(
        "[conv] Only works for inputs with 1-3 spatial dimensions. The inputs must be in the format "
        "[N, ..., C_in]; got an input of shape " +
        shape_string(input.shape()) + ".");
  }
  check_rank(input, weight, spatial);
  const Dtype dtype = conv_dtype(input, weight);
  check_channels(input, weight, groups);
  stride = per_axis(stride, spatial, 1, "stride");
  padding_lo = per_axis(padding_lo, spatial, 0, "padding_lo");
  padding_hi = per_axis(padding_hi, spatial, 0, "padding_hi");
  kernel_dilation = per_axis(kernel_dilation, spatial, 1, "kernel_dilation");
  input_dilation = per_axis(input_dilation, spatial, 1, "input_dilation");
  check_positive(stride, "stride");
  check_positive(kernel_dilation, "kernel dilation");
  check_positive(input_dilation, "input dilation");
  for (int i = 0; i < spatial; ++i) {
    if (weight.shape(i + 1) < 1) {
      throw_invalid("[conv] The weight's spatial dimensions must be positive; got weight of shape " +
                    shape_string(weight.shape()) + ".");
    }
  }

  // Negative padding crops the (dilated) input; cropping the undilated input is exact when the crop is a
  // multiple of the dilation, so larger crops keep a remainder as the new (non-negative) padding.
  Shape start(input.ndim(), 0);
  Shape stop = input.shape();
  bool crop = false;
  for (int i = 0; i < spatial; ++i) {
    const int d = input_dilation[i];
    if (padding_lo[i] < 0) {
      const int rows = (-padding_lo[i] + d - 1) / d;  // whole input rows dropped at the low end
      start[i + 1] = std::min(rows, input.shape(i + 1));
      padding_lo[i] += rows * d;
      crop = true;
    }
    if (padding_hi[i] < 0) {
      const int rows = (-padding_hi[i] + d - 1) / d;
      stop[i + 1] = std::max(stop[i + 1] - rows, start[i + 1]);
      padding_hi[i] += rows * d;
      crop = true;
    }
  }
  if (crop) {
    input = slice(input, start, stop, s);
  }

  // The output shape is the rule's (output_shapes.cpp); here each spatial size is checked.
  for (int i = 0; i < spatial; ++i) {
    const int64_t size = input.shape(i + 1);
    const int64_t dilated = size == 0 ? 0 : (size - 1) * input_dilation[i] + 1;
    const int64_t kernel = static_cast<int64_t>(weight.shape(i + 1) - 1) * kernel_dilation[i] + 1;
    const int64_t span = dilated + padding_lo[i] + padding_hi[i] - kernel;
    if (span < 0) {
      throw_invalid(
          "[conv] Spatial dimensions of input after padding cannot be smaller than weight spatial "
          "dimensions. Got error at axis " +
          std::to_string(i + 1) + " for input with shape " + shape_string(input.shape()) + ", padding low " +
          list_string(padding_lo) + ", padding high " + list_string(padding_hi) + ", and weight of shape " +
          shape_string(weight.shape()) + ".");
    }
    checked_dim(span / stride[i] + 1, "conv");
  }
  return detail::make_node(Convolution{std::move(stride), std::move(padding_lo), std::move(padding_hi),
                                       std::move(kernel_dilation), std::move(input_dilation), groups, flip},
                           {astype(std::move(input), dtype, s), astype(std::move(weight), dtype, s)}, to_stream(s));
}

array conv1d(const array& input, const array& weight, int stride, int padding, int dilation, int groups,
             StreamOrDevice s) {
  check_rank(input, weight, 1);
  return conv_general(input, weight, {stride}, {padding}, {padding}, {dilation}, {1}, groups, false, s);
}

array conv2d(const array& input, const array& weight, const std::pair<int, int>& stride,
             const std::pair<int, int>& padding, const std::pair<int, int>& dilation, int groups, StreamOrDevice s) {
  check_rank(input, weight, 2);
  std::vector<int> pad{padding.first, padding.second};
  return conv_general(input, weight, {stride.first, stride.second}, pad, pad, {dilation.first, dilation.second}, {1, 1},
                      groups, false, s);
}

array conv3d(const array& input, const array& weight, const std::tuple<int, int, int>& stride,
             const std::tuple<int, int, int>& padding, const std::tuple<int, int, int>& dilation, int groups,
             StreamOrDevice s) {
  check_rank(input, weight, 3);
  auto vec = [](const std::tuple<int, int, int>& t) {
    return std::vector<int>{std::get<0>(t), std::get<1>(t), std::get<2>(t)};
  };
  return conv_general(input, weight, vec(stride), vec(padding), vec(padding), vec(dilation), {1, 1, 1}, groups, false,
                      s);
}

array conv_transpose1d(const array& input, const array& weight, int stride, int padding, int dilation,
                       int output_padding, int groups, StreamOrDevice s) {
  return conv_transpose_general(input, weight, {stride}, {padding}, {dilation}, {output_padding}, groups, s);
}

array conv_transpose2d(const array& input, const array& weight, const std::pair<int, int>& stride,
                       const std::pair<int, int>& padding, const std::pair<int, int>& dilation,
                       const std::pair<int, int>& output_padding, int groups, StreamOrDevice s) {
  return conv_transpose_general(input, weight, {stride.first, stride.second}, {padding.first, padding.second},
                                {dilation.first, dilation.second}, {output_padding.first, output_padding.second},
                                groups, s);
}

array conv_transpose3d(const array& input, const array& weight, const std::tuple<int, int, int>& stride,
                       const std::tuple<int, int, int>& padding, const std::tuple<int, int, int>& dilation,
                       const std::tuple<int, int, int>& output_padding, int groups, StreamOrDevice s) {
  auto vec = [](const std::tuple<int, int, int>& t) {
    return std::vector<int>{std::get<0>(t), std::get<1>(t), std::get<2>(t)};
  };
  return conv_transpose_general(input, weight, vec(stride), vec(padding), vec(dilation), vec(output_padding), groups,
                                s);
}

}  // namespace nuvec
