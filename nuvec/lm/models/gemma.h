#pragma once

// Google's Gemma 2 and Gemma 3 text models on the shared transformer pieces: embeddings scaled by
// sqrt(hidden_size), RMSNorms that store their weight as an offset from 1, norms before and after both the
// attention and the feed-forward, a GeGLU feed-forward, attention scaled by query_pre_attn_scalar, soft-capped
// attention and output logits (Gemma 2), sliding-window layers alternating with global ones (each with its own RoPE
// in Gemma 3) and q/k norms (Gemma 3). A "gemma3" folder (the multimodal model) loads its language model alone.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>

#include "nuvec/lm/models/transformer.h"

namespace nuvec::lm {

/// RMSNorm with (1 + weight) as the factor, taken in float32 and rounded once to the input's dtype (Gemma's norm).
class GemmaRMSNorm : public nn::UnaryModule {
 public:
  GemmaRMSNorm(int dims, float eps);
  [[nodiscard]] std::string type_name() const override { return "GemmaRMSNorm"; }
  array forward(const array& x) override;

  array weight;

 private:
  int dims_;
  float eps_;
};

/// A factory of GemmaRMSNorms with `eps`.
NormFactory gemma_rms_norm(float eps);

/// Attention whose logits go through cap * tanh(logits / cap) before the mask and the softmax (Gemma 2).
class SoftCappedAttention : public Attention {
 public:
  SoftCappedAttention(AttentionOptions options, float cap);
  [[nodiscard]] std::string type_name() const override { return "SoftCappedAttention"; }
  [[nodiscard]] float cap() const { return cap_; }

 protected:
  array attend(const array& queries, const array& keys, const array& values, const MaskSpec& mask,
               KVCache* cache) override;

 private:
  float cap_;
};

/// Gemma's layer: x + post_attention_norm(attn(input_norm(x))), then h + post_ff_norm(mlp(pre_ff_norm(h))).
class GemmaDecoderLayer : public DecoderLayer {
 public:
  GemmaDecoderLayer(std::shared_ptr<Attention> attention, std::shared_ptr<nn::UnaryModule> mlp, int hidden_size,
                    const NormFactory& norm);
  [[nodiscard]] std::string type_name() const override { return "GemmaDecoderLayer"; }
  array forward(const array& x, const MaskSpec& mask, KVCache* cache) override;
  [[nodiscard]] std::optional<int> window() const override { return self_attn->window(); }
  void shard(const distributed::Group& group) override { shard_parts(*self_attn, *mlp, group); }

  std::shared_ptr<nn::UnaryModule> input_layernorm;
  std::shared_ptr<Attention> self_attn;
  std::shared_ptr<nn::UnaryModule> post_attention_layernorm;
  std::shared_ptr<nn::UnaryModule> pre_feedforward_layernorm;
  std::shared_ptr<nn::UnaryModule> mlp;
  std::shared_ptr<nn::UnaryModule> post_feedforward_layernorm;
};

/// What sets a Gemma model apart from TransformerModel outside its layers.
struct GemmaModelOptions {
  /// cap * tanh(logits / cap) on the output logits; none leaves them as they are.
  std::optional<float> final_logit_softcapping;
  /// The checkpoint is the multimodal Gemma 3: its language model's weights carry the wrapper's prefixes and the
  /// vision tower's weights are dropped.
  bool multimodal_checkpoint = false;
};

/// The Gemma model: embeddings times sqrt(hidden_size) rounded to the model's dtype (as transformers does), and
/// soft-capped logits when configured.
class GemmaModel : public TransformerModel {
 public:
  GemmaModel(const TransformerConfig& config, std::vector<std::shared_ptr<DecoderLayer>> layers,
             GemmaModelOptions options);
  [[nodiscard]] std::string type_name() const override { return "GemmaModel"; }
  /// Besides TransformerModel's clean-up, renames a multimodal checkpoint's language_model weights to this
  /// model's names and drops the vision tower and projector.
  void sanitize(std::unordered_map<std::string, array>& weights) const override;

 protected:
  array embed(const array& tokens) override;
  array logits(const array& hidden) override;

 private:
  float embed_scale_;
  GemmaModelOptions options_;
};

/// The models of each model_type, from config.json.
std::shared_ptr<LanguageModel> make_gemma2(const nlohmann::json& config);
std::shared_ptr<LanguageModel> make_gemma3_text(const nlohmann::json& config);
/// The language model of a multimodal Gemma 3 config (its text_config), without the vision tower.
std::shared_ptr<LanguageModel> make_gemma3(const nlohmann::json& config);

}  // namespace nuvec::lm
