#pragma once

// Attention and transformer layers with mlx.nn's structure and parameter names (query_proj, key_proj, value_proj,
// out_proj; attention, ln1, ln2, linear1, linear2). Inputs are (B, L, dims); masks are additive or boolean (true
// attends) and broadcast to the scores (B, H, L_q, L_k). The layers' defaults are mlx.nn's: mlp_dims 4 * dims, no
// dropout, relu, pre-norm.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nuvec/nn/dropout.h"
#include "nuvec/nn/linear.h"
#include "nuvec/nn/normalization.h"

namespace nuvec::nn {

/// The MLP's activation; empty means relu.
using ActivationFn = std::function<array(const array&)>;

/// softmax(q k^T / sqrt(head size) + mask) v over num_heads heads (fast::scaled_dot_product_attention), with
/// query, key, value and output projections (biases when `bias`, default false).
class MultiHeadAttention : public Module {
 public:
  /// The projections map query_input_dims, key_input_dims and value_input_dims to dims, dims and value_dims, and
  /// value_dims to value_output_dims. All default to dims, except value_input_dims, which defaults to
  /// key_input_dims. num_heads must divide dims and value_dims, else this throws.
  MultiHeadAttention(int dims, int num_heads, std::optional<int> query_input_dims = std::nullopt,
                     std::optional<int> key_input_dims = std::nullopt,
                     std::optional<int> value_input_dims = std::nullopt, std::optional<int> value_dims = std::nullopt,
                     std::optional<int> value_output_dims = std::nullopt, bool bias = false);
  [[nodiscard]] std::string type_name() const override { return "MultiHeadAttention"; }
  /// queries (B, L_q, query_input_dims), keys (B, L_k, key_input_dims) and values (B, L_k, value_input_dims) ->
  /// (B, L_q, value_output_dims); other ranks, batch sizes or lengths throw.
  array forward(const array& queries, const array& keys, const array& values,
                const std::optional<array>& mask = std::nullopt);
  /// forward(queries, keys, values, mask).
  array operator()(const array& queries, const array& keys, const array& values,
                   const std::optional<array>& mask = std::nullopt) {
    return forward(queries, keys, values, mask);
  }
  /// An (N, N) additive mask: 0 on and below the diagonal, the dtype's lowest value above it.
  static array create_additive_causal_mask(int N, Dtype dtype = float32);

  std::shared_ptr<Linear> query_proj;
  std::shared_ptr<Linear> key_proj;
  std::shared_ptr<Linear> value_proj;
  std::shared_ptr<Linear> out_proj;

 private:
  int num_heads_;
};

/// Self-attention and an MLP (linear1, activation, linear2), each in a residual branch with dropout.
class TransformerEncoderLayer : public Module {
 public:
  /// mlp_dims defaults to 4 * dims; norm_first applies the layer norms before attention and MLP (pre-norm),
  /// otherwise after each residual sum (post-norm).
  TransformerEncoderLayer(int dims, int num_heads, std::optional<int> mlp_dims = std::nullopt, float dropout = 0.0F,
                          ActivationFn activation = {}, bool norm_first = true);
  [[nodiscard]] std::string type_name() const override { return "TransformerEncoderLayer"; }
  /// (B, L, dims) -> (B, L, dims), the mask applied to self-attention.
  array forward(const array& x, const std::optional<array>& mask = std::nullopt);
  /// forward(x, mask).
  array operator()(const array& x, const std::optional<array>& mask = std::nullopt) { return forward(x, mask); }

  std::shared_ptr<MultiHeadAttention> attention;
  std::shared_ptr<LayerNorm> ln1;
  std::shared_ptr<LayerNorm> ln2;
  std::shared_ptr<Linear> linear1;
  std::shared_ptr<Linear> linear2;
  std::shared_ptr<Dropout> dropout1;
  std::shared_ptr<Dropout> dropout2;

