#pragma once

// The seam between the device-independent graph and the kernels. Each backend
// library defines these; a build without CUDA links a stand-in that reports
// the GPU as absent.

#include <vector>

#include "nuvec/core/array.h"

namespace nuvec::detail {

/// Computes `outputs` (all outputs of one node) from evaluated `inputs` on the CPU.
void eval_cpu(const Primitive& primitive, const std::vector<array>& inputs, std::vector<array>& outputs);

}  // namespace nuvec::detail
