#include "apps/train/models.h"

namespace nuvec::train {

SmallCnn::SmallCnn()
    : conv1_(std::make_shared<nn::Conv2d>(1, 32, 3, 1, 1)),
      conv2_(std::make_shared<nn::Conv2d>(32, 64, 3, 1, 1)),
      fc1_(std::make_shared<nn::Linear>(7 * 7 * 64, 128)),
      fc2_(std::make_shared<nn::Linear>(128, 10)),
      pool_(std::make_shared<nn::MaxPool2d>(2)) {
  register_module("conv1", conv1_);
  register_module("conv2", conv2_);
  register_module("fc1", fc1_);
  register_module("fc2", fc2_);
}

array SmallCnn::forward(const array& x) {
  check_input(x, 4, 1, "images (N, 28, 28, 1)");
  auto h = pool_->forward(nn::relu(conv1_->forward(x)));
  h = pool_->forward(nn::relu(conv2_->forward(h)));
  h = reshape(h, {h.shape(0), -1});
  return fc2_->forward(nn::relu(fc1_->forward(h)));
}

Mlp::Mlp()
    : fc1_(std::make_shared<nn::Linear>(28 * 28, 256)),
      fc2_(std::make_shared<nn::Linear>(256, 256)),
      fc3_(std::make_shared<nn::Linear>(256, 10)) {
  register_module("fc1", fc1_);
  register_module("fc2", fc2_);
  register_module("fc3", fc3_);
}

array Mlp::forward(const array& x) {
  auto h = reshape(x, {x.shape(0), -1});
  h = nn::relu(fc1_->forward(h));
  h = nn::relu(fc2_->forward(h));
  return fc3_->forward(h);
}

std::vector<std::string> model_names() { return {"cnn", "mlp"}; }

std::shared_ptr<nn::UnaryModule> make_model(const std::string& name) {
  if (name == "cnn") {
    return std::make_shared<SmallCnn>();
  }
  if (name == "mlp") {
    return std::make_shared<Mlp>();
  }
  throw_invalid("[train] unknown model '" + name + "'; choose cnn or mlp.");
}

}  // namespace nuvec::train
