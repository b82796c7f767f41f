#include "nuvec/cuda/buffers.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "nuvec/core/backend.h"
#include "nuvec/core/error.h"
#include "nuvec/cuda/check.h"
#include "nuvec/cuda/device.h"

namespace nuvec::cuda {

namespace {

/// The caching allocator of one device: CUDA's stream-ordered pool, which keeps freed memory for reuse (its
/// release threshold is the cache limit), with nuvec's counts and limit on top.
struct Pool {
  int device = 0;
  cudaMemPool_t handle = nullptr;
  std::atomic<size_t> active{0};
  std::atomic<size_t> peak{0};
  std::atomic<size_t> limit{0};
  std::atomic<size_t> cache_limit{static_cast<size_t>(-1)};

  explicit Pool(int d) : device(d) {
    use_device(d);
    check(cudaDeviceGetDefaultMemPool(&handle, d), "cudaDeviceGetDefaultMemPool");
    set_release_threshold(cache_limit.load());
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    limit = total_bytes;
  }

  void set_release_threshold(size_t bytes) const {
    auto threshold = static_cast<uint64_t>(bytes);
    check(cudaMemPoolSetAttribute(handle, cudaMemPoolAttrReleaseThreshold, &threshold), "cudaMemPoolSetAttribute");
  }

  [[nodiscard]] size_t attribute(cudaMemPoolAttr which) const {
    uint64_t value = 0;
    check(cudaMemPoolGetAttribute(handle, which, &value), "cudaMemPoolGetAttribute");
    return static_cast<size_t>(value);
  }

  void* allocate(size_t bytes, cudaStream_t stream) {
    if (active.load() + bytes > limit.load()) {
      throw_error(ErrorKind::out_of_memory, "[cuda] Allocating " + std::to_string(bytes) + " bytes would pass GPU " +
                                                std::to_string(device) + "'s memory limit of " +
                                                std::to_string(limit.load()) + " bytes (" +
                                                std::to_string(active.load()) + " in use).");
    }
    void* ptr = nullptr;
    auto status = cudaMallocAsync(&ptr, bytes, stream);
    if (status == cudaErrorMemoryAllocation) {
      // Memory other streams freed may still be waiting on their work: let it finish, hand the pool's free memory
      // back, and try once more.
      cudaGetLastError();
      check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
      check(cudaMemPoolTrimTo(handle, 0), "cudaMemPoolTrimTo");
      status = cudaMallocAsync(&ptr, bytes, stream);
    }
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw_error(ErrorKind::out_of_memory, "[cuda] Out of memory on GPU " + std::to_string(device) + ": " +
                                                std::to_string(bytes) + " bytes asked for, " +
                                                std::to_string(active.load()) + " in use.");
    }
    check(status, "cudaMallocAsync");
    const size_t now = active.fetch_add(bytes) + bytes;
    size_t seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {
    }
    return ptr;
  }

  void release(void* ptr, size_t bytes, cudaStream_t stream) noexcept {
    // At exit the runtime may be gone before the last arrays: nothing is left to free then.
    if (cudaFreeAsync(ptr, stream) != cudaSuccess) {
      cudaGetLastError();
    }
    active.fetch_sub(bytes);
  }
};

// The pools outlive every array: arrays held by static objects free their buffers during exit, after the static
// objects of this file would be gone, so the table is never destroyed.
Pool& pool(int device) {
  static auto* mutex = new std::mutex;
  static auto* pools = new std::map<int, std::unique_ptr<Pool>>;
  std::lock_guard lock(*mutex);
  auto& p = (*pools)[device];
  if (!p) {
    p = std::make_unique<Pool>(device);
  }
  return *p;
}

/// The GPU backend's record of one array buffer (array::Data::gpu_state).
struct GpuState {
  std::mutex mutex;
  int device = 0;
  void* device_ptr = nullptr;  // the GPU buffer, or host data's device copy
  size_t bytes = 0;
  cudaStream_t home = nullptr;          // writes device_ptr; frees it
  std::vector<cudaStream_t> readers;    // other streams that read it
  allocator::Buffer host_copy;          // a GPU buffer's copy on the host

  GpuState(int d, size_t n, cudaStream_t stream) : device(d), bytes(n), home(stream) {
    if (n > 0) {
      device_ptr = pool(d).allocate(n, stream);
    }
  }
  GpuState(const GpuState&) = delete;
  GpuState& operator=(const GpuState&) = delete;

  ~GpuState() {
    allocator::free(host_copy);
    if (device_ptr == nullptr) {
      return;
    }
    for (auto reader : readers) {
      cudaEvent_t done = nullptr;
      if (cudaEventCreateWithFlags(&done, cudaEventDisableTiming) == cudaSuccess) {
        cudaEventRecord(done, reader);
        cudaStreamWaitEvent(home, done, 0);
        cudaEventDestroy(done);
      }
    }
    pool(device).release(device_ptr, bytes, home);
  }

