#include "apps/generate/commands.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "nuvec/core/eval.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/quantization_mode.h"
#include "nuvec/core/random.h"
#include "nuvec/cpu/thread_pool.h"
#include "nuvec/distributed/distributed.h"
#include "nuvec/lm/generate/generate.h"
#include "nuvec/lm/generate/sequence.h"
#include "nuvec/lm/load_model.h"
#include "nuvec/nn/quantized.h"

namespace nuvec::lm_cli {

namespace {

using Clock = std::chrono::steady_clock;

lm::SamplingParams sampling_params(const SamplingOptions& given, const lm::GenerationConfig& defaults) {
  lm::SamplingParams p;
  p.temperature = given.temperature.value_or(defaults.temperature.value_or(0.0F));
  p.top_k = given.top_k.value_or(defaults.top_k.value_or(0));
  p.top_p = given.top_p.value_or(defaults.top_p.value_or(1.0F));
  p.min_p = given.min_p.value_or(defaults.min_p.value_or(0.0F));
  p.repetition_penalty = given.repetition_penalty.value_or(defaults.repetition_penalty.value_or(1.0F));
  p.seed = given.seed;
  return p;
}

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    long value = 0;
    try {
      value = std::stol(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    while (used < item.size() && item[used] == ' ') {
      ++used;
    }
    if (item.empty() || used != item.size() || value < 0 || value > INT32_MAX) {
      throw std::invalid_argument("--prompt-ids expects token ids separated by commas, got '" + item + "'");
    }
    ids.push_back(static_cast<int32_t>(value));
  }
  if (ids.empty()) {
    throw std::invalid_argument("--prompt-ids holds no ids");
  }
  return ids;
}

nlohmann::ordered_json chat_messages(const std::optional<std::string>& system) {
  auto messages = nlohmann::ordered_json::array();
  if (system) {
    messages.push_back({{"role", "system"}, {"content", *system}});
  }
  return messages;
}

/// The ids of the conversation so far with the assistant's turn opened, through the chat template.
std::vector<int32_t> chat_prompt(const lm::Tokenizer& tokenizer, const nlohmann::ordered_json& messages) {
  lm::ChatTemplateOptions options;
  options.add_generation_prompt = true;
  // The template writes the BOS token itself, as transformers' apply_chat_template(tokenize=True) assumes.
  return tokenizer.encode(tokenizer.apply_chat_template(messages, options), false);
}

std::vector<int32_t> prompt_ids(const GenerateCommandOptions& o, const lm::Tokenizer& tokenizer) {
  if (o.prompt_ids) {
    if (o.prompt || o.chat) {
      throw std::invalid_argument("--prompt-ids takes neither --prompt nor --chat");
    }
    auto ids = parse_ids(*o.prompt_ids);
    for (auto id : ids) {
      if (static_cast<size_t>(id) >= tokenizer.vocab_size()) {
        throw std::invalid_argument("--prompt-ids: id " + std::to_string(id) + " is outside the vocabulary of " +
                                    std::to_string(tokenizer.vocab_size()) + " tokens");
      }
    }
    return ids;
  }
  if (!o.prompt) {
    throw std::invalid_argument("give the prompt with --prompt TEXT or --prompt-ids 1,2,3");
  }
  if (!o.chat) {
    return tokenizer.encode(*o.prompt, true);
  }
  auto messages = chat_messages(o.system);
  messages.push_back({{"role", "user"}, {"content", *o.prompt}});
  return chat_prompt(tokenizer, messages);
}

std::string gigabytes(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f GB", static_cast<double>(bytes) / 1e9);
  return text;
}

void print_stats(const lm::GenerationStats& s, std::FILE* err) {
  std::fprintf(err,
               "\n==========\nPrompt: %d tokens, %.3f tokens-per-sec\nGeneration: %d tokens, %.3f tokens-per-sec\n",
               s.prompt_tokens, s.prompt_tps, s.generation_tokens, s.generation_tps);
  std::fprintf(err, "Peak memory: %s\n", gigabytes(s.peak_memory).c_str());
}

std::string dump(const nlohmann::ordered_json& j) {
  // Text cut inside a character (a stop at max_tokens) must not make the output unreadable.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

/// Parameter count and bytes of the weights as held (quantized weights counted as the values they stand for).
struct ModelSize {
  double parameters = 0;
  size_t bytes = 0;
  std::string precision;
};

ModelSize model_size(lm::LanguageModel& model) {
  // Per quantized module: its code width, and the values per byte of its weight's storage.
  struct Quantized {
    int bits;
    double values_per_byte;
  };
  auto quantized = [](int bits, const std::string& mode) {
    const BlockLayout blocks = block_layout(parse_quantization_mode(mode).value_or(QuantizationMode::affine));
    return Quantized{bits, blocks.bytes == 0 ? 8.0 / bits : static_cast<double>(blocks.values) / blocks.bytes};
  };
  std::map<std::string, Quantized> quantized_bits;
  for (auto& [path, module] : model.modules()) {
    if (auto* q = dynamic_cast<nn::QuantizedLinear*>(module)) {
      quantized_bits.emplace(path, quantized(q->bits(), q->mode()));
    } else if (auto* e = dynamic_cast<nn::QuantizedEmbedding*>(module)) {
      quantized_bits.emplace(path, quantized(e->bits(), e->mode()));
    }
  }
  ModelSize size;
  std::map<int, double> by_bits;
  for (const auto& [name, p] : model.parameters()) {
    size.bytes += p.nbytes();
    const auto dot = name.rfind('.');
    const std::string owner = dot == std::string::npos ? "" : name.substr(0, dot);
    const std::string leaf = dot == std::string::npos ? name : name.substr(dot + 1);
    auto q = quantized_bits.find(owner);
    if (q == quantized_bits.end()) {
      size.parameters += static_cast<double>(p.size());
      if (size.precision.empty() && p.ndim() == 2) {
        size.precision = std::string(dtype_name(p.dtype()));
      }
    } else if (leaf == "weight") {
      const double values = static_cast<double>(p.nbytes()) * q->second.values_per_byte;
      size.parameters += values;
      by_bits[q->second.bits] += values;
    }
  }
  if (!by_bits.empty()) {
    auto most = std::max_element(by_bits.begin(), by_bits.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    size.precision = std::to_string(most->first) + "-bit";
  }
  return size;
}

/// `value` in the large unit when it reaches one, else in the small one: "1.24 B", "56.97 M".
std::string with_unit(double value, double large, const char* large_name, double small, const char* small_name) {
  char text[48];
  const bool big = value >= large;
  std::snprintf(text, sizeof text, "%.2f%s", value / (big ? large : small), big ? large_name : small_name);
  return text;
}

struct Timing {
  double mean = 0;
  double deviation = 0;
};

Timing summarize(const std::vector<double>& rates) {
  Timing t;
  for (double r : rates) {
    t.mean += r;
  }
  t.mean /= static_cast<double>(rates.size());
  for (double r : rates) {
    t.deviation += (r - t.mean) * (r - t.mean);
  }
  t.deviation = rates.size() > 1 ? std::sqrt(t.deviation / static_cast<double>(rates.size() - 1)) : 0.0;
  return t;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/// Tokens per second of `count` random prompt tokens from an empty cache, prefilled as generation prefills a prompt:
/// the cache of all but the last token in chunks of generation's size, then the last token's logits (not the logits of
/// every position, which nothing reads).
double prompt_rate(lm::LanguageModel& model, int count) {
  auto cache = lm::detail::reserved_cache(model, count);
  auto tokens = astype(random::randint(0, model.vocab_size(), {count}), int32);
  eval(tokens);
  const int32_t* ids = tokens.data<int32_t>();
  auto start = Clock::now();
  lm::detail::prefill(model, cache, ids, count - 1, lm::GenerateOptions{}.prefill_chunk_size);
  auto logits = model(array(ids + count - 1, {1, 1}, int32), &cache);
  eval(logits);
  return count / seconds_since(start);
}

/// Tokens per second of decoding `count` tokens one at a time (greedy) from an empty cache.
double decode_rate(lm::LanguageModel& model, int count) {
  auto cache = lm::detail::reserved_cache(model, count);
  auto token = random::randint(0, model.vocab_size(), {1, 1});
  eval(token);
  auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    auto logits = model(token, &cache);
    token = reshape(astype(argmax(logits, -1), int32), {1, 1});
    eval(token);
  }
  return count / seconds_since(start);
}

}  // namespace

void run_generate(const GenerateCommandOptions& o, std::FILE* out, std::FILE* err) {
  // Under nuvec launch or mpirun the ranks split the model's heads and features (tensor parallelism), or with
  // --pipeline its layers, as it loads (each reads only its part of the checkpoint); they decode the same tokens,
  // and rank 0 prints them.
  const distributed::Group group = distributed::init();
  std::optional<lm::Placement> placement;
  if (group.size() > 1) {
    placement = lm::Placement{group, o.pipeline};
  }
  auto loaded = lm::load_model(o.model, placement);
  const bool prints = group.rank() == 0;
  auto ids = prompt_ids(o, loaded.tokenizer);
  lm::GenerateOptions options;
  options.max_tokens = o.max_tokens;
  options.sampling = sampling_params(o.sampling, loaded.generation);
  options.stop_ids = loaded.generation.eos_token_ids;
  if (o.json) {
    options.sampling.top_logprobs = 5;
  }
  std::optional<lm::LoadedModel> draft;
  if (o.draft_model) {
    draft = lm::load_model(*o.draft_model);
    if (draft->model->vocab_size() != loaded.model->vocab_size()) {
      throw std::invalid_argument("--draft-model's vocabulary (" + std::to_string(draft->model->vocab_size()) +
                                  " tokens) differs from the model's (" + std::to_string(loaded.model->vocab_size()) +
                                  ")");
    }
    options.draft_model = draft->model.get();
    options.num_draft = o.num_draft;
  }
  if (!o.json) {
    lm::GenerationStats last;
    lm::stream_generate(*loaded.model, loaded.tokenizer, ids, options, [&](const lm::GenerationResponse& r) {
      if (prints) {
        std::fputs(r.text.c_str(), out);
        std::fflush(out);
      }
      last = r.stats;
      return true;
    });
    if (prints) {
      std::fputc('\n', out);
      print_stats(last, err);
    }
    return;
  }
  auto result = lm::generate(*loaded.model, loaded.tokenizer, ids, options);
  if (!prints) {
    return;
  }
  nlohmann::ordered_json j;
  j["model"] = o.model;
  j["prompt_ids"] = ids;
  j["generated_ids"] = result.tokens;
  j["text"] = result.text;
  j["finish_reason"] = result.finish_reason;
  j["logprobs"] = result.logprobs;
  auto tops = nlohmann::ordered_json::array();
  for (const auto& step : result.top_logprobs) {
    auto row = nlohmann::ordered_json::array();
    for (const auto& t : step) {
      row.push_back({{"id", t.token}, {"logprob", t.logprob}});
    }
    tops.push_back(row);
  }
  j["top_logprobs"] = tops;
  j["timings"] = {{"prompt_tokens", result.stats.prompt_tokens},
                  {"prompt_tokens_per_second", result.stats.prompt_tps},
                  {"generation_tokens", result.stats.generation_tokens},
                  {"generation_tokens_per_second", result.stats.generation_tps},
                  {"peak_memory_bytes", result.stats.peak_memory}};
  std::fprintf(out, "%s\n", dump(j).c_str());
}

void run_chat(const ChatCommandOptions& o, std::FILE* in, std::FILE* out) {
  auto loaded = lm::load_model(o.model);
  const bool interactive = isatty(fileno(in)) != 0;
  auto messages = chat_messages(o.system);
  lm::PromptCache conversation;
  lm::GenerateOptions options;
  options.max_tokens = o.max_tokens;
  options.sampling = sampling_params(o.sampling, loaded.generation);
  options.stop_ids = loaded.generation.eos_token_ids;
  options.skip_special_tokens = true;
  options.prompt_cache = &conversation;
  if (interactive) {
    std::fprintf(out, "[chat with %s: /reset forgets the conversation, /exit or Ctrl-D leaves]\n", o.model.c_str());
  }
  std::string line;
  for (;;) {
    if (interactive) {
      std::fputs(">> ", out);
      std::fflush(out);
    }
    line.clear();
    int c = 0;
    while ((c = std::fgetc(in)) != EOF && c != '\n') {
      line.push_back(static_cast<char>(c));
    }
    if (c == EOF && line.empty()) {
      break;
    }
    if (line == "/exit") {
      break;
    }
    if (line == "/reset") {
      messages = chat_messages(o.system);
      conversation = {};
      continue;
    }
    if (line.empty()) {
      continue;
    }
    messages.push_back({{"role", "user"}, {"content", line}});
    std::string reply;
    lm::stream_generate(*loaded.model, loaded.tokenizer, chat_prompt(loaded.tokenizer, messages), options,
                        [&](const lm::GenerationResponse& r) {
                          std::fputs(r.text.c_str(), out);
                          std::fflush(out);
                          reply += r.text;
                          return true;
                        });
    std::fputc('\n', out);
    std::fflush(out);
    messages.push_back({{"role", "assistant"}, {"content", reply}});
  }
}

void run_bench(const BenchCommandOptions& o, std::FILE* out) {
  if (o.repetitions < 1 || o.prompt_tokens < 0 || o.generation_tokens < 0 || o.threads < 0) {
    throw std::invalid_argument("-p, -n and -t take counts of at least 0, -r at least 1");
  }
  if (o.threads > 0) {
    cpu::set_num_threads(o.threads);
  }
  auto loaded = lm::load_model(o.model);
  auto& model = *loaded.model;
  auto size = model_size(model);
  const std::string parameters = with_unit(size.parameters, 1e9, " B", 1e6, " M");
  const std::string bytes = with_unit(static_cast<double>(size.bytes), 1 << 30, " GiB", 1 << 20, " MiB");
  const std::string description = model.model_type() + " " + parameters + " " + size.precision;
  std::fprintf(out, "| model | size | params | backend | threads | test | t/s |\n");
  std::fprintf(out, "| --- | ---: | ---: | --- | ---: | ---: | ---: |\n");
  auto row = [&](const std::string& test, const std::function<double()>& rate) {
    rate();  // warm-up: first-touch of the mapped weights, allocator, thread pool
    std::vector<double> rates;
    rates.reserve(static_cast<size_t>(o.repetitions));
    for (int r = 0; r < o.repetitions; ++r) {
      rates.push_back(rate());
    }
    auto t = summarize(rates);
    std::fprintf(out, "| %s | %s | %s | CPU | %d | %s | %.2f ± %.2f |\n", description.c_str(), bytes.c_str(),
                 parameters.c_str(), cpu::num_threads(), test.c_str(), t.mean, t.deviation);
    std::fflush(out);
  };
  if (o.prompt_tokens > 0) {
    row("pp" + std::to_string(o.prompt_tokens), [&] { return prompt_rate(model, o.prompt_tokens); });
  }
  if (o.generation_tokens > 0) {
    row("tg" + std::to_string(o.generation_tokens), [&] { return decode_rate(model, o.generation_tokens); });
  }
}

}  // namespace nuvec::lm_cli
