#pragma once

// Quantized layers with MLX's affine format (CONFORMANCE.md) and checkpoint names: weight (uint32, packed),
// scales, biases, and bias for the layer's own bias. A QuantizedLinear is a Linear and a QuantizedEmbedding an
// Embedding, so `quantize` can swap them into any member declared with the float type. The packed weight, scales
// and biases are frozen (only the layer's bias trains).

#include <functional>
#include <string>

#include "nuvec/nn/linear.h"

namespace nuvec::nn {

class QuantizedLinear : public Linear {
 public:
  /// A layer with random weights, quantized.
  QuantizedLinear(int input_dims, int output_dims, bool bias = true, int group_size = 64, int bits = 4);
  /// The quantized copy of a Linear.
  explicit QuantizedLinear(const Linear& linear, int group_size = 64, int bits = 4);
  [[nodiscard]] std::string type_name() const override { return "QuantizedLinear"; }
  array forward(const array& x) override;
  [[nodiscard]] int group_size() const { return group_size_; }
  [[nodiscard]] int bits() const { return bits_; }

  array scales;
  array biases;

 private:
  void init(const array& float_weight);
  int group_size_;
  int bits_;
};

class QuantizedEmbedding : public Embedding {
 public:
  QuantizedEmbedding(int num_embeddings, int dims, int group_size = 64, int bits = 4);
  explicit QuantizedEmbedding(const Embedding& embedding, int group_size = 64, int bits = 4);
  [[nodiscard]] std::string type_name() const override { return "QuantizedEmbedding"; }
  array forward(const array& x) override;
  array as_linear(const array& x) override;
  [[nodiscard]] int group_size() const { return group_size_; }
  [[nodiscard]] int bits() const { return bits_; }

  array scales;
  array biases;

 private:
  void init(const array& float_weight);
  int group_size_;
  int bits_;
};

/// Replaces, in place, every Linear and Embedding of the tree whose input size divides by group_size (and that
/// `predicate` accepts, given its path and module) with its quantized version.
void quantize(Module& model, int group_size = 64, int bits = 4,
              const std::function<bool(const std::string&, Module&)>& predicate = {});

}  // namespace nuvec::nn
