#include "nuvec/nn/pooling.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "nuvec/core/op_prefix.h"
#include "nuvec/core/ops.h"
#include "nuvec/nn/scalar.h"

namespace nuvec::nn {

using detail::like;

PoolBase::PoolBase(std::string name, int spatial, bool max, const Sizes& kernel, const std::optional<Sizes>& stride,
                   const Sizes& padding)
    : name_(std::move(name)),
      spatial_(spatial),
      max_(max),
      kernel_(kernel.per_axis(spatial, name_, "kernel_size")),
      stride_(stride.value_or(kernel).per_axis(spatial, name_, "stride")),
      padding_(padding.per_axis(spatial, name_, "padding")) {
  for (int i = 0; i < spatial; ++i) {
    if (kernel_[i] < 1 || stride_[i] < 1 || padding_[i] < 0 || 2 * padding_[i] > kernel_[i]) {
      throw_invalid(nuvec::detail::op_prefix(name_) + "needs kernel and stride >= 1 and 0 <= padding <= kernel / 2.");
    }
  }
}

array PoolBase::forward(const array& x) {
  if (!is_floating(x.dtype())) {
    fail("expected a floating-point input; given dtype " + std::string(dtype_name(x.dtype())) + ".");
  }
  if (x.ndim() != spatial_ + 2 && x.ndim() != spatial_ + 1) {
    fail("expected input of " + std::to_string(spatial_ + 2) + " axes (N, spatial..., C) or " +
         std::to_string(spatial_ + 1) + " (spatial..., C); given shape " + shape_string(x.shape()) + ".");
  }
  const bool batched = x.ndim() == spatial_ + 2;
  array in = batched ? x : expand_dims(x, 0);
  std::vector<int> axes(spatial_);
  Shape out(spatial_);
  bool padded = false;
  for (int i = 0; i < spatial_; ++i) {
    axes[i] = i + 1;
    padded = padded || padding_[i] > 0;
    const int span = in.shape(i + 1) + 2 * padding_[i];
    out[i] = span < kernel_[i] ? 0 : (span - kernel_[i]) / stride_[i] + 1;
    if (out[i] < 1) {
      fail("kernel " + std::to_string(kernel_[i]) + " does not fit spatial axis " + std::to_string(i) +
           " of input shape " + shape_string(x.shape()) + ".");
    }
  }
  if (padded) {
    double fill = max_ ? -std::numeric_limits<double>::infinity() : 0.0;
    in =
        pad(in, axes, Shape(padding_.begin(), padding_.end()), Shape(padding_.begin(), padding_.end()), like(in, fill));
  }
  bool tiled = !max_;
  for (int i = 0; i < spatial_; ++i) {
    tiled = tiled && stride_[i] == kernel_[i];
  }
  array y = in;
  if (tiled) {
    // Non-overlapping average windows: crop to whole windows, split each axis into (windows, kernel), average the
    // kernels (its backward is one broadcast).
    Shape start(in.ndim(), 0);
    Shape stop = in.shape();
    Shape split_shape{in.shape(0)};
    std::vector<int> reduce_axes;
    for (int i = 0; i < spatial_; ++i) {
      stop[i + 1] = out[i] * kernel_[i];
      split_shape.push_back(out[i]);
      split_shape.push_back(kernel_[i]);
      reduce_axes.push_back(2 * i + 2);
    }
    split_shape.push_back(in.shape(-1));
    y = mean(reshape(slice(in, start, stop), split_shape), reduce_axes);
  } else {
    // One strided slice per kernel offset, combined in window order. Max keeps the first maximum (and NaN), as
    // PyTorch does, with selects: forward and backward are a few passes over the output instead of a reduction.
    int count = 1;
    for (int k : kernel_) {
      count *= k;
    }
    std::optional<array> acc;
    for (int flat = 0; flat < count; ++flat) {
      Shape start(in.ndim(), 0);
      Shape stop = in.shape();
      Shape strides(in.ndim(), 1);
      int rest = flat;
      for (int i = spatial_ - 1; i >= 0; --i) {
        int offset = rest % kernel_[i];
        rest /= kernel_[i];
        start[i + 1] = offset;
        stop[i + 1] = offset + (out[i] - 1) * stride_[i] + 1;
        strides[i + 1] = stride_[i];
      }
      auto window = slice(in, start, stop, strides);
      if (!acc) {
        acc = window;
      } else if (max_) {
        acc = where(logical_or(greater(window, *acc), isnan(window)), window, *acc);
      } else {
        acc = *acc + window;
      }
    }
    y = max_ ? *acc : *acc / like(*acc, count);
  }
  return batched ? y : squeeze(y, 0);
}

Upsample::Upsample(std::vector<float> scale_factor, std::string mode, bool align_corners)
    : scale_(std::move(scale_factor)), mode_(std::move(mode)), align_corners_(align_corners) {
  if (mode_ != "nearest" && mode_ != "linear" && mode_ != "cubic") {
    throw_invalid("[Upsample] mode must be \"nearest\", \"linear\" or \"cubic\"; given \"" + mode_ + "\".");
  }
  if (scale_.empty() || scale_.size() > 3) {
    throw_invalid("[Upsample] needs 1 to 3 scale factors.");
  }
}

namespace {

/// Keys' cubic convolution kernel with a = -0.75 (PyTorch's bicubic), for |x| <= 1 and 1 < |x| < 2.
double cubic_near(double x) { return ((1.25 * x - 2.25) * x) * x + 1.0; }
double cubic_far(double x) { return ((-0.75 * x + 3.75) * x - 6.0) * x + 3.0; }

}  // namespace

array Upsample::forward(const array& x) {
  const int spatial = x.ndim() - 2;
  if (!is_floating(x.dtype()) || spatial < 1 || spatial > 3 ||
      (scale_.size() != 1 && static_cast<int>(scale_.size()) != spatial)) {
    fail("expected a floating-point input (N, spatial..., C) with " + std::to_string(scale_.size()) +
         " spatial axes; given shape " + shape_string(x.shape()) + " of " + std::string(dtype_name(x.dtype())) + ".");
  }
  array y = x;
  for (int i = 0; i < spatial; ++i) {
    // Each output position reads a few source positions (taps) along this axis and weighs them; the taps and
    // weights depend on the position only, so they are small host-built arrays.
    const int axis = i + 1;
    const double scale = scale_.size() == 1 ? scale_[0] : scale_[i];
    const int in_size = x.shape(axis);
    const int out_size = static_cast<int>(std::floor(in_size * scale));
    const int taps = mode_ == "nearest" ? 1 : (mode_ == "linear" ? 2 : 4);
    std::vector<int32_t> index(static_cast<size_t>(taps) * out_size);
    std::vector<float> weight(index.size());
    auto clamp = [in_size](int v) { return std::min(std::max(v, 0), in_size - 1); };
    for (int o = 0; o < out_size; ++o) {
      double src = 0.0;
      if (mode_ == "nearest") {
        index[o] = clamp(static_cast<int>(std::floor(o * (1.0 / scale))));
        weight[o] = 1.0F;
        continue;
      }
      if (align_corners_) {
        src = out_size > 1 ? o * static_cast<double>(in_size - 1) / (out_size - 1) : 0.0;
      } else {
        src = (o + 0.5) / scale - 0.5;
        if (mode_ == "linear") {
          src = std::max(src, 0.0);
        }
      }
      const int base = static_cast<int>(std::floor(src));
      const double t = src - base;
      if (mode_ == "linear") {
        index[o] = clamp(base);
        index[out_size + o] = clamp(base + 1);
        weight[o] = static_cast<float>(1.0 - t);
        weight[out_size + o] = static_cast<float>(t);
      } else {
        const double w[4] = {cubic_far(t + 1.0), cubic_near(t), cubic_near(1.0 - t), cubic_far(2.0 - t)};
        for (int k = 0; k < 4; ++k) {
          index[k * out_size + o] = clamp(base - 1 + k);
          weight[k * out_size + o] = static_cast<float>(w[k]);
        }
      }
    }
    Shape weight_shape(x.ndim(), 1);
    weight_shape[axis] = out_size;
    std::optional<array> acc;
    for (int k = 0; k < taps; ++k) {
      auto idx = array(index.begin() + static_cast<std::ptrdiff_t>(k) * out_size, {out_size}, int32);
      auto tap = take(y, idx, axis);
      if (taps > 1) {
        auto w = array(weight.begin() + static_cast<std::ptrdiff_t>(k) * out_size, weight_shape, float32);
        tap = tap * astype(w, x.dtype());
      }
      acc = acc ? *acc + tap : tap;
    }
    y = *acc;
  }
  return y;
}

}  // namespace nuvec::nn
