#pragma once

// The group of one process used when no backend is running: collectives are copies (the ops layer returns their
// input before reaching here), and there is no peer to send to or receive from.

#include "nuvec/core/communicator.h"

namespace nuvec::distributed::detail {

class NoneCommunicator final : public nuvec::detail::Communicator {
 public:
  [[nodiscard]] int rank() const override { return 0; }
  [[nodiscard]] int size() const override { return 1; }
  [[nodiscard]] std::string backend() const override { return "none"; }

  void all_reduce(const void* in, void* out, size_t count, Dtype dtype, nuvec::detail::ReduceOp op) override;
  void all_gather(const void* in, void* out, size_t bytes) override;
  void sum_scatter(const void* in, void* out, size_t count, Dtype dtype) override;
  void send(const void* data, size_t bytes, int dst) override;
  void recv(void* data, size_t bytes, int src) override;
  std::shared_ptr<nuvec::detail::Communicator> split(int color, int key) override;
};

}  // namespace nuvec::distributed::detail
