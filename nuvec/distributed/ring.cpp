#include "nuvec/distributed/ring.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "nuvec/core/error.h"
#include "nuvec/distributed/reduce.h"
#include "nuvec/distributed/timeout.h"

namespace nuvec::distributed::detail {

using nuvec::detail::ReduceOp;

namespace {

/// Below this, one direction: a second thread costs more than it saves.
constexpr size_t both_ways_bytes = size_t{256} << 10;

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

RingCommunicator::RingCommunicator(std::shared_ptr<TcpMesh> mesh, std::vector<int> members, int rank)
    : mesh_(std::move(mesh)), members_(std::move(members)), rank_(rank) {}

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

void RingCommunicator::run_pass(const Pass& pass) const {
  const int n = size();
  const auto mod = [n](int i) { return ((i % n) + n) % n; };
  // Positions along the direction of travel; a block index is the group rank that owns it.
  const auto group_rank = [&](int position) { return pass.direction > 0 ? mod(position) : mod(n - mod(position)); };
  const int position = group_rank(rank_);
  const int to = members_[static_cast<size_t>(group_rank(position + 1))];
  const int from = members_[static_cast<size_t>(group_rank(position - 1))];
  const int channel = pass.direction > 0 ? 0 : 1;
  std::vector<char> incoming;
  if (pass.reduce_scatter) {
    for (int step = 0; step < n - 1; ++step) {
      auto [out, out_bytes] = pass.block(group_rank(position - step - 1));
      auto [acc, acc_bytes] = pass.block(group_rank(position - step - 2));
      incoming.resize(acc_bytes);
      mesh_->exchange(to, out, out_bytes, from, incoming.data(), acc_bytes, channel, pass.what);
      reduce_into(acc, incoming.data(), acc_bytes / pass.dtype.size, pass.dtype, pass.op);
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

void RingCommunicator::both_ways(const Pass& right, const Pass* left) const {
  if (left == nullptr) {
    run_pass(right);
    return;
  }
  std::exception_ptr left_error;
  std::thread other([&] {
    try {
      run_pass(*left);
    } catch (...) {
      left_error = std::current_exception();
    }
  });
  std::exception_ptr right_error;
  try {
    run_pass(right);
  } catch (...) {
    right_error = std::current_exception();
  }
  other.join();
  if (right_error || left_error) {
    std::rethrow_exception(right_error ? right_error : left_error);
  }
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
  std::vector<char> work(static_cast<const char*>(in), static_cast<const char*>(in) + block_bytes * members_.size());
  char* data = work.data();
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
