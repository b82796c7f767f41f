// The GPU as a device: discovery and MLX's device API, streams and the order between them, where arrays live and
// how the host reads them, views of GPU buffers, the memory API and out-of-memory as failed arrays, and the host
// fallback of primitives without a GPU kernel.

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include "nuvec/nuvec.h"
#include "tests/cuda/gpu_test_util.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

using test::same_values;

const Device gpu = Device::gpu;
const Device cpu = Device::cpu;

TEST(CudaRuntime, WithoutAGpuTheGpuIsUnavailableAndNamedInErrors) {
  if (is_available(gpu)) {
    GTEST_SKIP() << "this machine has a GPU";
  }
  EXPECT_EQ(device_count(Device::gpu), 0);
  EXPECT_EQ(default_device(), cpu);
  EXPECT_THROW(new_stream(gpu), std::invalid_argument);
  EXPECT_THROW(set_default_device(gpu), std::invalid_argument);
}

TEST(CudaRuntime, TheGpuIsAvailableWithItsFacts) {
  NUVEC_REQUIRE_GPU();
  EXPECT_GE(device_count(Device::gpu), 1);
  const auto& info = device_info(gpu);
  EXPECT_FALSE(std::get<std::string>(info.at("device_name")).empty());
  EXPECT_EQ(std::get<std::string>(info.at("architecture")).rfind("sm_", 0), 0U);
  EXPECT_GT(std::get<size_t>(info.at("memory_size")), size_t{1} << 30);
  EXPECT_FALSE(is_available(Device(Device::gpu, 64)));
}

TEST(CudaRuntime, ResultsLiveOnTheGpuAndTheHostReadsThem) {
  NUVEC_REQUIRE_GPU();
  array a({1.0F, 2.0F, 3.0F});
  auto b = multiply(a, a, gpu);
  b.eval();
  EXPECT_EQ(b.data_device(), gpu);
  EXPECT_EQ(a.data_device(), cpu);  // the upload is a copy; the host array stays where it is
  const float* host = b.data<float>();
  EXPECT_EQ(host[0], 1.0F);
  EXPECT_EQ(host[2], 9.0F);
  EXPECT_EQ(sum(b, cpu).item<float>(), 14.0F);
  EXPECT_EQ(b.stream().device, gpu);
}

TEST(CudaRuntime, StreamsOrderTheirWorkAndEachOther) {
  NUVEC_REQUIRE_GPU();
  auto s1 = new_stream(gpu);
  auto s2 = new_stream(gpu);
  EXPECT_NE(s1, s2);
  std::mt19937 rng(3);
  auto x = test::random_array({1 << 20}, float32, rng);
  auto on_s1 = exp(x, s1);
  auto on_s2 = add(on_s1, on_s1, s2);  // s2 waits for s1's exp
  auto back = subtract(on_s2, on_s1, s1);
  EXPECT_TRUE(same_values(back, exp(x, cpu)));
  synchronize(s1);
  synchronize(s2);
  synchronize();
}

TEST(CudaRuntime, DefaultStreamAndStreamContext) {
  NUVEC_REQUIRE_GPU();
  auto s = default_stream(gpu);
  EXPECT_EQ(s.device, gpu);
  {
    StreamContext on_cpu(cpu);
    array a({1.0F});
    auto b = add(a, a);
    EXPECT_EQ(b.stream().device, cpu);
  }
  {
    StreamContext on_gpu(gpu);
    auto c = add(array({1.0F}), array({2.0F}));
    EXPECT_EQ(c.stream().device, gpu);
    EXPECT_EQ(c.item<float>(), 3.0F);
  }
}

