#include "nuvec/lm/models/transformer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "nuvec/core/eval.h"
#include "nuvec/core/fast.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/shape.h"
#include "nuvec/distributed/ops.h"
#include "nuvec/lm/cache/rotating_cache.h"
#include "nuvec/lm/models/moe.h"
#include "nuvec/nn/activations.h"
#include "nuvec/nn/distributed_linear.h"
#include "nuvec/nn/normalization.h"

namespace nuvec::lm {

NormFactory rms_norm(float eps) {
  return [eps](int dims) { return std::make_shared<nn::RMSNorm>(dims, eps); };
}

Activation activation(const std::string& hidden_act) {
  static const std::map<std::string, array (*)(const array&)> known = {{"silu", nn::silu},
                                                                       {"swish", nn::silu},
                                                                       {"gelu", nn::gelu},
                                                                       {"gelu_pytorch_tanh", nn::gelu_approx},
                                                                       {"gelu_new", nn::gelu_approx},
                                                                       {"gelu_fast", nn::gelu_approx},
                                                                       {"relu", nn::relu}};
  auto it = known.find(hidden_act);
  if (it == known.end()) {
    std::string names;
    for (const auto& [name, fn] : known) {
      names += (names.empty() ? "" : ", ") + name;
    }
    throw_invalid("[config.json] unsupported hidden_act '" + hidden_act + "'; supported: " + names + ".");
  }
  return it->second;
}

// ---------------------------------------------------------------- attention

Attention::Attention(AttentionOptions options) : options_(std::move(options)) {
  const AttentionOptions& o = options_;
  if (o.num_heads <= 0 || o.num_kv_heads <= 0 || o.head_dim <= 0 || o.hidden_size <= 0 ||
      o.num_heads % o.num_kv_heads != 0) {
    fail("needs positive sizes and num_heads a multiple of num_kv_heads; got hidden_size " +
         std::to_string(o.hidden_size) + ", num_heads " + std::to_string(o.num_heads) + ", num_kv_heads " +
         std::to_string(o.num_kv_heads) + ", head_dim " + std::to_string(o.head_dim) + ".");
  }
  if (!o.rope) {
    fail("needs a RoPE.");
  }
  const int q_dims = o.num_heads * o.head_dim;
  const int kv_dims = o.num_kv_heads * o.head_dim;
  if (o.fused_qkv) {
    qkv_proj = std::make_shared<nn::Linear>(o.hidden_size, q_dims + 2 * kv_dims, o.qkv_bias);
    register_module("qkv_proj", qkv_proj);
  } else {
    q_proj = std::make_shared<nn::Linear>(o.hidden_size, q_dims, o.qkv_bias);
    k_proj = std::make_shared<nn::Linear>(o.hidden_size, kv_dims, o.qkv_bias);
    v_proj = std::make_shared<nn::Linear>(o.hidden_size, kv_dims, o.qkv_bias);
    register_module("q_proj", q_proj);
    register_module("k_proj", k_proj);
    register_module("v_proj", v_proj);
  }
  o_proj = std::make_shared<nn::Linear>(q_dims, o.hidden_size, o.o_bias);
  register_module("o_proj", o_proj);
  if (o.qk_norm) {
    q_norm = o.qk_norm(o.head_dim);
    k_norm = o.qk_norm(o.head_dim);
    register_module("q_norm", q_norm);
    register_module("k_norm", k_norm);
  }
  scale_ = o.scale.value_or(1.0F / std::sqrt(static_cast<float>(o.head_dim)));
}

array Attention::split_heads(const array& x, int heads) const {
  return transpose(reshape(x, {x.shape(0), x.shape(1), heads, options_.head_dim}), {0, 2, 1, 3});
}

array Attention::forward(const array& x, const MaskSpec& mask, KVCache* cache) {
  const AttentionOptions& o = options_;
  if (x.ndim() != 3) {
    std::ostringstream message;
    message << "expects hidden states (B, L, " << o.hidden_size << "); got shape " << x.shape() << ".";
    fail(message.str());
  }
  const int q_dims = o.num_heads * o.head_dim;
  const int kv_dims = o.num_kv_heads * o.head_dim;
  std::vector<array> qkv;
  if (qkv_proj) {
    qkv = split((*qkv_proj)(x), Shape{q_dims, q_dims + kv_dims}, -1);
  } else {
    qkv = {(*q_proj)(x), (*k_proj)(x), (*v_proj)(x)};
  }
  array queries = split_heads(qkv[0], o.num_heads);
  array keys = split_heads(qkv[1], o.num_kv_heads);
  array values = split_heads(qkv[2], o.num_kv_heads);
  if (q_norm) {
    queries = (*q_norm)(queries);
    keys = (*k_norm)(keys);
  }
  queries = (*o.rope)(queries, cache);
  keys = (*o.rope)(keys, cache);
  array out = attend(queries, keys, values, mask, cache);
  out = reshape(transpose(out, {0, 2, 1, 3}), {x.shape(0), x.shape(1), q_dims});
  return (*o_proj)(out);
}

array Attention::attend(const array& queries, const array& keys, const array& values, const MaskSpec& mask,
                        KVCache* cache) {
  if (cache != nullptr) {
    return cache->attend(queries, keys, values, scale_, mask);
  }
  return fast::scaled_dot_product_attention(queries, keys, values, scale_, mask.mode, mask.mask);
}

void Attention::shard(const distributed::Group& group) {
  AttentionOptions& o = options_;
  const int n = group.size();
  const int r = group.rank();
  if (o.num_kv_heads < n || o.num_heads % o.num_kv_heads != 0) {
    fail("cannot split " + std::to_string(o.num_heads) + " heads and " + std::to_string(o.num_kv_heads) +
         " key-value heads across " + std::to_string(n) + " ranks: each rank needs a key-value head of its own.");
  }
  // Rows are head after head. Each rank takes whole key-value heads (the first num_kv_heads % n ranks one more)
  // with the query heads that meet them, query head i meeting key-value head i / (num_heads / num_kv_heads).
  const int group_heads = o.num_heads / o.num_kv_heads;
  std::vector<int> kv_heads;
  for (int i = 0; i < n; ++i) {
    kv_heads.push_back(o.num_kv_heads / n + (i < o.num_kv_heads % n ? 1 : 0));
  }
  const auto dims = [&](int heads_per_kv) {
    std::vector<int> sizes;
    for (int heads : kv_heads) {
      sizes.push_back(heads * heads_per_kv * o.head_dim);
    }
    return sizes;
  };
  const bool even = o.num_kv_heads % n == 0;
  if (qkv_proj) {
    if (!even) {
      fail("cannot split the fused qkv_proj of " + std::to_string(o.num_kv_heads) + " key-value heads across " +
           std::to_string(n) + " ranks: the group size must divide them.");
    }
    const double q_dims = o.num_heads * o.head_dim;
    const double kv_dims = o.num_kv_heads * o.head_dim;
    const double total = q_dims + 2.0 * kv_dims;
    set_child("qkv_proj", nn::shard_linear(*qkv_proj, nn::Sharding::all_to_sharded,
                                           std::vector<double>{q_dims / total, (q_dims + kv_dims) / total}, group));
  } else {
    set_child("q_proj", nn::shard_linear(*q_proj, nn::Sharding::all_to_sharded, 1, group, dims(group_heads)));
    set_child("k_proj", nn::shard_linear(*k_proj, nn::Sharding::all_to_sharded, 1, group, dims(1)));
    set_child("v_proj", nn::shard_linear(*v_proj, nn::Sharding::all_to_sharded, 1, group, dims(1)));
  }
  set_child("o_proj", nn::shard_linear(*o_proj, nn::Sharding::sharded_to_all, 1, group, dims(group_heads)));
  o.num_kv_heads = kv_heads[static_cast<size_t>(r)];
  o.num_heads = o.num_kv_heads * group_heads;
}

// ---------------------------------------------------------------- feed-forward

MLP::MLP(MLPOptions options) : options_(std::move(options)) {
  const MLPOptions& o = options_;
  if (!o.activation) {
    fail("needs an activation.");
  }
  if (o.fused_gate_up) {
    gate_up_proj = std::make_shared<nn::Linear>(o.hidden_size, 2 * o.intermediate_size, o.bias);
    register_module("gate_up_proj", gate_up_proj);
  } else {
    gate_proj = std::make_shared<nn::Linear>(o.hidden_size, o.intermediate_size, o.bias);
    up_proj = std::make_shared<nn::Linear>(o.hidden_size, o.intermediate_size, o.bias);
    register_module("gate_proj", gate_proj);
    register_module("up_proj", up_proj);
  }
  down_proj = std::make_shared<nn::Linear>(o.intermediate_size, o.hidden_size, o.bias);
  register_module("down_proj", down_proj);
}

array MLP::forward(const array& x) {
  if (gate_up_proj) {
    auto gate_up = split((*gate_up_proj)(x), 2, -1);
    return (*down_proj)(options_.activation(gate_up[0]) * gate_up[1]);
  }
  return (*down_proj)(options_.activation((*gate_proj)(x)) * (*up_proj)(x));
}

void MLP::shard(const distributed::Group& group) {
  if (gate_up_proj) {
    set_child("gate_up_proj", nn::shard_linear(*gate_up_proj, nn::Sharding::all_to_sharded, 2, group));
  } else {
    set_child("gate_proj", nn::shard_linear(*gate_proj, nn::Sharding::all_to_sharded, 1, group));
    set_child("up_proj", nn::shard_linear(*up_proj, nn::Sharding::all_to_sharded, 1, group));
  }
  set_child("down_proj", nn::shard_linear(*down_proj, nn::Sharding::sharded_to_all, 1, group));
}

// ---------------------------------------------------------------- layers

void DecoderLayer::shard(const distributed::Group& group) {
  (void)group;
  throw_unsupported(describe() + " cannot be sharded.");
}

void DecoderLayer::shard_parts(Attention& attention, nn::UnaryModule& feed_forward,
                               const distributed::Group& group) const {
  auto* mlp = dynamic_cast<MLP*>(&feed_forward);
  auto* experts = dynamic_cast<SparseMoeBlock*>(&feed_forward);
  if (mlp == nullptr && experts == nullptr) {
    throw_unsupported(describe() + " cannot be sharded: its feed-forward is a " + feed_forward.type_name() +
                      ", not an MLP or a SparseMoeBlock.");
  }
  attention.shard(group);
  if (mlp != nullptr) {
    mlp->shard(group);
  } else {
    experts->shard(group);
  }
}

TransformerBlock::TransformerBlock(std::shared_ptr<Attention> attention, std::shared_ptr<nn::UnaryModule> feed_forward,
                                   int hidden_size, const NormFactory& norm, const std::string& feed_forward_name)
    : input_layernorm(norm(hidden_size)),
      self_attn(std::move(attention)),
      post_attention_layernorm(norm(hidden_size)),
      feed_forward(std::move(feed_forward)) {
  register_module("input_layernorm", input_layernorm);
  register_module("self_attn", self_attn);
  register_module("post_attention_layernorm", post_attention_layernorm);
  register_module(feed_forward_name, this->feed_forward);
}

array TransformerBlock::forward(const array& x, const MaskSpec& mask, KVCache* cache) {
  array h = x + self_attn->forward((*input_layernorm)(x), mask, cache);
  return h + (*feed_forward)((*post_attention_layernorm)(h));
}

DecoderLayers::DecoderLayers(std::vector<std::shared_ptr<DecoderLayer>> layers) : layers_(std::move(layers)) {
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (!layers_[i]) {
      fail("layer " + std::to_string(i) + " is empty.");
    }
    add_child(
        std::to_string(i), [this, i]() -> nn::Module* { return layers_[i].get(); },
        [this, i](const std::string& name, const std::shared_ptr<nn::Module>& m) {
          auto typed = std::dynamic_pointer_cast<DecoderLayer>(m);
          if (!typed) {
            fail("child '" + name + "' must be a decoder layer; given a " + m->type_name() + ".");
          }
          layers_[i] = std::move(typed);
        });
  }
}

