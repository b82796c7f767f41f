#include "nuvec/core/device.h"

#include <sys/utsname.h>

#include <atomic>
#include <cstdlib>
#include <cstdint>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "nuvec/core/backend.h"
#include "nuvec/core/error.h"
#include "nuvec/core/eval.h"
#include "nuvec/core/op_prefix.h"
#include "nuvec/core/ops.h"

namespace nuvec {

namespace {

// The GPU when one is usable, as MLX; NUVEC_DEFAULT_DEVICE=cpu|gpu chooses otherwise.
Device initial_default_device() {
  const char* chosen = std::getenv("NUVEC_DEFAULT_DEVICE");
  if (chosen != nullptr && std::string_view(chosen) == "cpu") {
    return Device::cpu;
  }
  if (detail::gpu_count() > 0) {
    return Device::gpu;
  }
  if (chosen != nullptr && std::string_view(chosen) == "gpu") {
    throw_error(ErrorKind::unsupported, "[default_device] NUVEC_DEFAULT_DEVICE=gpu, but no GPU is usable.");
  }
  return Device::cpu;
}

Device& default_device_storage() {
  static Device device = initial_default_device();
  return device;
}

struct StreamTable {
  std::mutex mutex;
  std::vector<Stream> created{Stream{0, Device::cpu}};
  int next_index = 1;
};

StreamTable& streams() {
  static StreamTable table;
  return table;
}

// The default stream packed into one word, so that every op reads it without a lock: the stream's index in the high
// half, the device type in the top bit of the low half and the device's index below it.
uint64_t pack(const Stream& s) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(s.index)) << 32) |
         (static_cast<uint64_t>(s.device.type == Device::gpu) << 31) | static_cast<uint32_t>(s.device.index);
}

Stream unpack(uint64_t word) {
  auto device_index = static_cast<int>(word & 0x7fffffffU);
  auto type = (word >> 31 & 1U) != 0 ? Device::gpu : Device::cpu;
  return Stream{static_cast<int>(static_cast<uint32_t>(word >> 32)), Device(type, device_index)};
}

std::atomic<uint64_t>& cpu_default_stream_word() {
  static std::atomic<uint64_t> word{pack(Stream{0, Device::cpu})};
  return word;
}

/// Made on first use: only a machine with a GPU gets here.
std::atomic<uint64_t>& gpu_default_stream_word() {
  static std::atomic<uint64_t> word{pack(new_stream(Device::gpu))};
  return word;
}

/// The default stream of each device type.
std::atomic<uint64_t>& default_stream_word(Device::DeviceType type) {
  return type == Device::cpu ? cpu_default_stream_word() : gpu_default_stream_word();
}

/// The calling thread's streams for each thread-local stream (by its index).
std::map<int, Stream>& thread_streams() {
  thread_local std::map<int, Stream> table;
  return table;
}

void check_available(const Device& d, const char* op) {
  if (!is_available(d)) {
    throw_error(ErrorKind::unsupported,
                detail::op_prefix(op).append(d.type == Device::gpu && detail::gpu_count() > 0
                                                 ? "No GPU of index " + std::to_string(d.index) + "."
                                                 : std::string("Device is not available: no GPU is usable (a build "
                                                               "without CUDA, or no driver or device).")));
  }
}

std::string cpu_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.starts_with("model name")) {
      if (auto colon = line.find(": "); colon != std::string::npos) {
        return line.substr(colon + 2);
      }
    }
  }
  return "cpu";
}

std::string cpu_architecture() {
  utsname names{};
  return uname(&names) == 0 ? std::string(names.machine) : std::string("unknown");
}

}  // namespace

const Device& default_device() { return default_device_storage(); }

bool is_available(const Device& d) {
  return d.type == Device::cpu ? d.index == 0 : d.index >= 0 && d.index < detail::gpu_count();
}

int device_count(Device::DeviceType type) { return type == Device::cpu ? 1 : detail::gpu_count(); }

