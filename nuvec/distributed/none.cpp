#include "nuvec/distributed/none.h"

#include <cstring>

#include "nuvec/core/error.h"

namespace nuvec::distributed::detail {

void NoneCommunicator::all_reduce(const void* in, void* out, size_t count, Dtype dtype, nuvec::detail::ReduceOp) {
  std::memmove(out, in, count * dtype.size);
}
void NoneCommunicator::all_gather(const void* in, void* out, size_t bytes) { std::memmove(out, in, bytes); }
void NoneCommunicator::sum_scatter(const void* in, void* out, size_t count, Dtype dtype) {
  std::memmove(out, in, count * dtype.size);
}
void NoneCommunicator::send(const void*, size_t, int dst) {
  throw_invalid("[send] A group of one process has no rank " + std::to_string(dst) + " to send to.");
}
void NoneCommunicator::recv(void*, size_t, int src) {
  throw_invalid("[recv] A group of one process has no rank " + std::to_string(src) + " to receive from.");
}
std::shared_ptr<nuvec::detail::Communicator> NoneCommunicator::split(int, int) {
  return std::make_shared<NoneCommunicator>();
}

}  // namespace nuvec::distributed::detail