DecoderLayer& DecoderLayers::operator[](size_t i) const {
  if (!layers_.at(i)) {
    fail("layer " + std::to_string(i) + " is not held here: this pipeline rank keeps only its own layers.");
  }
  return *layers_[i];
}

void DecoderLayers::keep_only(size_t begin, size_t end) {
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (i < begin || i >= end) {
      layers_[i].reset();
    }
  }
}

DecoderStack::DecoderStack(int vocab_size, int hidden_size, std::vector<std::shared_ptr<DecoderLayer>> layers,
                           std::shared_ptr<nn::UnaryModule> norm)
    : embed_tokens(std::make_shared<nn::Embedding>(vocab_size, hidden_size)),
      layers(std::make_shared<DecoderLayers>(std::move(layers))),
      norm(std::move(norm)) {
  register_module("embed_tokens", embed_tokens);
  register_module("layers", this->layers);
  register_module("norm", this->norm);
}

// ---------------------------------------------------------------- the model

TransformerModel::TransformerModel(std::string model_type, int vocab_size, int hidden_size,
                                   std::vector<std::shared_ptr<DecoderLayer>> layers,
                                   std::shared_ptr<nn::UnaryModule> norm, bool tie_word_embeddings, int max_context)
    : model(std::make_shared<DecoderStack>(vocab_size, hidden_size, std::move(layers), std::move(norm))),
      model_type_(std::move(model_type)),
      vocab_size_(vocab_size),
      max_context_(max_context) {
  register_module("model", model);
  if (!tie_word_embeddings) {
    lm_head = std::make_shared<nn::Linear>(hidden_size, vocab_size, false);
    register_module("lm_head", lm_head);
  }
}