const std::unordered_map<std::string, std::variant<std::string, size_t>>& device_info(const Device& d) {
  check_available(d, "device_info");
  if (d.type == Device::gpu) {
    return detail::gpu_info(d.index);
  }
  static const std::unordered_map<std::string, std::variant<std::string, size_t>> info{
      {"device_name", cpu_name()}, {"architecture", cpu_architecture()}};
  return info;
}

void set_default_device(const Device& d) {
  check_available(d, "set_default_device");
  default_device_storage() = d;
}

Stream default_stream(Device d) {
  if (d.type == Device::cpu && d.index == 0) [[likely]] {
    return unpack(cpu_default_stream_word().load(std::memory_order_acquire));
  }
  check_available(d, "default_stream");
  return unpack(default_stream_word(d.type).load(std::memory_order_acquire));
}

void set_default_stream(Stream s) {
  check_available(s.device, "set_default_stream");
  default_stream_word(s.device.type).store(pack(s), std::memory_order_release);
}

Stream new_stream(Device d) {
  check_available(d, "new_stream");
  std::lock_guard lock(streams().mutex);
  Stream s{streams().next_index++, d};
  streams().created.push_back(s);
  return s;
}

Stream new_thread_unsafe_stream(Device d) { return new_stream(d); }

ThreadLocalStream new_thread_local_stream(Device d) {
  check_available(d, "new_thread_local_stream");
  std::lock_guard lock(streams().mutex);
  return {streams().next_index++, d};
}

Stream stream_from_thread_local_stream(ThreadLocalStream tls) {
  auto& table = thread_streams();
  auto found = table.find(tls.index);
  if (found == table.end()) {
    found = table.emplace(tls.index, new_stream(tls.device)).first;
  }
  return found->second;
}

std::vector<Stream> get_streams() {
  std::lock_guard lock(streams().mutex);
  return streams().created;
}

namespace {

/// Waits until the work handed to async_eval so far has been dispatched (and, on the CPU, computed).
void wait_for_async_eval() {
  // The async worker runs its queue in order, so a marker handed to it after the pending work is computed last.
  auto marker = add(array(0), array(0), Device::cpu);
  async_eval(marker);
  while (marker.status() == Status::scheduled) {
    std::this_thread::yield();
  }
}

}  // namespace

void synchronize() {
  wait_for_async_eval();
  for (const auto& s : get_streams()) {
    if (s.device.type == Device::gpu) {
      detail::gpu_synchronize(s);
    }
  }
}
void synchronize(Stream s) {
  check_available(s.device, "synchronize");
  wait_for_async_eval();
  if (s.device.type == Device::gpu) {
    detail::gpu_synchronize(s);
  }
}
void synchronize(ThreadLocalStream s) { synchronize(stream_from_thread_local_stream(s)); }

void clear_streams() { thread_streams().clear(); }

std::ostream& operator<<(std::ostream& os, const Device& d) {
  return os << "Device(" << (d.type == Device::cpu ? "cpu" : "gpu") << ", " << d.index << ")";
}

std::ostream& operator<<(std::ostream& os, const Stream& s) {
  return os << "Stream(" << s.device << ", " << s.index << ")";
}

Stream to_stream(StreamOrDevice s) { return to_stream(std::move(s), default_device()); }

Stream to_stream(StreamOrDevice s, Device default_) {
  if (auto* stream = std::get_if<Stream>(&s)) {
    return *stream;
  }
  if (auto* tls = std::get_if<ThreadLocalStream>(&s)) {
    return stream_from_thread_local_stream(*tls);
  }
  if (auto* device = std::get_if<Device>(&s)) {
    return default_stream(*device);
  }
  if (auto* type = std::get_if<Device::DeviceType>(&s)) {
    return default_stream(Device(*type));
  }
  return default_stream(default_);
}

StreamContext::StreamContext(StreamOrDevice s) : previous_(default_stream(default_device())) {
  if (std::holds_alternative<std::monostate>(s)) {
    throw_invalid("[StreamContext] Invalid argument, please specify a stream or device.");
  }
  auto stream = to_stream(std::move(s));
  set_default_device(stream.device);
  set_default_stream(stream);
}

StreamContext::~StreamContext() {
  set_default_device(previous_.device);
  set_default_stream(previous_);
}

}  // namespace nuvec
