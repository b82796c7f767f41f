#include "nuvec/distributed/ring.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "nuvec/core/error.h"
#include "nuvec/distributed/reduce.h"
#include "nuvec/distributed/timeout.h"

namespace nuvec::distributed::detail {

using nuvec::detail::ReduceOp;

namespace {

/// Below this, one direction: the second thread's hand-over costs more than it saves (256 KiB on loopback, 2 ranks:
/// 0.12-0.18 ms one way against 0.22 both ways).
constexpr size_t both_ways_bytes = size_t{1} << 20;

/// Grows `buffer` to at least `bytes`, never shrinking it, so that its pages stay touched.
char* at_least(std::vector<char>& buffer, size_t bytes) {
  if (buffer.size() < bytes) {
    buffer.resize(bytes);
  }
  return buffer.data();
}

const char* environment(const char* nuvec_name, const char* mlx_name) {
  const char* value = std::getenv(nuvec_name);
  return value != nullptr ? value : std::getenv(mlx_name);
}

}  // namespace

/// One trip around the ring in one direction over blocks indexed by group rank: a reduce-scatter (rank r ends with
/// the reduction of block r), an all-gather (each rank starts with its own block), or both in turn.
struct RingCommunicator::Pass {
  int direction;  // +1: send to the next rank; -1: to the previous one
  std::function<std::pair<char*, size_t>(int)> block;
  bool reduce_scatter;
  bool all_gather;
  Dtype dtype = float32;
  ReduceOp op = ReduceOp::sum;
  const char* what;
};

/// The thread that runs a pass's second direction, kept for the communicator's life.
class RingCommunicator::SecondDirection {
 public:
  SecondDirection() : thread_([this] { serve(); }) {}
  SecondDirection(const SecondDirection&) = delete;
  SecondDirection& operator=(const SecondDirection&) = delete;
  ~SecondDirection() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  void start(std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      task_ = std::move(task);
      done_ = false;
    }
    wake_.notify_all();
  }

  /// Waits for the task started last; its exception, if it threw.
  std::exception_ptr finish() {
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [this] { return done_; });
    return std::exchange(error_, nullptr);
  }

 private:
  void serve() {
    std::unique_lock lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return stop_ || task_ != nullptr; });
      if (stop_) {
        return;
      }
      auto task = std::exchange(task_, nullptr);
      lock.unlock();
      std::exception_ptr error;
      try {
        task();
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      error_ = error;
      done_ = true;
      wake_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::function<void()> task_;
  std::exception_ptr error_;
  bool done_ = true;
  bool stop_ = false;
  std::thread thread_;  // last: it starts once the members above exist
};

RingCommunicator::RingCommunicator(std::shared_ptr<TcpMesh> mesh, std::vector<int> members, int rank)
    : mesh_(std::move(mesh)), members_(std::move(members)), rank_(rank) {}

RingCommunicator::~RingCommunicator() = default;

std::shared_ptr<RingCommunicator> RingCommunicator::from_environment() {
  const char* hostfile = environment("NUVEC_HOSTFILE", "MLX_HOSTFILE");
  const char* rank_text = environment("NUVEC_RANK", "MLX_RANK");
  if (hostfile == nullptr || rank_text == nullptr) {
    throw_invalid("[distributed] The ring backend needs NUVEC_HOSTFILE (or MLX_HOSTFILE) and NUVEC_RANK (or "
                  "MLX_RANK); nuvec launch sets them.");
  }
  std::ifstream file(hostfile);
  if (!file) {
    throw_error(ErrorKind::io, std::string("[distributed] Cannot read the host file ").append(hostfile).append("."));
  }
  std::vector<std::string> addresses;
  try {
    for (const auto& hosts : nlohmann::json::parse(file)) {
      // A rank may list several addresses; its first is where it listens.
      addresses.push_back(hosts.is_array() ? hosts.at(0).get<std::string>() : hosts.get<std::string>());
    }
  } catch (const nlohmann::json::exception& e) {
    throw_invalid(std::string("[distributed] The host file ").append(hostfile).append(
        " must be a JSON list with one list of \"ip:port\" per rank: ").append(e.what()));
  }
  char* end = nullptr;
  const long rank = std::strtol(rank_text, &end, 10);
  if (*end != '\0' || rank < 0 || rank >= static_cast<long>(addresses.size())) {
    throw_invalid(std::string("[distributed] The rank must be in [0, ").append(std::to_string(addresses.size()))
                      .append("); got '").append(rank_text).append("'."));
  }
  auto mesh = std::make_shared<TcpMesh>(static_cast<int>(rank), addresses, timeout());
  std::vector<int> members(addresses.size());
  for (size_t i = 0; i < members.size(); ++i) {
    members[i] = static_cast<int>(i);
  }
  return std::make_shared<RingCommunicator>(std::move(mesh), std::move(members), static_cast<int>(rank));
}

