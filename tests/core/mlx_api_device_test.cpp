// MLX's device.h, stream.h and scheduler.h, called as MLX code calls them: a declaration that changes or goes
// missing fails to compile here. nuvec's CPU streams run their work in order; the checks follow from that.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

TEST(MlxApiDevice, Devices) {
  Device cpu(Device::cpu);
  Device cpu0(Device::DeviceType::cpu, 0);
  EXPECT_EQ(cpu, cpu0);
  EXPECT_TRUE(cpu == Device::cpu);
  EXPECT_TRUE(Device(Device::cpu) < Device(Device::gpu));
  EXPECT_TRUE(Device(Device::cpu, 0) < Device(Device::cpu, 1));
  std::map<Device, int> by_device{{Device::gpu, 1}, {Device::cpu, 0}};
  EXPECT_EQ(by_device.begin()->first, cpu);
  EXPECT_EQ(default_device(), cpu);
  set_default_device(cpu);
  EXPECT_TRUE(is_available(cpu));
  EXPECT_FALSE(is_available(Device::gpu));
  EXPECT_EQ(device_count(Device::cpu), 1);
  EXPECT_EQ(device_count(Device::gpu), 0);
  const auto& info = device_info();
  EXPECT_TRUE(info.contains("device_name"));
  EXPECT_TRUE(std::holds_alternative<std::string>(device_info(cpu).at("architecture")));
}

TEST(MlxApiStream, Streams) {
  auto s = default_stream(Device::cpu);
  set_default_stream(s);
  auto fresh = new_stream(Device::cpu);
  EXPECT_NE(fresh, s);
  EXPECT_TRUE(s < fresh);
  std::set<Stream> ordered{fresh, s};
  EXPECT_EQ(*ordered.begin(), s);
  auto unsafe = new_thread_unsafe_stream(Device::cpu);
  auto streams = get_streams();
  EXPECT_EQ(streams.front(), s);
  EXPECT_NE(std::find(streams.begin(), streams.end(), unsafe), streams.end());
  // A thread-local stream is one stream per thread.
  ThreadLocalStream tls = new_thread_local_stream(Device::cpu);
  auto here = stream_from_thread_local_stream(tls);
  EXPECT_EQ(stream_from_thread_local_stream(tls), here);
  Stream there = here;
  std::thread([&] { there = stream_from_thread_local_stream(tls); }).join();
  EXPECT_NE(there, here);
  // Every op's trailing argument takes a stream, a thread-local stream, a device or a device type.
  auto a = ones({2}, float32, tls);
  auto b = add(a, a, Device::cpu);
  auto c = multiply(b, b, Device(Device::cpu));
  auto d = exp(c, fresh);
  async_eval(d);
  synchronize();
  synchronize(fresh);
  synchronize(tls);
  EXPECT_TRUE(d.is_available());
  clear_streams();
  EXPECT_NE(stream_from_thread_local_stream(tls), here);
  EXPECT_EQ(to_stream({}), default_stream(default_device()));
  EXPECT_EQ(to_stream(Device::cpu, Device::cpu).device, Device(Device::cpu));
}

TEST(MlxApiStream, StreamContextRestoresTheDefault) {
  auto before = default_stream(default_device());
  auto other = new_stream(Device::cpu);
  {
    StreamContext ctx(other);
    EXPECT_EQ(default_stream(default_device()), other);
    EXPECT_EQ(to_stream({}), other);
  }
  EXPECT_EQ(default_stream(default_device()), before);
  {
    StreamContext ctx(Device::cpu);
    EXPECT_EQ(default_device(), Device(Device::cpu));
  }
  EXPECT_THROW(StreamContext ctx({}), std::invalid_argument);
}

TEST(MlxApiScheduler, FunctionsRunOnTheStream) {
  auto s = default_stream(Device::cpu);
  int ran = 0;
  scheduler::enqueue(s, [&] { ++ran; });
  EXPECT_EQ(ran, 1);
  scheduler::notify_new_task(s);
  EXPECT_EQ(scheduler::n_active_tasks(), 1);
  scheduler::notify_task_completion(s);
  EXPECT_EQ(scheduler::n_active_tasks(), 0);
  scheduler::wait_for_one();
}

}  // namespace
}  // namespace nuvec