 private:
  ActivationFn activation_;
  bool norm_first_;
};

/// Self-attention, cross-attention to the encoder's output and an MLP, each in a residual branch with dropout.
class TransformerDecoderLayer : public Module {
 public:
  /// Arguments as TransformerEncoderLayer's.
  TransformerDecoderLayer(int dims, int num_heads, std::optional<int> mlp_dims = std::nullopt, float dropout = 0.0F,
                          ActivationFn activation = {}, bool norm_first = true);
  [[nodiscard]] std::string type_name() const override { return "TransformerDecoderLayer"; }
  /// (B, L, dims) and memory (B, L_m, dims) -> (B, L, dims); x_mask applies to self-attention, memory_mask to
  /// cross-attention.
  array forward(const array& x, const array& memory, const std::optional<array>& x_mask = std::nullopt,
                const std::optional<array>& memory_mask = std::nullopt);
  /// forward(x, memory, x_mask, memory_mask).
  array operator()(const array& x, const array& memory, const std::optional<array>& x_mask = std::nullopt,
                   const std::optional<array>& memory_mask = std::nullopt) {
    return forward(x, memory, x_mask, memory_mask);
  }

  std::shared_ptr<MultiHeadAttention> self_attention;
  std::shared_ptr<MultiHeadAttention> cross_attention;
  std::shared_ptr<LayerNorm> ln1;
  std::shared_ptr<LayerNorm> ln2;
  std::shared_ptr<LayerNorm> ln3;
  std::shared_ptr<Linear> linear1;
  std::shared_ptr<Linear> linear2;
  std::shared_ptr<Dropout> dropout1;
  std::shared_ptr<Dropout> dropout2;
  std::shared_ptr<Dropout> dropout3;

 private:
  ActivationFn activation_;
  bool norm_first_;
};

/// A stack of encoder layers (layers.0, layers.1, ...) and a final layer norm (ln).
class TransformerEncoder : public Module {
 public:
  /// num_layers layers made with the other arguments (see TransformerEncoderLayer).
  TransformerEncoder(int num_layers, int dims, int num_heads, std::optional<int> mlp_dims = std::nullopt,
                     float dropout = 0.0F, const ActivationFn& activation = {}, bool norm_first = true);
  [[nodiscard]] std::string type_name() const override { return "TransformerEncoder"; }
  /// The layers in order, each with `mask`, then ln.
  array forward(const array& x, const std::optional<array>& mask = std::nullopt);
  /// forward(x, mask).
  array operator()(const array& x, const std::optional<array>& mask = std::nullopt) { return forward(x, mask); }

  std::vector<std::shared_ptr<TransformerEncoderLayer>> layers;
  std::shared_ptr<LayerNorm> ln;
};

/// A stack of decoder layers (layers.0, layers.1, ...) and a final layer norm (ln).
class TransformerDecoder : public Module {
 public:
  /// num_layers layers made with the other arguments (see TransformerEncoderLayer).
  TransformerDecoder(int num_layers, int dims, int num_heads, std::optional<int> mlp_dims = std::nullopt,
                     float dropout = 0.0F, const ActivationFn& activation = {}, bool norm_first = true);
  [[nodiscard]] std::string type_name() const override { return "TransformerDecoder"; }
  /// The layers in order, each with memory and both masks, then ln.
  array forward(const array& x, const array& memory, const std::optional<array>& x_mask = std::nullopt,
                const std::optional<array>& memory_mask = std::nullopt);
  /// forward(x, memory, x_mask, memory_mask).
  array operator()(const array& x, const array& memory, const std::optional<array>& x_mask = std::nullopt,
                   const std::optional<array>& memory_mask = std::nullopt) {
    return forward(x, memory, x_mask, memory_mask);
  }

  std::vector<std::shared_ptr<TransformerDecoderLayer>> layers;
  std::shared_ptr<LayerNorm> ln;
};

}  // namespace nuvec::nn
