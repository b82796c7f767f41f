#pragma once

// The GPUs this process can use and the CUDA stream behind each nuvec GPU stream.

#include <cuda_runtime_api.h>

#include "nuvec/core/device.h"

namespace nuvec::cuda {

/// The device's properties (read once).
const cudaDeviceProp& properties(int device);

/// The CUDA stream of nuvec stream `s` (made on first use, non-blocking), with `s`'s device made current on the
/// calling thread.
cudaStream_t stream_handle(const Stream& s);

/// Makes `device` the calling thread's current CUDA device.
void use_device(int device);

}  // namespace nuvec::cuda
