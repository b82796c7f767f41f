// nuvec's side of bench/training_vs_torch.py: forward plus backward (loss and every gradient evaluated) of a
// 4-layer MLP (batch 256, width 1024, ReLU, cross-entropy over 10 classes) and of a pre-norm transformer block
// (batch 8, 128 tokens, width 256, 4 heads, causal attention, GELU MLP of width 1024); then whole training steps
// (forward, backward, optimizer update, evaluation) of nuvec train's CNN (batch 64, Adam) and of nuvec gpt's
// byte-level GPT (batch 32 x 128 bytes, AdamW, gradient clipping).
// Prints one line per model: "row <name> median_ms=... min_ms=... reps=...". Same inputs and method as the
// script's PyTorch side: two warm-up steps, then the median of the timed steps.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "apps/gpt/model.h"
#include "apps/train/models.h"
#include "apps/train/step.h"
#include "nuvec/lm/models/registry.h"
#include "nuvec/nuvec.h"

namespace nv = nuvec;
using V = std::vector<nv::array>;

namespace {

nv::array linear(const nv::array& x, const nv::array& w, const nv::array& b) {
  return nv::addmm(b, x, nv::transpose(w));
}

nv::array cross_entropy(const nv::array& logits, const nv::array& labels) {
  auto picked = nv::take_along_axis(logits, nv::expand_dims(labels, -1), -1);
  return nv::mean(nv::logsumexp(logits, -1, true) - picked);
}

struct Model {
  std::string name;
  V params;
  V data;
  std::function<nv::array(const V&, const V&)> loss;
};

Model mlp() {
  nv::random::seed(1);
  V params;
  int width = 1024;
  for (int layer = 0; layer < 4; ++layer) {
    int out = layer == 3 ? 10 : width;
    params.push_back(nv::random::uniform(-0.03F, 0.03F, {out, width}));
    params.push_back(nv::zeros({out}));
  }
  V data{nv::random::normal({256, width}), nv::random::randint(0, 10, {256})};
  auto loss = [](const V& p, const V& d) {
    auto h = d[0];
    for (int layer = 0; layer < 4; ++layer) {
      h = linear(h, p[2 * layer], p[2 * layer + 1]);
      if (layer < 3) {
        h = nv::maximum(h, nv::array(0.0F));
      }
    }
    return cross_entropy(h, d[1]);
  };
  return {"mlp_4x1024_b256", params, data, loss};
}

Model transformer_block() {
  nv::random::seed(2);
  int batch = 8;
  int tokens = 128;
  int dim = 256;
  int heads = 4;
  auto weight = [](int out, int in) { return nv::random::uniform(-0.05F, 0.05F, {out, in}); };
  V params{nv::ones({dim}),      nv::zeros({dim}),     weight(3 * dim, dim), nv::zeros({3 * dim}),
           weight(dim, dim),     nv::zeros({dim}),     nv::ones({dim}),      nv::zeros({dim}),
           weight(4 * dim, dim), nv::zeros({4 * dim}), weight(dim, 4 * dim), nv::zeros({dim})};
  V data{nv::random::normal({batch, tokens, dim})};
  auto loss = [=](const V& p, const V& d) {
    auto x = d[0];
    auto h = nv::fast::layer_norm(x, p[0], p[1], 1e-5F);
    auto qkv = linear(h, p[2], p[3]);  // (B, L, 3D)
    auto split = nv::split(qkv, 3, -1);
    auto heads_of = [&](const nv::array& t) {
      return nv::transpose(nv::reshape(t, {batch, tokens, heads, dim / heads}), {0, 2, 1, 3});
    };
    auto attn = nv::fast::scaled_dot_product_attention(heads_of(split[0]), heads_of(split[1]), heads_of(split[2]),
                                                       1.0F / std::sqrt(static_cast<float>(dim / heads)), "causal");
    auto merged = nv::reshape(nv::transpose(attn, {0, 2, 1, 3}), {batch, tokens, dim});
    x = x + linear(merged, p[4], p[5]);
    h = nv::fast::layer_norm(x, p[6], p[7], 1e-5F);
    x = x + linear(nv::nn::gelu_approx(linear(h, p[8], p[9])), p[10], p[11]);
    return nv::mean(nv::square(x));
  };
  return {"transformer_block_b8_l128_d256", params, data, loss};
}

}  // namespace

