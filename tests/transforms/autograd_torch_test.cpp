// Composite gradients against torch.autograd (PyTorch 1.13 from Debian): the
// same weights and inputs, loss values and every gradient compared.

#include <gtest/gtest.h>

#include <random>

#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using V = std::vector<array>;

/// Runs torch code on the inputs (bound to a, b, c, ...) and returns all its results.
std::vector<test::HostArray> torch_results(const std::string& code, const V& inputs) {
  std::vector<test::HostArray> hosts;
  for (const auto& in : inputs) {
    hosts.push_back(test::to_host(in));
  }
  return test::numpy("import torch\ntorch.set_num_threads(1)\n" + code, hosts);
}

/// Compares the loss and the gradients of nuvec's loss with torch's (results: loss, then one gradient per input).
void expect_like_torch(const std::function<array(const V&)>& loss, const V& inputs, const std::vector<int>& argnums,
                       const std::string& torch_code, double tolerance = 1e-4) {
  auto [value, grads] = value_and_grad(loss, argnums)(inputs);
  auto expected = torch_results(torch_code, inputs);
  ASSERT_EQ(expected.size(), argnums.size() + 1);
  EXPECT_TRUE(test::matches(value, expected[0], tolerance, tolerance, false)) << "loss";
  for (size_t k = 0; k < argnums.size(); ++k) {
    EXPECT_TRUE(test::matches(grads[k], expected[k + 1], tolerance, tolerance, false)) << "gradient " << argnums[k];
  }
}

array cross_entropy(const array& logits, const array& labels) {
  auto picked = take_along_axis(logits, expand_dims(labels, -1), -1);
  return mean(logsumexp(logits, -1, true) - picked);
}

TEST(AutogradTorch, MlpCrossEntropy) {
  std::mt19937 rng(1);
  V in{test::random_array({8, 16}, float32, rng), test::random_array({32, 16}, float32, rng, -0.5, 0.5),
       test::random_array({32}, float32, rng, -0.5, 0.5), test::random_array({10, 32}, float32, rng, -0.5, 0.5),
       test::random_array({10}, float32, rng, -0.5, 0.5), array({1, 0, 3, 9, 2, 2, 7, 5})};
  auto loss = [](const V& p) {
    auto h = maximum(matmul(p[0], transpose(p[1])) + p[2], array(0.0F));
    return cross_entropy(matmul(h, transpose(p[3])) + p[4], p[5]);
  };
  expect_like_torch(loss, in, {0, 1, 2, 3, 4}, R"(
x, w1, b1, w2, b2 = [torch.tensor(v, requires_grad=True) for v in (a, b, c, d, e)]
logits = torch.relu(x @ w1.T + b1) @ w2.T + b2
loss = torch.nn.functional.cross_entropy(logits, torch.tensor(f).long())
loss.backward()
out = [loss.detach().numpy()] + [t.grad.numpy() for t in (x, w1, b1, w2, b2)]
)");
}

TEST(AutogradTorch, ConvolutionNetwork) {
  std::mt19937 rng(2);
  V in{test::random_array({2, 8, 8, 3}, float32, rng), test::random_array({4, 3, 3, 3}, float32, rng, -0.5, 0.5),
       test::random_array({4}, float32, rng, -0.5, 0.5), test::random_array({5, 64}, float32, rng, -0.5, 0.5),
       array({4, 1})};
  auto loss = [](const V& p) {
    auto h = maximum(conv2d(p[0], p[1], {1, 1}, {1, 1}) + p[2], array(0.0F));  // (2, 8, 8, 4)
    auto pooled = max(reshape(h, {2, 4, 2, 4, 2, 4}), {2, 4});                  // 2x2 max pool
    return cross_entropy(matmul(reshape(pooled, {2, 64}), transpose(p[3])), p[4]);
  };
  // nuvec's feature order is (h, w, c); torch's flatten of NCHW is (c, h, w), so permute before flattening.
  expect_like_torch(loss, in, {0, 1, 2, 3}, R"(
x, w, bias, fc = [torch.tensor(v, requires_grad=True) for v in (a, b, c, d)]
h = torch.relu(torch.nn.functional.conv2d(x.permute(0, 3, 1, 2), w.permute(0, 3, 1, 2), bias, padding=1))
pooled = torch.nn.functional.max_pool2d(h, 2).permute(0, 2, 3, 1).reshape(2, 64)
loss = torch.nn.functional.cross_entropy(pooled @ fc.T, torch.tensor(e).long())
loss.backward()
out = [loss.detach().numpy()] + [t.grad.numpy() for t in (x, w, bias, fc)]
)");
}

