#include "nuvec/nn/normalization.h"

#include <numeric>

#include "nuvec/core/fast.h"
#include "nuvec/core/ops.h"
#include "nuvec/nn/scalar.h"

namespace nuvec::nn {

using detail::like;

namespace {

/// (x - mean) * rsqrt(var + eps) over `axes`.
array normalize(const array& x, const std::vector<int>& axes, float eps) {
  auto mu = mean(x, axes, true);
  auto centered = x - mu;
  auto variance = mean(square(centered), axes, true);
  return centered * rsqrt(variance + like(variance, eps));
}

}  // namespace

LayerNorm::LayerNorm(int dims, float eps, bool affine, bool bias) : dims_(dims), eps_(eps) {
  if (affine) {
    weight = ones({dims});
    if (bias) {
      this->bias = zeros({dims});
    }
  }
  register_parameter("weight", weight);
  register_parameter("bias", this->bias);
}

array LayerNorm::forward(const array& x) {
  check_input(x, 1, dims_);
  return fast::layer_norm(x, weight, bias, eps_);
}

RMSNorm::RMSNorm(int dims, float eps) : weight(ones({dims})), dims_(dims), eps_(eps) {
  register_parameter("weight", weight);
}

array RMSNorm::forward(const array& x) {
  check_input(x, 1, dims_);
  return fast::rms_norm(x, weight, eps_);
}

GroupNorm::GroupNorm(int num_groups, int dims, float eps, bool affine, bool pytorch_compatible)
    : num_groups_(num_groups), dims_(dims), eps_(eps), pytorch_compatible_(pytorch_compatible) {
  if (num_groups < 1 || dims % num_groups != 0) {
    throw_invalid("[GroupNorm] num_groups (" + std::to_string(num_groups) + ") must divide dims (" +
                  std::to_string(dims) + ").");
  }
  if (affine) {
    weight = ones({dims});
    bias = zeros({dims});
  }
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

array GroupNorm::forward(const array& x) {
  check_input(x, 2, dims_);
  // Statistics over S and the channels of each group: (N, S, G, C / G) for consecutive channels, else
  // (N, S * C / G, G), where channel c lands in group c % G.
  auto grouped = pytorch_compatible_ ? reshape(x, {x.shape(0), -1, num_groups_, dims_ / num_groups_})
                                     : reshape(x, {x.shape(0), -1, num_groups_});
  auto axes = pytorch_compatible_ ? std::vector<int>{1, 3} : std::vector<int>{1};
  auto y = reshape(normalize(grouped, axes, eps_), x.shape());
  if (weight) {
    y = y * *weight + *bias;
  }
  return y;
}

BatchNorm::BatchNorm(int num_features, float eps, float momentum, bool affine, bool track_running_stats)
    : num_features_(num_features), eps_(eps), momentum_(momentum) {
  if (affine) {
    weight = ones({num_features});
    bias = zeros({num_features});
  }
  register_parameter("weight", weight);
  register_parameter("bias", bias);
  if (track_running_stats) {
    running_mean = zeros({num_features});
    running_var = ones({num_features});
    register_buffer("running_mean", *running_mean);
    num_batches_tracked = array(int64_t{0});
    register_buffer("running_var", *running_var);
    register_buffer("num_batches_tracked", *num_batches_tracked);
  }
}

array BatchNorm::forward(const array& x) {
  check_input(x, 2, num_features_);
  std::vector<int> axes(x.ndim() - 1);
  std::iota(axes.begin(), axes.end(), 0);
  array y = x;
  if (training() || !running_mean) {
    auto mu = mean(x, axes);
    auto variance = var(x, axes);
    if (training() && running_mean) {
      auto count = static_cast<double>(x.size()) / num_features_;
      auto unbiased = variance * like(variance, count / std::max(count - 1.0, 1.0));
      auto m = like(*running_mean, momentum_);
      auto keep = like(*running_mean, 1.0 - momentum_);
      *running_mean = stop_gradient(keep * *running_mean + m * astype(mu, running_mean->dtype()));
      *running_var = stop_gradient(keep * *running_var + m * astype(unbiased, running_var->dtype()));
      *num_batches_tracked = *num_batches_tracked + array(int64_t{1});
    }
    y = (x - mu) * rsqrt(variance + like(variance, eps_));
  } else {
    y = (x - *running_mean) * rsqrt(*running_var + like(*running_var, eps_));
  }
  if (weight) {
    y = y * *weight + *bias;
  }
  return y;
}

InstanceNorm::InstanceNorm(int dims, float eps, bool affine) : dims_(dims), eps_(eps) {
  if (affine) {
    weight = ones({dims});
    bias = zeros({dims});
  }
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

array InstanceNorm::forward(const array& x) {
  check_input(x, 3, dims_);
  std::vector<int> axes(x.ndim() - 2);
  std::iota(axes.begin(), axes.end(), 1);
  auto y = normalize(x, axes, eps_);
  if (weight) {
    y = y * *weight + *bias;
  }
  return y;
}

}  // namespace nuvec::nn
