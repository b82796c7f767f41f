#include "apps/gpt/train_gpt.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "apps/gpt/byte_tokenizer.h"
#include "apps/gpt/corpus.h"
#include "apps/train/step.h"
#include "nuvec/core/random.h"
#include "nuvec/lm/generate/generate.h"
#include "nuvec/lm/models/load.h"
#include "nuvec/lm/models/registry.h"
#include "nuvec/nn/nn.h"

namespace nuvec::gpt {

namespace {

/// `batch` windows of context + 1 ids starting at random offsets of [begin, end): inputs and next-id targets.
std::pair<array, array> windows(const std::vector<int32_t>& ids, size_t begin, size_t end, int batch, int context,
                                std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> offset(begin, end - static_cast<size_t>(context) - 1);
  std::vector<int32_t> inputs;
  std::vector<int32_t> targets;
  for (int b = 0; b < batch; ++b) {
    size_t start = offset(rng);
    inputs.insert(inputs.end(), ids.begin() + static_cast<std::ptrdiff_t>(start),
                  ids.begin() + static_cast<std::ptrdiff_t>(start) + context);
    targets.insert(targets.end(), ids.begin() + static_cast<std::ptrdiff_t>(start) + 1,
                   ids.begin() + static_cast<std::ptrdiff_t>(start) + context + 1);
  }
  return {array(inputs.begin(), {batch, context}, int32), array(targets.begin(), {batch, context}, int32)};
}

void write_json(const std::filesystem::path& file, const nlohmann::ordered_json& j) {
  std::ofstream out(file);
  out << j.dump(2) << "\n";
  if (!out) {
    throw_error(ErrorKind::io, "[gpt] cannot write " + file.string() + ".");
  }
}

}  // namespace

GptResult train_gpt(const GptOptions& options, std::FILE* log) {
  const auto tokenizer = lm::Tokenizer::from_json(byte_tokenizer_json().dump(), byte_tokenizer_config().dump());
  std::string chats;
  for (const auto& fortune : split_fortunes(load_corpus(options.corpus_dir))) {
    chats += chatml_exchange("Tell me a fortune.", fortune);
  }
  const auto ids = tokenizer.encode(chats, false);
  size_t split_at = ids.size() * 95 / 100;
  if (split_at < static_cast<size_t>(options.model.context) * 4) {
    throw_invalid("[gpt] the corpus in " + options.corpus_dir + " is too small for a context of " +
                  std::to_string(options.model.context) + " bytes.");
  }
  random::seed(options.seed);
  const auto config = llama_config(options.model);
  auto model = lm::create_model(config);
  int warmup = std::max(1, options.steps / 20);
  // Bias-corrected (PyTorch's AdamW), as this trainer has always run.
  optimizers::AdamW optimizer(
      optimizers::join_schedules(
          {optimizers::linear_schedule(0.0, options.learning_rate, warmup),
           optimizers::cosine_decay(options.learning_rate, options.steps - warmup, options.learning_rate * 0.1)},
          {warmup}),
      {0.9, 0.999}, 1e-8, 0.01, /*bias_correction=*/true);
  auto loss_fn = [&](const std::vector<array>& batch) {
    auto logits = model->forward(batch[0]);
    return nn::losses::cross_entropy(logits, batch[1], std::nullopt, -1, 0.0F, nn::losses::Reduction::mean);
  };
  constexpr double max_grad_norm = 1.0;
  auto step = options.eager ? train::eager_step(*model, optimizer, loss_fn, max_grad_norm)
                            : train::compiled_step(*model, optimizer, loss_fn, max_grad_norm);
  std::mt19937_64 rng(options.seed + 17);
  long params = 0;
  for (const auto& [name, p] : model->parameters()) {
    params += static_cast<long>(p.size());
  }
  std::fprintf(log,
               "byte-level llama: %d layers, width %d, %d heads, context %d, %.2fM parameters; corpus %zu tokens\n",
               options.model.layers, options.model.dims, options.model.heads, options.model.context,
               static_cast<double>(params) / 1e6, ids.size());

  GptResult result;
  double window_loss = 0.0;
  int window_steps = 0;
  auto started = std::chrono::steady_clock::now();
  auto window_start = started;
  auto first_step_end = started;
  for (int s = 1; s <= options.steps; ++s) {
    auto [inputs, targets] = windows(ids, 0, split_at, options.batch_size, options.model.context, rng);
    auto loss = step({inputs, targets});
    train::eval_step(loss, *model, optimizer);
    window_loss += loss.item<float>();
    ++window_steps;
    if (s == 1) {
      first_step_end = std::chrono::steady_clock::now();
      result.first_step_seconds = std::chrono::duration<double>(first_step_end - started).count();
    }
    if (s % 50 == 0 || s == options.steps) {
      auto now = std::chrono::steady_clock::now();
      double seconds = std::chrono::duration<double>(now - window_start).count();
      double tokens = static_cast<double>(window_steps) * options.batch_size * options.model.context;
      result.train_loss = window_loss / window_steps;
      result.tokens_per_second = tokens / seconds;
      std::fprintf(log, "step %d/%d  loss %.4f  %.0f tokens/s  lr %.2e\n", s, options.steps, result.train_loss,
                   result.tokens_per_second, optimizer.learning_rate());
      std::fflush(log);
      window_loss = 0.0;
      window_steps = 0;
      window_start = now;
    }
  }
  if (options.steps > 1) {
    result.step_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - first_step_end).count() / (options.steps - 1);
  }
  std::fprintf(log, "%s step: the first %.2f s, then %.1f ms each\n", options.eager ? "eager" : "compiled",
               result.first_step_seconds, result.step_seconds * 1e3);
  std::mt19937_64 held_out(99);
  double validation = 0.0;
  constexpr int validation_batches = 8;
  for (int i = 0; i < validation_batches; ++i) {
    auto [inputs, targets] = windows(ids, split_at, ids.size(), options.batch_size, options.model.context, held_out);
    validation += loss_fn({inputs, targets}).item<float>();
  }
  result.validation_loss = validation / validation_batches;

  const std::filesystem::path out(options.output_dir);
  lm::save_folder(out.string(), *model, config);
  write_json(out / "tokenizer.json", byte_tokenizer_json());
  write_json(out / "tokenizer_config.json", byte_tokenizer_config());
  write_json(out / "generation_config.json", {{"eos_token_id", tokenizer.token_to_id(turn_end).value()}});

  lm::GenerateOptions generate;
  generate.max_tokens = options.sample_tokens;
  generate.sampling.temperature = options.temperature;
  generate.sampling.seed = options.seed;
  generate.skip_special_tokens = true;
  lm::ChatTemplateOptions chat;
  chat.add_generation_prompt = true;
  const auto messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", options.prompt}}});
  const auto prompt = tokenizer.encode(tokenizer.apply_chat_template(messages, chat), false);
  result.sample = lm::generate(*model, tokenizer, prompt, generate).text;
  std::fprintf(log, "held-out loss %.4f (%.3f bits per byte); %.1f s in all; wrote the model folder %s\n",
               result.validation_loss, result.validation_loss / std::log(2.0),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
               options.output_dir.c_str());
  std::fprintf(log, "--- %s ---\n%s\n--------------\n", options.prompt.c_str(), result.sample.c_str());
  return result;
}

}  // namespace nuvec::gpt