void RingCommunicator::run_pass(const Pass& pass, std::vector<char>& incoming) const {
  const int n = size();
  const auto mod = [n](int i) { return ((i % n) + n) % n; };
  // Positions along the direction of travel; a block index is the group rank that owns it.
  const auto group_rank = [&](int position) { return pass.direction > 0 ? mod(position) : mod(n - mod(position)); };
  const int position = group_rank(rank_);
  const int to = members_[static_cast<size_t>(group_rank(position + 1))];
  const int from = members_[static_cast<size_t>(group_rank(position - 1))];
  const int channel = pass.direction > 0 ? 0 : 1;
  if (pass.reduce_scatter) {
    for (int step = 0; step < n - 1; ++step) {
      auto [out, out_bytes] = pass.block(group_rank(position - step - 1));
      auto [acc, acc_bytes] = pass.block(group_rank(position - step - 2));
      char* received = at_least(incoming, acc_bytes);
      mesh_->exchange(to, out, out_bytes, from, received, acc_bytes, channel, pass.what);
      reduce_into(acc, received, acc_bytes / pass.dtype.size, pass.dtype, pass.op);
    }
  }
  if (pass.all_gather) {
    for (int step = 0; step < n - 1; ++step) {
      auto [out, out_bytes] = pass.block(group_rank(position - step));
      auto [in, in_bytes] = pass.block(group_rank(position - step - 1));
      mesh_->exchange(to, out, out_bytes, from, in, in_bytes, channel, pass.what);
    }
  }
}

void RingCommunicator::both_ways(const Pass& right, const Pass* left) {
  if (left == nullptr) {
    run_pass(right, incoming_[0]);
    return;
  }
  in_parallel([&] { run_pass(right, incoming_[0]); }, [&] { run_pass(*left, incoming_[1]); });
}

void RingCommunicator::in_parallel(const std::function<void()>& here, std::function<void()> there) {
  if (!second_) {
    second_ = std::make_unique<SecondDirection>();
  }
  second_->start(std::move(there));
  std::exception_ptr here_error;
  try {
    here();
  } catch (...) {
    here_error = std::current_exception();
  }
  const auto there_error = second_->finish();
  if (here_error || there_error) {
    std::rethrow_exception(here_error ? here_error : there_error);
  }
}

void RingCommunicator::all_reduce_pair(char* data, size_t count, Dtype dtype, ReduceOp op) {
  // Each rank sends the other its whole buffer and reduces: one step where reduce-scatter and all-gather take two,
  // with the same bytes. Both reduce with rank 0's values first, so their results are the same bits.
  const int peer = members_[static_cast<size_t>(1 - rank_)];
  const auto exchange = [&, peer](size_t begin, size_t length, int channel, std::vector<char>& incoming) {
    char* mine = data + begin * dtype.size;
    char* theirs = at_least(incoming, length * dtype.size);
    mesh_->exchange(peer, mine, length * dtype.size, peer, theirs, length * dtype.size, channel, "all-reduce");
    reduce(mine, rank_ == 0 ? mine : theirs, rank_ == 0 ? theirs : mine, length, dtype, op);
  };
  if (count * dtype.size < both_ways_bytes) {
    exchange(0, count, 0, incoming_[0]);
    return;
  }
  const size_t half = count / 2;
  in_parallel([&] { exchange(0, half, 0, incoming_[0]); }, [&] { exchange(half, count - half, 1, incoming_[1]); });
}

