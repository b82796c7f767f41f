// batch_decode_bench: continuous batching's decode speed through lm::BatchGenerator (the scheduler `nuvec serve`
// runs), one line per run:
//
//   batch=B prompt=P gen=G prefill_s=T decode_tok_s=R
//
// B sequences of P random prompt tokens each (seeded, distinct) are inserted at once and each generates G tokens
// greedily (end-of-sequence ids are banned, so every sequence runs to G). prefill_s: the first step, which prefills
// every prompt and gives each sequence its first token; decode_tok_s: the B * (G - 1) tokens of the steps after it
// over their time. usage: batch_decode_bench MODEL [-b 16] [-p 64] [-n 128] [-t THREADS] [-r 1]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "nuvec/cpu/thread_pool.h"
#include "nuvec/lm/generate/batch_generator.h"
#include "nuvec/lm/load_model.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string model;
  int batch = 16;
  int prompt = 64;
  int gen = 128;
  int threads = 0;
  int runs = 1;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    auto value = [&]() {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", argv[i]);
        std::exit(2);
      }
      return std::atoi(argv[++i]);
    };
    if (std::strcmp(argv[i], "-b") == 0) {
      o.batch = value();
    } else if (std::strcmp(argv[i], "-p") == 0) {
      o.prompt = value();
    } else if (std::strcmp(argv[i], "-n") == 0) {
      o.gen = value();
    } else if (std::strcmp(argv[i], "-t") == 0) {
      o.threads = value();
    } else if (std::strcmp(argv[i], "-r") == 0) {
      o.runs = value();
    } else {
      o.model = argv[i];
    }
  }
  if (o.model.empty() || o.batch < 1 || o.prompt < 1 || o.gen < 2 || o.runs < 1) {
    std::fprintf(stderr, "usage: batch_decode_bench MODEL [-b 16] [-p 64] [-n 128] [-t THREADS] [-r 1]\n");
    std::exit(2);
  }
  return o;
}

void run(const nuvec::lm::LoadedModel& loaded, const Options& o, unsigned seed) {
  nuvec::lm::BatchOptions batch_options;
  batch_options.max_batch_size = o.batch;
  batch_options.prefill_batch_size = o.batch;
  nuvec::lm::BatchGenerator generator(loaded, batch_options);
  nuvec::lm::GenerateOptions options;
  options.max_tokens = o.gen;
  for (std::optional<int32_t> id : {loaded.tokenizer.eos_id(), loaded.tokenizer.eot_id()}) {
    if (id) {
      options.sampling.logit_bias[*id] = -1e9F;
    }
  }
  for (int32_t id : loaded.generation.eos_token_ids) {
    options.sampling.logit_bias[id] = -1e9F;
  }
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> token(10, loaded.model->vocab_size() - 1);
  for (int b = 0; b < o.batch; ++b) {
    std::vector<int32_t> prompt(static_cast<size_t>(o.prompt));
    for (auto& t : prompt) {
      t = token(rng);
    }
    generator.insert(prompt, options);
  }
  const auto start = Clock::now();
  size_t tokens = generator.next().size();
  const auto first = Clock::now();
  size_t decoded = 0;
  while (generator.has_work()) {
    decoded += generator.next().size();
  }
  const auto end = Clock::now();
  tokens += decoded;
  if (tokens != static_cast<size_t>(o.batch) * o.gen) {
    std::fprintf(stderr, "expected %d tokens, got %zu\n", o.batch * o.gen, tokens);
    std::exit(1);
  }
  const double prefill = std::chrono::duration<double>(first - start).count();
  const double decode = std::chrono::duration<double>(end - first).count();
  std::printf("batch=%d prompt=%d gen=%d prefill_s=%.3f decode_tok_s=%.1f\n", o.batch, o.prompt, o.gen, prefill,
              static_cast<double>(decoded) / decode);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (o.threads > 0) {
    nuvec::cpu::set_num_threads(o.threads);
  }
  const nuvec::lm::LoadedModel loaded = nuvec::lm::load_model(o.model);
  for (int r = 0; r < o.runs; ++r) {
    run(loaded, o, static_cast<unsigned>(r + 1));
  }
  return 0;
}
