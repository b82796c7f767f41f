#pragma once

// Normalization layers, channels-last (features on the last axis). Parameter names follow PyTorch: weight, bias,
// running_mean, running_var. weight starts at ones and bias at zeros; variances are biased (divided by the count)
// and eps defaults to 1e-5. forward throws for a non-floating input, too few axes or another last-axis size.

#include <optional>
#include <string>

#include "nuvec/nn/module.h"

namespace nuvec::nn {

/// Normalizes the last axis (dims features) to zero mean and unit variance (fast::layer_norm); learned weight when
/// affine, and bias when affine and bias.
class LayerNorm : public UnaryModule {
 public:
  explicit LayerNorm(int dims, float eps = 1e-5F, bool affine = true, bool bias = true);
  [[nodiscard]] std::string type_name() const override { return "LayerNorm"; }
  /// (..., dims) -> (..., dims).
  array forward(const array& x) override;

  std::optional<array> weight;
  std::optional<array> bias;

 private:
  int dims_;
  float eps_;
};

/// x * rsqrt(mean(x^2) + eps) * weight over the last axis of dims features (fast::rms_norm), weight learned.
class RMSNorm : public UnaryModule {
 public:
  explicit RMSNorm(int dims, float eps = 1e-5F);
  [[nodiscard]] std::string type_name() const override { return "RMSNorm"; }
  /// (..., dims) -> (..., dims).
  array forward(const array& x) override;

  array weight;

 private:
  int dims_;
  float eps_;
};

/// Normalizes groups of channels over (spatial..., channels of the group); weight and bias per channel when affine.
/// As MLX, channel c belongs to group c % num_groups by default, and pytorch_compatible groups consecutive channels
/// as PyTorch's GroupNorm. num_groups must divide dims, else the constructor throws.
class GroupNorm : public UnaryModule {
 public:
  GroupNorm(int num_groups, int dims, float eps = 1e-5F, bool affine = true, bool pytorch_compatible = false);
  [[nodiscard]] std::string type_name() const override { return "GroupNorm"; }
  /// (N, spatial..., dims) -> the same shape; at least 2 axes.
  array forward(const array& x) override;

  std::optional<array> weight;
  std::optional<array> bias;

 private:
  int num_groups_;
  int dims_;
  float eps_;
  bool pytorch_compatible_;
};

/// Normalizes each channel over the batch and spatial axes. Training uses the batch statistics and updates the
/// running ones, new = (1 - momentum) old + momentum batch (the unbiased variance, as PyTorch), and counts the
/// batches (num_batches_tracked, so PyTorch state dicts load strictly); evaluation uses the running statistics, or
/// the batch's without track_running_stats. The running statistics are buffers: saved, never trained.
class BatchNorm : public UnaryModule {
 public:
  explicit BatchNorm(int num_features, float eps = 1e-5F, float momentum = 0.1F, bool affine = true,
                     bool track_running_stats = true);
  [[nodiscard]] std::string type_name() const override { return "BatchNorm"; }
  /// (N, ..., num_features) -> the same shape; at least 2 axes.
  array forward(const array& x) override;

  std::optional<array> weight;
  std::optional<array> bias;
  std::optional<array> running_mean;
  std::optional<array> running_var;
  std::optional<array> num_batches_tracked;

 private:
  int num_features_;
  float eps_;
  float momentum_;
};

/// Normalizes each channel of each sample over its spatial axes; weight and bias per channel when affine (off by
/// default).
class InstanceNorm : public UnaryModule {
 public:
  explicit InstanceNorm(int dims, float eps = 1e-5F, bool affine = false);
  [[nodiscard]] std::string type_name() const override { return "InstanceNorm"; }
  /// (N, spatial..., dims) -> the same shape; at least 3 axes.
  array forward(const array& x) override;

  std::optional<array> weight;
  std::optional<array> bias;

 private:
  int dims_;
  float eps_;
};

}  // namespace nuvec::nn