array TransformerModel::forward(const array& tokens, Cache* cache) {
  if (pipeline_) {
    check_call(tokens, cache);
    return pipelined(tokens, cache, true);
  }
  return logits(hidden_states(tokens, cache));
}

void TransformerModel::check_call(const array& tokens, const Cache* cache) const {
  if (tokens.ndim() != 2 || !is_integer(tokens.dtype())) {
    std::ostringstream message;
    message << "expects token ids (B, L) of an integer dtype; got shape " << tokens.shape() << " and dtype "
            << tokens.dtype() << ".";
    fail(message.str());
  }
  const int count = num_layers();
  if (cache != nullptr && static_cast<int>(cache->size()) != count) {
    fail("needs one cache per layer (" + std::to_string(count) + "); got " + std::to_string(cache->size()) + ".");
  }
}

array TransformerModel::hidden_states(const array& tokens, Cache* cache) {
  check_call(tokens, cache);
  if (pipeline_) {
    return pipelined(tokens, cache, false);
  }
  return (*model->norm)(run_layers(embed(tokens), 0, num_layers(), cache));
}

array TransformerModel::run_layers(array h, int begin, int end, Cache* cache) {
  const int length = h.shape(1);
  // One mask per kind of layer, taken from the layer's cache before any layer stores this call's positions.
  std::map<std::optional<int>, MaskSpec> masks;
  for (int i = begin; i < end; ++i) {
    DecoderLayer& layer = (*model->layers)[i];
    KVCache* layer_cache = cache != nullptr ? (*cache)[i].get() : nullptr;
    if (cache != nullptr && layer_cache == nullptr) {
      fail("cache entry " + std::to_string(i) + " is empty.");
    }
    const std::optional<int> window = layer.window();
    auto mask = masks.find(window);
    if (mask == masks.end()) {
      MaskSpec spec =
          layer_cache != nullptr ? layer_cache->make_mask(length, window) : GrowingKVCache().make_mask(length, window);
      mask = masks.emplace(window, std::move(spec)).first;
    }
    h = layer.forward(h, mask->second, layer_cache);
  }
  return h;
}