void RingCommunicator::all_reduce(const void* in, void* out, size_t count, Dtype dtype, ReduceOp op) {
  const size_t item = dtype.size;
  if (in != out) {
    std::memcpy(out, in, count * item);
  }
  const auto n = static_cast<size_t>(size());
  if (n == 1) {
    return;
  }
  auto* data = static_cast<char*>(out);
  if (n == 2) {
    all_reduce_pair(data, count, dtype, op);
    return;
  }
  // Elements [base, base + length) in n nearly equal blocks.
  const auto blocks = [=](size_t base, size_t length) {
    return [=](int j) {
      const size_t begin = base + length * static_cast<size_t>(j) / n;
      const size_t end = base + length * static_cast<size_t>(j + 1) / n;
      return std::pair<char*, size_t>{data + begin * item, (end - begin) * item};
    };
  };
  if (count * item < both_ways_bytes) {
    both_ways(Pass{1, blocks(0, count), true, true, dtype, op, "all-reduce"}, nullptr);
    return;
  }
  const size_t half = count / 2;
  const Pass left{-1, blocks(half, count - half), true, true, dtype, op, "all-reduce"};
  both_ways(Pass{1, blocks(0, half), true, true, dtype, op, "all-reduce"}, &left);
}

void RingCommunicator::all_gather(const void* in, void* out, size_t bytes) {
  auto* data = static_cast<char*>(out);
  std::memcpy(data + static_cast<size_t>(rank_) * bytes, in, bytes);
  if (size() == 1) {
    return;
  }
  const auto part = [=](size_t offset, size_t length) {
    return [=](int j) { return std::pair<char*, size_t>{data + static_cast<size_t>(j) * bytes + offset, length}; };
  };
  if (bytes * static_cast<size_t>(size()) < both_ways_bytes) {
    both_ways(Pass{1, part(0, bytes), false, true, uint8, ReduceOp::sum, "all-gather"}, nullptr);
    return;
  }
  const size_t half = bytes / 2;
  const Pass left{-1, part(half, bytes - half), false, true, uint8, ReduceOp::sum, "all-gather"};
  both_ways(Pass{1, part(0, half), false, true, uint8, ReduceOp::sum, "all-gather"}, &left);
}

void RingCommunicator::sum_scatter(const void* in, void* out, size_t count, Dtype dtype) {
  const size_t item = dtype.size;
  const size_t block_bytes = count * item;
  // The passes reduce in place, and the input stays the caller's.
  char* data = at_least(work_, block_bytes * members_.size());
  std::memcpy(data, in, block_bytes * members_.size());
  const auto part = [=](size_t first, size_t length) {
    return [=](int j) {
      return std::pair<char*, size_t>{data + static_cast<size_t>(j) * block_bytes + first * item, length * item};
    };
  };
  if (block_bytes * members_.size() < both_ways_bytes) {
    both_ways(Pass{1, part(0, count), true, false, dtype, ReduceOp::sum, "sum-scatter"}, nullptr);
  } else {
    const size_t half = count / 2;
    const Pass left{-1, part(half, count - half), true, false, dtype, ReduceOp::sum, "sum-scatter"};
    both_ways(Pass{1, part(0, half), true, false, dtype, ReduceOp::sum, "sum-scatter"}, &left);
  }
  std::memcpy(out, data + static_cast<size_t>(rank_) * block_bytes, block_bytes);
}

void RingCommunicator::send(const void* data, size_t bytes, int dst) {
  mesh_->exchange(members_[static_cast<size_t>(dst)], data, bytes, -1, nullptr, 0, 0, "send");
}

void RingCommunicator::recv(void* data, size_t bytes, int src) {
  mesh_->exchange(-1, nullptr, 0, members_[static_cast<size_t>(src)], data, bytes, 0, "recv");
}

std::shared_ptr<nuvec::detail::Communicator> RingCommunicator::split(int color, int key) {
  const std::array<int32_t, 2> mine{color, key < 0 ? rank_ : key};
  std::vector<std::array<int32_t, 2>> all(members_.size());
  all_gather(mine.data(), all.data(), sizeof(mine));
  std::vector<int> order;
  for (int r = 0; r < size(); ++r) {
    if (all[static_cast<size_t>(r)][0] == color) {
      order.push_back(r);
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return all[static_cast<size_t>(a)][1] < all[static_cast<size_t>(b)][1]; });
  std::vector<int> members;
  int rank = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    members.push_back(members_[static_cast<size_t>(order[i])]);
    rank = order[i] == rank_ ? static_cast<int>(i) : rank;
  }
  return std::make_shared<RingCommunicator>(mesh_, std::move(members), rank);
}

}  // namespace nuvec::distributed::detail
