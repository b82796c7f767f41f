// What runs above the kernels, on the GPU: gradients, compile's fused kernels (generated as CUDA source) and a few
// steps of training, each against the same computation on the CPU.

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "nuvec/nuvec.h"
#include "tests/cuda/gpu_test_util.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using test::same_values;

const Device gpu = Device::gpu;
const Device cpu = Device::cpu;

/// A smooth loss of one weight matrix: element-wise steps, a product and reductions.
array loss(const array& w, const array& x) {
  auto h = tanh(matmul(x, w));
  return mean(square(subtract(h, sigmoid(x))));
}

TEST(CudaTransforms, GradientsMatchTheCpu) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(21);
  auto w = test::random_array({32, 32}, float32, rng);
  auto x = test::random_array({16, 32}, float32, rng);
  auto on = [&](Device d) {
    StreamContext context(d);
    auto g = grad([&](const array& weights) { return loss(weights, x); });
    return g(w);
  };
  EXPECT_TRUE(same_values(on(gpu), on(cpu), 1e-4, 1e-6));
}

TEST(CudaTransforms, CompiledChainsRunAsOneGpuKernel) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(22);
  auto a = test::random_array({300, 200}, float32, rng);
  auto b = test::random_array({200}, float32, rng);
  auto fun = [](const std::vector<array>& in) {
    auto t = multiply(add(in[0], in[1]), array(0.5F));
    return std::vector<array>{tanh(t), exp(negative(square(t)))};
  };
  auto compiled = compile(Function(fun));
  std::vector<array> on_gpu;
  {
    StreamContext context(gpu);
    on_gpu = compiled({a, b});
  }
  std::vector<array> on_cpu;
  {
    StreamContext context(cpu);
    on_cpu = fun({a, b});
  }
  for (size_t i = 0; i < on_gpu.size(); ++i) {
    EXPECT_TRUE(same_values(on_gpu[i], on_cpu[i])) << "output " << i;
    EXPECT_EQ(on_gpu[i].data_device(), gpu);
  }
}

TEST(CudaTransforms, TrainingStepsFollowTheCpu) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(23);
  auto x = test::random_array({64, 16}, float32, rng);
  auto y = test::random_array({64, 4}, float32, rng);
  auto w1 = test::random_array({16, 32}, float32, rng, -0.3, 0.3);
  auto w2 = test::random_array({32, 4}, float32, rng, -0.3, 0.3);
  auto train = [&](Device d) {
    StreamContext context(d);
    std::vector<array> params{w1, w2};
    auto step_loss = [&](const std::vector<array>& p) {
      auto h = maximum(matmul(x, p[0]), array(0.0F));
      return std::vector<array>{mean(square(subtract(matmul(h, p[1]), y)))};
    };
    auto value_grad = value_and_grad(Function(step_loss), std::vector<int>{0, 1});
    std::vector<float> losses;
    for (int step = 0; step < 5; ++step) {
      auto [values, grads] = value_grad(params);
      for (size_t i = 0; i < params.size(); ++i) {
        params[i] = subtract(params[i], multiply(grads[i], array(0.1F)));
      }
      eval(params);
      losses.push_back(values[0].item<float>());
    }
    return losses;
  };
  auto on_gpu = train(gpu);
  auto on_cpu = train(cpu);
  ASSERT_EQ(on_gpu.size(), on_cpu.size());
  for (size_t i = 0; i < on_gpu.size(); ++i) {
    EXPECT_NEAR(on_gpu[i], on_cpu[i], 1e-4 * std::abs(on_cpu[i])) << "step " << i;
  }
  EXPECT_LT(on_gpu.back(), on_gpu.front());
}

}  // namespace
}  // namespace nuvec
