#pragma once

#include <variant>

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
};

/// A queue of work on one device; work on one stream runs in order.
struct Stream {
  int index;
  Device device;
  friend bool operator==(const Stream&, const Stream&) = default;
};

/// Every op's trailing argument, as in MLX: empty means the default stream of the default device.
using StreamOrDevice = std::variant<std::monostate, Stream, Device>;

const Device& default_device();
void set_default_device(const Device& d);
/// Whether the device type exists in this build and machine (the GPU needs the CUDA backend).
bool is_available(const Device& d);

Stream default_stream(Device d);
void set_default_stream(Stream s);
Stream new_stream(Device d);
/// Resolves the trailing argument of an op.
Stream to_stream(StreamOrDevice s);

}  // namespace nuvec
