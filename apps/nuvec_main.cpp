// The nuvec command:
//   nuvec train [options]   trains an image classifier on Fashion-MNIST (apps/train)
//   nuvec gpt [options]     trains a byte-level GPT on the fortunes corpus and samples text (apps/gpt)

#include <cstdio>
#include <exception>
#include <string>

#include "apps/cli/options.h"
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

int run_train(int argc, char** argv) {
  nuvec::train::TrainOptions o;
  nuvec::cli::Options()
      .add("--model", o.model)
      .add("--epochs", o.epochs)
      .add("--batch-size", o.batch_size)
      .add("--lr", o.learning_rate)
      .add("--data", o.data_dir)
      .add("--output", o.output_dir)
      .add("--resume", o.resume)
      .add("--stop-after", o.stop_after_epochs)
      .add("--seed", o.seed)
      .add("--limit", o.train_limit)
      .parse(argc, argv);
  nuvec::train::train(o);
  return 0;
}

int run_gpt(int argc, char** argv) {
  nuvec::gpt::GptOptions o;
  nuvec::cli::Options()
      .add("--steps", o.steps)
      .add("--batch-size", o.batch_size)
      .add("--context", o.model.context)
      .add("--layers", o.model.layers)
      .add("--dims", o.model.dims)
      .add("--heads", o.model.heads)
      .add("--lr", o.learning_rate)
      .add("--corpus", o.corpus_dir)
      .add("--output", o.output_dir)
      .add("--prompt", o.prompt)
      .add("--sample", o.sample_bytes)
      .add("--temperature", o.temperature)
      .add("--seed", o.seed)
      .parse(argc, argv);
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