  /// Makes the work on `stream` wait for the work that writes the buffer. Holds the mutex.
  void make_ready_for(cudaStream_t stream) {
    if (stream == home) {
      return;
    }
    cudaEvent_t written = nullptr;
    check(cudaEventCreateWithFlags(&written, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    check(cudaEventRecord(written, home), "cudaEventRecord");
    check(cudaStreamWaitEvent(stream, written, 0), "cudaStreamWaitEvent");
    check(cudaEventDestroy(written), "cudaEventDestroy");
    if (std::find(readers.begin(), readers.end(), stream) == readers.end()) {
      readers.push_back(stream);
    }
  }
};

GpuState& state_of(const array::Data& data) { return *static_cast<GpuState*>(data.gpu_state.get()); }

std::mutex& upload_mutex() {
  static std::mutex mutex;
  return mutex;
}

/// The byte offset of `a`'s first element in its buffer.
ptrdiff_t offset_of(const array& a) {
  return static_cast<const char*>(a.buffer_data()) - static_cast<const char*>(a.data_shared_ptr()->buffer.raw_ptr());
}

}  // namespace

void allocate_output(array& out, const Stream& s) {
  const cudaStream_t stream = stream_handle(s);
  auto state = std::make_shared<GpuState>(s.device.index, out.nbytes(), stream);
  allocator::Buffer buffer(state->device_ptr, state->bytes);
  out.set_data(std::make_shared<array::Data>(buffer, [](allocator::Buffer) {}, s.device, std::move(state)));
}

array gpu_array(const Shape& shape, Dtype dtype, const Stream& s) {
  // A node without inputs stands for the array until its buffer makes it available.
  array a(shape, dtype, StopGradient{}, {}, s);
  allocate_output(a, s);
  return a;
}

void* device_pointer(const array& a, const Stream& s) {
  const auto& data = a.data_shared_ptr();
  if (!data) {
    throw_internal("[cuda] an input has no data.");
  }
  const cudaStream_t stream = stream_handle(s);
  if (data->device.type == Device::gpu) {
    if (data->device.index != s.device.index) {
      throw_error(ErrorKind::unsupported, "[cuda] an input lives on GPU " + std::to_string(data->device.index) +
                                              ", the work on GPU " + std::to_string(s.device.index) +
                                              ": copies between GPUs are not supported.");
    }
    auto& state = state_of(*data);
    std::lock_guard lock(state.mutex);
    state.make_ready_for(stream);
    return static_cast<char*>(state.device_ptr) + offset_of(a);
  }
  std::lock_guard lock(upload_mutex());
  if (!data->gpu_state) {
    const size_t bytes = data->buffer.size();
    auto state = std::make_shared<GpuState>(s.device.index, bytes, stream);
    if (bytes > 0) {
      check(cudaMemcpyAsync(state->device_ptr, data->buffer.raw_ptr(), bytes, cudaMemcpyHostToDevice, stream),
            "cudaMemcpyAsync (upload)");
    }
    data->gpu_state = std::move(state);
  }
  auto& state = state_of(*data);
  std::lock_guard state_lock(state.mutex);
  state.make_ready_for(stream);
  return static_cast<char*>(state.device_ptr) + offset_of(a);
}

bool donate(const array& in, array& out, const Stream& s) {
  if (in.use_count() != 1 || in.buffer_use_count() != 1 || in.data_device() != s.device ||
      in.nbytes() != out.nbytes() || in.data_size() != in.size() || !in.flags().row_contiguous) {
    return false;
  }
  const auto& data = in.data_shared_ptr();
  auto& state = state_of(*data);
  if (state.home != stream_handle(s) || state.bytes != out.nbytes()) {
    return false;
  }
  allocator::free(state.host_copy);
  state.host_copy = allocator::Buffer();
  out.move_shared_buffer(in);
  return true;
}

size_t active_memory(int device) { return pool(device).active.load(); }
size_t peak_memory(int device) { return pool(device).peak.load(); }
void reset_peak_memory(int device) { pool(device).peak.store(pool(device).active.load()); }
size_t cache_memory(int device) {
  auto& p = pool(device);
  return p.attribute(cudaMemPoolAttrReservedMemCurrent) - p.attribute(cudaMemPoolAttrUsedMemCurrent);
}
size_t memory_limit(int device) { return pool(device).limit.load(); }
size_t set_memory_limit(int device, size_t limit) { return pool(device).limit.exchange(limit); }
size_t set_cache_limit(int device, size_t limit) {
  auto& p = pool(device);
  p.set_release_threshold(limit);
  return p.cache_limit.exchange(limit);
}
void clear_cache(int device) {
  use_device(device);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  check(cudaMemPoolTrimTo(pool(device).handle, 0), "cudaMemPoolTrimTo");
}

}  // namespace nuvec::cuda

namespace nuvec::detail {

void gpu_wait(const array::Data& data) {
  auto& state = cuda::state_of(data);
  cuda::use_device(state.device);
  cuda::check(cudaStreamSynchronize(state.home), "cudaStreamSynchronize");
}

size_t gpu_memory(int device, GpuMemory what) {
  switch (what) {
    case GpuMemory::active:
      return cuda::active_memory(device);
    case GpuMemory::peak:
      return cuda::peak_memory(device);
    case GpuMemory::cache:
      return cuda::cache_memory(device);
    case GpuMemory::memory_limit:
      return cuda::memory_limit(device);
  }
  return 0;
}

size_t gpu_set_limit(int device, bool cache, size_t limit) {
  return cache ? cuda::set_cache_limit(device, limit) : cuda::set_memory_limit(device, limit);
}

void gpu_reset_peak_memory(int device) { cuda::reset_peak_memory(device); }

void gpu_clear_cache(int device) { cuda::clear_cache(device); }

void* gpu_host_copy(const array::Data& data) {
  auto& state = cuda::state_of(data);
  std::lock_guard lock(state.mutex);
  if (state.host_copy.raw_ptr() == nullptr && state.bytes > 0) {
    auto host = allocator::malloc(state.bytes);
    cuda::use_device(state.device);
    cuda::check(cudaMemcpyAsync(host.raw_ptr(), state.device_ptr, state.bytes, cudaMemcpyDeviceToHost, state.home),
                "cudaMemcpyAsync (download)");
    cuda::check(cudaStreamSynchronize(state.home), "cudaStreamSynchronize");
    state.host_copy = host;
  }
  return state.host_copy.raw_ptr();
}

}  // namespace nuvec::detail
