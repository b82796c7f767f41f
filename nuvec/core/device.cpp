#include "nuvec/core/device.h"

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "nuvec/core/error.h"

namespace nuvec {

namespace {

// The CUDA backend is a separate issue; until it lands only the CPU exists.
Device& default_device_storage() {
  static Device device{Device::cpu};
  return device;
}

struct StreamTable {
  std::mutex mutex;
  std::vector<Stream> defaults{Stream{0, Device::cpu}};
  int next_index = 1;
};

StreamTable& streams() {
  static StreamTable table;
  return table;
}

}  // namespace

const Device& default_device() { return default_device_storage(); }

bool is_available(const Device& d) { return d.type == Device::cpu && d.index == 0; }

void set_default_device(const Device& d) {
  if (!is_available(d)) {
    throw error(ErrorKind::unsupported, "[set_default_device] Device is not available: this build has no GPU backend.");
  }
  default_device_storage() = d;
}

Stream default_stream(Device d) {
  if (!is_available(d)) {
    throw error(ErrorKind::unsupported, "[default_stream] Device is not available: this build has no GPU backend.");
  }
  std::lock_guard lock(streams().mutex);
  return streams().defaults.front();
}

void set_default_stream(Stream s) {
  std::lock_guard lock(streams().mutex);
  streams().defaults.front() = s;
}

Stream new_stream(Device d) {
  if (!is_available(d)) {
    throw error(ErrorKind::unsupported, "[new_stream] Device is not available: this build has no GPU backend.");
  }
  std::lock_guard lock(streams().mutex);
  return Stream{streams().next_index++, d};
}

Stream to_stream(StreamOrDevice s) {
  if (auto* stream = std::get_if<Stream>(&s)) {
    return *stream;
  }
  if (auto* device = std::get_if<Device>(&s)) {
    return default_stream(*device);
  }
  return default_stream(default_device());
}

}  // namespace nuvec