TEST(CudaRuntime, ViewsOfGpuBuffersAndCopies) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(4);
  auto x = test::random_array({6, 40, 30}, float32, rng);
  auto g = exp(x, gpu);
  auto views = [&](Device d, const array& base) {
    return std::vector<array>{transpose(base, {2, 0, 1}, d), slice(base, {1, 3, 2}, {5, 40, 30}, {2, 3, 4}, d),
                              reshape(transpose(base, {1, 0, 2}, d), {40, 180}, d), broadcast_to(slice(base, {0, 0, 0}, {1, 40, 30}, d), {3, 40, 30}, d),
                              copy(transpose(base, d), d), concatenate({base, transpose(transpose(base, d), d), base}, 1, d),
                              flatten(base, d), astype(transpose(base, d), bfloat16, d)};
  };
  auto on_gpu = views(gpu, g);
  auto on_cpu = views(cpu, exp(x, cpu));
  for (size_t i = 0; i < on_gpu.size(); ++i) {
    EXPECT_TRUE(same_values(on_gpu[i], on_cpu[i])) << "view " << i;
  }
}

TEST(CudaRuntime, PrimitivesWithoutAGpuKernelRunOnTheHost) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(5);
  auto x = test::random_array({64, 64}, float32, rng);
  auto spd = add(matmul(x, transpose(x, cpu), cpu), multiply(eye(64, cpu), array(64.0F), cpu), cpu);
  auto g = exp(negative(spd, gpu), gpu);  // a GPU input
  EXPECT_TRUE(same_values(sort(g, 1, gpu), sort(g, 1, cpu)));
  EXPECT_TRUE(same_values(cumsum(g, 0, false, true, std::nullopt, gpu), cumsum(g, 0, false, true, std::nullopt, cpu)));
  auto [q, r] = linalg::qr(spd, gpu);
  EXPECT_TRUE(same_values(matmul(q, r, cpu), spd, 1e-4, 1e-3));
}

TEST(CudaRuntime, OutOfMemoryFailsTheArrayNotTheProcess) {
  NUVEC_REQUIRE_GPU();
  const size_t memory = std::get<size_t>(device_info(gpu).at("memory_size"));
  // A float32 result of more bytes than the card has (4 GiB a slice): its allocation fails, and the array and what
  // reads it fail.
  const auto slices = static_cast<int>(memory / (size_t{4} << 30) + 2);
  auto huge = add(zeros({slices, 1 << 20, 1 << 10}, float32, cpu), array(1.0F), gpu);
  auto after = sum(huge, gpu);
  auto status = try_eval({after});
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.kind(), ErrorKind::out_of_memory) << status.message();
  EXPECT_EQ(after.status(), Status::failed);
  // The GPU still works.
  EXPECT_EQ(add(array(2.0F), array(3.0F), gpu).item<float>(), 5.0F);
}

TEST(CudaRuntime, MemoryApiReportsTheGpuAllocatorAndItsLimit) {
  NUVEC_REQUIRE_GPU();
  StreamContext on_gpu(gpu);
  clear_cache();
  const size_t before = get_active_memory();
  {
    auto a = add(zeros({1 << 24}, float32, cpu), array(1.0F));
    a.eval();
    EXPECT_GE(get_active_memory(), before + (size_t{4} << 24));
    EXPECT_GE(get_peak_memory(), get_active_memory());
  }
  synchronize();
  EXPECT_LE(get_active_memory(), before);
  EXPECT_GE(get_cache_memory(), 0U);
  const size_t limit = get_memory_limit();
  EXPECT_GT(limit, size_t{1} << 30);
  set_memory_limit(get_active_memory() + (size_t{1} << 20));
  auto too_big = add(zeros({1 << 22}, float32, cpu), array(1.0F));
  auto status = try_eval({too_big});
  EXPECT_EQ(status.kind(), ErrorKind::out_of_memory) << status.message();
  set_memory_limit(limit);
  EXPECT_EQ(add(array(1.0F), array(1.0F)).item<float>(), 2.0F);
}

TEST(CudaRuntime, ArraysAreSafeToShareBetweenThreads) {
  NUVEC_REQUIRE_GPU();
  std::mt19937 rng(6);
  auto x = exp(test::random_array({1 << 16}, float32, rng), gpu);
  x.eval();
  std::vector<std::thread> threads;
  std::vector<float> sums(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] { sums[static_cast<size_t>(t)] = sum(multiply(x, array(2.0F), gpu), cpu).item<float>(); });
  }
  for (auto& th : threads) {
    th.join();
  }
  for (float s : sums) {
    EXPECT_EQ(s, sums[0]);
  }
}

}  // namespace
}  // namespace nuvec
