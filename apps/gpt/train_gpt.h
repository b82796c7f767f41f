#pragma once

// `nuvec gpt`: trains a small byte-level `llama` model on the fortunes corpus, each fortune written as a chat
// exchange ("Tell me a fortune." and the fortune as the answer), with AdamW (linear warm-up, cosine decay) in a
// training step compiled whole (forward, backward, clipping, update; `eager` runs it op by op); reports the loss,
// tokens per second and step time, measures the loss on held-out text, saves a Hugging Face folder (config.json,
// model.safetensors, tokenizer.json with a chat template, generation_config.json) and asks the model for a fortune
// through its chat template.

#include <cstdint>
#include <cstdio>
#include <string>

#include "apps/gpt/model.h"

namespace nuvec::gpt {

struct GptOptions {
  GptConfig model;
  int steps = 600;
  int batch_size = 32;
  double learning_rate = 3e-3;
  std::string corpus_dir = "/usr/share/games/fortunes";
  std::string output_dir = "runs/gpt";
  std::string prompt = "Tell me a fortune.";  // the user message of the sample after training
  int sample_tokens = 400;
  float temperature = 0.8F;
  uint64_t seed = 0;
  bool eager = false;  // run the training step op by op instead of compiled whole
};

struct GptResult {
  double train_loss = 0.0;          // mean over the last 50 steps
  double validation_loss = 0.0;     // on the held-out last 5% of the corpus
  double tokens_per_second = 0.0;   // over the last 50 steps
  double first_step_seconds = 0.0;  // the first step, which traces and compiles a compiled step
  double step_seconds = 0.0;        // the mean of the steps after the first
  std::string sample;               // the model's answer to the prompt
};

GptResult train_gpt(const GptOptions& options, std::FILE* log = stdout);

}  // namespace nuvec::gpt
