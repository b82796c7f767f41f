// The C++ side of test_nn_bindings.py's training test: a two-layer MLP (Linear, relu, Linear) written with the C++
// nn library, trained on the weights and data of a safetensors file (w0, b0, w1, b1, x, y) by one optimizer with
// nuvec::nn::value_and_grad and cross entropy; writes each step's loss ("losses") and the final weights. Exit status
// 1 with the error on stderr when anything throws.

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "nuvec/nn/nn.h"
#include "nuvec/nuvec.h"

namespace {

using namespace nuvec;

class Mlp : public nn::Module {
 public:
  Mlp() {
    register_module("fc0", fc0);
    register_module("fc1", fc1);
  }
  [[nodiscard]] std::string type_name() const override { return "Mlp"; }
  array forward(const array& x) { return fc1->forward(nn::relu(fc0->forward(x))); }

  std::shared_ptr<nn::Linear> fc0 = std::make_shared<nn::Linear>(4, 16);
  std::shared_ptr<nn::Linear> fc1 = std::make_shared<nn::Linear>(16, 3);
};

/// The optimizers of test_nn_bindings.py's OPTIMIZERS, with the same arguments.
std::unique_ptr<optimizers::Optimizer> make_optimizer(const std::string& name) {
  namespace O = optimizers;
  const std::pair betas{0.9, 0.999};
  if (name == "sgd") {
    return std::make_unique<O::SGD>(0.1, 0.9, 1e-3, 0.0, true);
  }
  if (name == "adam") {
    return std::make_unique<O::Adam>(0.01);
  }
  if (name == "adamw") {
    return std::make_unique<O::AdamW>(0.01, betas, 1e-8, 0.1);
  }
  if (name == "adamax") {
    return std::make_unique<O::Adamax>(0.01);
  }
  if (name == "adagrad") {
    return std::make_unique<O::Adagrad>(0.1);
  }
  if (name == "adadelta") {
    return std::make_unique<O::AdaDelta>(1.0);
  }
  if (name == "rmsprop") {
    return std::make_unique<O::RMSprop>(0.01, 0.99, 1e-8, 0.0, 0.5, true);
  }
  if (name == "lion") {
    return std::make_unique<O::Lion>(O::cosine_decay(0.01, 10));
  }
  if (name == "adafactor") {
    return std::make_unique<O::Adafactor>();
  }
  if (name == "muon") {
    return std::make_unique<O::Muon>(0.02);
  }
  throw std::invalid_argument("unknown optimizer " + name);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: mlp_reference INPUTS.safetensors OUTPUTS.safetensors OPTIMIZER STEPS\n";
    return 2;
  }
  try {
    auto [in, metadata] = load_safetensors(argv[1]);
    auto model = std::make_shared<Mlp>();
    model->update(nn::Params{{"fc0.weight", in.at("w0")},
                             {"fc0.bias", in.at("b0")},
                             {"fc1.weight", in.at("w1")},
                             {"fc1.bias", in.at("b1")}});
    auto optimizer = make_optimizer(argv[3]);
    auto step = nn::value_and_grad(*model, [&](const std::vector<array>& inputs) {
      return nn::losses::cross_entropy(model->forward(inputs[0]), inputs[1], std::nullopt, -1, 0.0F,
                                       nn::losses::Reduction::mean);
    });
    std::vector<array> losses;
    for (int i = 0; i < std::stoi(argv[4]); ++i) {
      auto [loss, grads] = step({in.at("x"), in.at("y")});
      optimizer->update(*model, grads);
      eval(loss);
      losses.push_back(loss);
    }
    std::unordered_map<std::string, array> out{{"losses", stack(losses)}};
    for (const auto& [name, value] : model->parameters()) {
      out.emplace(name, value);
    }
    save_safetensors(argv[2], out);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
