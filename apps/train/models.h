#pragma once

// The models `nuvec train` offers for 28x28 grey images and 10 classes.

#include <memory>
#include <string>
#include <vector>

#include "nuvec/nn/nn.h"
#include "nuvec/nuvec.h"

namespace nuvec::train {

/// Two 3x3 convolutions (32 and 64 channels, each followed by ReLU and a 2x2 max pool), then a 128-unit hidden
/// layer and 10 logits.
class SmallCnn : public nn::UnaryModule {
 public:
  SmallCnn();
  [[nodiscard]] std::string type_name() const override { return "SmallCnn"; }
  array forward(const array& x) override;

 private:
  std::shared_ptr<nn::Conv2d> conv1_;
  std::shared_ptr<nn::Conv2d> conv2_;
  std::shared_ptr<nn::Linear> fc1_;
  std::shared_ptr<nn::Linear> fc2_;
  std::shared_ptr<nn::MaxPool2d> pool_;
};

/// Two hidden layers of 256 units with ReLU.
class Mlp : public nn::UnaryModule {
 public:
  Mlp();
  [[nodiscard]] std::string type_name() const override { return "Mlp"; }
  array forward(const array& x) override;

 private:
  std::shared_ptr<nn::Linear> fc1_;
  std::shared_ptr<nn::Linear> fc2_;
  std::shared_ptr<nn::Linear> fc3_;
};

/// The model called `name` ("cnn" or "mlp"); other names throw, listing these.
std::shared_ptr<nn::UnaryModule> make_model(const std::string& name);
std::vector<std::string> model_names();

}  // namespace nuvec::train
