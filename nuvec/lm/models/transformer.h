#pragma once

// The pieces decoder-only transformers are built from, named as Hugging Face checkpoints name them so weights load
// by name: Attention (grouped-query, optional biases, optional q/k norms, sliding window, fused qkv_proj), MLP
// (gated, optional fused gate_up_proj), a pre-norm TransformerBlock, and TransformerModel
// (model.embed_tokens, model.layers.N, model.norm, lm_head or tied embeddings). Families with other layouts
// (post-norms, soft-capping, scaled embeddings, mixtures of experts) subclass DecoderLayer and TransformerModel and
// reuse Attention and MLP.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "nuvec/lm/cache/kv_cache.h"
#include "nuvec/lm/models/config.h"
#include "nuvec/lm/models/language_model.h"
#include "nuvec/lm/models/rope.h"
#include "nuvec/nn/linear.h"
#include "nuvec/nn/module.h"

namespace nuvec::lm {

/// Makes a normalization module over `dims` features: RMSNorm for Llama; families with other norms pass theirs.
using NormFactory = std::function<std::shared_ptr<nn::UnaryModule>(int dims)>;
/// nn::RMSNorm with `eps`.
NormFactory rms_norm(float eps);

/// An element-wise activation.
using Activation = std::function<array(const array&)>;
/// The activation config.json's hidden_act names (silu, gelu, gelu_pytorch_tanh, relu, ...); throws for others.
Activation activation(const std::string& hidden_act);

struct AttentionOptions {
  int hidden_size = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  bool qkv_bias = false;
  bool o_bias = false;
  /// One qkv_proj (queries, then keys, then values) instead of q_proj, k_proj and v_proj (phi3).
  bool fused_qkv = false;
  /// When set, q_norm and k_norm normalize each head's queries and keys before RoPE (qwen3).
  NormFactory qk_norm;
  /// The factor on attention logits; none gives 1 / sqrt(head_dim).
  std::optional<float> scale;
  /// Sliding window: each query sees the last `window` positions (itself included); none is global attention.
  std::optional<int> window;
  std::shared_ptr<const RoPE> rope;
};

/// Multi-head attention with grouped-query heads, through the layer's KV cache.
class Attention : public nn::Module {
 public:
  explicit Attention(AttentionOptions options);
  [[nodiscard]] std::string type_name() const override { return "Attention"; }
  /// x (B, L, hidden) attending to itself and to what the cache holds; `mask` is the cache's make_mask(L,
  /// window()) taken before this call stores anything.
  array forward(const array& x, const MaskSpec& mask, KVCache* cache);
  [[nodiscard]] std::optional<int> window() const { return options_.window; }
  [[nodiscard]] const AttentionOptions& options() const { return options_; }
  /// The factor on attention logits.
  [[nodiscard]] float scale() const { return scale_; }
  /// Keeps this rank's heads: q, k and v projections all-to-sharded, o sharded-to-all (nn::shard_linear), and the
  /// head counts divided by the group size, which must divide both.
  void shard(const distributed::Group& group);

  std::shared_ptr<nn::Linear> q_proj;
  std::shared_ptr<nn::Linear> k_proj;
  std::shared_ptr<nn::Linear> v_proj;
  std::shared_ptr<nn::Linear> qkv_proj;
  std::shared_ptr<nn::Linear> o_proj;
  std::shared_ptr<nn::UnaryModule> q_norm;
  std::shared_ptr<nn::UnaryModule> k_norm;

 protected:
  /// Attention of rotated queries (B, N_q, L, D) over the new keys and values and the cache's (through
  /// KVCache::attend); without a cache, over the new ones alone. Soft-capping families override this.
  virtual array attend(const array& queries, const array& keys, const array& values, const MaskSpec& mask,
                       KVCache* cache);

 private:
  /// Splits (B, L, heads * head_dim) into heads: (B, heads, L, head_dim).
  [[nodiscard]] array split_heads(const array& x, int heads) const;

