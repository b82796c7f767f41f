#include "nuvec/nn/transformer.h"

#include <cmath>

#include "nuvec/core/fast.h"
#include "nuvec/core/ops.h"
#include "nuvec/nn/activations.h"

namespace nuvec::nn {

MultiHeadAttention::MultiHeadAttention(int dims, int num_heads, std::optional<int> query_input_dims,
                                       std::optional<int> key_input_dims, std::optional<int> value_input_dims,
                                       std::optional<int> value_dims, std::optional<int> value_output_dims, bool bias)
    : num_heads_(num_heads) {
  if (num_heads < 1 || dims % num_heads != 0) {
    throw_invalid("[MultiHeadAttention] num_heads (" + std::to_string(num_heads) + ") must divide dims (" +
                  std::to_string(dims) + ").");
  }
  const int k_in = key_input_dims.value_or(dims);
  const int v_dims = value_dims.value_or(dims);
  if (v_dims % num_heads != 0) {
    throw_invalid("[MultiHeadAttention] num_heads (" + std::to_string(num_heads) + ") must divide value_dims (" +
                  std::to_string(v_dims) + ").");
  }
  query_proj = std::make_shared<Linear>(query_input_dims.value_or(dims), dims, bias);
  key_proj = std::make_shared<Linear>(k_in, dims, bias);
  value_proj = std::make_shared<Linear>(value_input_dims.value_or(k_in), v_dims, bias);
  out_proj = std::make_shared<Linear>(v_dims, value_output_dims.value_or(dims), bias);
  register_module("query_proj", query_proj);
  register_module("key_proj", key_proj);
  register_module("value_proj", value_proj);
  register_module("out_proj", out_proj);
}

array MultiHeadAttention::forward(const array& queries, const array& keys, const array& values,
                                  const std::optional<array>& mask) {
  if (queries.ndim() != 3 || keys.ndim() != 3 || values.ndim() != 3 || keys.shape(0) != queries.shape(0) ||
      values.shape(0) != queries.shape(0) || keys.shape(1) != values.shape(1)) {
    fail("expected queries (B, L_q, D_q), keys (B, L_k, D_k) and values (B, L_k, D_v); given shapes " +
         shape_string(queries.shape()) + ", " + shape_string(keys.shape()) + " and " + shape_string(values.shape()) +
         ".");
  }
  auto heads = [this](const array& x) {
    return transpose(reshape(x, {x.shape(0), x.shape(1), num_heads_, -1}), {0, 2, 1, 3});
  };
  auto q = heads(query_proj->forward(queries));
  auto k = heads(key_proj->forward(keys));
  auto v = heads(value_proj->forward(values));
  const float scale = 1.0F / std::sqrt(static_cast<float>(q.shape(-1)));
  auto o = mask ? fast::scaled_dot_product_attention(q, k, v, scale, "array", mask)
                : fast::scaled_dot_product_attention(q, k, v, scale);
  o = reshape(transpose(o, {0, 2, 1, 3}), {queries.shape(0), queries.shape(1), -1});
  return out_proj->forward(o);
}

array MultiHeadAttention::create_additive_causal_mask(int N, Dtype dtype) {
  auto indices = arange(0, N);
  auto above = less(expand_dims(indices, 1), expand_dims(indices, 0));
  return astype(above, dtype) * array(finfo(dtype).min, dtype);
}

TransformerEncoderLayer::TransformerEncoderLayer(int dims, int num_heads, std::optional<int> mlp_dims, float dropout,
                                                 ActivationFn activation, bool norm_first)
    : attention(std::make_shared<MultiHeadAttention>(dims, num_heads)),
      ln1(std::make_shared<LayerNorm>(dims)),
      ln2(std::make_shared<LayerNorm>(dims)),
      linear1(std::make_shared<Linear>(dims, mlp_dims.value_or(4 * dims))),
      linear2(std::make_shared<Linear>(mlp_dims.value_or(4 * dims), dims)),
      dropout1(std::make_shared<Dropout>(dropout)),
      dropout2(std::make_shared<Dropout>(dropout)),
      activation_(activation ? std::move(activation) : ActivationFn(nn::relu)),
      norm_first_(norm_first) {
  register_module("attention", attention);
  register_module("ln1", ln1);
  register_module("ln2", ln2);
  register_module("linear1", linear1);
  register_module("linear2", linear2);
  register_module("dropout1", dropout1);
  register_module("dropout2", dropout2);
}

array TransformerEncoderLayer::forward(const array& x, const std::optional<array>& mask) {
  auto mlp = [this](const array& y) { return linear2->forward(dropout2->forward(activation_(linear1->forward(y)))); };
  if (norm_first_) {
    auto y = ln1->forward(x);
    auto h = x + dropout1->forward(attention->forward(y, y, y, mask));
    return h + mlp(ln2->forward(h));
  }
  auto h = ln1->forward(x + dropout1->forward(attention->forward(x, x, x, mask)));
  return ln2->forward(h + mlp(h));
}

TransformerDecoderLayer::TransformerDecoderLayer(int dims, int num_heads, std::optional<int> mlp_dims, float dropout,
                                                 ActivationFn activation, bool norm_first)
    : self_attention(std::make_shared<MultiHeadAttention>(dims, num_heads)),
      cross_attention(std::make_shared<MultiHeadAttention>(dims, num_heads)),
      ln1(std::make_shared<LayerNorm>(dims)),
      ln2(std::make_shared<LayerNorm>(dims)),
      ln3(std::make_shared<LayerNorm>(dims)),
      linear1(std::make_shared<Linear>(dims, mlp_dims.value_or(4 * dims))),
      linear2(std::make_shared<Linear>(mlp_dims.value_or(4 * dims), dims)),
      dropout1(std::make_shared<Dropout>(dropout)),
      dropout2(std::make_shared<Dropout>(dropout)),
      dropout3(std::make_shared<Dropout>(dropout)),
      activation_(activation ? std::move(activation) : ActivationFn(nn::relu)),
      norm_first_(norm_first) {
  register_module("self_attention", self_attention);
  register_module("cross_attention", cross_attention);
  register_module("ln1", ln1);
  register_module("ln2", ln2);
  register_module("ln3", ln3);
  register_module("linear1", linear1);
  register_module("linear2", linear2);
  register_module("dropout1", dropout1);
  register_module("dropout2", dropout2);
  register_module("dropout3", dropout3);
}

array TransformerDecoderLayer::forward(const array& x, const array& memory, const std::optional<array>& x_mask,
                                       const std::optional<array>& memory_mask) {
  auto mlp = [this](const array& y) { return linear2->forward(dropout3->forward(activation_(linear1->forward(y)))); };
  if (norm_first_) {
    auto y = ln1->forward(x);
    auto h = x + dropout1->forward(self_attention->forward(y, y, y, x_mask));
    y = ln2->forward(h);
    h = h + dropout2->forward(cross_attention->forward(y, memory, memory, memory_mask));
    return h + mlp(ln3->forward(h));
  }
  auto h = ln1->forward(x + dropout1->forward(self_attention->forward(x, x, x, x_mask)));
  h = ln2->forward(h + dropout2->forward(cross_attention->forward(h, memory, memory, memory_mask)));
  return ln3->forward(h + mlp(h));
}

TransformerEncoder::TransformerEncoder(int num_layers, int dims, int num_heads, std::optional<int> mlp_dims,
                                       float dropout, const ActivationFn& activation, bool norm_first)
    : layers(num_layers), ln(std::make_shared<LayerNorm>(dims)) {
  for (int i = 0; i < num_layers; ++i) {
    layers[i] = std::make_shared<TransformerEncoderLayer>(dims, num_heads, mlp_dims, dropout, activation, norm_first);
    register_module("layers." + std::to_string(i), layers[i]);
  }
  register_module("ln", ln);
}

array TransformerEncoder::forward(const array& x, const std::optional<array>& mask) {
  array y = x;
  for (const auto& layer : layers) {
    y = layer->forward(y, mask);
  }
  return ln->forward(y);
}

TransformerDecoder::TransformerDecoder(int num_layers, int dims, int num_heads, std::optional<int> mlp_dims,
                                       float dropout, const ActivationFn& activation, bool norm_first)
    : layers(num_layers), ln(std::make_shared<LayerNorm>(dims)) {
  for (int i = 0; i < num_layers; ++i) {
    layers[i] = std::make_shared<TransformerDecoderLayer>(dims, num_heads, mlp_dims, dropout, activation, norm_first);
    register_module("layers." + std::to_string(i), layers[i]);
  }
  register_module("ln", ln);
}

array TransformerDecoder::forward(const array& x, const array& memory, const std::optional<array>& x_mask,
                                  const std::optional<array>& memory_mask) {
  array y = x;
  for (const auto& layer : layers) {
    y = layer->forward(y, memory, x_mask, memory_mask);
  }
  return ln->forward(y);
}

}  // namespace nuvec::nn