TEST(AutogradTorch, CausalAttention) {
  std::mt19937 rng(3);
  V in{test::random_array({2, 2, 5, 8}, float32, rng), test::random_array({2, 2, 5, 8}, float32, rng),
       test::random_array({2, 2, 5, 8}, float32, rng), test::random_array({2, 2, 5, 8}, float32, rng)};
  auto loss = [](const V& p) {
    return sum(fast::scaled_dot_product_attention(p[0], p[1], p[2], 0.35F, "causal") * p[3]);
  };
  expect_like_torch(loss, in, {0, 1, 2}, R"(
q, k, v = [torch.tensor(t, requires_grad=True) for t in (a, b, c)]
scores = (q @ k.transpose(-1, -2)) * 0.35
mask = torch.ones(5, 5, dtype=torch.bool).tril()
scores = scores.masked_fill(~mask, float('-inf'))
loss = (torch.softmax(scores, -1) @ v * torch.tensor(d)).sum()
loss.backward()
out = [loss.detach().numpy()] + [t.grad.numpy() for t in (q, k, v)]
)");
}

TEST(AutogradTorch, LogSoftmaxCrossEntropyWithProbabilities) {
  std::mt19937 rng(4);
  V in{test::random_array({6, 7}, float32, rng, -3.0, 3.0), softmax(test::random_array({6, 7}, float32, rng), -1)};
  auto loss = [](const V& p) {
    auto log_probs = p[0] - logsumexp(p[0], -1, true);
    return mean(negative(sum(p[1] * log_probs, -1)));
  };
  expect_like_torch(loss, in, {0, 1}, R"(
x, t = [torch.tensor(v, requires_grad=True) for v in (a, b)]
loss = -(t * torch.log_softmax(x, -1)).sum(-1).mean()
loss.backward()
out = [loss.detach().numpy(), x.grad.numpy(), t.grad.numpy()]
)");
}

TEST(AutogradTorch, HessianVectorProduct) {
  std::mt19937 rng(5);
  auto x = test::random_array({6}, float32, rng);
  auto w = test::random_array({6, 4}, float32, rng, -1.0, 1.0);
  auto v = test::random_array({6}, float32, rng);
  auto f = [&](const array& a) { return sum(square(tanh(matmul(a, w)))) + sum(exp(a) * a); };
  auto hvp = jvp([&](const V& p) { return V{grad(f)(p[0])}; }, {x}, {v}).second[0];
  auto expected = torch_results(R"(
w = torch.tensor(b)
f = lambda x: (torch.tanh(x @ w) ** 2).sum() + (torch.exp(x) * x).sum()
out = [torch.autograd.functional.hvp(f, torch.tensor(a), torch.tensor(c))[1].numpy()]
)", {x, w, v});
  EXPECT_TRUE(test::matches(hvp, expected[0], 1e-4, 1e-4, false));
  // Reverse over reverse gives the same product.
  auto hvp2 = grad([&](const array& a) { return sum(grad(f)(a) * v); })(x);
  EXPECT_TRUE(test::matches(hvp2, expected[0], 1e-4, 1e-4, false));
}

