// The nuvec command:
//   nuvec train [options]   trains an image classifier on Fashion-MNIST (apps/train)
//   nuvec gpt [options]     trains a byte-level llama on the fortunes corpus, saved as a model folder (apps/gpt)
//   nuvec tokenize, detokenize, chat-template   the lm library's tokenizer and chat templates (apps/tokenize)
//   nuvec generate, chat, bench   language models: text generation, a terminal chat, speed (apps/generate)
//   nuvec serve             an OpenAI-compatible HTTP server (apps/serve, over nuvec/serve)
//   nuvec launch            starts the ranks of a distributed program (apps/launch)

#include <cstdio>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>

#include "apps/cli/commands.h"
#include "apps/serve/commands.h"
#include "nuvec/core/device.h"
#include "nuvec/core/matmul_precision.h"

namespace {

const char* kUsage =
    "usage: nuvec train [options]   train an image classifier on Fashion-MNIST\n"
    "       nuvec gpt [options]     train a byte-level llama on the fortunes corpus, saved as a model folder\n"
    "       nuvec tokenize --tokenizer PATH [--add-special-tokens] [--jsonl]\n"
    "       nuvec detokenize --tokenizer PATH [--skip-special-tokens] [--clean-up-spaces] [--jsonl]\n"
    "       nuvec chat-template --tokenizer PATH --messages FILE.json [--tools FILE.json] [--vars FILE.json]\n"
    "                           [--template NAME] [--add-generation-prompt]\n"
    "       nuvec generate --model PATH (--prompt TEXT | --prompt-ids 1,2,3) [options]\n"
    "       nuvec chat --model PATH [--system TEXT] [--max-tokens N] [sampling options]\n"
    "       nuvec bench --model PATH [-p 512] [-n 128] [-t THREADS] [-r 5]\n"
    "       nuvec serve --model [NAME=]PATH [--model NAME=PATH ...] [--host 127.0.0.1] [--port 8080]\n"
    "                   [--parallel 4] [--ctx-size N] [--max-tokens N] [--api-key KEY | --api-key-file F]\n"
    "                   [--max-queue 64] [--prefix-cache 4096] [--kv-cache-tokens N] [--log-file F]\n"
    "                   [--drain-seconds 30] [--route NAME=A:90,B:10 ...] [--route-seed N]\n"
    "                   [--draft-model PATH] [--num-draft 4] [--grpc-port N [--grpc-tls-cert PEM --grpc-tls-key PEM]]\n"
    "       nuvec launch -n N [--hosts H1,H2,... | --hostfile F] [--backend ring|mpi] [--ssh PROGRAM]\n"
    "                    [--env NAME=VALUE ...] -- PROGRAM ARGS\n"
    "\n"
    "Every command but launch takes --device cpu|gpu: where arrays are computed (default: the GPU when one is\n"
    "usable, else the CPU), and --matmul-precision highest|high|medium, as PyTorch's float32 matmul precision:\n"
    "\"high\" lets products of float32 rows and quantized weights carry the rows with 16 bits instead of\n"
    "float32's 24 (less arithmetic where decoding is compute-bound), \"medium\" with GGUF block weights 8 bits\n"
    "per 32 values, as llama.cpp's own products do. Default: high for generate, chat, bench and serve, highest\n"
    "for the others.\n"
    "\n"
    "nuvec train options:\n"
    "  --model NAME        cnn (default) or mlp\n"
    "  --epochs N          passes over the training set (default 3)\n"
    "  --batch-size N      images per step (default 64)\n"
    "  --lr X              peak learning rate of Adam with cosine decay (default 0.002; when resuming, the\n"
    "                      checkpoint's: a different --lr is used from the saved step on, and said so)\n"
    "  --data DIR          folder of the IDX files (default /usr/share/datasets/fashion-mnist)\n"
    "  --output DIR        where weights, checkpoint and curves go (default runs/fashion-mnist)\n"
    "  --resume FILE       continue from a checkpoint.safetensors written by an earlier run\n"
    "  --stop-after N      end after N epochs of this run (resume later with --resume)\n"
    "  --seed N            initialization and shuffling seed (default 0)\n"
    "  --limit N           train on the first N images only (quick runs)\n"
    "  --distributed       data parallel under nuvec launch or mpirun: each rank a shard of every batch (the\n"
    "                      weights follow one process with the whole batch); rank 0 prints and writes the files\n"
    "\n"
    "nuvec gpt options:\n"
    "  --steps N           training steps (default 600)\n"
    "  --batch-size N      sequences per step (default 32)\n"
    "  --context N         tokens (bytes) per sequence (default 128)\n"
    "  --layers N --dims N --heads N   model size (default 4, 128, 4)\n"
    "  --lr X              peak learning rate of AdamW (default 0.003)\n"
    "  --corpus DIR        fortune files (default /usr/share/games/fortunes)\n"
    "  --output DIR        the model folder (config.json, model.safetensors, tokenizer) (default runs/gpt)\n"
    "  --prompt TEXT --sample N --temperature X   the message to answer after training, at most N tokens\n"
    "                      (default \"Tell me a fortune.\", 400, 0.8)\n"
    "  --seed N\n"
    "  --eager             run the training step op by op (by default it is compiled whole: forward, backward,\n"
    "                      clipping and the AdamW update with its schedule)\n"
    "\n"
    "tokenizer commands (PATH: a tokenizer.json, a model folder or a .gguf file):\n"
    "  tokenize            the text on standard input as one JSON array of ids; --jsonl: each input line a JSON\n"
    "                      string, each output line its JSON array of ids\n"
    "  detokenize          a JSON array of ids on standard input as text; --jsonl: each input line a JSON array,\n"
    "                      each output line a JSON string. --clean-up-spaces: transformers' \" .\" -> \".\" clean-up\n"
    "  chat-template       prints the prompt the tokenizer's chat template makes of the messages (a JSON list);\n"
    "                      --vars: a JSON object of more template variables, such as {\"enable_thinking\": false}\n"
    "\n"
    "language-model commands (PATH: a Hugging Face or MLX model folder, or a .gguf file):\n"
    "  generate            streams the text generated after the prompt; statistics on standard error\n"
    "    --max-tokens N      tokens to generate at most (default 256)\n"
    "    --temp T --top-k K --top-p P --min-p P --repetition-penalty R --seed S\n"
    "                        sampling (unset ones come from generation_config.json; greedy by default)\n"
    "    --chat              the prompt is a user message in the model's chat template (--system TEXT adds one)\n"
    "    --draft-model PATH --num-draft N   speculative decoding with a smaller model of the same vocabulary\n"
    "    --json              one JSON object: prompt and generated ids, text, log-probabilities and top 5, timings\n"
    "                      Under nuvec launch or mpirun the ranks share the model (tensor parallel: each holds its\n"
    "                      share of the heads and features); rank 0 prints\n"
    "    --pipeline          under nuvec launch: each rank runs (and holds) a run of the layers instead (pipeline\n"
    "                        parallel)\n"
    "  chat                an interactive chat through the chat template (/reset, /exit)\n"
    "  bench               prompt (-p tokens) and decoding (-n tokens) speed, as llama-bench prints it\n"
    "  serve               OpenAI's HTTP API: POST /v1/chat/completions, /v1/completions, /v1/embeddings,\n"
    "                      /tokenize, /detokenize;\n"
    "                      GET /v1/models, /health, /metrics. Requests share batches (--parallel sequences per\n"
    "                      model; --max-queue more wait, then 429); a request's `model` picks a --model by NAME,\n"
    "                      or a --route by its NAME, which draws A or B by weight for each request (A/B tests;\n"
    "                      the response's `model` and the metrics' label say which served it).\n"
    "                      --draft-model: speculative decoding for the first model's requests that decode alone\n"
    "                      (same vocabulary; greedy output unchanged). --grpc-port: the same service over gRPC\n"
    "                      (nuvec/serve/serve.proto: streaming Generate, ListModels, Tokenize, Health; and the\n"
    "                      standard grpc.health.v1 service), with TLS when given a certificate and its key.\n"
    "                      --ctx-size bounds prompt and completion together, --max-tokens each completion.\n"
    "                      --kv-cache-tokens: the KV cache of all of a model's requests together, in blocks\n"
    "                      of 16 (default: --parallel times the context); a request that could outgrow it\n"
    "                      alone gets 400, and when running requests fill it the latest waits to be computed\n"
    "                      again (preempted). --prefix-cache: prompt positions kept, in whole blocks, for\n"
    "                      prompts that start the same way.\n"
    "                      API keys: 'Authorization: Bearer KEY' (--api-key-file: one key a line). One JSON line\n"
    "                      per request on standard error or --log-file. SIGTERM/SIGINT: stop taking requests,\n"
    "                      let running ones finish (at most --drain-seconds), exit 0\n"
    "\n"
    "nuvec launch options (the ranks of a nuvec::distributed program; output lines get \"[rank] \" in front):\n"
    "  -n N                N ranks on this machine; the ranks here share its cores: NUVEC_NUM_THREADS,\n"
    "                      OPENBLAS_NUM_THREADS and OMP_NUM_THREADS = cores / ranks here (at least 1) where unset\n"
    "  --hosts H1,H2,...   one rank per host (repeat a host for more); hosts other than this one over ssh, in\n"
    "                      this working directory (the program's path must be valid there)\n"
    "  --hostfile F        JSON, one entry per rank: the ring's \"ip:port\" (or a list of them), or mlx.launch's\n"
    "                      {\"ssh\": HOST, \"ips\": [IP, ...]} (reached as HOST, listening on the first IP)\n"
    "  --backend B         ring (default: NUVEC_RANK and NUVEC_HOSTFILE set for each rank) or mpi (mpirun)\n"
    "  --starting-port P   ring ports P, P+1, ... (default: free ports of this machine)\n"
    "  --ssh PROGRAM       runs `PROGRAM HOST COMMAND` to start a remote rank (default: $NUVEC_SSH, else ssh)\n"
    "  --env NAME=VALUE    set for every rank (repeatable); the launcher's NUVEC_* and MLX_* variables are passed\n"
    "                      on too\n"
    "  --grace S           after a rank fails, the others get S seconds to end on their own (default 10)\n"
    "SIGTERM and SIGINT are passed on to every rank (over ssh to remote ones); the exit status is the first failing\n"
    "rank's.\n";

int run_train(int argc, char** argv) {
  nuvec::train::TrainOptions o;
  nuvec::cli::train_options(o).parse(argc, argv);
  nuvec::train::train(o);
  return 0;
}

int run_gpt(int argc, char** argv) {
  nuvec::gpt::GptOptions o;
  nuvec::cli::gpt_options(o).parse(argc, argv);
  nuvec::gpt::train_gpt(o);
  return 0;
}

int run_tokenize(int argc, char** argv) {
  nuvec::tokenize::TokenizeOptions o;
  nuvec::cli::tokenize_options(o).parse(argc, argv);
  nuvec::tokenize::run_tokenize(o, stdin, stdout);
  return 0;
}

int run_detokenize(int argc, char** argv) {
  nuvec::tokenize::DetokenizeOptions o;
  nuvec::cli::detokenize_options(o).parse(argc, argv);
  nuvec::tokenize::run_detokenize(o, stdin, stdout);
  return 0;
}

int run_chat_template(int argc, char** argv) {
  nuvec::tokenize::ChatTemplateCommandOptions o;
  nuvec::cli::chat_template_options(o).parse(argc, argv);
  nuvec::tokenize::run_chat_template(o, stdout);
  return 0;
}

int run_generate(int argc, char** argv) {
  nuvec::lm_cli::GenerateCommandOptions o;
  nuvec::cli::generate_options(o).parse(argc, argv);
  nuvec::lm_cli::run_generate(o, stdout, stderr);
  return 0;
}

int run_chat(int argc, char** argv) {
  nuvec::lm_cli::ChatCommandOptions o;
  nuvec::cli::chat_options(o).parse(argc, argv);
  nuvec::lm_cli::run_chat(o, stdin, stdout);
  return 0;
}

int run_launch(int argc, char** argv) {
  nuvec::launch::LaunchOptions o;
  int options_end = argc;
  o.command = nuvec::launch::command_after_dashes(argc, argv, options_end);
  nuvec::cli::launch_options(o).parse(options_end, argv);
  return nuvec::launch::run_launch(o, stdout);
}

int run_bench(int argc, char** argv) {
  nuvec::lm_cli::BenchCommandOptions o;
  nuvec::cli::bench_options(o).parse(argc, argv);
  nuvec::lm_cli::run_bench(o, stdout);
  return 0;
}

// Takes `NAME VALUE` out of the command's own arguments (those before a `--`); nullopt where it is not there.
std::optional<std::string> take_option(int& argc, char** argv, const std::string& name) {
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      return std::nullopt;
    }
    if (arg != name) {
      continue;
    }
    if (i + 1 >= argc) {
      throw std::invalid_argument(name + " expects a value, got nothing");
    }
    std::string value = argv[i + 1];
    for (int j = i; j + 2 < argc; ++j) {
      argv[j] = argv[j + 2];
    }
    argc -= 2;
    return value;
  }
  return std::nullopt;
}

