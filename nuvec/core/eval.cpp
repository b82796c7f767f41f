#include "nuvec/core/eval.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

#include "nuvec/core/backend.h"
#include "nuvec/core/eval_chain.h"
#include "nuvec/core/eval_small.h"
#include "nuvec/core/profile.h"
#include "nuvec/core/profile_hook.h"

namespace nuvec {

namespace {

/// std::mutex's interface over one atomic word (0 free, 1 held, 2 held with sleepers): a Python op followed by eval
/// takes and releases it once, and the pthread calls cost more than the kernel of a small op. Blocked callers sleep
/// in the kernel (atomic wait), woken only when one is asleep.
class EvalLock {
 public:
  bool try_lock() {
    uint32_t expected = 0;
    return state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void lock() {
    uint32_t seen = 0;
    if (state_.compare_exchange_strong(seen, 1, std::memory_order_acquire, std::memory_order_relaxed)) {
      return;
    }
    if (seen != 2) {
      seen = state_.exchange(2, std::memory_order_acquire);
    }
    while (seen != 0) {
      state_.wait(2, std::memory_order_relaxed);
      seen = state_.exchange(2, std::memory_order_acquire);
    }
  }
  void unlock() {
    if (state_.exchange(0, std::memory_order_release) == 2) {
      state_.notify_one();
    }
  }

 private:
  std::atomic<uint32_t> state_{0};
};

// One evaluation at a time: a subgraph shared by two threads' graphs is then
// computed once, and node state is only mutated under this lock. Kernels still
// use every core through the intra-op thread pool.
EvalLock& eval_mutex() {
  static EvalLock lock;
  return lock;
}

std::atomic<int> max_eval_width{64};

bool needs_eval(const array& a) {
  auto s = a.status();
  return (s == Status::unscheduled || s == Status::scheduled) && a.has_primitive();
}

struct Entry {
  std::optional<array> node;  // one output standing for the node; released once run
  int pending_inputs = 0;
  int unfinished_consumers = 0;
  int depth = 0;
};

/// The unevaluated graph behind some outputs, in dependency order. Edges are
/// kept in flat arrays (compressed rows) and nodes are found through their
/// traversal mark, so building costs no allocation per node beyond the vectors'
/// growth.
struct Graph {
  std::vector<Entry> entries;  // topological: inputs before consumers
  std::vector<int> producers;  // producers of entry i: [producer_start[i], producer_start[i + 1])
  std::vector<int> producer_start{0};
  std::vector<int> consumers;  // consumers of entry i: [consumer_start[i], consumer_start[i + 1])
  std::vector<int> consumer_start;

  explicit Graph(const std::vector<array>& outputs) {
    constexpr int on_path = -2;  // mark of a node whose inputs are still being visited
    // Iterative post-order DFS: deep chains must not overflow the stack.
    struct Frame {
      array a;
      size_t next_input;
    };
    std::vector<Frame> stack;
    auto unmark_all = [&] {
      for (auto& frame : stack) {
        detail::traversal_mark(frame.a) = -1;
      }
      for (auto& entry : entries) {
        detail::traversal_mark(*entry.node) = -1;
      }
    };
    try {
      for (const auto& out : outputs) {
        if (!needs_eval(out) || detail::traversal_mark(out) != -1) {
          continue;
        }
        detail::traversal_mark(out) = on_path;
        stack.push_back({out, 0});
        while (!stack.empty()) {
          auto& frame = stack.back();
          const auto& inputs = frame.a.inputs();
          if (frame.next_input < inputs.size()) {
            const array& in = inputs[frame.next_input++];
            if (needs_eval(in) && detail::traversal_mark(in) == -1) {
              detail::traversal_mark(in) = on_path;
              stack.push_back({in, 0});
            }
            continue;
          }
          const int id = static_cast<int>(entries.size());
          for (const auto& in : inputs) {
            if (needs_eval(in)) {
              producers.push_back(detail::traversal_mark(in));
            }
          }
          producer_start.push_back(static_cast<int>(producers.size()));
          detail::traversal_mark(frame.a) = id;
          Entry entry;
          entry.pending_inputs = producer_start[id + 1] - producer_start[id];
          entry.node = std::move(frame.a);
          entries.push_back(std::move(entry));
          stack.pop_back();
        }
      }
    } catch (...) {
      unmark_all();
      throw;
    }
    unmark_all();
    invert_edges();
    // Depth = longest path to an output; consumers come later in the order.
    for (int i = static_cast<int>(entries.size()) - 1; i >= 0; --i) {
      for (int k = consumer_start[i]; k < consumer_start[i + 1]; ++k) {
        entries[i].depth = std::max(entries[i].depth, entries[consumers[k]].depth + 1);
      }
      entries[i].unfinished_consumers = consumer_start[i + 1] - consumer_start[i];
    }
  }

