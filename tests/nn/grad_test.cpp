// Gradients against PyTorch autograd (float64, same weights and inputs): for each layer, the gradient of sum(layer(x) *
// cotangent) with respect to every trainable parameter (through nn::value_and_grad) and to the input; the losses'
// gradients with respect to their inputs; and a small model trained for a few steps with SGD and Adam next to the same
// model in PyTorch.

#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "tests/nn/torch_reference.h"

namespace nuvec {
namespace {

using test::close;
using test::torch_run;

/// Checks the output, the parameter gradients and the input gradient of `forward` (model parameters p, input x) with
/// PyTorch's. `torch_forward` is Python computing y from the dict p and the tensor x; `extra` inputs are c, d, ...
void check_grads(nn::Module& model, const std::function<array(const array&)>& forward, const array& x,
                 const std::string& torch_forward, double tol = 1e-4, const std::vector<array>& extra = {}) {
  auto y = forward(x);
  auto cot = random::normal(y.shape());
  auto [loss, grads] =
      nn::value_and_grad(model, [&](const std::vector<array>& in) { return sum(forward(in[0]) * in[1]); })({x, cot});
  auto x_grad = grad([&](const std::vector<array>& in) { return sum(forward(in[0]) * cot); })({x})[0];

  auto params = model.trainable_parameters();
  std::string names;
  std::string values;
  std::vector<array> inputs{x, cot};
  inputs.insert(inputs.end(), extra.begin(), extra.end());
  for (size_t i = 0; i < params.size(); ++i) {
    names += "'" + params[i].first + "', ";
    values += "T(" + std::string(1, static_cast<char>('c' + extra.size() + i)) + "), ";
    inputs.push_back(params[i].second);
  }
  std::string code = "names = [" + names +
                     "]\n"
                     "p = dict(zip(names, [v.requires_grad_() for v in [" +
                     values +
                     "]]))\n"
                     "x = T(a).requires_grad_()\n" +
                     torch_forward +
                     "\n(y * T(b)).sum().backward()\n"
                     "out = tuple(N(p[n].grad) for n in names) + (N(x.grad), N(y))";
  auto ref = torch_run(code, inputs);
  ASSERT_EQ(ref.size(), params.size() + 2);
  EXPECT_TRUE(close(y, ref.back(), tol)) << "output";
  EXPECT_TRUE(close(x_grad, ref[params.size()], tol)) << "input gradient";
  ASSERT_EQ(grads.size(), params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(grads[i].first, params[i].first);
    EXPECT_TRUE(close(grads[i].second, ref[i], tol)) << grads[i].first;
  }
}

TEST(Gradients, DenseAndConvolutionLayers) {
  nn::Linear linear(6, 4);
  check_grads(
      linear, [&](const array& x) { return linear(x); }, random::normal({2, 3, 6}),
      "y = F.linear(x, p['weight'], p['bias'])");
  nn::Conv2d conv(4, 6, 3, 2, 1, 1, 2);
  check_grads(
      conv, [&](const array& x) { return conv(x); }, random::normal({2, 7, 6, 4}),
      "y = F.conv2d(x.permute(0, 3, 1, 2), p['weight'].permute(0, 3, 1, 2), "
      "p['bias'], 2, 1, 1, 2)"
      ".permute(0, 2, 3, 1)");
  nn::ConvTranspose1d deconv(3, 5, 3, 2);
  check_grads(
      deconv, [&](const array& x) { return deconv(x); }, random::normal({2, 6, 3}),
      "y = F.conv_transpose1d(x.permute(0, 2, 1), p['weight'].permute(2, 0, "
      "1), p['bias'], 2).permute(0, 2, 1)");
}

TEST(Gradients, NormsPoolingAndActivations) {
  nn::LayerNorm ln(5);
  check_grads(
      ln, [&](const array& x) { return ln(x); }, random::normal({3, 5}),
      "y = F.layer_norm(x, (5,), p['weight'], p['bias'])");
  nn::RMSNorm rms(5);
  check_grads(
      rms, [&](const array& x) { return rms(x); }, random::normal({3, 5}),
      "y = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * "
      "p['weight']");
  nn::GroupNorm gn(2, 4, 1e-5F, true, /*pytorch_compatible=*/true);
  check_grads(
      gn, [&](const array& x) { return gn(x); }, random::normal({2, 3, 4}),
      "y = F.group_norm(x.permute(0, 2, 1), 2, p['weight'], "
      "p['bias']).permute(0, 2, 1)");
  nn::BatchNorm bn(4);
  check_grads(
      bn, [&](const array& x) { return bn(x); }, random::normal({5, 4}),
      "y = F.batch_norm(x, None, None, p['weight'], p['bias'], training=True)");
  nn::PReLU prelu(4);
  check_grads(
      prelu, [&](const array& x) { return prelu(x); }, random::normal({3, 4}), "y = F.prelu(x, p['weight'])");
  nn::Sequential pools({std::make_shared<nn::MaxPool2d>(3, nn::Sizes(2), 1), std::make_shared<nn::AvgPool2d>(2),
                        std::make_shared<nn::GELU>("tanh"), std::make_shared<nn::Linear>(3, 2)});
  check_grads(
      pools, [&](const array& x) { return pools(x); }, random::normal({2, 8, 8, 3}),
      "h = F.max_pool2d(x.permute(0, 3, 1, 2), 3, 2, 1)\n"
      "h = F.avg_pool2d(h, 2).permute(0, 2, 3, 1)\n"
      "y = F.linear(F.gelu(h, approximate='tanh'), p['3.weight'], "
      "p['3.bias'])");
  // Ties: the first maximum of each window takes the gradient, as in PyTorch.
  nn::Sequential tied({std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Linear>(2, 2)});
  check_grads(
      tied, [&](const array& x) { return tied(x); }, round(random::uniform(0.0, 2.0, {2, 4, 6, 2})),
      "h = F.max_pool2d(x.permute(0, 3, 1, 2), 2).permute(0, 2, 3, 1)\n"
      "y = F.linear(h, p['1.weight'], p['1.bias'])");
  nn::Sequential acts({std::make_shared<nn::SiLU>(), std::make_shared<nn::Linear>(4, 4), std::make_shared<nn::Mish>(),
                       std::make_shared<nn::Softplus>(), std::make_shared<nn::Linear>(4, 4),
                       std::make_shared<nn::ELU>(), std::make_shared<nn::GLU>()});
  check_grads(
      acts, [&](const array& x) { return acts(x); }, random::normal({3, 4}),
      "h = F.linear(F.silu(x), p['1.weight'], p['1.bias'])\n"
      "h = F.linear(F.softplus(F.mish(h)), p['4.weight'], p['4.bias'])\n"
      "y = F.glu(F.elu(h), -1)");
}

TEST(Gradients, FrozenParametersAndEmbeddings) {
  nn::Embedding embedding(6, 3);
  nn::Linear linear(3, 2);
  linear.freeze(false, {"bias"});
  auto idx = array({4, 1, 4});
  auto cot = random::normal({3, 2});
  auto loss = [&](const std::vector<array>&) { return sum(linear(embedding(idx)) * cot); };
  auto [value, grads] = nn::value_and_grad(linear, loss)({});
  ASSERT_EQ(grads.size(), 1U);
  EXPECT_EQ(grads[0].first, "weight");
  EXPECT_TRUE(allclose(grads[0].second, matmul(transpose(cot), embedding(idx)), 1e-5, 1e-6).item<bool>());
  auto [value2, table_grads] = nn::value_and_grad(embedding, loss)({});
  // Row 4 is used twice: its gradient sums both uses; unused rows get zero.
  auto rows = matmul(cot, linear.weight);
  auto expected = zeros({6, 3});
  expected = scatter_add(expected, {idx}, reshape(rows, {3, 1, 3}), std::vector<int>{0});
  EXPECT_TRUE(allclose(table_grads[0].second, expected, 1e-5, 1e-6).item<bool>());
  EXPECT_TRUE(allclose(value, value2).item<bool>());
  linear.freeze();
  EXPECT_EQ(test::error_of([&] { nn::value_and_grad(linear, loss)({}); }),
            "[Linear] has no trainable parameters to differentiate.");
}

TEST(Gradients, MoreLayers) {
  nn::InstanceNorm in(3, 1e-5F, true);
  check_grads(
      in, [&](const array& x) { return in(x); }, random::normal({2, 5, 3}),
      "y = F.instance_norm(x.permute(0, 2, 1), weight=p['weight'], bias=p['bias']).permute(0, 2, 1)");
  nn::Bilinear bilinear(3, 2, 4);
  auto other = random::normal({5, 2});
  check_grads(bilinear, [&](const array& x) { return bilinear(x, other); }, random::normal({5, 3}),
              "y = F.bilinear(x, T(c), p['weight'].transpose(1, 2), p['bias'])", 1e-4, {other});
  nn::Sequential upsample(
      {std::make_shared<nn::Upsample>(std::vector<float>{2.0F}, "linear"), std::make_shared<nn::Linear>(2, 3)});
  check_grads(
      upsample, [&](const array& x) { return upsample(x); }, random::normal({1, 3, 4, 2}),
      "h = F.interpolate(x.permute(0, 3, 1, 2), scale_factor=2, mode='bilinear', align_corners=False)\n"
      "y = F.linear(h.permute(0, 2, 3, 1), p['1.weight'], p['1.bias'])");
  nn::Sequential rope({std::make_shared<nn::RoPE>(4), std::make_shared<nn::Linear>(4, 2)});
  check_grads(
      rope, [&](const array& x) { return rope(x); }, random::normal({2, 3, 4}),
      "c = torch.cos(torch.arange(3, dtype=torch.float64)[:, None] * 10000.0 ** (-torch.arange(0, 4, 2, "
      "dtype=torch.float64) / 4))\n"
      "s = torch.sin(torch.arange(3, dtype=torch.float64)[:, None] * 10000.0 ** (-torch.arange(0, 4, 2, "
      "dtype=torch.float64) / 4))\n"
      "x1, x2 = x[..., :2], x[..., 2:]\n"
      "y = F.linear(torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], -1), p['1.weight'], p['1.bias'])");
}

TEST(Gradients, Attention) {
  nn::MultiHeadAttention mha(8, 2, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt, true);
  auto mask = nn::MultiHeadAttention::create_additive_causal_mask(4);
  check_grads(
      mha, [&](const array& x) { return mha(x, x, x, mask); }, random::normal({2, 4, 8}),
      "lin = lambda x, n: F.linear(x, p[n + '.weight'], p[n + '.bias'])\n"
      "h = lambda t: t.reshape(2, 4, 2, 4).transpose(1, 2)\n"
      "q, k, v = h(lin(x, 'query_proj')), h(lin(x, 'key_proj')), h(lin(x, "
      "'value_proj'))\n"
      "s = q @ k.transpose(-1, -2) / 2.0 + torch.triu(torch.full((4, 4), "
      "-1e30, dtype=torch.float64), 1)\n"
      "y = lin((torch.softmax(s, -1) @ v).transpose(1, 2).reshape(2, 4, 8), "
      "'out_proj')");
}

TEST(Gradients, Losses) {
  namespace L = nn::losses;
  auto logits = random::normal({4, 5});
  auto labels = array({1, 0, 4, 2});
  auto targets = random::uniform({4, 5});
  auto other = random::normal({4, 5});
  struct Case {
    std::string torch;
    std::function<array(const array&)> loss;
  };
  std::vector<Case> cases{
      {"F.cross_entropy(x, torch.tensor(b).long(), label_smoothing=0.1)",
       [&](const array& x) { return L::cross_entropy(x, labels, std::nullopt, -1, 0.1F, L::Reduction::mean); }},
      {"F.binary_cross_entropy_with_logits(x, T(c))",
       [&](const array& x) { return L::binary_cross_entropy(x, targets); }},
      {"F.smooth_l1_loss(x, T(d), beta=0.7)", [&](const array& x) { return L::smooth_l1_loss(x, other, 0.7F); }},
      {"F.huber_loss(x, T(d), delta=0.5, reduction='sum')",
       [&](const array& x) { return L::huber_loss(x, other, 0.5F, L::Reduction::sum); }},
      {"F.mse_loss(x, T(d))", [&](const array& x) { return L::mse_loss(x, other); }},
      {"torch.log(torch.cosh(x - T(d))).mean()",
       [&](const array& x) { return L::log_cosh_loss(x, other, L::Reduction::mean); }},
      {"F.cosine_similarity(x, T(d), 1).sum()",
       [&](const array& x) { return L::cosine_similarity_loss(x, other, 1, 1e-8F, L::Reduction::sum); }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.torch);
    auto [value, g] = nuvec::value_and_grad(c.loss)(logits);
    auto ref = torch_run("x = T(a).requires_grad_()\nl = " + c.torch + "\nl.backward()\nout = (N(l), N(x.grad))",
                         {logits, labels, targets, other});
    EXPECT_TRUE(close(value, ref[0], 1e-5));
    EXPECT_TRUE(close(g, ref[1], 1e-5));
  }
}

/// conv -> relu -> maxpool -> linear, the shape of the Fashion-MNIST model.
class SmallCNN : public nn::Module {
 public:
  SmallCNN()
      : conv(std::make_shared<nn::Conv2d>(1, 4, 3, 1, 1)),
        pool(std::make_shared<nn::MaxPool2d>(2)),
        fc(std::make_shared<nn::Linear>(4 * 4 * 4, 3)) {
    register_module("conv", conv);
    register_module("pool", pool);
    register_module("fc", fc);
  }
  [[nodiscard]] std::string type_name() const override { return "SmallCNN"; }
  array forward(const array& x) {
    auto h = pool->forward(nn::relu(conv->forward(x)));
    return fc->forward(reshape(h, {x.shape(0), -1}));
  }
  std::shared_ptr<nn::Conv2d> conv;
  std::shared_ptr<nn::MaxPool2d> pool;
  std::shared_ptr<nn::Linear> fc;
};

TEST(Training, TrajectoriesMatchTorch) {
  for (bool adam : {false, true}) {
    SCOPED_TRACE(adam ? "Adam" : "SGD");
    SmallCNN model;
    auto initial = model.parameters();
    auto x = random::normal({6, 8, 8, 1});
    auto y = array({0, 2, 1, 1, 0, 2});
    std::unique_ptr<optimizers::Optimizer> opt;
    if (adam) {
      opt = std::make_unique<optimizers::Adam>(0.01, std::pair{0.9, 0.999}, 1e-8, /*bias_correction=*/true);
    } else {
      opt = std::make_unique<optimizers::SGD>(0.1, 0.9);
    }
    auto step = nn::value_and_grad(model, [&](const std::vector<array>& in) {
      return nn::losses::cross_entropy(model.forward(in[0]), in[1], std::nullopt, -1, 0.0F,
                                       nn::losses::Reduction::mean);
    });
    std::vector<array> losses;
    for (int s = 0; s < 3; ++s) {
      auto [loss, grads] = step({x, y});
      opt->update(model, grads);
      losses.push_back(loss);
    }
    std::string code =
        "p = [torch.nn.Parameter(T(v)) for v in (c, d, e, f)]\n"
        "def fwd(x):\n"
        "    h = F.conv2d(x.permute(0, 3, 1, 2), "
        "p[0].permute(0, 3, 1, 2), p[1], 1, 1)\n"
        "    h = F.max_pool2d(F.relu(h), 2).permute(0, 2, 3, "
        "1).reshape(x.shape[0], -1)\n"
        "    return F.linear(h, p[2], p[3])\n"
        "opt = torch.optim." +
        std::string(adam ? "Adam(p, lr=0.01)" : "SGD(p, lr=0.1, momentum=0.9)") +
        "\n"
        "ls = []\n"
        "for s in range(3):\n"
        "    opt.zero_grad(); l = F.cross_entropy(fwd(T(a)), "
        "torch.tensor(b).long()); l.backward(); opt.step()\n"
        "    ls.append(l.item())\n"
        "out = (np.array(ls),) + tuple(N(q) for q in p)";
    auto ref = torch_run(code, {x, y, initial[0].second, initial[1].second, initial[2].second, initial[3].second});
    EXPECT_TRUE(close(stack(losses), ref[0], 1e-4));
    auto final_params = model.parameters();
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_TRUE(close(final_params[i].second, ref[i + 1], 1e-4)) << final_params[i].first;
    }
  }
}

}  // namespace
}  // namespace nuvec