  AttentionOptions options_;
  float scale_;
};

struct MLPOptions {
  int hidden_size = 0;
  int intermediate_size = 0;
  bool bias = false;
  /// One gate_up_proj (gate rows first, then up) instead of gate_proj and up_proj (phi3).
  bool fused_gate_up = false;
  Activation activation;
};

/// The gated feed-forward: down_proj(activation(gate_proj(x)) * up_proj(x)).
class MLP : public nn::UnaryModule {
 public:
  explicit MLP(MLPOptions options);
  [[nodiscard]] std::string type_name() const override { return "MLP"; }
  array forward(const array& x) override;
  /// Keeps this rank's features: gate and up projections all-to-sharded, down sharded-to-all.
  void shard(const distributed::Group& group);

  std::shared_ptr<nn::Linear> gate_proj;
  std::shared_ptr<nn::Linear> up_proj;
  std::shared_ptr<nn::Linear> gate_up_proj;
  std::shared_ptr<nn::Linear> down_proj;

 private:
  MLPOptions options_;
};

/// One decoder layer: what TransformerModel chains.
class DecoderLayer : public nn::Module {
 public:
  /// x (B, L, hidden) through the layer; mask as Attention::forward takes it.
  virtual array forward(const array& x, const MaskSpec& mask, KVCache* cache) = 0;
  /// The layer's sliding window (none: global attention); decides its mask and its kind of cache.
  [[nodiscard]] virtual std::optional<int> window() const = 0;
  /// Tensor parallelism for this layer (LanguageModel::shard); layers without it throw (unsupported).
  virtual void shard(const distributed::Group& group);

 protected:
  /// Shards `attention` and `feed_forward`, which must be an MLP.
  void shard_parts(Attention& attention, nn::UnaryModule& feed_forward, const distributed::Group& group) const;
};

/// The pre-norm block of Llama and its kin: x + attn(norm(x)), then h + ff(norm(h)). The feed-forward is any
/// unary module (an MLP, a mixture of experts) registered under `feed_forward_name` ("mlp", "block_sparse_moe").
class TransformerBlock : public DecoderLayer {
 public:
  TransformerBlock(std::shared_ptr<Attention> attention, std::shared_ptr<nn::UnaryModule> feed_forward, int hidden_size,
                   const NormFactory& norm, const std::string& feed_forward_name = "mlp");
  [[nodiscard]] std::string type_name() const override { return "TransformerBlock"; }
  array forward(const array& x, const MaskSpec& mask, KVCache* cache) override;
  [[nodiscard]] std::optional<int> window() const override { return self_attn->window(); }
  void shard(const distributed::Group& group) override { shard_parts(*self_attn, *feed_forward, group); }

  std::shared_ptr<nn::UnaryModule> input_layernorm;
  std::shared_ptr<Attention> self_attn;
  std::shared_ptr<nn::UnaryModule> post_attention_layernorm;
  std::shared_ptr<nn::UnaryModule> feed_forward;
};

/// The layers of a model as a module whose children are named "0", "1", ...
class DecoderLayers : public nn::Module {
 public:
  explicit DecoderLayers(std::vector<std::shared_ptr<DecoderLayer>> layers);
  [[nodiscard]] std::string type_name() const override { return "DecoderLayers"; }
  [[nodiscard]] size_t size() const { return layers_.size(); }
  /// Layer i; throws for a layer this rank dropped (keep_only).
  [[nodiscard]] DecoderLayer& operator[](size_t i) const;
  /// Drops the layers outside [begin, end), releasing their weights (a pipeline rank's other layers); their slots
  /// stay, empty, so the others keep their names and indices.
  void keep_only(size_t begin, size_t end);

 private:
  std::vector<std::shared_ptr<DecoderLayer>> layers_;
};

/// What checkpoints call "model": the token embedding, the layers and the final norm.
class DecoderStack : public nn::Module {
 public:
  DecoderStack(int vocab_size, int hidden_size, std::vector<std::shared_ptr<DecoderLayer>> layers,
               std::shared_ptr<nn::UnaryModule> norm);
  [[nodiscard]] std::string type_name() const override { return "DecoderStack"; }