/// Median ms of `reps` calls of `step` after two warm-up calls.
template <class F>
double median_ms(F&& step, int reps, double* best) {
  step();
  step();
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    auto start = std::chrono::steady_clock::now();
    step();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  *best = times.front();
  return times[times.size() / 2];
}

/// One optimizer step of `model` on `inputs`, everything evaluated.
void train_step(nv::nn::Module& model, nv::optimizers::Optimizer& optimizer, const nv::nn::ModuleValueAndGradFn& step,
                const V& inputs, bool clip) {
  auto [loss, grads] = step(inputs);
  if (clip) {
    grads = nv::optimizers::clip_grad_norm(grads, 1.0).first;
  }
  optimizer.update(model, grads);
  nv::train::eval_step(loss, model, optimizer);
}

void training_steps(int reps) {
  double best = 0;
  {
    nv::random::seed(3);
    nv::train::SmallCnn model;
    nv::optimizers::Adam adam(1e-3, {0.9, 0.999}, 1e-8, /*bias_correction=*/true);
    auto images = nv::random::uniform({64, 28, 28, 1});
    auto labels = nv::random::randint(0, 10, {64});
    nv::eval(images, labels);
    auto step = nv::nn::value_and_grad(model, [&](const V& in) {
      return nv::nn::losses::cross_entropy(model.forward(in[0]), in[1], std::nullopt, -1, 0.0F,
                                           nv::nn::losses::Reduction::mean);
    });
    double ms = median_ms([&] { train_step(model, adam, step, {images, labels}, false); }, reps, &best);
    std::printf("row cnn_train_step_b64 median_ms=%.3f min_ms=%.3f reps=%d\n", ms, best, reps);
    std::fflush(stdout);
  }
  {
    nv::random::seed(4);
    auto model = nv::lm::create_model(nv::gpt::llama_config(nv::gpt::GptConfig{}));
    nv::optimizers::AdamW adamw(3e-3, {0.9, 0.999}, 1e-8, 0.01, /*bias_correction=*/true);
    auto tokens = nv::random::randint(0, model->vocab_size(), {32, 129});
    auto inputs = nv::slice(tokens, {0, 0}, {32, 128});
    auto targets = nv::slice(tokens, {0, 1}, {32, 129});
    nv::eval(inputs, targets);
    auto step = nv::nn::value_and_grad(*model, [&](const V& in) {
      return nv::nn::losses::cross_entropy(model->forward(in[0]), in[1], std::nullopt, -1, 0.0F,
                                           nv::nn::losses::Reduction::mean);
    });
    double ms = median_ms([&] { train_step(*model, adamw, step, {inputs, targets}, true); }, reps, &best);
    std::printf("row llama_train_step_b32_l128 median_ms=%.3f min_ms=%.3f reps=%d\n", ms, best, reps);
    std::fflush(stdout);
  }
}

int main(int argc, char** argv) {
  int reps = 15;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--reps" && i + 1 < argc) {
      reps = std::stoi(argv[++i]);
    }
  }
  for (auto& model : {mlp(), transformer_block()}) {
    nv::eval(model.params);
    nv::eval(model.data);
    std::vector<int> argnums(model.params.size());
    for (size_t i = 0; i < argnums.size(); ++i) {
      argnums[i] = static_cast<int>(i);
    }
    auto step = nv::value_and_grad([&](const V& p) { return model.loss(p, model.data); }, argnums);
    auto run = [&] {
      auto start = std::chrono::steady_clock::now();
      auto [loss, grads] = step(model.params);
      grads.push_back(loss);
      nv::eval(grads);
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    };
    run();
    run();
    std::vector<double> times;
    for (int r = 0; r < reps; ++r) {
      times.push_back(run());
    }
    std::sort(times.begin(), times.end());
    std::printf("row %s median_ms=%.3f min_ms=%.3f reps=%d\n", model.name.c_str(), times[times.size() / 2],
                times.front(), reps);
    std::fflush(stdout);
  }
  training_steps(reps);
}
