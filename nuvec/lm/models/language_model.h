#pragma once

// The interface every architecture implements: token ids in, logits out, through one KV cache per layer.

#include <string>

#include "nuvec/core/array.h"
#include "nuvec/core/error.h"
#include "nuvec/distributed/distributed.h"
#include "nuvec/lm/cache/kv_cache.h"
#include "nuvec/nn/module.h"

namespace nuvec::lm {

class LanguageModel : public nn::Module {
 public:
  /// Logits (B, L, vocab) for token ids (B, L); with a cache (one entry per layer, as make_cache gives), the ids
  /// continue what the cache holds and are stored in it.
  virtual array forward(const array& tokens, Cache* cache = nullptr) = 0;
  array operator()(const array& tokens, Cache* cache = nullptr) { return forward(tokens, cache); }
  /// The last layer's normalized hidden states (B, L, hidden): what forward projects to the vocabulary (embeddings
  /// pool them). The cache as forward takes it.
  virtual array hidden_states(const array& tokens, Cache* cache = nullptr) = 0;
  /// A fresh cache: one per layer, of the kind each layer needs (rotating for sliding-window layers).
  [[nodiscard]] virtual Cache make_cache() const = 0;
  /// The config.json model_type this model was built for ("llama", "qwen3", ...).
  [[nodiscard]] virtual const std::string& model_type() const = 0;
  [[nodiscard]] virtual int vocab_size() const = 0;
  [[nodiscard]] virtual int num_layers() const = 0;
  /// The longest context the model was trained for (max_position_embeddings), 0 when unknown.
  [[nodiscard]] virtual int max_context() const = 0;
  /// Tensor parallelism (mlx-lm's shard): keeps this rank's share of the attention heads and feed-forward features
  /// of every layer, so that each rank holds about 1/N of those weights. Every rank of `group` must then run the
  /// model on the same tokens; each gets the whole logits. Families without it throw (unsupported).
  virtual void shard(const distributed::Group& group) {
    (void)group;
    throw_unsupported(describe() + " " + model_type() + " models cannot be sharded.");
  }
  /// Pipeline parallelism: this rank runs only its run of the layers, taking the hidden states from the rank
  /// before it and sending its own to the rank after it; every rank gets the whole logits. Every rank of `group`
  /// must run the model on the same tokens. Families without it throw (unsupported).
  virtual void pipeline(const distributed::Group& group) {
    (void)group;
    throw_unsupported(describe() + " " + model_type() + " models cannot be split into a pipeline.");
  }
};

}  // namespace nuvec::lm