// `--device cpu|gpu` makes that device the default for every array the command computes (without it: the GPU when
// one is usable, else the CPU). Every command but launch takes it.
void use_device_option(int& argc, char** argv) {
  const auto name = take_option(argc, argv, "--device");
  if (!name) {
    return;
  }
  if (*name != "cpu" && *name != "gpu") {
    throw std::invalid_argument("--device " + *name + ": expected cpu or gpu");
  }
  nuvec::set_default_device(*name == "gpu" ? nuvec::Device::gpu : nuvec::Device::cpu);
}

// `--matmul-precision highest|high|medium` (nuvec::set_float32_matmul_precision). The language-model commands run
// at "high" unless told otherwise: their weights are rounded far more coarsely than x is there.
void use_matmul_precision_option(const std::string& command, int& argc, char** argv) {
  const bool language_model = command == "generate" || command == "chat" || command == "bench" || command == "serve";
  const std::string precision =
      take_option(argc, argv, "--matmul-precision").value_or(language_model ? "high" : "highest");
  if (precision != "highest" && precision != "high" && precision != "medium") {
    throw std::invalid_argument("--matmul-precision " + precision + ": expected highest, high or medium");
  }
  nuvec::set_float32_matmul_precision(precision);
}

// Whether -h or --help comes among the command's own arguments (launch's program arguments, after --, are not).
bool asks_for_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      return false;
    }
    if (arg == "help" && i == 1) {
      return true;
    }
    if (arg == "--help" || arg == "-h") {
      return true;
    }
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::string command = argc >= 2 ? argv[1] : "";
  if (asks_for_help(argc, argv)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  try {
    if (command != "launch") {
      use_device_option(argc, argv);
      use_matmul_precision_option(command, argc, argv);
    }
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
    if (command == "generate") {
      return run_generate(argc, argv);
    }
    if (command == "chat") {
      return run_chat(argc, argv);
    }
    if (command == "bench") {
      return run_bench(argc, argv);
    }
    if (command == "launch") {
      return run_launch(argc, argv);
    }
    if (command == "serve") {
      return nuvec::serve_cli::run_serve(argc, argv, stderr);
    }
    std::fputs(kUsage, stderr);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nuvec %s: %s\n", command.c_str(), e.what());
    return 1;
  }
}
