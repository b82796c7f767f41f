// nuvec's side of bench/nn_vs_torch.py: milliseconds per training step (forward, backward through nn::value_and_grad,
// Adam update, eval) of the Fashion-MNIST CNN and of an MLP, on random data of the real shapes. Prints "name median_ms"
// lines. Usage: nn_train_bench [reps]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

#include "nuvec/nn/nn.h"
#include "nuvec/nuvec.h"

namespace nv = nuvec;
namespace nn = nuvec::nn;

namespace {

/// conv(1->32, 3x3) relu maxpool(2) conv(32->64, 3x3) relu maxpool(2) linear(3136->128) relu linear(128->10).
class FashionCNN : public nn::Module {
 public:
  FashionCNN()
      : features(std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::UnaryModule>>{
            std::make_shared<nn::Conv2d>(1, 32, 3, 1, 1), std::make_shared<nn::ReLU>(),
            std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Conv2d>(32, 64, 3, 1, 1),
            std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2)})),
        fc1(std::make_shared<nn::Linear>(64 * 7 * 7, 128)),
        fc2(std::make_shared<nn::Linear>(128, 10)) {
    register_module("features", features);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  [[nodiscard]] std::string type_name() const override { return "FashionCNN"; }
  nv::array forward(const nv::array& x) {
    auto h = features->forward(x);
    return fc2->forward(nn::relu(fc1->forward(nv::reshape(h, {x.shape(0), -1}))));
  }
  std::shared_ptr<nn::Sequential> features;
  std::shared_ptr<nn::Linear> fc1;
  std::shared_ptr<nn::Linear> fc2;
};

class MLP : public nn::Module {
 public:
  MLP() : fc1(std::make_shared<nn::Linear>(784, 512)), fc2(std::make_shared<nn::Linear>(512, 10)) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  [[nodiscard]] std::string type_name() const override { return "MLP"; }
  nv::array forward(const nv::array& x) { return fc2->forward(nn::relu(fc1->forward(x))); }
  std::shared_ptr<nn::Linear> fc1;
  std::shared_ptr<nn::Linear> fc2;
};

template <class Model>
double time_training(Model& model, const nv::array& x, const nv::array& y, int reps) {
  nv::optimizers::Adam opt(1e-3);
  auto step = nn::value_and_grad(model, [&](const std::vector<nv::array>& in) {
    return nn::losses::cross_entropy(model.forward(in[0]), in[1], std::nullopt, -1, 0.0F, nn::losses::Reduction::mean);
  });
  auto run = [&] {
    auto [loss, grads] = step({x, y});
    opt.update(model, grads);
    std::vector<nv::array> outputs{loss};
    for (auto& [name, p] : model.parameters()) {
      outputs.push_back(p);
    }
    nv::eval(outputs);
  };
  run();
  run();
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    run();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  // Usage: nn_train_bench [REPS] (default 15); anything but a positive count is refused.
  const int reps = argc > 1 ? std::atoi(argv[1]) : 15;
  if (reps < 1) {
    std::fprintf(stderr, "usage: %s [repetitions >= 1]\n", argv[0]);
    return 2;
  }
  const int batch = 64;
  FashionCNN cnn;
  auto images = nv::random::uniform({batch, 28, 28, 1});
  auto labels = nv::random::randint(0, 10, {batch});
  std::printf("cnn_train_step_b64 %.3f\n", time_training(cnn, images, labels, reps));
  MLP mlp;
  auto flat = nv::reshape(images, {batch, 784});
  std::printf("mlp_train_step_b64 %.3f\n", time_training(mlp, flat, labels, reps));
  return 0;
}
