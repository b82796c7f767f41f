#pragma once

// The seam between the device-independent graph and the kernels: evaluation
// routes each node by its stream's device. The CPU library defines eval_cpu;
// the GPU functions are defined by the CUDA library (nuvec/cuda), or by its
// stand-in in a build without the CUDA toolkit, where no GPU exists.

#include <cstddef>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "nuvec/core/array.h"

namespace nuvec::detail {

/// Computes `outputs` (all outputs of one node) from evaluated `inputs` on the CPU.
void eval_cpu(const Primitive& primitive, const std::vector<array>& inputs, std::vector<array>& outputs);
/// Computes the last of `nodes`, an element-wise chain (see eval_chain.h) listed inputs before readers, on the CPU
/// in one pass; the others get no buffers. Returns false, having done nothing, where their layouts do not allow it.
bool eval_chain_cpu(const std::vector<array>& nodes);
/// The same on a GPU stream.
void eval_gpu(const Primitive& primitive, const std::vector<array>& inputs, std::vector<array>& outputs,
              const Stream& stream);
/// How many GPUs this process can use (0 without a CUDA backend, driver or device).
int gpu_count();
/// device_info() of GPU `index` (< gpu_count()).
const std::unordered_map<std::string, std::variant<std::string, size_t>>& gpu_info(int index);
/// Waits until the work handed to GPU stream `s` has finished.
void gpu_synchronize(const Stream& s);
/// Waits until the GPU work that writes `data`'s buffer has finished.
void gpu_wait(const array::Data& data);
/// The host copy of a buffer that lives on a GPU, made on first use (after the work that writes it has finished)
/// and kept as long as the buffer; the same offsets address it.
void* gpu_host_copy(const array::Data& data);

/// MLX's memory figures of GPU `device`'s allocator (the memory API reports them while a GPU is the default device).
enum class GpuMemory { active, peak, cache, memory_limit };
size_t gpu_memory(int device, GpuMemory what);
/// Sets GPU `device`'s memory limit (or, with `cache`, its cache limit); returns the previous value.
size_t gpu_set_limit(int device, bool cache, size_t limit);
void gpu_reset_peak_memory(int device);
void gpu_clear_cache(int device);

/// The node's outputs computed by the backend of `stream`'s device.
void eval_on(const Stream& stream, const Primitive& primitive, const std::vector<array>& inputs,
             std::vector<array>& outputs);

}  // namespace nuvec::detail