  std::shared_ptr<nn::Embedding> embed_tokens;
  std::shared_ptr<DecoderLayers> layers;
  std::shared_ptr<nn::UnaryModule> norm;
};

/// A decoder-only language model: embed, run the layers through their caches, normalize, project to the
/// vocabulary with lm_head or, when tied, with the embedding table.
class TransformerModel : public LanguageModel {
 public:
  TransformerModel(std::string model_type, int vocab_size, int hidden_size,
                   std::vector<std::shared_ptr<DecoderLayer>> layers, std::shared_ptr<nn::UnaryModule> norm,
                   bool tie_word_embeddings, int max_context);
  [[nodiscard]] std::string type_name() const override { return "TransformerModel"; }
  array forward(const array& tokens, Cache* cache = nullptr) override;
  array hidden_states(const array& tokens, Cache* cache = nullptr) override;
  [[nodiscard]] Cache make_cache() const override;
  [[nodiscard]] const std::string& model_type() const override { return model_type_; }
  [[nodiscard]] int vocab_size() const override { return vocab_size_; }
  [[nodiscard]] int num_layers() const override { return static_cast<int>(model->layers->size()); }
  [[nodiscard]] int max_context() const override { return max_context_; }
  /// Shards every layer; the embeddings, the final norm and lm_head stay whole on every rank.
  void shard(const distributed::Group& group) override;
  /// Rank r runs the r-th run of consecutive layers (the first ranks one more when the group size does not divide
  /// the layers) and keeps only their weights, plus the embeddings on the first rank and the final norm and lm_head
  /// (or the tied embeddings) on the last: the others are released, so a checkpoint's other weights are never read.
  /// The last rank's logits (or normalized hidden states) reach every rank by a sum to which the others add zeros;
  /// that sum is lazy, so every rank must evaluate the same results (a prefill evaluates none). Each call runs its
  /// layers and passes their hidden states on before it returns. One cache entry per layer, of which a rank fills its
  /// own (so prompt caches, which read the first entry, work on rank 0 only). A model is split once, and not
  /// sharded afterwards.
  void pipeline(const distributed::Group& group) override;
  /// Adapts a checkpoint's weights to this model's parameters: drops what Hugging Face checkpoints carry that the
  /// model computes itself (rotary inv_freq) and lm_head when the embeddings are tied. Families that store
  /// weights differently (stacked experts) extend this.
  virtual void sanitize(std::unordered_map<std::string, array>& weights) const;

  std::shared_ptr<DecoderStack> model;
  std::shared_ptr<nn::Linear> lm_head;

 protected:
  /// Token ids (B, L) to hidden states (B, L, hidden); families that scale embeddings override this.
  virtual array embed(const array& tokens);
  /// Final hidden states to logits; families that soft-cap logits override this.
  virtual array logits(const array& hidden);

 private:
  /// The features (last axis) and dtype of what pipeline ranks exchange.
  struct Exchanged {
    int features;
    Dtype dtype;
  };
  /// The group of a pipeline, this rank's layers [begin, end), every layer's window (for caches of the layers this
  /// rank dropped) and what the ranks exchange: hidden states, normalized hidden states and logits.
  struct Pipeline {
    distributed::Group group;
    int begin;
    int end;
    std::vector<std::optional<int>> windows;
    Exchanged hidden;
    Exchanged normalized;
    Exchanged logits;
  };

  /// Runs layers [begin, end) on h through their caches.
  array run_layers(array h, int begin, int end, Cache* cache);
  /// This rank's part of a pipelined call: the last rank's logits, or its normalized hidden states, on every rank.
  array pipelined(const array& tokens, Cache* cache, bool to_logits);
  /// Throws unless tokens are (B, L) ids and the cache, if any, has an entry per layer.
  void check_call(const array& tokens, const Cache* cache) const;

  std::string model_type_;
  int vocab_size_;
  int max_context_;
  std::optional<Pipeline> pipeline_;
};

/// The attention options of layer `layer` of a dense transformer (its window from config.layer_windows).
AttentionOptions attention_options(const TransformerConfig& config, int layer, std::shared_ptr<const RoPE> rope);
/// The RoPE a config describes (rope_theta, partial_rotary_factor, rope_scaling).
std::shared_ptr<const RoPE> make_rope(const TransformerConfig& config);

}  // namespace nuvec::lm
