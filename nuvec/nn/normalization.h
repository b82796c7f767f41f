#pragma once

// Normalization layers, channels-last (features on the last axis). Parameter names follow PyTorch: weight, bias,
// running_mean, running_var.

#include <optional>
#include <string>

#include "nuvec/nn/module.h"

namespace nuvec::nn {

/// Normalizes the last axis (fast::layer_norm); weight and bias when affine.
class LayerNorm : public UnaryModule {
 public:
  explicit LayerNorm(int dims, float eps = 1e-5F, bool affine = true, bool bias = true);
  [[nodiscard]] std::string type_name() const override { return "LayerNorm"; }
  array forward(const array& x) override;

  std::optional<array> weight;
  std::optional<array> bias;

 private:
  int dims_;
  float eps_;
};

/// x * rsqrt(mean(x^2) + eps) * weight over the last axis (fast::rms_norm).
class RMSNorm : public UnaryModule {
 public:
  explicit RMSNorm(int dims, float eps = 1e-5F);
  [[nodiscard]] std::string type_name() const override { return "RMSNorm"; }
  array forward(const array& x) override;

  array weight;

 private:
  int dims_;
  float eps_;
};

/// Normalizes groups of consecutive channels over (spatial..., channels of the group), as PyTorch's GroupNorm.
class GroupNorm : public UnaryModule {
 public:
  GroupNorm(int num_groups, int dims, float eps = 1e-5F, bool affine = true);
  [[nodiscard]] std::string type_name() const override { return "GroupNorm"; }
  array forward(const array& x) override;

  std::optional<array> weight;
  std::optional<array> bias;

 private:
  int num_groups_;
  int dims_;
  float eps_;
};

/// Normalizes each channel over the batch and spatial axes. Training uses the batch statistics and updates the
/// running ones (the unbiased variance, as PyTorch) and counts the batches (num_batches_tracked, so PyTorch state
/// dicts load strictly); evaluation uses the running statistics.
class BatchNorm : public UnaryModule {
 public:
  explicit BatchNorm(int num_features, float eps = 1e-5F, float momentum = 0.1F, bool affine = true,
                     bool track_running_stats = true);
  [[nodiscard]] std::string type_name() const override { return "BatchNorm"; }
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

/// Normalizes each channel of each sample over its spatial axes.
class InstanceNorm : public UnaryModule {
 public:
  explicit InstanceNorm(int dims, float eps = 1e-5F, bool affine = false);
  [[nodiscard]] std::string type_name() const override { return "InstanceNorm"; }
  array forward(const array& x) override;

  std::optional<array> weight;
  std::optional<array> bias;

 private:
  int dims_;
  float eps_;
};

}  // namespace nuvec::nn
