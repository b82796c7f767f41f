#pragma once

// CUDA's status codes as nuvec errors: an allocation failure is out_of_memory (evaluation turns it into failed
// arrays), anything else an internal error naming the call.

#include <cuda_runtime_api.h>

#include <string>

namespace nuvec::cuda {

/// Throws unless `status` is cudaSuccess; `what` names the call.
void check(cudaError_t status, const char* what);

/// Throws for an error left by the last kernel launch on this thread.
void check_launch(const char* kernel);

}  // namespace nuvec::cuda
