// The nuvec command:
//   nuvec train [options]   trains an image classifier on Fashion-MNIST (apps/train)
//   nuvec gpt [options]     trains a byte-level GPT on the fortunes corpus and samples text (apps/gpt)

#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>

#include "apps/gpt/train_gpt.h"
#include "apps/train/trainer.h"

namespace {

const char* kUsage =
    "usage: nuvec train [options]   train an image classifier on Fashion-MNIST\n"
    "       nuvec gpt [options]     train a byte-level GPT on the fortunes corpus, then sample text\n"
    "\n"
    "nuvec train options:\n"
    "  --model NAME        cnn (default) or mlp\n"
    "  --epochs N          passes over the training set (default 3)\n"
    "  --batch-size N      images per step (default 64)\n"
    "  --lr X              peak learning rate of Adam with cosine decay (default 0.002)\n"
    "  --data DIR          folder of the IDX files (default /usr/share/datasets/fashion-mnist)\n"
    "  --output DIR        where weights, checkpoint and curves go (default runs/fashion-mnist)\n"
    "  --resume FILE       continue from a checkpoint.safetensors written by an earlier run\n"
    "  --stop-after N      end after N epochs of this run (resume later with --resume)\n"
    "  --seed N            initialization and shuffling seed (default 0)\n"
    "  --limit N           train on the first N images only (quick runs)\n"
    "\n"
    "nuvec gpt options:\n"
    "  --steps N           training steps (default 600)\n"
    "  --batch-size N      sequences per step (default 32)\n"
    "  --context N         bytes per sequence (default 128)\n"
    "  --layers N --dims N --heads N   model size (default 4, 128, 4)\n"
    "  --lr X              peak learning rate of AdamW (default 0.003)\n"
    "  --corpus DIR        fortune files (default /usr/share/games/fortunes)\n"
    "  --output DIR        where the weights go (default runs/gpt)\n"
    "  --prompt TEXT --sample N --temperature X   what to sample after training (default \"The \", 400, 0.8)\n"
    "  --seed N\n";

using Setters = std::map<std::string, std::function<void(const std::string&)>>;

/// Applies `--flag value` pairs through the setters; throws naming an unknown flag or a missing value.
void parse(int argc, char** argv, const Setters& setters) {
  for (int i = 2; i < argc; ++i) {
    std::string flag = argv[i];
    auto found = setters.find(flag);
    if (found == setters.end()) {
      throw std::invalid_argument("unknown option " + flag);
    }
    if (i + 1 >= argc) {
      throw std::invalid_argument("option " + flag + " needs a value");
    }
    found->second(argv[++i]);
  }
}

int run_train(int argc, char** argv) {
  nuvec::train::TrainOptions o;
  parse(argc, argv,
        {{"--model", [&](const std::string& v) { o.model = v; }},
         {"--epochs", [&](const std::string& v) { o.epochs = std::stoi(v); }},
         {"--batch-size", [&](const std::string& v) { o.batch_size = std::stoi(v); }},
         {"--lr", [&](const std::string& v) { o.learning_rate = std::stod(v); }},
         {"--data", [&](const std::string& v) { o.data_dir = v; }},
         {"--output", [&](const std::string& v) { o.output_dir = v; }},
         {"--resume", [&](const std::string& v) { o.resume = v; }},
         {"--stop-after", [&](const std::string& v) { o.stop_after_epochs = std::stoi(v); }},
         {"--seed", [&](const std::string& v) { o.seed = std::stoull(v); }},
         {"--limit", [&](const std::string& v) { o.train_limit = std::stoi(v); }}});
  nuvec::train::train(o);
  return 0;
}

int run_gpt(int argc, char** argv) {
  nuvec::gpt::GptOptions o;
  parse(argc, argv,
        {{"--steps", [&](const std::string& v) { o.steps = std::stoi(v); }},
         {"--batch-size", [&](const std::string& v) { o.batch_size = std::stoi(v); }},
         {"--context", [&](const std::string& v) { o.model.context = std::stoi(v); }},
         {"--layers", [&](const std::string& v) { o.model.layers = std::stoi(v); }},
         {"--dims", [&](const std::string& v) { o.model.dims = std::stoi(v); }},
         {"--heads", [&](const std::string& v) { o.model.heads = std::stoi(v); }},
         {"--lr", [&](const std::string& v) { o.learning_rate = std::stod(v); }},
         {"--corpus", [&](const std::string& v) { o.corpus_dir = v; }},
         {"--output", [&](const std::string& v) { o.output_dir = v; }},
         {"--prompt", [&](const std::string& v) { o.prompt = v; }},
         {"--sample", [&](const std::string& v) { o.sample_bytes = std::stoi(v); }},
         {"--temperature", [&](const std::string& v) { o.temperature = std::stof(v); }},
         {"--seed", [&](const std::string& v) { o.seed = std::stoull(v); }}});
  nuvec::gpt::train_gpt(o);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string command = argc >= 2 ? argv[1] : "";
  if (command == "help" || command == "--help" || command == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  try {
    if (command == "train") {
      return run_train(argc, argv);
    }
    if (command == "gpt") {
      return run_gpt(argc, argv);
    }
    std::fputs(kUsage, stderr);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nuvec %s: %s\n", command.c_str(), e.what());
    return 1;
  }
}