array TransformerModel::pipelined(const array& tokens, Cache* cache, bool to_logits) {
  const Pipeline& p = *pipeline_;
  const distributed::Group& g = p.group;
  const bool first = g.rank() == 0;
  const bool last = g.rank() + 1 == g.size();
  const int batch = tokens.shape(0);
  const int length = tokens.shape(1);
  array h =
      first ? embed(tokens) : distributed::recv({batch, length, p.hidden.features}, p.hidden.dtype, g.rank() - 1, g);
  h = run_layers(h, p.begin, p.end, cache);
  if (!last) {
    h = distributed::send(h, g.rank() + 1, g);
  }
  // Evaluated now, so that every rank runs this call's exchanges, in call order, even when only the caches are read
  // (a prefill): a rank that skipped its send would leave the next one waiting.
  nuvec::eval(h);
  const Exchanged& like = to_logits ? p.logits : p.normalized;
  array result = !last       ? zeros({batch, length, like.features}, like.dtype)
                 : to_logits ? logits((*model->norm)(h))
                             : (*model->norm)(h);
  // The others add zeros, which is exact: a sum moves about twice the result through each rank, where gathering
  // every rank's block would move the group size times it.
  return distributed::all_sum(result, g);
}

void TransformerModel::shard(const distributed::Group& group) {
  if (pipeline_) {
    fail("cannot shard a model split into a pipeline: its ranks hold different layers.");
  }
  for (size_t i = 0; i < model->layers->size(); ++i) {
    (*model->layers)[i].shard(group);
  }
}

