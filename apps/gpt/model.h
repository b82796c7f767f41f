#pragma once

// The GPT example's model: a small model of the lm library's `llama` architecture (RMSNorm, RoPE, grouped-query
// attention, SwiGLU, tied embeddings) over the byte-level vocabulary of apps/gpt/byte_tokenizer.h, so what it
// trains is a Hugging Face folder that nuvec generate, chat and serve (and other tools) load like any other.

#include <nlohmann/json.hpp>

namespace nuvec::gpt {

struct GptConfig {
  int context = 128;
  int dims = 128;
  int heads = 4;
  int layers = 4;
};

/// The model's config.json.
nlohmann::json llama_config(const GptConfig& config);

}  // namespace nuvec::gpt