  /// Runs `visit(entry_index)` in schedule order: deepest ready node first while
  /// few intermediates are alive, shallowest (closest to consumers) beyond that.
  template <class Visit>
  void walk(Visit&& visit) {
    // Every ready node sits in both heaps; the one not popped from is cleaned lazily.
    using Ready = std::pair<int, int>;  // (depth, index)
    std::vector<Ready> deepest;
    std::vector<Ready> shallowest;
    std::vector<bool> taken(entries.size(), false);
    auto make_ready = [&](int i) {
      deepest.emplace_back(entries[i].depth, i);
      std::push_heap(deepest.begin(), deepest.end(), std::less<>{});
      shallowest.emplace_back(entries[i].depth, i);
      std::push_heap(shallowest.begin(), shallowest.end(), std::greater<>{});
    };
    auto pop = [&](std::vector<Ready>& heap, auto order) {
      for (;;) {
        std::pop_heap(heap.begin(), heap.end(), order);
        const int i = heap.back().second;
        heap.pop_back();
        if (!taken[i]) {
          taken[i] = true;
          return i;
        }
      }
    };
    for (int i = 0; i < static_cast<int>(entries.size()); ++i) {
      if (entries[i].pending_inputs == 0) {
        make_ready(i);
      }
    }
    int live = 0;
    int ready = static_cast<int>(deepest.size());
    const int width = max_eval_width.load(std::memory_order_relaxed);
    for (; ready > 0; --ready) {
      const int i = live < width ? pop(deepest, std::less<>{}) : pop(shallowest, std::greater<>{});
      visit(i);
      live += consumer_start[i + 1] > consumer_start[i] ? 1 : 0;
      for (int k = consumer_start[i]; k < consumer_start[i + 1]; ++k) {
        if (--entries[consumers[k]].pending_inputs == 0) {
          make_ready(consumers[k]);
          ++ready;
        }
      }
      // A producer whose consumers have all run is no longer live.
      for (int k = producer_start[i]; k < producer_start[i + 1]; ++k) {
        if (--entries[producers[k]].unfinished_consumers == 0) {
          --live;
        }
      }
    }
  }

