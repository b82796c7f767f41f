#include "nuvec/cuda/device.h"

#include <map>
#include <mutex>
#include <vector>

#include "nuvec/core/backend.h"
#include "nuvec/core/error.h"
#include "nuvec/cuda/check.h"

namespace nuvec::cuda {

namespace {

int count_devices() {
  int n = 0;
  // No driver, no device, or a driver older than the runtime: the machine has no usable GPU, which is no error.
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

struct StreamTable {
  std::mutex mutex;
  std::map<int, cudaStream_t> streams;  // by nuvec stream index
};

// Never destroyed, as the pools (buffers.cpp): arrays freed during exit still name their streams.
StreamTable& stream_table() {
  static auto* table = new StreamTable;
  return *table;
}

}  // namespace

const cudaDeviceProp& properties(int device) {
  static const std::vector<cudaDeviceProp> all = [] {
    std::vector<cudaDeviceProp> props(static_cast<size_t>(detail::gpu_count()));
    for (size_t i = 0; i < props.size(); ++i) {
      check(cudaGetDeviceProperties(&props[i], static_cast<int>(i)), "cudaGetDeviceProperties");
    }
    return props;
  }();
  return all.at(static_cast<size_t>(device));
}

void use_device(int device) {
  thread_local int current = -1;
  if (current != device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    current = device;
  }
}

cudaStream_t stream_handle(const Stream& s) {
  use_device(s.device.index);
  auto& table = stream_table();
  std::lock_guard lock(table.mutex);
  auto& handle = table.streams[s.index];
  if (handle == nullptr) {
    check(cudaStreamCreateWithFlags(&handle, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  return handle;
}

}  // namespace nuvec::cuda

namespace nuvec::detail {

int gpu_count() {
  static const int n = cuda::count_devices();
  return n;
}

const std::unordered_map<std::string, std::variant<std::string, size_t>>& gpu_info(int index) {
  static std::mutex mutex;
  static std::map<int, std::unordered_map<std::string, std::variant<std::string, size_t>>> infos;
  std::lock_guard lock(mutex);
  auto& info = infos[index];
  if (info.empty()) {
    const auto& p = cuda::properties(index);
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    cuda::use_device(index);
    cuda::check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    info = {{"device_name", std::string(p.name)},
            {"architecture", "sm_" + std::to_string(p.major * 10 + p.minor)},
            {"memory_size", total_bytes},
            {"total_memory", total_bytes},
            {"free_memory", free_bytes},
            {"max_buffer_length", total_bytes},
            {"max_recommended_working_set_size", total_bytes},
            {"multiprocessor_count", static_cast<size_t>(p.multiProcessorCount)},
            {"l2_cache_size", static_cast<size_t>(p.l2CacheSize)},
            {"compute_capability_major", static_cast<size_t>(p.major)},
            {"compute_capability_minor", static_cast<size_t>(p.minor)}};
  }
  return info;
}

void gpu_synchronize(const Stream& s) { cuda::check(cudaStreamSynchronize(cuda::stream_handle(s)), "cudaStreamSynchronize"); }

}  // namespace nuvec::detail
