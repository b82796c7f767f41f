#pragma once

// CUDA source becomes kernels at run time: NVRTC compiles it for the GPU at hand (sm_XY of its compute capability)
// with the prelude's headers, the cubin is cached in memory and on disk (beside compile's CPU kernels, keyed by the
// source, the NVRTC version and the architecture), and the runtime loads it as a library.

#include <cuda_runtime_api.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace nuvec::cuda {

/// Compiles `source` to a cubin for compute capability `arch` (90 for sm_90); throws with NVRTC's log on a failure.
/// Needs no GPU. The source may include "nuvec/cuda/prelude.cuh" (element types, numpy's scalar math, the math
/// builtins) and the headers it includes.
std::string compile_cubin(const std::string& source, int arch);

/// Kernel `name` (declared extern "C") of `source` compiled for `device`'s architecture, compiled on first use.
cudaKernel_t kernel(const std::string& source, const char* name, int device);

/// Launches `k` with its arguments (pointers to each, in order) on `stream`; throws on a launch error.
void launch(cudaKernel_t k, dim3 grid, dim3 block, void** args, size_t shared_bytes, cudaStream_t stream);

template <class... Args>
void launch(cudaKernel_t k, dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream, Args&... args) {
  void* pointers[] = {static_cast<void*>(&args)..., nullptr};
  launch(k, grid, block, pointers, shared_bytes, stream);
}

/// Blocks for a grid-stride loop over n elements: enough to fill the device several times over, at most enough
/// for one element per thread.
unsigned grid_size(int64_t n, unsigned block, int device);

}  // namespace nuvec::cuda
