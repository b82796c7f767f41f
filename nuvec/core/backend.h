#pragma once

// The seam between the device-independent graph and the kernels: evaluation
// routes each node by its stream's device. The CPU library defines eval_cpu;
// the GPU's is gpu_absent.cpp's stand-in, which fails every node with "no GPU
// backend in this build", until a CUDA backend replaces it.

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
/// The node's outputs computed by the backend of `stream`'s device.
void eval_on(const Stream& stream, const Primitive& primitive, const std::vector<array>& inputs,
             std::vector<array>& outputs);

}  // namespace nuvec::detail
