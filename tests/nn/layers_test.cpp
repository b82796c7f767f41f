// Layers against PyTorch 1.13 in float64 from the same weights and inputs: Linear, Bilinear, Embedding,
// Conv1d/2d/3d (strides, padding, dilation, groups) and ConvTranspose1d/2d/3d (PyTorch's channels-first layouts
// reached by transposes), the norms (training and evaluation modes of BatchNorm with its running statistics),
// pooling, upsampling, dropout statistics and every activation.

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>

#include "tests/nn/torch_reference.h"

namespace nuvec {
namespace {

using test::close;
using test::error_of;
using test::torch_ref;
using test::torch_run;

TEST(Linear, MatchesTorch) {
  for (bool bias : {true, false}) {
    nn::Linear layer(7, 5, bias);
    auto x = random::normal({2, 3, 7});
    auto y = layer(x);
    EXPECT_EQ(y.shape(), (Shape{2, 3, 5}));
    if (bias) {
      EXPECT_TRUE(close(y, torch_ref("out = N(F.linear(T(a), T(b), T(c)))", {x, layer.weight, *layer.bias})));
    } else {
      EXPECT_TRUE(close(y, torch_ref("out = N(F.linear(T(a), T(b)))", {x, layer.weight})));
    }
  }
  // A 1-d input and a transposed (non-contiguous) batch.
  nn::Linear layer(4, 3);
  auto v = random::normal({4});
  EXPECT_TRUE(close(layer(v), torch_ref("out = N(F.linear(T(a), T(b), T(c)))", {v, layer.weight, *layer.bias})));
  auto xt = transpose(random::normal({4, 6}));
  EXPECT_TRUE(close(layer(xt), torch_ref("out = N(F.linear(T(a), T(b), T(c)))", {xt, layer.weight, *layer.bias})));
}

TEST(Linear, DefaultInitRange) {
  nn::Linear layer(100, 50);
  float bound = 1.0F / 10.0F;
  EXPECT_LE(max(abs(layer.weight)).item<float>(), bound);
  EXPECT_GT(max(abs(layer.weight)).item<float>(), 0.9F * bound);
}

TEST(Bilinear, MatchesTorch) {
  nn::Bilinear layer(3, 4, 5);
  auto x1 = random::normal({6, 3});
  auto x2 = random::normal({6, 4});
  EXPECT_TRUE(close(layer(x1, x2), torch_ref("out = N(F.bilinear(T(a), T(b), T(c).transpose(1, 2), T(d)))",
                                             {x1, x2, layer.weight, *layer.bias})));
  EXPECT_EQ(layer.weight.shape(), (Shape{5, 4, 3}));  // MLX's (output, input2, input1)
  EXPECT_EQ(error_of([&] {
              layer(x1, random::normal({5, 4}));
            }),
            "[Bilinear] expected inputs with the same leading axes; given shapes (6,3) and (5,4).");
}

TEST(Embedding, MatchesTorch) {
  nn::Embedding layer(10, 4);
  auto idx = array({1, 9, 0, 3, 3, 7}, {2, 3});
  EXPECT_TRUE(close(layer(idx), torch_ref("out = N(F.embedding(torch.tensor(a).long(), T(b)))", {idx, layer.weight})));
  auto x = random::normal({2, 4});
  EXPECT_TRUE(close(layer.as_linear(x), torch_ref("out = N(T(a) @ T(b).T)", {x, layer.weight})));
}

struct ConvCase {
  int spatial;
  int in;
  int out;
  int kernel;
  int stride;
  int padding;
  int dilation;
  int groups;
};

std::shared_ptr<nn::ConvBase> make_conv(const ConvCase& c, bool transposed) {
  if (!transposed) {
    if (c.spatial == 1) {
      return std::make_shared<nn::Conv1d>(c.in, c.out, c.kernel, c.stride, c.padding, c.dilation, c.groups);
    }
    if (c.spatial == 2) {
      return std::make_shared<nn::Conv2d>(c.in, c.out, c.kernel, c.stride, c.padding, c.dilation, c.groups);
    }
    return std::make_shared<nn::Conv3d>(c.in, c.out, c.kernel, c.stride, c.padding, c.dilation, c.groups);
  }
  if (c.spatial == 1) {
    return std::make_shared<nn::ConvTranspose1d>(c.in, c.out, c.kernel, c.stride, c.padding, c.dilation, 0, c.groups);
  }
  if (c.spatial == 2) {
    return std::make_shared<nn::ConvTranspose2d>(c.in, c.out, c.kernel, c.stride, c.padding, c.dilation, 0, c.groups);
  }
  return std::make_shared<nn::ConvTranspose3d>(c.in, c.out, c.kernel, c.stride, c.padding, c.dilation, 0, c.groups);
}

TEST(Conv, MatchesTorch) {
  const std::vector<ConvCase> cases{{1, 3, 4, 3, 1, 0, 1, 1}, {1, 4, 6, 3, 2, 1, 2, 2}, {2, 3, 8, 3, 1, 1, 1, 1},
                                    {2, 4, 4, 3, 2, 0, 1, 4}, {2, 2, 6, 2, 1, 1, 2, 2}, {3, 2, 3, 2, 1, 1, 1, 1}};
  for (const auto& c : cases) {
    SCOPED_TRACE("spatial " + std::to_string(c.spatial) + " groups " + std::to_string(c.groups));
    auto conv = make_conv(c, false);
    Shape shape{2};
    for (int i = 0; i < c.spatial; ++i) {
      shape.push_back(7 - i);
    }
    shape.push_back(c.in);
    auto x = random::normal(shape);
    auto y = conv->forward(x);
    const std::string d = std::to_string(c.spatial);
    // Channels last to PyTorch's channels first and back.
    std::string code =
        "nd = a.ndim\nperm = (0, nd - 1) + tuple(range(1, nd - 1))\nback = (0,) + tuple(range(2, nd)) + (1,)\n"
        "y = F.conv" +
        d + "d(T(a).permute(perm), T(b).permute(perm), T(c), stride=" + std::to_string(c.stride) +
        ", padding=" + std::to_string(c.padding) + ", dilation=" + std::to_string(c.dilation) +
        ", groups=" + std::to_string(c.groups) + ")\nout = N(y.permute(back))";
    EXPECT_TRUE(close(y, torch_ref(code, {x, conv->weight, *conv->bias}), 1e-4));
  }
}

TEST(ConvTranspose, MatchesTorch) {
  const std::vector<ConvCase> cases{{1, 3, 4, 3, 1, 0, 1, 1},
                                    {1, 4, 2, 3, 2, 1, 1, 1},
                                    {2, 3, 5, 3, 2, 1, 1, 1},
                                    {2, 2, 3, 2, 1, 0, 2, 1},
                                    {3, 2, 3, 2, 2, 0, 1, 1}};
  for (const auto& c : cases) {
    SCOPED_TRACE("spatial " + std::to_string(c.spatial) + " stride " + std::to_string(c.stride));
    auto conv = make_conv(c, true);
    Shape shape{2};
    for (int i = 0; i < c.spatial; ++i) {
      shape.push_back(5 - i);
    }
    shape.push_back(c.in);
    auto x = random::normal(shape);
    auto y = conv->forward(x);
    const std::string d = std::to_string(c.spatial);
    // nuvec's weight (C_out, k..., C_in) is PyTorch's (C_in, C_out, k...) transposed.
    std::string code =
        "nd = a.ndim\nperm = (0, nd - 1) + tuple(range(1, nd - 1))\nback = (0,) + tuple(range(2, nd)) + (1,)\n"
        "w = T(b).permute((nd - 1, 0) + tuple(range(1, nd - 1)))\n"
        "y = F.conv_transpose" +
        d + "d(T(a).permute(perm), w, T(c), stride=" + std::to_string(c.stride) +
        ", padding=" + std::to_string(c.padding) + ", dilation=" + std::to_string(c.dilation) +
        ")\nout = N(y.permute(back))";
    EXPECT_TRUE(close(y, torch_ref(code, {x, conv->weight, *conv->bias}), 1e-4));
  }
}

TEST(Norms, LayerNormRMSNormGroupNormInstanceNorm) {
  auto x = random::normal({2, 5, 6}) * array(3.0F) + array(1.0F);
  nn::LayerNorm ln(6);
  ln.weight = random::normal({6});
  ln.bias = random::normal({6});
  EXPECT_TRUE(
      close(ln(x), torch_ref("out = N(F.layer_norm(T(a), (6,), T(b), T(c)))", {x, *ln.weight, *ln.bias}), 1e-4));
  nn::LayerNorm plain(6, 1e-5F, false);
  EXPECT_TRUE(close(plain(x), torch_ref("out = N(F.layer_norm(T(a), (6,)))", {x}), 1e-4));

  nn::RMSNorm rms(6, 1e-6F);
  rms.weight = random::normal({6});
  EXPECT_TRUE(close(rms(x),
                    torch_ref("xx = T(a)\nout = N(xx * torch.rsqrt((xx * xx).mean(-1, keepdim=True) + 1e-6) * T(b))",
                              {x, rms.weight}),
                    1e-4));

  nn::GroupNorm gn(3, 6, 1e-5F, true, /*pytorch_compatible=*/true);
  gn.weight = random::normal({6});
  gn.bias = random::normal({6});
  EXPECT_TRUE(close(gn(x),
                    torch_ref("out = N(F.group_norm(T(a).permute(0, 2, 1), 3, T(b), T(c)).permute(0, 2, 1))",
                              {x, *gn.weight, *gn.bias}),
                    1e-4));
  // MLX's default grouping puts channel c in group c % 3: PyTorch's group norm of the channels reordered by group.
  nn::GroupNorm strided(3, 6);
  strided.weight = gn.weight;
  strided.bias = gn.bias;
  EXPECT_TRUE(close(strided(x),
                    torch_ref("y = F.group_norm(T(a)[..., [0, 3, 1, 4, 2, 5]].permute(0, 2, 1), 3).permute(0, 2, 1)\n"
                              "out = N(y[..., [0, 2, 4, 1, 3, 5]] * T(b) + T(c))",
                              {x, *gn.weight, *gn.bias}),
                    1e-4));

  auto img = random::normal({2, 4, 3, 6});
  nn::InstanceNorm in(6, 1e-5F, true);
  in.weight = random::normal({6});
  in.bias = random::normal({6});
  EXPECT_TRUE(close(in(img),
                    torch_ref("out = N(F.instance_norm(T(a).permute(0, 3, 1, 2), weight=T(b), bias=T(c))"
                              ".permute(0, 2, 3, 1))",
                              {img, *in.weight, *in.bias}),
                    1e-4));
}

TEST(Norms, BatchNormTrainingAndEvaluation) {
  nn::BatchNorm bn(4);
  bn.weight = random::normal({4});
  bn.bias = random::normal({4});
  auto x1 = random::normal({3, 5, 4}) * array(2.0F) + array(0.5F);
  auto x2 = random::normal({3, 5, 4});
  auto y1 = bn(x1);
  auto y2 = bn(x2);
  bn.eval();
  auto x3 = random::normal({2, 5, 4});
  auto y3 = bn(x3);
  std::string code =
      "m = torch.nn.BatchNorm1d(4).double()\n"
      "with torch.no_grad():\n  m.weight.copy_(T(d)); m.bias.copy_(T(e))\n"
      "f = lambda x: m(T(x).permute(0, 2, 1)).permute(0, 2, 1)\n"
      "y1 = f(a); y2 = f(b); m.eval(); y3 = f(c)\n"
      "out = (N(y1), N(y2), N(y3), N(m.running_mean), N(m.running_var), N(m.num_batches_tracked))";
  auto ref = torch_run(code, {x1, x2, x3, *bn.weight, *bn.bias});
  EXPECT_TRUE(close(y1, ref[0], 1e-4));
  EXPECT_TRUE(close(y2, ref[1], 1e-4));
  EXPECT_TRUE(close(y3, ref[2], 1e-4));
  EXPECT_TRUE(close(*bn.running_mean, ref[3], 1e-5));
  EXPECT_TRUE(close(*bn.running_var, ref[4], 1e-5));
  EXPECT_TRUE(close(*bn.num_batches_tracked, ref[5]));
  // PyTorch's state dict loads strictly, by name.
  std::vector<std::string> torch_names{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"};
  auto state = torch_run(
      "m = torch.nn.BatchNorm1d(4)\nsd = m.state_dict()\n"
      "out = (np.array(list(sd.keys()) == ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']),)"
      " + tuple(N(v) for v in sd.values())",
      {});
  ASSERT_EQ(state.size(), 6U);
  EXPECT_EQ(test::as_doubles(state[0])[0], 1.0) << "PyTorch's BatchNorm state dict names changed";
  state.erase(state.begin());
  nn::Params loaded;
  for (size_t i = 0; i < state.size(); ++i) {
    loaded.emplace_back(torch_names[i], test::from_host(state[i]));
  }
  bn.load_weights(loaded);
  EXPECT_EQ(bn.parameters().size(), 5U);
  EXPECT_EQ(bn.trainable_parameters().size(), 2U);
}

TEST(Pooling, MatchesTorch) {
  auto x2 = random::normal({2, 7, 6, 3});
  struct Case {
    int kernel;
    std::optional<int> stride;
    int padding;
  };
  for (auto c : {Case{2, std::nullopt, 0}, Case{3, 2, 1}, Case{3, 1, 0}, Case{2, 1, 1}}) {
    SCOPED_TRACE("kernel " + std::to_string(c.kernel) + " padding " + std::to_string(c.padding));
    std::optional<nn::Sizes> stride;
    if (c.stride) {
      stride = nn::Sizes(*c.stride);
    }
    int s = c.stride.value_or(c.kernel);
    std::string args = std::to_string(c.kernel) + ", " + std::to_string(s) + ", " + std::to_string(c.padding);
    nn::MaxPool2d maxpool(c.kernel, stride, c.padding);
    nn::AvgPool2d avgpool(c.kernel, stride, c.padding);
    EXPECT_TRUE(
        close(maxpool(x2),
              torch_ref("out = N(F.max_pool2d(T(a).permute(0, 3, 1, 2), " + args + ").permute(0, 2, 3, 1))", {x2})));
    EXPECT_TRUE(
        close(avgpool(x2),
              torch_ref("out = N(F.avg_pool2d(T(a).permute(0, 3, 1, 2), " + args + ").permute(0, 2, 3, 1))", {x2})));
  }
  auto x1 = random::normal({2, 9, 3});
  EXPECT_TRUE(close(nn::MaxPool1d(3, 2)(x1),
                    torch_ref("out = N(F.max_pool1d(T(a).permute(0, 2, 1), 3, 2).permute(0, 2, 1))", {x1})));
  EXPECT_TRUE(
      close(nn::AvgPool1d(2)(x1), torch_ref("out = N(F.avg_pool1d(T(a).permute(0, 2, 1), 2).permute(0, 2, 1))", {x1})));
  auto x3 = random::normal({1, 4, 5, 6, 2});
  EXPECT_TRUE(close(nn::MaxPool3d(2)(x3),
                    torch_ref("out = N(F.max_pool3d(T(a).permute(0, 4, 1, 2, 3), 2).permute(0, 2, 3, 4, 1))", {x3})));
  EXPECT_TRUE(
      close(nn::AvgPool3d({2, 3, 2}, nn::Sizes{1, 2, 2})(x3),
            torch_ref("out = N(F.avg_pool3d(T(a).permute(0, 4, 1, 2, 3), (2, 3, 2), (1, 2, 2)).permute(0, 2, 3, 4, 1))",
                      {x3})));
  // NaN propagates through max pooling.
  auto with_nan = slice_update(x2, array(std::nanf("")), {0, 1, 1, 0}, {1, 2, 2, 1});
  EXPECT_TRUE(close(nn::MaxPool2d(2)(with_nan), torch_ref("out = N(F.max_pool2d(T(a).permute(0, 3, 1, 2), 2)"
                                                          ".permute(0, 2, 3, 1))",
                                                          {with_nan})));
  // Unbatched input.
  EXPECT_EQ(nn::MaxPool2d(2)(random::normal({6, 6, 3})).shape(), (Shape{3, 3, 3}));
  EXPECT_EQ(error_of([&] {
              nn::MaxPool2d(2)(random::normal({6, 3}));
            }),
            "[MaxPool2d] expected input of 4 axes (N, spatial..., C) or 3 (spatial..., C); given shape (6,3).");
}

TEST(Upsample, MatchesTorch) {
  auto x = random::normal({2, 3, 4, 2});
  EXPECT_TRUE(
      close(nn::Upsample({2.0F})(x), torch_ref("out = N(F.interpolate(T(a).permute(0, 3, 1, 2), scale_factor=2, "
                                               "mode='nearest').permute(0, 2, 3, 1))",
                                               {x})));
  EXPECT_TRUE(close(nn::Upsample({1.5F, 2.0F})(x),
                    torch_ref("out = N(F.interpolate(T(a).permute(0, 3, 1, 2), scale_factor=(1.5, 2.0), "
                              "mode='nearest').permute(0, 2, 3, 1))",
                              {x})));
  for (bool align : {false, true}) {
    std::string flag = align ? "True" : "False";
    EXPECT_TRUE(close(nn::Upsample({2.0F}, "linear", align)(x),
                      torch_ref("out = N(F.interpolate(T(a).permute(0, 3, 1, 2), scale_factor=2, mode='bilinear', "
                                "align_corners=" +
                                    flag + ").permute(0, 2, 3, 1))",
                                {x}),
                      1e-5));
  }
  for (bool align : {false, true}) {
    std::string flag = align ? "True" : "False";
    EXPECT_TRUE(close(nn::Upsample({2.0F, 1.5F}, "cubic", align)(x),
                      torch_ref("out = N(F.interpolate(T(a).permute(0, 3, 1, 2), scale_factor=(2.0, 1.5), "
                                "mode='bicubic', align_corners=" +
                                    flag + ").permute(0, 2, 3, 1))",
                                {x}),
                      1e-5));
  }
  auto x1 = random::normal({1, 5, 3});
  EXPECT_TRUE(close(nn::Upsample({3.0F}, "linear")(x1),
                    torch_ref("out = N(F.interpolate(T(a).permute(0, 2, 1), scale_factor=3, mode='linear', "
                              "align_corners=False).permute(0, 2, 1))",
                              {x1}),
                    1e-5));
}

TEST(Dropout, StatisticsAndModes) {
  nn::Dropout dropout(0.25F);
  auto x = ones({200, 100});
  auto y = dropout(x);
  auto kept = mean(astype(not_equal(y, array(0.0F)), float32)).item<float>();
  EXPECT_NEAR(kept, 0.75F, 0.02F);
  EXPECT_NEAR(mean(y).item<float>(), 1.0F, 0.03F);
  EXPECT_TRUE(allclose(max(y), array(1.0F / 0.75F)).item<bool>());
  dropout.eval();
  EXPECT_TRUE(array_equal(dropout(x), x).item<bool>());

  // Dropout2d zeroes whole channels of a sample.
  nn::Dropout2d channels(0.5F);
  auto img = ones({8, 4, 4, 16});
  auto z = channels(img);
  auto per_channel = max(z, {1, 2});
  auto min_channel = min(z, {1, 2});
  EXPECT_TRUE(array_equal(per_channel, min_channel).item<bool>());
  auto dropped = mean(astype(equal(per_channel, array(0.0F)), float32)).item<float>();
  EXPECT_GT(dropped, 0.3F);
  EXPECT_LT(dropped, 0.7F);
  nn::Dropout3d volumes(0.5F);
  EXPECT_EQ(volumes(ones({2, 3, 3, 3, 4})).shape(), (Shape{2, 3, 3, 3, 4}));
  EXPECT_NE(error_of([] { nn::Dropout(1.0F); }).find("p must be in [0, 1)"), std::string::npos);
}

TEST(Activations, MatchTorch) {
  auto x = random::normal({3, 8}) * array(3.0F);
  x = concatenate({x, reshape(array({-20.0F, -3.0F, -1.0F, 0.0F, 1e-3F, 1.0F, 3.0F, 20.0F}), {1, 8})}, 0);
  struct Case {
    std::string torch;
    std::function<array(const array&)> fn;
  };
  std::vector<Case> cases{
      {"F.relu(x)", [](const array& v) { return nn::ReLU()(v); }},
      {"F.leaky_relu(x, 0.1)", [](const array& v) { return nn::LeakyReLU(0.1F)(v); }},
      {"F.relu6(x)", [](const array& v) { return nn::ReLU6()(v); }},
      {"F.elu(x, 0.7)", [](const array& v) { return nn::ELU(0.7F)(v); }},
      {"F.selu(x)", [](const array& v) { return nn::SELU()(v); }},
      {"F.celu(x, 1.3)", [](const array& v) { return nn::CELU(1.3F)(v); }},
      {"F.gelu(x)", [](const array& v) { return nn::GELU()(v); }},
      {"F.gelu(x, approximate='tanh')", [](const array& v) { return nn::GELU("tanh")(v); }},
      {"x * torch.sigmoid(1.702 * x)", [](const array& v) { return nn::GELU("fast")(v); }},
      {"F.silu(x)", [](const array& v) { return nn::SiLU()(v); }},
      {"F.mish(x)", [](const array& v) { return nn::Mish()(v); }},
      {"F.softplus(x)", [](const array& v) { return nn::Softplus()(v); }},
      {"F.softsign(x)", [](const array& v) { return nn::Softsign()(v); }},
      {"F.hardswish(x)", [](const array& v) { return nn::Hardswish()(v); }},
      {"F.hardsigmoid(x)", [](const array& v) { return nn::HardSigmoid()(v); }},
      {"F.hardtanh(x, -2.0, 1.5)", [](const array& v) { return nn::Hardtanh(-2.0F, 1.5F)(v); }},
      {"F.glu(x, -1)", [](const array& v) { return nn::GLU()(v); }},
      {"torch.sigmoid(x)", [](const array& v) { return nn::Sigmoid()(v); }},
      {"torch.tanh(x)", [](const array& v) { return nn::Tanh()(v); }},
      {"F.logsigmoid(x)", [](const array& v) { return nn::LogSigmoid()(v); }},
      {"F.log_softmax(x, -1)", [](const array& v) { return nn::LogSoftmax()(v); }},
      {"F.softmax(x, 0)", [](const array& v) { return nn::Softmax(0)(v); }},
      {"F.softmin(x, -1)", [](const array& v) { return nn::Softmin()(v); }},
      {"F.softmin(x, 0)", [](const array& v) { return nn::softmin(v, 0); }},
      {"F.softshrink(x, 0.5)", [](const array& v) { return nn::Softshrink()(v); }},
      {"F.softshrink(x, 1.0)", [](const array& v) { return nn::softshrink(v, 1.0F); }},
      {"F.hardshrink(x, 0.5)", [](const array& v) { return nn::HardShrink()(v); }},
      {"F.hardshrink(x, 2.0)", [](const array& v) { return nn::hard_shrink(v, 2.0F); }},
      {"(x > 0.5).double()", [](const array& v) { return nn::Step(0.5F)(v); }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.torch);
    EXPECT_TRUE(close(c.fn(x), torch_ref("x = T(a)\nout = N(" + c.torch + ")", {x}), 2e-5));
  }
  nn::PReLU prelu(8, 0.1F);
  prelu.weight = random::uniform(0.0, 0.5, {8});
  EXPECT_TRUE(close(prelu(x), torch_ref("out = N(F.prelu(T(a), T(b)))", {x, prelu.weight})));
  // Half precision stays half precision.
  EXPECT_EQ(nn::gelu(astype(x, float16)).dtype(), float16);
  EXPECT_EQ(nn::SiLU()(astype(x, bfloat16)).dtype(), bfloat16);
}

TEST(Activations, IntegerInputsPromoteAsInMLX) {
  // mlx.nn writes its activations with Python scalars: a float constant promotes an integer input to float32 (its
  // gelu of int32 is float32), an integer one keeps the dtype (relu is maximum(x, 0)). Before, the float constants
  // were truncated to int32, so gelu gave 0s. Values against PyTorch on the same integers in float64.
  const auto x = array({-3, -1, 0, 1, 2, 5});
  ASSERT_EQ(x.dtype(), int32);
  struct Case {
    std::string torch;
    std::function<array(const array&)> fn;
  };
  std::vector<Case> cases{
      {"F.gelu(x)", [](const array& v) { return nn::gelu(v); }},
      {"F.gelu(x, approximate='tanh')", [](const array& v) { return nn::gelu_approx(v); }},
      {"x * torch.sigmoid(1.702 * x)", [](const array& v) { return nn::gelu_fast_approx(v); }},
      {"F.leaky_relu(x, 0.1)", [](const array& v) { return nn::leaky_relu(v, 0.1F); }},
      {"F.elu(x, 0.7)", [](const array& v) { return nn::elu(v, 0.7F); }},
      {"F.selu(x)", [](const array& v) { return nn::selu(v); }},
      {"F.celu(x, 1.3)", [](const array& v) { return nn::celu(v, 1.3F); }},
      {"F.relu6(x)", [](const array& v) { return nn::relu6(v); }},
      {"F.hardtanh(x, -2.5, 1.5)", [](const array& v) { return nn::hard_tanh(v, -2.5F, 1.5F); }},
      {"F.silu(x)", [](const array& v) { return nn::silu(v); }},
      {"F.softplus(x)", [](const array& v) { return nn::softplus(v); }},
      {"F.hardswish(x)", [](const array& v) { return nn::hardswish(v); }},
      {"F.softshrink(x, 0.5)", [](const array& v) { return nn::softshrink(v); }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.torch);
    auto y = c.fn(x);
    EXPECT_EQ(y.dtype(), float32);
    EXPECT_TRUE(close(y, torch_ref("x = T(a)\nout = N(" + c.torch + ")", {x})));
  }
  auto r = nn::relu(x);
  EXPECT_EQ(r.dtype(), int32);
  EXPECT_TRUE(array_equal(r, array({0, 0, 0, 1, 2, 5})).item<bool>());
  // hard_shrink's zero is an integer in mlx.nn, so an integer input keeps its dtype.
  auto h = nn::hard_shrink(x, 1.5F);
  EXPECT_EQ(h.dtype(), int32);
  EXPECT_TRUE(array_equal(h, array({-3, 0, 0, 0, 2, 5})).item<bool>());
}

TEST(Activations, StepGivesInt32AsMLX) {
  // mlx.nn.step is where(x > threshold, 1, 0): two Python integers, so int32 for every input dtype.
  for (Dtype dtype : {float32, float16, bfloat16, int32, uint8}) {
    SCOPED_TRACE(dtype_name(dtype));
    const auto y = nn::Step(1.0F)(astype(array({0, 1, 2, 3}), dtype));
    EXPECT_EQ(y.dtype(), int32);
    EXPECT_TRUE(array_equal(y, array({0, 0, 1, 1})).item<bool>());
  }
}

}  // namespace
}  // namespace nuvec

namespace nuvec {
namespace {

using test::error_of;

TEST(Layers, HalfPrecisionKeepsItsDtype) {
  nn::Sequential model({std::make_shared<nn::Conv2d>(3, 4, 3, 1, 1), std::make_shared<nn::GroupNorm>(2, 4),
                        std::make_shared<nn::GELU>(), std::make_shared<nn::MaxPool2d>(2),
                        std::make_shared<nn::LayerNorm>(4), std::make_shared<nn::Linear>(4, 5),
                        std::make_shared<nn::RMSNorm>(5), std::make_shared<nn::SiLU>()});
  auto x = random::normal({2, 6, 6, 3});
  auto reference = model(x);
  for (Dtype dtype : {float16, bfloat16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    model.apply([dtype](const std::string&, const array& p) { return astype(p, dtype); });
    auto y = model(astype(x, dtype));
    EXPECT_EQ(y.dtype(), dtype);
    double tol = dtype == float16 ? 2e-2 : 1e-1;
    EXPECT_TRUE(allclose(astype(y, float32), reference, tol, tol).item<bool>());
    model.apply([](const std::string&, const array& p) { return astype(p, float32); });
  }
}

TEST(Layers, EmptyBatchesAndSizeOneAxes) {
  nn::Linear linear(4, 3);
  EXPECT_EQ(linear(zeros({0, 4})).shape(), (Shape{0, 3}));
  EXPECT_EQ(linear(zeros({2, 0, 4})).shape(), (Shape{2, 0, 3}));
  nn::Conv1d conv(2, 3, 1);
  EXPECT_EQ(conv(zeros({1, 1, 2})).shape(), (Shape{1, 1, 3}));
  nn::LayerNorm ln(1);
  EXPECT_TRUE(array_equal(ln(full({3, 1}, 5.0F)), zeros({3, 1})).item<bool>());
  EXPECT_EQ(nn::AvgPool1d(1)(ones({2, 3, 4})).shape(), (Shape{2, 3, 4}));
}

TEST(Layers, ErrorsNameTheLayerAndTheShapes) {
  EXPECT_EQ(error_of([] {
              nn::LayerNorm(8)(zeros({2, 4}));
            }),
            "[LayerNorm] expected input of shape (..., 8); given shape (2,4).");
  EXPECT_EQ(error_of([] { nn::BatchNorm(3)(zeros({3})); }),
            "[BatchNorm] expected input of shape (..., 3); given shape (3).");
  EXPECT_EQ(error_of([] {
              nn::Conv1d(2, 3, 2)(zeros({1, 4, 2}, int32));
            }),
            "[Conv1d] expected a floating-point input; given dtype int32.");
  EXPECT_EQ(error_of([] {
              nn::MaxPool1d(5)(zeros({1, 3, 2}));
            }),
            "[MaxPool1d] kernel 5 does not fit spatial axis 0 of input shape (1,3,2).");
  EXPECT_EQ(error_of([] { nn::Conv2d(3, 4, {3, 3, 3}); }), "[Conv2d] kernel_size needs 1 or 2 values; given 3.");
  EXPECT_EQ(error_of([] { nn::GroupNorm(3, 8); }), "[GroupNorm] num_groups (3) must divide dims (8).");
  EXPECT_EQ(error_of([] {
              nn::RoPE(8)(zeros({1, 4, 6}));
            }),
            "[RoPE] expected input of shape (..., L, D) with D >= 8; given shape (1,4,6).");
  // fast::rope's rule, which mlx.nn.RoPE inherits by calling it: at least (B, L, D).
  EXPECT_EQ(error_of([] {
              nn::RoPE(4)(zeros({4, 6}));
            }),
            "[RoPE] expected input of at least 3 axes; given shape (4,6).");
  EXPECT_EQ(error_of([] { nn::GLU()(zeros({2, 3})); }), "[GLU] expected an even size on axis -1; given shape (2,3).");
}

}  // namespace
}  // namespace nuvec

namespace nuvec {
namespace {

using test::close;
using test::torch_ref;

TEST(Layers, RandomShapesMatchTorch) {
  std::mt19937 rng(1234);
  auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 6; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    int in = pick(2, 9);
    int out = pick(1, 9);
    auto batch = test::random_shape(pick(0, 3), rng, 4);
    Shape shape = batch;
    shape.push_back(in);
    nn::Linear linear(in, out);
    auto x = random::normal(shape);
    EXPECT_TRUE(close(linear(x), torch_ref("out = N(F.linear(T(a), T(b), T(c)))", {x, linear.weight, *linear.bias})));
    nn::LayerNorm ln(in);
    EXPECT_TRUE(close(ln(x), torch_ref("out = N(F.layer_norm(T(a), (a.shape[-1],)))", {x}), 1e-4));

    int kernel = pick(1, 4);
    int stride = pick(1, 3);
    int length = pick(kernel, 12);
    int padding = pick(0, kernel / 2);
    nn::Conv1d conv(in, out, kernel, stride, padding);
    auto seq = random::normal({pick(1, 3), length, in});
    std::string args = ", stride=" + std::to_string(stride) + ", padding=" + std::to_string(padding) + ")";
    EXPECT_TRUE(close(
        conv(seq),
        torch_ref("out = N(F.conv1d(T(a).permute(0, 2, 1), T(b).permute(0, 2, 1), T(c)" + args + ".permute(0, 2, 1))",
                  {seq, conv.weight, *conv.bias}),
        1e-4));
  }
}

}  // namespace
}  // namespace nuvec
