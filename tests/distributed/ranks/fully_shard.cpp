// nn::FullyShard on every rank: an MLP whose parameter sizes the group does not divide (so shards are padded),
// trained for a few SGD or Adam steps with each rank taking its part of the batch, ends with the parameters of the
// same MLP trained in one process on the whole batch (computed on every rank alongside), and each rank holds 1/n of
// them.

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nuvec/nn/nn.h"
#include "nuvec/nuvec.h"

namespace nuvec::nn {
namespace {

void eval_params(const Params& params) {
  std::vector<array> values;
  for (const auto& [name, value] : params) {
    values.push_back(value);
  }
  eval(values);
}

/// The same MLP on every rank: 5 -> 7 -> 3 (parameters of 35, 7, 21 and 3 elements).
std::shared_ptr<Sequential> mlp() {
  random::seed(5);
  auto model = std::make_shared<Sequential>(std::vector<std::shared_ptr<UnaryModule>>{
      std::make_shared<Linear>(5, 7), std::make_shared<ReLU>(), std::make_shared<Linear>(7, 3)});
  eval_params(model->parameters());
  return model;
}

array rows(const array& a, int begin, int end) { return slice(a, {begin, 0}, {end, a.shape(1)}); }

/// Trains the MLP fully sharded on this rank's part of a batch of 12, and whole on all of it, with optimizers from
/// `make`; expects the same losses and parameters.
void expect_training_matches(const std::function<std::unique_ptr<optimizers::Optimizer>()>& make,
                             const std::string& what) {
  const distributed::Group g = distributed::init(true);
  const int n = g.size();
  const int r = g.rank();
  const array x = random::normal({12, 5}, float32, 0.0F, 1.0F, random::key(1));
  const array y = random::normal({12, 3}, float32, 0.0F, 1.0F, random::key(2));

  auto whole = mlp();
  auto whole_optimizer = make();
  auto whole_step = nn::value_and_grad(
      *whole, [&](const std::vector<array>& in) { return losses::mse_loss((*whole)(in[0]), in[1]); });

  auto sharded = mlp();
  FullyShard fsdp(*sharded, g);
  auto sharded_optimizer = make();
  auto sharded_step =
      fsdp.value_and_grad([&](const std::vector<array>& in) { return losses::mse_loss((*sharded)(in[0]), in[1]); });

  // 2, 3 or 4 ranks take equal parts of the batch.
  const int begin = r * 12 / n;
  const int end = (r + 1) * 12 / n;
  for (int step = 0; step < 4; ++step) {
    auto [loss, gradients] = whole_step({x, y});
    whole_optimizer->update(*whole, gradients);
    eval_params(whole->parameters());
    auto [local_loss, shard_gradients] = sharded_step({rows(x, begin, end), rows(y, begin, end)});
    fsdp.update(*sharded_optimizer, shard_gradients);
    eval_params(fsdp.shards());
    // The mean of the ranks' losses is the global batch's.
    EXPECT_NEAR(distributed::all_sum(local_loss, g).item<float>() / static_cast<float>(n), loss.item<float>(), 2e-5)
        << what << ", step " << step;
  }

  const Params want = whole->parameters();
  const Params got = fsdp.gathered();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].first, want[i].first);
    ASSERT_EQ(got[i].second.shape(), want[i].second.shape()) << want[i].first;
    EXPECT_TRUE(allclose(got[i].second, want[i].second, 1e-5, 1e-5).item<bool>())
        << what << ", " << want[i].first << ": largest difference "
        << max(abs(got[i].second - want[i].second)).item<float>();
    // Each rank holds ceil(size / n) elements of each parameter.
    const int size = static_cast<int>(want[i].second.size());
    EXPECT_EQ(fsdp.shards()[i].second.shape(), Shape{(size + n - 1) / n}) << want[i].first;
  }
  // The model itself computes with the gathered parameters.
  EXPECT_TRUE(allclose((*sharded)(x), (*whole)(x), 1e-5, 1e-5).item<bool>()) << what;
}

TEST(FullyShard, SGDStepsEqualOneProcessWithTheGlobalBatch) {
  // Plain SGD follows the gradients' scale, which Adam normalises away.
  expect_training_matches([] { return std::make_unique<optimizers::SGD>(0.1, 0.9); }, "SGD with momentum");
}

TEST(FullyShard, AdamStepsEqualOneProcessWithTheGlobalBatch) {
  expect_training_matches([] { return std::make_unique<optimizers::Adam>(0.05); }, "Adam");
}

}  // namespace
}  // namespace nuvec::nn
