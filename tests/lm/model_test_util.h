#pragma once

// Tiny random-weight Hugging Face folders for the model tests (config.json, model.safetensors written with nuvec's
// io, a word-level tokenizer.json), and the PyTorch reference (tests/lm/reference/llama_reference.py) that reads
// them back on its own.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "nuvec/core/array.h"
#include "nuvec/lm/models/language_model.h"

namespace nuvec::lm::test {

/// A fresh, empty folder under the test's temporary directory.
std::string fresh_dir(const std::string& name);

/// config.json of a 2-layer model of `model_type`: hidden 64, 4 heads, 2 key-value heads, `head_dim` per head,
/// a vocabulary of 96.
nlohmann::json tiny_config(const std::string& model_type, int head_dim = 16);

/// The weights a Hugging Face checkpoint of `config` holds, by name and shape, written out from the
/// transformers definitions (not from nuvec's modules).
std::vector<std::pair<std::string, Shape>> hf_weight_shapes(const nlohmann::json& config);

/// Random weights for `config`: norms near 1, projections and biases with standard deviations 0.02-0.1.
std::vector<std::pair<std::string, array>> random_weights(const nlohmann::json& config, Dtype dtype, uint64_t seed);

/// Writes config.json, model.safetensors (the weights cast to `dtype`) and a tokenizer.json into `dir`.
void write_hf_folder(const std::string& dir, const nlohmann::json& config, Dtype dtype, uint64_t seed);

/// A two-layer Llama (hidden 32, 4 heads, 2 key-value heads, FFN 64) of `vocab` tokens with random weights from
/// `seed`, built in memory; its lm_head is scaled up so that the logits are spread and greedy choices stay far from
/// ties that float rounding (or a batch's) could flip.
std::shared_ptr<LanguageModel> random_tiny_llama(uint64_t seed, int vocab, int context = 256);

/// A word-level tokenizer.json ("<unk>", "<s>", "</s>", then "w3" ... "w63") in `dir`.
void write_tiny_tokenizer(const std::string& dir);

struct ReferenceJob {
  std::string folder;
  std::vector<int> ids;
  int greedy = 0;
};

struct ReferenceResult {
  int length = 0;
  int vocab = 0;
  /// (length, vocab), row-major.
  std::vector<double> logits;
  std::vector<int> greedy;
};

/// Runs a reference script of tests/lm/reference once over all jobs: it reads the jobs (folder, ids, greedy steps)
/// as JSON and writes each job's logits and greedy continuation.
std::vector<ReferenceResult> run_reference(const std::vector<ReferenceJob>& jobs,
                                           const std::string& script = "llama_reference.py");

}  // namespace nuvec::lm::test
