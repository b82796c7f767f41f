#pragma once

// The TCP ring backend (MLX's "ring"): all-reduce as a reduce-scatter then an all-gather around the ring, half the
// data going each way at once; all_gather and sum_scatter the same passes; send and recv over the direct
// connection that every pair of ranks has. Sub-groups from split share their parent's connections.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nuvec/core/communicator.h"
#include "nuvec/distributed/tcp_mesh.h"

namespace nuvec::distributed::detail {

class RingCommunicator final : public nuvec::detail::Communicator {
 public:
  /// `members`: the mesh ranks of the group, in group order; `rank`: this process's position among them.
  RingCommunicator(std::shared_ptr<TcpMesh> mesh, std::vector<int> members, int rank);

  /// The world group from the host file: NUVEC_HOSTFILE or MLX_HOSTFILE (JSON, one list of "ip:port" per rank)
  /// and NUVEC_RANK or MLX_RANK. Throws when they are missing or wrong.
  static std::shared_ptr<RingCommunicator> from_environment();

  RingCommunicator(const RingCommunicator&) = delete;
  RingCommunicator& operator=(const RingCommunicator&) = delete;
  ~RingCommunicator() override;

  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return static_cast<int>(members_.size()); }
  [[nodiscard]] std::string backend() const override { return "ring"; }

  void all_reduce(const void* in, void* out, size_t count, Dtype dtype, nuvec::detail::ReduceOp op) override;
  void all_gather(const void* in, void* out, size_t bytes) override;
  void sum_scatter(const void* in, void* out, size_t count, Dtype dtype) override;
  void send(const void* data, size_t bytes, int dst) override;
  void recv(void* data, size_t bytes, int src) override;
  std::shared_ptr<nuvec::detail::Communicator> split(int color, int key) override;

 private:
  struct Pass;
  class SecondDirection;
  /// One pass, receiving each block into `incoming`.
  void run_pass(const Pass& pass, std::vector<char>& incoming) const;
  /// Runs `right` on this thread and, when given, `left` on the second direction's thread at the same time.
  void both_ways(const Pass& right, const Pass* left);
  /// Runs `here` on this thread and `there` on the second direction's thread at the same time; rethrows the first
  /// exception once both have ended.
  void in_parallel(const std::function<void()>& here, std::function<void()> there);
  /// all_reduce for two ranks: one exchange of the whole buffer (channel 0), or of each half (channels 0 and 1).
  void all_reduce_pair(char* data, size_t count, Dtype dtype, nuvec::detail::ReduceOp op);

  std::shared_ptr<TcpMesh> mesh_;
  std::vector<int> members_;
  int rank_;
  // Kept from call to call: a fresh page costs a fault on first touch (about 11 us on a virtual machine, more than
  // moving it over loopback), and a thread started per call up to milliseconds on a busy one.
  std::vector<char> incoming_[2];  // each direction's received block
  std::vector<char> work_;         // sum_scatter's copy of its input
  std::unique_ptr<SecondDirection> second_;  // started on first use
};

}  // namespace nuvec::distributed::detail
