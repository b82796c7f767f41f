// Losses against PyTorch 1.13's functional losses (float64, same inputs), with each reduction, class-index and
// probability targets, label smoothing and per-sample weights, and the shape errors.

#include <gtest/gtest.h>

#include "tests/nn/torch_reference.h"

namespace nuvec {
namespace {

namespace L = nn::losses;
using L::Reduction;
using test::close;
using test::error_of;
using test::torch_ref;

array log_softmax_ref(const array& x) { return x - logsumexp(x, -1, true); }

const std::vector<std::pair<Reduction, std::string>> kReductions{
    {Reduction::none, "none"}, {Reduction::mean, "mean"}, {Reduction::sum, "sum"}};

TEST(Losses, CrossEntropy) {
  auto logits = random::normal({6, 5}) * array(2.0F);
  auto labels = array({0, 4, 2, 2, 1, 3});
  for (auto [reduction, name] : kReductions) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(close(L::cross_entropy(logits, labels, std::nullopt, -1, 0.0F, reduction),
                      torch_ref("out = N(F.cross_entropy(T(a), torch.tensor(b).long(), reduction='" + name + "'))",
                                {logits, labels})));
    EXPECT_TRUE(close(L::cross_entropy(logits, labels, std::nullopt, -1, 0.2F, reduction),
                      torch_ref("out = N(F.cross_entropy(T(a), torch.tensor(b).long(), label_smoothing=0.2, "
                                "reduction='" +
                                    name + "'))",
                                {logits, labels})));
  }
  auto probs = softmax(random::normal({6, 5}), -1);
  EXPECT_TRUE(close(L::cross_entropy(logits, probs, std::nullopt, -1, 0.1F, Reduction::mean),
                    torch_ref("out = N(F.cross_entropy(T(a), T(b), label_smoothing=0.1))", {logits, probs})));
  // Class axis 1 of (N, C, L), and per-sample weights.
  auto logits3 = random::normal({2, 4, 3});
  auto labels3 = array({0, 3, 1, 2, 2, 0}, {2, 3});
  auto weights = random::uniform({2, 3});
  EXPECT_TRUE(close(L::cross_entropy(logits3, labels3, weights, 1, 0.0F, Reduction::none),
                    torch_ref("out = N(F.cross_entropy(T(a), torch.tensor(b).long(), reduction='none') * T(c))",
                              {logits3, labels3, weights})));
  EXPECT_EQ(error_of([&] {
              L::cross_entropy(logits, array({1, 2}));
            }),
            "[cross_entropy] class-index targets must have shape (6) (the logits' shape (6,5) without axis -1); given "
            "(2).");
}

TEST(Losses, BinaryCrossEntropyAndNll) {
  auto logits = random::normal({4, 3}) * array(3.0F);
  auto targets = random::uniform({4, 3});
  auto weights = random::uniform({4, 3});
  for (auto [reduction, name] : kReductions) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(close(L::binary_cross_entropy(logits, targets, std::nullopt, true, reduction),
                      torch_ref("out = N(F.binary_cross_entropy_with_logits(T(a), T(b), reduction='" + name + "'))",
                                {logits, targets})));
    auto p = sigmoid(logits);
    EXPECT_TRUE(close(L::binary_cross_entropy(p, targets, weights, false, reduction),
                      torch_ref("out = N(F.binary_cross_entropy(T(a), T(b), weight=T(c), reduction='" + name + "'))",
                                {p, targets, weights}),
                      1e-4));
  }
  // Probabilities of exactly 0 and 1: the log terms clamp at -100.
  auto edge = array({0.0F, 1.0F, 0.5F});
  auto edge_t = array({1.0F, 0.0F, 1.0F});
  EXPECT_TRUE(close(L::binary_cross_entropy(edge, edge_t, std::nullopt, false, Reduction::none),
                    torch_ref("out = N(F.binary_cross_entropy(T(a), T(b), reduction='none'))", {edge, edge_t})));
  auto logp = log_softmax_ref(random::normal({5, 4}));
  auto labels = array({3, 0, 1, 1, 2});
  EXPECT_TRUE(close(L::nll_loss(logp, labels, -1, Reduction::mean),
                    torch_ref("out = N(F.nll_loss(T(a), torch.tensor(b).long()))", {logp, labels})));
}

