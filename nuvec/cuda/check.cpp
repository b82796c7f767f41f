#include "nuvec/cuda/check.h"

#include "nuvec/core/error.h"

namespace nuvec::cuda {

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) [[likely]] {
    return;
  }
  const std::string message = std::string("[cuda] ") + what + ": " + cudaGetErrorName(status) + " (" +
                              cudaGetErrorString(status) + ").";
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it so that later calls are not blamed
    throw_error(ErrorKind::out_of_memory, message);
  }
  throw_error(ErrorKind::internal, message);
}

void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

}  // namespace nuvec::cuda