 private:
  /// Builds the consumer lists from the producer lists (a counting sort).
  void invert_edges() {
    consumer_start.assign(entries.size() + 1, 0);
    for (int p : producers) {
      ++consumer_start[p + 1];
    }
    for (size_t i = 0; i < entries.size(); ++i) {
      consumer_start[i + 1] += consumer_start[i];
    }
    consumers.resize(producers.size());
    std::vector<int> fill(consumer_start.begin(), consumer_start.end() - 1);
    for (int c = 0; c < static_cast<int>(entries.size()); ++c) {
      for (int k = producer_start[c]; k < producer_start[c + 1]; ++k) {
        consumers[fill[producers[k]]++] = c;
      }
    }
  }
};

}  // namespace

namespace detail {

void eval_on(const Stream& stream, const Primitive& primitive, const std::vector<array>& inputs,
             std::vector<array>& outputs) {
  switch (stream.device.type) {
    case Device::DeviceType::cpu:
      eval_cpu(primitive, inputs, outputs);
      return;
    case Device::DeviceType::gpu:
      eval_gpu(primitive, inputs, outputs, stream);
      return;
  }
}

}  // namespace detail

namespace {

void run_node(const array& a, std::vector<array>& outputs) {
  const auto& inputs = a.inputs();
  for (const auto& in : inputs) {
    if (in.status() == Status::failed) {
      for (auto& out : outputs) {
        out.set_failed(in.error());
      }
      return;
    }
  }
  try {
    if (profile::enabled()) {
      auto start = std::chrono::steady_clock::now();
      detail::eval_on(a.stream(), a.primitive(), inputs, outputs);
      profile::detail::record(a, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    } else {
      detail::eval_on(a.stream(), a.primitive(), inputs, outputs);
    }
  } catch (...) {
    for (auto& out : outputs) {
      out.set_failed(std::current_exception());
    }
  }
}

/// Runs a node and drops its primitive and inputs, which frees intermediates as soon as their last consumer has run.
/// A tracer keeps its graph, which the transform running around it still walks (MLX). The outputs' list is kept per
/// thread (a list per node would cost an allocation, and each handle copied once more an atomic count); a kernel that
/// evaluates a graph of its own while the list is in use (a compiled function's) gets fresh lists for its nodes.
void run_and_detach(const array& a) {
  thread_local std::vector<array> kept;
  thread_local bool kept_in_use = false;
  std::vector<array> fresh;
  const bool nested = kept_in_use;
  auto& outputs = nested ? fresh : kept;
  detail::outputs_into(a, outputs);
  kept_in_use = true;
  run_node(a, outputs);
  if (!a.is_tracer()) {
    for (auto& out : outputs) {
      out.detach();  // the first live output detaches them all; stand-ins for dropped ones have no node
    }
  }
  outputs.clear();
  kept_in_use = nested;
}

/// Whether `a` is one node whose inputs are all computed: the eager-style case
/// of one new op, which needs no graph.
bool is_one_ready_node(const array& a) {
  if (!needs_eval(a)) {
    return false;
  }
  const auto& inputs = a.inputs();
  return std::none_of(inputs.begin(), inputs.end(), needs_eval);
}

/// Which entries run inside their reader's element-wise chain (detail::joins_chain): those read by one node alone and
/// held by no one else (no user handle, no sibling), in chains of at most detail::max_chain_nodes.
std::vector<bool> chain_deferrals(const Graph& graph) {
  const auto n = graph.entries.size();
  std::vector<bool> deferred(n, false);
  std::vector<int> chain_nodes(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const auto first = graph.consumers.begin() + graph.consumer_start[i];
    const auto last = graph.consumers.begin() + graph.consumer_start[i + 1];
    if (first == last || std::any_of(first, last, [&](int c) { return c != *first; })) {
      continue;
    }
    const int c = *first;
    const array& node = *graph.entries[i].node;
    if (node.use_count() == 1 + (last - first) && chain_nodes[c] + chain_nodes[i] <= detail::max_chain_nodes &&
        detail::joins_chain(node, *graph.entries[c].node)) {
      deferred[i] = true;
      chain_nodes[c] += chain_nodes[i];
    }
  }
  return deferred;
}

/// Runs `a` with the inputs deferred into its chain: in one pass where the backend can, else one by one.
void run_entry(array& a) {
  if (detail::run_chain(a)) {
    return;
  }
  for (const auto& in : a.inputs()) {
    if (needs_eval(in)) {
      array node = in;
      run_entry(node);
    }
  }
  run_and_detach(a);
}

void eval_locked(const std::vector<array>& outputs) {
  if (outputs.size() == 1 && is_one_ready_node(outputs[0])) {
    run_and_detach(outputs[0]);
    return;
  }
  Graph graph(outputs);
  const auto deferred = chain_deferrals(graph);
  graph.walk([&](int i) {
    auto& entry = graph.entries[i];
    if (!deferred[i]) {
      run_entry(*entry.node);
    }
    entry.node.reset();  // the tape's own handle goes too
  });
}

/// The background worker behind async_eval.
class AsyncWorker {
 public:
  AsyncWorker() : thread_([this] { loop(); }) {}
  AsyncWorker(const AsyncWorker&) = delete;
  AsyncWorker& operator=(const AsyncWorker&) = delete;
  ~AsyncWorker() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

  void submit(std::vector<array> outputs) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(outputs));
    }
    cv_.notify_one();
  }

