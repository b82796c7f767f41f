#pragma once

// Arrays' buffers on the GPU. A GPU buffer belongs to one stream, its home: the work that writes it runs there, and
// it is freed there after the work of every other stream that read it (events order those streams). Host data read
// by a GPU kernel is uploaded once, into a device copy kept as long as the host buffer; a GPU buffer read on the
// host is downloaded once, into a host copy kept as long as the GPU buffer (see array::raw_data).

#include <cuda_runtime_api.h>

#include <cstddef>

#include "nuvec/core/array.h"

namespace nuvec::cuda {

/// Gives `out` a fresh row-contiguous buffer on `s`'s device for the work on `s` to write. Throws out_of_memory
/// (evaluation then fails the array) when the device memory or the memory limit does not allow it.
void allocate_output(array& out, const Stream& s);

/// An array of `shape` with a fresh row-contiguous buffer on `s`'s device, for a rule's intermediate results.
array gpu_array(const Shape& shape, Dtype dtype, const Stream& s);

/// The device address of `a`'s first element for work on `s`. A GPU buffer written on another stream is first made
/// ready for `s` (an event); host data is uploaded on first use.
void* device_pointer(const array& a, const Stream& s);
template <class T>
T* device_pointer(const array& a, const Stream& s) {
  return static_cast<T*>(device_pointer(a, s));
}

/// Makes `out` take over `in`'s GPU buffer when only the running node holds `in`, no view shares the buffer, it has
/// `out`'s size and lives on `s`'s device and stream; returns whether it did (the host copy, now stale, goes).
bool donate(const array& in, array& out, const Stream& s);

/// Device memory in use by arrays, the most since the last reset, held by the pool for reuse, and the limits, in
/// bytes, for GPU `device`.
size_t active_memory(int device);
size_t peak_memory(int device);
void reset_peak_memory(int device);
size_t cache_memory(int device);
size_t memory_limit(int device);
/// Sets the limit that active memory may not pass (default: the device's memory); returns the previous one.
size_t set_memory_limit(int device, size_t limit);
/// Sets how much freed memory the pool may keep (default: all of it); returns the previous value.
size_t set_cache_limit(int device, size_t limit);
/// Returns the pool's free memory to the device.
void clear_cache(int device);

}  // namespace nuvec::cuda