TEST(Losses, Regression) {
  auto x = random::normal({3, 4}) * array(2.0F);
  auto y = random::normal({3, 4});
  for (auto [reduction, name] : kReductions) {
    SCOPED_TRACE(name);
    std::string r = ", reduction='" + name + "'))";
    EXPECT_TRUE(close(L::mse_loss(x, y, reduction), torch_ref("out = N(F.mse_loss(T(a), T(b)" + r, {x, y})));
    EXPECT_TRUE(close(L::l1_loss(x, y, reduction), torch_ref("out = N(F.l1_loss(T(a), T(b)" + r, {x, y})));
    EXPECT_TRUE(close(L::smooth_l1_loss(x, y, 0.5F, reduction),
                      torch_ref("out = N(F.smooth_l1_loss(T(a), T(b), beta=0.5" + r, {x, y})));
    EXPECT_TRUE(close(L::huber_loss(x, y, 1.5F, reduction),
                      torch_ref("out = N(F.huber_loss(T(a), T(b), delta=1.5" + r, {x, y})));
    auto var = random::uniform(0.1, 2.0, {3, 4});
    EXPECT_TRUE(close(L::gaussian_nll_loss(x, y, var, true, 1e-6F, reduction),
                      torch_ref("out = N(F.gaussian_nll_loss(T(a), T(b), T(c), full=True" + r, {x, y, var})));
  }
  EXPECT_TRUE(
      close(L::log_cosh_loss(x, y, Reduction::none), torch_ref("out = N(torch.log(torch.cosh(T(a) - T(b))))", {x, y})));
  auto big = array({100.0F, -100.0F});
  EXPECT_TRUE(close(L::log_cosh_loss(big, zeros({2})), torch_ref("out = np.array([100 - np.log(2)] * 2)", {})));
  EXPECT_EQ(error_of([&] {
              L::mse_loss(x, zeros({4, 3}));
            }),
            "[mse_loss] predictions and targets must have the same shape; given (3,4) and (4,3).");
}

TEST(Losses, DivergenceSimilarityAndMargins) {
  auto logp = log_softmax_ref(random::normal({3, 5}));
  auto logq = log_softmax_ref(random::normal({3, 5}));
  EXPECT_TRUE(close(
      L::kl_div_loss(logp, logq, -1, Reduction::mean),
      torch_ref("out = N(F.kl_div(T(a), T(b), reduction='none', log_target=True).sum(-1).mean())", {logp, logq})));
  auto x1 = random::normal({4, 6});
  auto x2 = random::normal({4, 6});
  EXPECT_TRUE(
      close(L::cosine_similarity_loss(x1, x2, 1), torch_ref("out = N(F.cosine_similarity(T(a), T(b), 1))", {x1, x2})));
  auto scores = random::normal({8});
  auto signs = array({1.0F, -1.0F, 1.0F, 1.0F, -1.0F, -1.0F, 1.0F, -1.0F});
  EXPECT_TRUE(close(L::hinge_loss(scores, signs, Reduction::mean),
                    torch_ref("out = N(torch.clamp(1 - T(a) * T(b), min=0).mean())", {scores, signs})));
  auto other = random::normal({8});
  EXPECT_TRUE(close(L::margin_ranking_loss(scores, other, signs, 0.3F, Reduction::sum),
                    torch_ref("out = N(F.margin_ranking_loss(T(a), T(b), T(c), margin=0.3, reduction='sum'))",
                              {scores, other, signs})));
  auto a = random::normal({5, 6});
  auto p = random::normal({5, 6});
  auto n = random::normal({5, 6});
  EXPECT_TRUE(close(
      L::triplet_loss(a, p, n, -1, 2, 1.0F, 1e-6F, Reduction::none),
      torch_ref("out = N(F.triplet_margin_loss(T(a), T(b), T(c), margin=1.0, eps=0, reduction='none'))", {a, p, n}),
      1e-4));
}

}  // namespace
}  // namespace nuvec
