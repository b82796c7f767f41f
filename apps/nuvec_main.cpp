// The nuvec command:
//   nuvec train [options]   trains an image classifier on Fashion-MNIST (apps/train)
//   nuvec gpt [options]     trains a byte-level GPT on the fortunes corpus and samples text (apps/gpt)
//   nuvec tokenize, detokenize, chat-template   the lm library's tokenizer and chat templates (apps/tokenize)

#include <cstdio>
#include <exception>
#include <string>

#include "apps/cli/options.h"
#include "apps/gpt/train_gpt.h"
#include "apps/tokenize/commands.h"
#include "apps/train/trainer.h"

namespace {

const char* kUsage =
    "usage: nuvec train [options]   train an image classifier on Fashion-MNIST\n"
    "       nuvec gpt [options]     train a byte-level GPT on the fortunes corpus, then sample text\n"
    "       nuvec tokenize --tokenizer PATH [--add-special-tokens] [--jsonl]\n"
    "       nuvec detokenize --tokenizer PATH [--skip-special-tokens] [--clean-up-spaces] [--jsonl]\n"
    "       nuvec chat-template --tokenizer PATH --messages FILE.json [--tools FILE.json] [--vars FILE.json]\n"
    "                           [--template NAME] [--add-generation-prompt]\n"
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
    "  --seed N\n"
    "\n"
    "tokenizer commands (PATH: a tokenizer.json, a model folder or a .gguf file):\n"
    "  tokenize            the text on standard input as one JSON array of ids; --jsonl: each input line a JSON\n"
    "                      string, each output line its JSON array of ids\n"
    "  detokenize          a JSON array of ids on standard input as text; --jsonl: each input line a JSON array,\n"
    "                      each output line a JSON string. --clean-up-spaces: transformers' \" .\" -> \".\" clean-up\n"
    "  chat-template       prints the prompt the tokenizer's chat template makes of the messages (a JSON list);\n"
    "                      --vars: a JSON object of more template variables, such as {\"enable_thinking\": false}\n";

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

int run_tokenize(int argc, char** argv) {
  nuvec::tokenize::TokenizeOptions o;
  nuvec::cli::Options()
      .add("--tokenizer", o.tokenizer)
      .flag("--add-special-tokens", o.add_special_tokens)
      .flag("--jsonl", o.jsonl)
      .parse(argc, argv);
  nuvec::tokenize::run_tokenize(o, stdin, stdout);
  return 0;
}

int run_detokenize(int argc, char** argv) {
  nuvec::tokenize::DetokenizeOptions o;
  nuvec::cli::Options()
      .add("--tokenizer", o.tokenizer)
      .flag("--skip-special-tokens", o.skip_special_tokens)
      .flag("--clean-up-spaces", o.clean_up_spaces)
      .flag("--jsonl", o.jsonl)
      .parse(argc, argv);
  nuvec::tokenize::run_detokenize(o, stdin, stdout);
  return 0;
}

int run_chat_template(int argc, char** argv) {
  nuvec::tokenize::ChatTemplateCommandOptions o;
  nuvec::cli::Options()
      .add("--tokenizer", o.tokenizer)
      .add("--messages", o.messages)
      .add("--tools", o.tools)
      .add("--vars", o.vars)
      .add("--template", o.name)
      .flag("--add-generation-prompt", o.add_generation_prompt)
      .parse(argc, argv);
  nuvec::tokenize::run_chat_template(o, stdout);
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
    if (command == "tokenize") {
      return run_tokenize(argc, argv);
    }
    if (command == "detokenize") {
      return run_detokenize(argc, argv);
    }
    if (command == "chat-template") {
      return run_chat_template(argc, argv);
    }
    std::fputs(kUsage, stderr);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nuvec %s: %s\n", command.c_str(), e.what());
    return 1;
  }
}