TEST(AutogradTorch, ReducingScattersWithZerosAndTies) {
  // prod: a target with one zero update, one with two, a zero x; max/min: ties split the cotangent evenly.
  V in{array({1.0, 0.0, 2.0, 3.0, 5.0}), array({2.0, 0.0, 4.0, 0.0, 0.0, 1.5, -1.0}),
       array({1.0, 2.0, 3.0, 0.0, 0.0}), array({1.0, 1.0, 2.0, 3.0, -1.0, 4.0, -4.0})};
  auto idx = array({0, 0, 1, 2, 2, 3, 3});
  auto weights = array({0.5, -1.0, 2.0, 1.5, 0.25});
  auto loss = [&](const V& p) {
    auto prod = scatter_prod(p[0], {idx}, reshape(p[1], {7, 1}), {0});
    auto high = scatter_max(p[2], {idx}, reshape(p[3], {7, 1}), {0});
    auto low = scatter_min(p[2], {idx}, reshape(p[3], {7, 1}), {0});
    return sum((prod + high + low * 2.0) * weights);
  };
  expect_like_torch(loss, in, {0, 1, 2, 3}, R"(
import warnings
warnings.filterwarnings('ignore')  # scatter_reduce is "beta" in PyTorch 1.13
x, s, y, t = [torch.tensor(v, requires_grad=True) for v in (a, b, c, d)]
i = torch.tensor([0, 0, 1, 2, 2, 3, 3])
w = torch.tensor([0.5, -1.0, 2.0, 1.5, 0.25], dtype=torch.float64)
out = x.scatter_reduce(0, i, s, 'prod') + y.scatter_reduce(0, i, t, 'amax') + 2 * y.scatter_reduce(0, i, t, 'amin')
loss = (out * w).sum()
loss.backward()
out = [loss.detach().numpy()] + [v.grad.numpy() for v in (x, s, y, t)]
)", 1e-12);
}

TEST(AutogradTorch, FactorizationsWithVectors) {
  std::mt19937 rng(6);
  V in{test::random_array({4, 4}, float64, rng), test::random_array({5, 3}, float64, rng),
       test::random_array({3, 5}, float64, rng)};
  // Losses that do not depend on the order of eigenvalues nor on the phase or sign of singular and eigen vectors.
  auto loss = [](const V& p) {
    auto [w, v] = linalg::eig(p[0]);
    auto wr = astype(real(w), float64);
    auto wi = astype(imag(w), float64);
    auto rows = reshape(arange(1.0, 5.0, 1.0, float64), {4, 1});
    auto eig_part = sum(wr * wr * wr) + sum(wi * wi) + sum(astype(real(v * conjugate(v)), float64) * rows * wr);
    auto usv = linalg::svd(p[1]);
    auto u = slice(usv[0], {0, 0}, {5, 3});
    auto svd_part = sum(usv[1] * array({1.0, -2.0, 0.5})) + sum(square(u) * 4.0) +
                    sum(square(usv[2]) * reshape(arange(3.0, float64), {3, 1}));
    auto [lu_wide, pivots] = linalg::lu_factor(p[2]);
    auto lu_square = linalg::lu_factor(p[0]).first;
    return eig_part + svd_part + sum(lu_wide * reshape(arange(15.0, float64), {3, 5})) + sum(square(lu_square));
  };
  expect_like_torch(loss, in, {0, 1, 2}, R"(
A, B, C = [torch.tensor(v, requires_grad=True) for v in (a, b, c)]
w, v = torch.linalg.eig(A)
rows = torch.arange(1.0, 5.0, dtype=torch.float64).reshape(4, 1)
eig_part = (w.real ** 3).sum() + (w.imag ** 2).sum() + ((v * v.conj()).real * rows * w.real).sum()
U, S, Vh = torch.linalg.svd(B)
svd_part = (S * torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)).sum() + (U[:, :3] ** 2 * 4).sum() \
    + (Vh ** 2 * torch.arange(3.0, dtype=torch.float64).reshape(3, 1)).sum()
lu_wide = torch.linalg.lu_factor(C)[0]
lu_square = torch.linalg.lu_factor(A)[0]
loss = eig_part + svd_part + (lu_wide * torch.arange(15.0, dtype=torch.float64).reshape(3, 5)).sum() \
    + (lu_square ** 2).sum()
loss.backward()
out = [loss.detach().numpy()] + [t.grad.numpy() for t in (A, B, C)]
)", 1e-4);
}

}  // namespace
}  // namespace nuvec