 private:
  void loop() {
    for (;;) {
      std::vector<array> task;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) {
          return;
        }
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      std::lock_guard eval_lock(eval_mutex());
      eval_locked(task);
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::vector<array>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

AsyncWorker& async_worker() {
  static AsyncWorker worker;
  return worker;
}

std::exception_ptr first_error(const std::vector<array>& outputs) {
  for (const auto& out : outputs) {
    if (out.status() == Status::failed) {
      return out.error();
    }
  }
  return nullptr;
}

/// Waits for the GPU work that computes `outputs`: eval returns with their values in hand, as MLX's.
void wait_for_gpu(const std::vector<array>& outputs) {
  for (const auto& out : outputs) {
    if (out.status() == Status::available && out.data_device().type == Device::gpu) {
      detail::gpu_wait(*out.data_shared_ptr());
    }
  }
}

}  // namespace

EvalStatus::EvalStatus(std::exception_ptr err) : error_(std::move(err)) {
  if (!error_) {
    return;
  }
  try {
    std::rethrow_exception(error_);
  } catch (const nuvec::error& e) {
    message_ = e.what();
    kind_ = e.kind();
  } catch (const std::bad_alloc& e) {
    message_ = e.what();
    kind_ = ErrorKind::out_of_memory;
  } catch (const std::exception& e) {
    message_ = e.what();
  } catch (...) {
    message_ = "unknown error";
  }
}

EvalStatus try_eval(std::vector<array> outputs) {
  {
    std::lock_guard lock(eval_mutex());
    eval_locked(outputs);
  }
  wait_for_gpu(outputs);
  return EvalStatus(first_error(outputs));
}

void eval(std::vector<array> outputs) {
  detail::check_no_tracers(outputs, "eval");
  auto status = try_eval(std::move(outputs));
  if (!status.ok()) {
    std::rethrow_exception(status.error());
  }
}

void async_eval(std::vector<array> outputs) {
  detail::check_no_tracers(outputs, "async_eval");
  for (auto& out : outputs) {
    if (out.status() == Status::unscheduled && out.has_primitive()) {
      out.set_status(Status::scheduled);
    }
  }
  async_worker().submit(std::move(outputs));
}

std::vector<array> schedule(const std::vector<array>& outputs) {
  std::lock_guard lock(eval_mutex());
  Graph graph(outputs);
  std::vector<array> order;
  graph.walk([&](int i) { order.push_back(*graph.entries[i].node); });
  return order;
}

namespace {

/// The unevaluated nodes behind `out`, inputs first, when they are few and their outputs and computed inputs hold at
/// most `max_bytes` together; empty otherwise. A bounded walk that gives up past the bound; a node reached twice is
/// listed twice (counting against the bound) and runs once. Small graphs skip Graph's tables and heaps, which cost
/// more than their kernels.
std::vector<array> small_graph_order(const array& out, size_t max_bytes) {
  constexpr size_t max_nodes = 8;
  struct Frame {
    const array* a;
    size_t next_input;
  };
  std::array<Frame, max_nodes> stack{};
  std::vector<array> order;
  order.reserve(max_nodes);
  size_t depth = 0;
  size_t visits = 1;
  size_t bytes = out.nbytes();
  stack[depth++] = {&out, 0};
  while (depth > 0) {
    auto& frame = stack[depth - 1];
    const auto& inputs = frame.a->inputs();
    if (frame.next_input == inputs.size()) {
      order.push_back(*frame.a);
      --depth;
      continue;
    }
    const array& in = inputs[frame.next_input++];
    bytes += in.nbytes();
    if (bytes > max_bytes) {
      return {};
    }
    if (needs_eval(in)) {
      if (++visits > max_nodes) {
        return {};
      }
      stack[depth++] = {&in, 0};
    }
  }
  return order;
}

}  // namespace

bool detail::try_eval_small_node(const array& a, size_t max_bytes) {
  // Tracers take eval's path, which checks that none of them stands for a value not known yet.
  if (a.is_tracer()) {
    return false;
  }
  std::unique_lock lock(eval_mutex(), std::try_to_lock);
  if (!lock.owns_lock() || !needs_eval(a)) {
    return false;
  }
  if (is_one_ready_node(a)) {
    // The common case, one op on computed arrays, without the walk's list (a heap allocation per call).
    const auto& inputs = a.inputs();
    const size_t bytes = std::accumulate(inputs.begin(), inputs.end(), a.nbytes(),
                                         [](size_t sum, const array& in) { return sum + in.nbytes(); });
    if (bytes > max_bytes) {
      return false;
    }
    run_and_detach(a);
  } else {
    auto order = small_graph_order(a, max_bytes);
    if (order.empty()) {
      return false;
    }
    for (auto& node : order) {
      if (needs_eval(node)) {
        run_and_detach(node);
      }
    }
    order.clear();  // intermediates go while the lock is held, as eval's
  }
  lock.unlock();
  if (auto error = a.error()) {
    std::rethrow_exception(error);
  }
  return true;
}

int get_max_eval_width() { return max_eval_width.load(); }
void set_max_eval_width(int width) {
  if (width < 1) {
    throw_invalid("[set_max_eval_width] The width must be at least 1; got " + std::to_string(width) + ".");
  }
  max_eval_width.store(width);
}

}  // namespace nuvec
