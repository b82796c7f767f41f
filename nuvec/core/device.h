#pragma once

#include <ostream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>

namespace nuvec {

/// Where arrays live and kernels run.
struct Device {
  enum class DeviceType { cpu, gpu };
  static constexpr DeviceType cpu = DeviceType::cpu;
  static constexpr DeviceType gpu = DeviceType::gpu;

  constexpr Device(DeviceType t, int i = 0) : type(t), index(i) {}  // NOLINT(google-explicit-constructor)

  DeviceType type;
  int index;
  friend bool operator==(const Device&, const Device&) = default;
  /// An order for ordered containers, as MLX's: by type, then index.
  friend bool operator<(const Device& a, const Device& b) {
    return std::tie(a.type, a.index) < std::tie(b.type, b.index);
  }
};
inline bool operator==(const Device& device, Device::DeviceType type) { return device.type == type; }

/// A queue of work on one device; work on one stream runs in order.
struct Stream {
  int index;
  Device device;
  friend bool operator==(const Stream&, const Stream&) = default;
  /// An order for ordered containers, as MLX's: by device, then index.
  friend bool operator<(const Stream& a, const Stream& b) {
    return std::tie(a.device, a.index) < std::tie(b.device, b.index);
  }
};

/// A stream that stands for one stream per thread: each thread that uses it gets its own (MLX's).
struct ThreadLocalStream : Stream {
  ThreadLocalStream(int index, Device device) : Stream{index, device} {}
};

/// "Device(cpu, 0)" and "Stream(Device(cpu, 0), 1)", as MLX prints them.
std::ostream& operator<<(std::ostream& os, const Device& d);
std::ostream& operator<<(std::ostream& os, const Stream& s);

/// Every op's trailing argument, as in MLX: empty means the default stream of the default device.
using StreamOrDevice = std::variant<std::monostate, Stream, ThreadLocalStream, Device, Device::DeviceType>;

const Device& default_device();
void set_default_device(const Device& d);
/// Whether the device type exists in this build and machine (the GPU needs the CUDA backend).
bool is_available(const Device& d);
/// How many devices of the type there are (1 CPU; no GPU without the CUDA backend).
int device_count(Device::DeviceType type);
/// Facts about a device ("device_name", "architecture", memory sizes), as MLX's.
const std::unordered_map<std::string, std::variant<std::string, size_t>>& device_info(
    const Device& d = default_device());

Stream default_stream(Device d);
void set_default_stream(Stream s);
Stream new_stream(Device d);
/// As new_stream: nuvec's streams are safe to use from any thread.
Stream new_thread_unsafe_stream(Device d);
/// A stream that resolves to a separate stream on each thread that uses it.
ThreadLocalStream new_thread_local_stream(Device d);
/// The calling thread's stream for `tls` (created on first use).
Stream stream_from_thread_local_stream(ThreadLocalStream tls);
/// Every stream created so far, the default one first.
std::vector<Stream> get_streams();
/// Waits until the work handed to async_eval so far (on any stream: nuvec runs it in order) has finished.
void synchronize();
void synchronize(Stream s);
void synchronize(ThreadLocalStream s);
/// Forgets the streams the calling thread created for thread-local streams.
void clear_streams();

/// Resolves the trailing argument of an op (`default_` when it names nothing).
Stream to_stream(StreamOrDevice s);
Stream to_stream(StreamOrDevice s, Device default_);

/// Makes a stream (or a device's default stream) the default for the lifetime of the object, as MLX's.
struct StreamContext {
  StreamContext(StreamOrDevice s);  // NOLINT(google-explicit-constructor): MLX's
  ~StreamContext();
  StreamContext(const StreamContext&) = delete;
  StreamContext& operator=(const StreamContext&) = delete;

 private:
  Stream previous_;
};

}  // namespace nuvec
