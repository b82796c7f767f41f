#pragma once

// Dense layers: Identity, Linear (weight (out, in) as PyTorch and MLX), Bilinear (weight (out, in2, in1) as MLX:
// y_o = x2 . W_o x1 + b_o; PyTorch's is (out, in1, in2)) and Embedding (weight (num_embeddings, dims)).

#include <memory>
#include <optional>
#include <string>

#include "nuvec/nn/module.h"

namespace nuvec::nn {

/// Returns its input unchanged (a placeholder with no parameters).
class Identity : public UnaryModule {
 public:
  [[nodiscard]] std::string type_name() const override { return "Identity"; }
  array forward(const array& x) override { return x; }
};

/// y = x @ weight.T + bias, weight (output_dims, input_dims) and bias (output_dims) drawn from
/// U(-1/sqrt(input_dims), 1/sqrt(input_dims)); bias only when `bias` (default true).
class Linear : public UnaryModule {
 public:
  Linear(int input_dims, int output_dims, bool bias = true);
  [[nodiscard]] std::string type_name() const override { return "Linear"; }
  /// (..., input_dims) -> (..., output_dims); a non-floating x or another last axis throws.
  array forward(const array& x) override;
  /// The sizes of the input's and the output's last axis.
  [[nodiscard]] int input_dims() const { return input_dims_; }
  [[nodiscard]] int output_dims() const { return output_dims_; }
  /// The layer with its weight quantized (what nn::quantize puts in its place): a QuantizedLinear, or the quantized
  /// form of a tensor-parallel layer. A layer already quantized throws.
  [[nodiscard]] virtual std::shared_ptr<Linear> to_quantized(int group_size, int bits, const std::string& mode) const;

  array weight;
  std::optional<array> bias;

 protected:
  /// x @ weight.T, plus the bias when `with_bias` and the layer has one; x is checked by the caller.
  [[nodiscard]] array affine(const array& x, bool with_bias) const;

  int input_dims_;
  int output_dims_;
};

/// y[..., o] = x2 @ weight[o] @ x1 + bias[o], weight (output_dims, input2_dims, input1_dims) (MLX's layout; PyTorch's
/// weight is its transpose in the last two axes) and bias drawn from U(-1/sqrt(input1_dims), 1/sqrt(input1_dims)).
class Bilinear : public Module {
 public:
  Bilinear(int input1_dims, int input2_dims, int output_dims, bool bias = true);
  [[nodiscard]] std::string type_name() const override { return "Bilinear"; }
  /// x1 (..., input1_dims) and x2 (..., input2_dims) with the same leading axes -> (..., output_dims); other shapes
  /// or non-floating inputs throw.
  array forward(const array& x1, const array& x2);
  /// forward(x1, x2).
  array operator()(const array& x1, const array& x2) { return forward(x1, x2); }

  array weight;
  std::optional<array> bias;
};

/// A lookup table of `num_embeddings` vectors of `dims`, drawn from N(0, 1/dims).
class Embedding : public UnaryModule {
 public:
  Embedding(int num_embeddings, int dims);
  [[nodiscard]] std::string type_name() const override { return "Embedding"; }
  /// The rows of weight at the integer indices x: shape x.shape + (dims); non-integer indices throw.
  array forward(const array& x) override;
  /// x @ weight.T: the table used as an output projection (tied embeddings); x is floating (..., dims).
  virtual array as_linear(const array& x);
  /// The table's size: rows and features per row.
  [[nodiscard]] int num_embeddings() const { return num_embeddings_; }
  [[nodiscard]] int dims() const { return dims_; }

  array weight;

 protected:
  /// Checks that x holds integer indices.
  void check_indices(const array& x) const;
  int num_embeddings_;
  int dims_;
};

}  // namespace nuvec::nn
