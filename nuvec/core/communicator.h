#pragma once

// The interface every distributed backend implements (none, MPI, TCP ring). It lives in core because the
// Collective primitive holds a group and the CPU kernel calls it; nuvec::distributed provides the backends. Buffers
// are dense; a failure (a peer gone, a dropped connection, a timeout) throws a nuvec::error naming this rank, the
// operation and the peer, and leaves the group unusable so that its other members fail fast too.

#include <cstddef>
#include <memory>
#include <string>

#include "nuvec/core/dtype.h"
#include "nuvec/core/primitives.h"

namespace nuvec::detail {

enum class ReduceOp { sum, max, min };

/// The op's name as the user calls it, for errors.
constexpr std::string_view collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_sum:
      return "all_sum";
    case CollectiveKind::all_max:
      return "all_max";
    case CollectiveKind::all_min:
      return "all_min";
    case CollectiveKind::all_gather:
      return "all_gather";
    case CollectiveKind::sum_scatter:
      return "sum_scatter";
    case CollectiveKind::send:
      return "send";
    case CollectiveKind::recv:
      return "recv";
  }
  return "collective";
}

class Communicator {
 public:
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  virtual ~Communicator() = default;

  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  /// "none", "mpi" or "ring".
  [[nodiscard]] virtual std::string backend() const = 0;

  /// out = the element-wise reduction of every rank's `in` (`count` elements of `dtype`); in may equal out.
  virtual void all_reduce(const void* in, void* out, size_t count, Dtype dtype, ReduceOp op) = 0;
  /// out = every rank's `bytes` bytes, in rank order.
  virtual void all_gather(const void* in, void* out, size_t bytes) = 0;
  /// out = block `rank()` (of `count` elements) of the sum over ranks of `in` (size() blocks).
  virtual void sum_scatter(const void* in, void* out, size_t count, Dtype dtype) = 0;
  virtual void send(const void* data, size_t bytes, int dst) = 0;
  virtual void recv(void* data, size_t bytes, int src) = 0;
  /// The ranks with the same color, ordered by key (then by rank); every rank calls it.
  virtual std::shared_ptr<Communicator> split(int color, int key) = 0;
};

}  // namespace nuvec::detail
