#pragma once

// The TCP connections of the ring backend: every pair of ranks joined by a few connections, so the ring runs in both
// directions at once (one connection each way) and send/recv reach any rank. Sockets are non-blocking and every
// wait is a poll with the timeout, so a dead peer or a silent one ends in an error, never a hang; the first failure
// closes every connection, so the peers' pending waits end at once too.

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace nuvec::distributed::detail {

class TcpMesh {
 public:
  /// Connections per pair of ranks: one per ring direction.
  static constexpr int connections = 2;

  /// Listens on addresses[rank] ("host:port"), connects to the lower ranks and accepts the higher ones.
  TcpMesh(int rank, const std::vector<std::string>& addresses, std::chrono::milliseconds timeout);
  TcpMesh(const TcpMesh&) = delete;
  TcpMesh& operator=(const TcpMesh&) = delete;
  ~TcpMesh();

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return static_cast<int>(fds_.size()); }

  /// Sends `out_bytes` to rank `to` while receiving `in_bytes` from rank `from` over connection `channel` of each
  /// pair (a rank of -1 skips that side). `what` names the operation in errors.
  void exchange(int to, const void* out, size_t out_bytes, int from, void* in, size_t in_bytes, int channel,
                std::string_view what);

  /// Throws the group's first failure, if any.
  void check(std::string_view what) const;

 private:
  [[noreturn]] void fail(std::string_view what, const std::string& why);

  int rank_;
  std::chrono::milliseconds timeout_;
  std::vector<std::vector<int>> fds_;  // [peer][channel]; -1 for this rank
  std::atomic<bool> failed_{false};
  mutable std::mutex mutex_;
  std::string failure_;
};

}  // namespace nuvec::distributed::detail
