#pragma once

// The language-model commands: `nuvec generate`, `nuvec chat` and `nuvec bench` (see nuvec help).

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace nuvec::lm_cli {

/// Sampling as given on the command line; what is left unset comes from the model's generation_config.json, and
/// greedy decoding where that says nothing either.
struct SamplingOptions {
  std::optional<float> temperature;
  std::optional<int> top_k;
  std::optional<float> top_p;
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;
  std::optional<uint64_t> seed;
};

struct GenerateCommandOptions {
  std::string model;  // a model folder or a .gguf file
  std::optional<std::string> prompt;
  std::optional<std::string> prompt_ids;  // "1,2,3": the prompt as token ids
  std::optional<std::string> system;      // a system message (with --chat)
  int max_tokens = 256;
  SamplingOptions sampling;
  std::optional<std::string> draft_model;
  int num_draft = 3;
  bool chat = false;      // wrap the prompt in the model's chat template as a user message
  bool json = false;      // print one JSON object instead of streaming text
  bool pipeline = false;  // under nuvec launch: split the layers across the ranks instead of the heads
};

struct ChatCommandOptions {
  std::string model;
  std::optional<std::string> system;
  int max_tokens = 1024;
  SamplingOptions sampling;
};

struct BenchCommandOptions {
  std::string model;
  int prompt_tokens = 512;      // -p: the prompt-processing test (0 skips it)
  int generation_tokens = 128;  // -n: the decoding test (0 skips it)
  int threads = 0;              // -t: 0 keeps nuvec's default (every core)
  int repetitions = 5;          // -r
};

/// Streams the generated text to `out` as it comes (statistics to `err`), or prints one JSON object with --json:
/// the prompt and generated ids, the text, each generated token's log-probability and top 5 under the model's own
/// distribution, the finish reason and the timings.
void run_generate(const GenerateCommandOptions& options, std::FILE* out, std::FILE* err);

/// An interactive chat: reads a user turn per line from `in` ("/reset" forgets the history, "/exit" or the end of
/// input leaves), answers through the chat template, streaming, reusing the cache of the conversation so far.
void run_chat(const ChatCommandOptions& options, std::FILE* in, std::FILE* out);

/// Prompt-processing and decoding speed as llama-bench prints it: a Markdown table of tokens per second (mean and
/// standard deviation over the repetitions).
void run_bench(const BenchCommandOptions& options, std::FILE* out);

}  // namespace nuvec::lm_cli