void TransformerModel::pipeline(const distributed::Group& group) {
  if (pipeline_) {
    fail("is already split into a pipeline (it holds only its ranks' layers).");
  }
  const int count = num_layers();
  const int n = group.size();
  if (count < n) {
    fail("cannot split " + std::to_string(count) + " layers across " + std::to_string(n) + " ranks.");
  }
  const int r = group.rank();
  const int begin = r * (count / n) + std::min(r, count % n);
  const int end = begin + count / n + (r < count % n ? 1 : 0);
  std::vector<std::optional<int>> windows;
  windows.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    windows.push_back((*model->layers)[i].window());
  }
  // The shapes and dtypes of what the ranks exchange, read from graphs built on one token and never evaluated (so no
  // weight is read).
  const array hidden = embed(zeros({1, 1}, int32));
  const array normalized = (*model->norm)(hidden);
  const array projected = logits(normalized);
  pipeline_ = Pipeline{group,
                       begin,
                       end,
                       std::move(windows),
                       {hidden.shape(2), hidden.dtype()},
                       {normalized.shape(2), normalized.dtype()},
                       {projected.shape(2), projected.dtype()}};
  model->layers->keep_only(static_cast<size_t>(begin), static_cast<size_t>(end));
  const bool first = r == 0;
  const bool last = r + 1 == n;
  const bool tied = !lm_head;
  if (!first && !(last && tied)) {
    model->embed_tokens.reset();
  }
  if (!last) {
    model->norm.reset();
    lm_head.reset();
  }
}

Cache TransformerModel::make_cache() const {
  Cache cache;
  cache.reserve(num_layers());
  for (int i = 0; i < num_layers(); ++i) {
    // A sliding-window layer needs only its window of positions.
    // A pipeline rank keeps the windows of the layers it dropped.
    if (const std::optional<int> window = pipeline_ ? pipeline_->windows[i] : (*model->layers)[i].window()) {
      cache.push_back(std::make_shared<RotatingKVCache>(*window));
    } else {
      cache.push_back(std::make_shared<GrowingKVCache>());
    }
  }
  return cache;
}

void TransformerModel::sanitize(std::unordered_map<std::string, array>& weights) const {
  std::erase_if(weights, [this](const auto& entry) {
    const std::string& name = entry.first;
    return name.find("rotary_emb.inv_freq") != std::string::npos || (!lm_head && name.starts_with("lm_head."));
  });
}

array TransformerModel::embed(const array& tokens) { return (*model->embed_tokens)(tokens); }

array TransformerModel::logits(const array& hidden) {
  return lm_head ? (*lm_head)(hidden) : model->embed_tokens->as_linear(hidden);
}

// ---------------------------------------------------------------- building from a config

std::shared_ptr<const RoPE> make_rope(const TransformerConfig& config) {
  const int dims = static_cast<int>(static_cast<float>(config.head_dim) * config.partial_rotary_factor);
  if (dims <= 0 || dims % 2 != 0 || dims > config.head_dim) {
    throw_invalid("[config.json] head_dim " + std::to_string(config.head_dim) + " times partial_rotary_factor " +
                  std::to_string(config.partial_rotary_factor) + " must give a positive even number of features.");
  }
  return make_rope(dims, config.rope_theta, config.rope_scaling, config.max_position_embeddings,
                   config.rope_traditional);
}

AttentionOptions attention_options(const TransformerConfig& config, int layer, std::shared_ptr<const RoPE> rope) {
  AttentionOptions o;
  o.hidden_size = config.hidden_size;
  o.num_heads = config.num_heads;
  o.num_kv_heads = config.num_kv_heads;
  o.head_dim = config.head_dim;
  o.qkv_bias = config.qkv_bias;
  o.o_bias = config.o_bias;
  if (config.qk_norm) {
    o.qk_norm = rms_norm(config.rms_norm_eps);
  }
  if (layer < static_cast<int>(config.layer_windows.size())) {
    o.window = config.layer_windows[layer];
  }
  o.rope = std::move(rope);
  return o;
}

}  // namespace nuvec::lm
