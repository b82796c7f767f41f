#include "apps/gpt/model.h"

#include <cmath>

namespace nuvec::gpt {

Block::Block(int dims, int heads)
    : heads_(heads),
      ln1_(std::make_shared<nn::LayerNorm>(dims)),
      qkv_(std::make_shared<nn::Linear>(dims, 3 * dims)),
      proj_(std::make_shared<nn::Linear>(dims, dims)),
      ln2_(std::make_shared<nn::LayerNorm>(dims)),
      fc_(std::make_shared<nn::Linear>(dims, 4 * dims)),
      out_(std::make_shared<nn::Linear>(4 * dims, dims)) {
  register_module("ln1", ln1_);
  register_module("qkv", qkv_);
  register_module("proj", proj_);
  register_module("ln2", ln2_);
  register_module("fc", fc_);
  register_module("out", out_);
}

array Block::forward(const array& x) {
  int batch = x.shape(0);
  int length = x.shape(1);
  int dims = x.shape(2);
  auto parts = split(qkv_->forward(ln1_->forward(x)), 3, -1);
  auto heads = [&](const array& t) {
    return transpose(reshape(t, {batch, length, heads_, dims / heads_}), {0, 2, 1, 3});
  };
  float scale = 1.0F / std::sqrt(static_cast<float>(dims / heads_));
  auto attended = fast::scaled_dot_product_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]), scale,
                                                     "causal");
  auto h = x + proj_->forward(reshape(transpose(attended, {0, 2, 1, 3}), {batch, length, dims}));
  return h + out_->forward(nn::gelu_approx(fc_->forward(ln2_->forward(h))));
}

Gpt::Gpt(const GptConfig& config)
    : config_(config),
      tokens_(std::make_shared<nn::Embedding>(config.vocab, config.dims)),
      positions_(std::make_shared<nn::Embedding>(config.context, config.dims)),
      ln_f_(std::make_shared<nn::LayerNorm>(config.dims)),
      head_(std::make_shared<nn::Linear>(config.dims, config.vocab)) {
  register_module("tokens", tokens_);
  register_module("positions", positions_);
  blocks_.resize(static_cast<size_t>(config.layers));
  for (int i = 0; i < config.layers; ++i) {
    blocks_[static_cast<size_t>(i)] = std::make_shared<Block>(config.dims, config.heads);
    register_module("blocks." + std::to_string(i), blocks_[static_cast<size_t>(i)]);
  }
  register_module("ln_f", ln_f_);
  register_module("head", head_);
}

array Gpt::forward(const array& tokens) {
  if (tokens.ndim() != 2 || tokens.shape(1) > config_.context) {
    fail("expects byte ids (B, L) with L <= " + std::to_string(config_.context) + ".");
  }
  auto h = tokens_->forward(tokens) + positions_->forward(arange(tokens.shape(1)));
  for (auto& block : blocks_) {
    h = block->forward(h);
  }
  return head_->forward(ln_f_->forward(h));
}

std::string sample(Gpt& model, const std::string& prompt, int count, float temperature, uint64_t seed) {
  std::vector<int> ids(prompt.begin(), prompt.end());
  for (auto& id : ids) {
    id &= 0xFF;
  }
  if (ids.empty()) {
    ids.push_back('\n');
  }
  auto key = random::key(seed);
  std::string out;
  for (int i = 0; i < count; ++i) {
    int start = std::max(0, static_cast<int>(ids.size()) - model.config().context);
    std::vector<int> window(ids.begin() + start, ids.end());
    auto logits = model.forward(array(window.begin(), {1, static_cast<int>(window.size())}, int32));
    auto last = take(take(logits, 0, 0), static_cast<int>(window.size()) - 1, 0);
    auto [next_key, sub] = random::split(key);
    key = next_key;
    int next = random::categorical(last * (1.0F / temperature), -1, sub).item<int>();
    ids.push_back(next);
    out.push_back(static_cast<char>(next));
  }
  return out;
}

}  // namespace nuvec::gpt
