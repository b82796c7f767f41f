#pragma once

// A byte-level GPT: token and position embeddings, pre-norm transformer blocks with causal attention
// (nuvec::fast::scaled_dot_product_attention) and a GELU MLP, a final layer norm and a head over 256 bytes.

#include <memory>
#include <string>
#include <vector>

#include "nuvec/nn/nn.h"
#include "nuvec/nuvec.h"

namespace nuvec::gpt {

struct GptConfig {
  int context = 128;
  int dims = 128;
  int heads = 4;
  int layers = 4;
  int vocab = 256;
};

class Block : public nn::Module {
 public:
  Block(int dims, int heads);
  [[nodiscard]] std::string type_name() const override { return "Block"; }
  array forward(const array& x);

 private:
  int heads_;
  std::shared_ptr<nn::LayerNorm> ln1_;
  std::shared_ptr<nn::Linear> qkv_;
  std::shared_ptr<nn::Linear> proj_;
  std::shared_ptr<nn::LayerNorm> ln2_;
  std::shared_ptr<nn::Linear> fc_;
  std::shared_ptr<nn::Linear> out_;
};

class Gpt : public nn::Module {
 public:
  explicit Gpt(const GptConfig& config);
  [[nodiscard]] std::string type_name() const override { return "Gpt"; }
  /// Logits (B, L, vocab) for byte ids (B, L), L <= context.
  array forward(const array& tokens);
  [[nodiscard]] const GptConfig& config() const { return config_; }

 private:
  GptConfig config_;
  std::shared_ptr<nn::Embedding> tokens_;
  std::shared_ptr<nn::Embedding> positions_;
  std::vector<std::shared_ptr<Block>> blocks_;
  std::shared_ptr<nn::LayerNorm> ln_f_;
  std::shared_ptr<nn::Linear> head_;
};

/// `count` bytes sampled after `prompt` at `temperature` (the last `context` bytes condition each step).
std::string sample(Gpt& model, const std::string& prompt, int count, float temperature, uint64_t seed);

}  // namespace nuvec::gpt
