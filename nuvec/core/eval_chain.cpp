#include "nuvec/core/eval_chain.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "nuvec/core/backend.h"
#include "nuvec/core/profile.h"
#include "nuvec/core/profile_hook.h"

namespace nuvec::detail {

namespace {

/// Below this an intermediate stays in the caches anyway and one kernel per node costs less than the tiling.
constexpr size_t min_chain_bytes = size_t{1} << 20;

bool is_elementwise_on_cpu(const array& a) {
  const Family f = family(a.primitive());
  return (f == Family::unary || f == Family::binary) && a.stream().device.type == Device::DeviceType::cpu &&
         !a.is_tracer();
}

bool pending(const array& a) {
  const auto s = a.status();
  return (s == Status::unscheduled || s == Status::scheduled) && a.has_primitive();
}

/// The chain behind `a`, inputs before their reader: a tree, since each member has one reader.
void collect(const array& a, std::vector<array>& nodes) {
  for (const auto& in : a.inputs()) {
    if (pending(in)) {
      collect(in, nodes);
    }
  }
  nodes.push_back(a);
}

}  // namespace

bool joins_chain(const array& producer, const array& consumer) {
  return producer.nbytes() >= min_chain_bytes && producer.shape() == consumer.shape() &&
         is_elementwise_on_cpu(producer) && is_elementwise_on_cpu(consumer);
}

bool run_chain(array& root) {
  const auto& inputs = root.inputs();
  if (std::none_of(inputs.begin(), inputs.end(), pending)) {
    return false;  // the common case, decided without allocating
  }
  std::vector<array> nodes;
  collect(root, nodes);
  if (nodes.size() == 1) {
    return false;
  }
  for (const auto& node : nodes) {
    for (const auto& in : node.inputs()) {
      if (in.status() == Status::failed) {
        return false;  // node by node, each consumer takes the error
      }
    }
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    if (!eval_chain_cpu(nodes)) {
      return false;
    }
  } catch (...) {
    root.set_failed(std::current_exception());
  }
  if (profile::enabled()) {
    profile::detail::record(root, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  for (auto& node : nodes) {
    node.detach();
  }
  return true;
}

}  // namespace nuvec::detail
