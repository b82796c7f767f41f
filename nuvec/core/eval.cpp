#include "nuvec/core/eval.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include "nuvec/core/backend.h"

namespace nuvec {

namespace {

// One evaluation at a time: a subgraph shared by two threads' graphs is then
// computed once, and node state is only mutated under this lock. Kernels still
// use every core through the intra-op thread pool.
std::mutex& eval_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::atomic<int> max_eval_width{64};

bool needs_eval(const array& a) {
  auto s = a.status();
  return (s == Status::unscheduled || s == Status::scheduled) && a.has_primitive();
}

struct Entry {
  std::optional<array> node;  // one output standing for the node; released once run
  std::vector<int> consumers;
  std::vector<int> producers;
  int pending_inputs = 0;
  int unfinished_consumers = 0;
  int depth = 0;
};

/// The unevaluated graph behind some outputs, in dependency order.
struct Graph {
  std::vector<Entry> entries;  // topological: inputs before consumers

  explicit Graph(const std::vector<array>& outputs) {
    std::unordered_map<uintptr_t, int> index;
    // Iterative post-order DFS: deep chains must not overflow the stack.
    struct Frame {
      array a;
      size_t next_input;
    };
    std::vector<Frame> stack;
    std::unordered_map<uintptr_t, bool> on_path_or_done;
    for (const auto& out : outputs) {
      if (!needs_eval(out) || on_path_or_done.count(out.node_id()) != 0) {
        continue;
      }
      on_path_or_done[out.node_id()] = true;
      stack.push_back({out, 0});
      while (!stack.empty()) {
        auto& frame = stack.back();
        const auto& inputs = frame.a.inputs();
        if (frame.next_input < inputs.size()) {
          const array& in = inputs[frame.next_input++];
          if (needs_eval(in) && on_path_or_done.count(in.node_id()) == 0) {
            on_path_or_done[in.node_id()] = true;
            stack.push_back({in, 0});
          }
          continue;
        }
        int id = static_cast<int>(entries.size());
        index[frame.a.node_id()] = id;
        Entry entry;
        for (const auto& in : inputs) {
          auto it = needs_eval(in) ? index.find(in.node_id()) : index.end();
          if (it != index.end()) {
            entries[it->second].consumers.push_back(id);
            entry.producers.push_back(it->second);
            ++entry.pending_inputs;
          }
        }
        entry.node = std::move(frame.a);
        entries.push_back(std::move(entry));
        stack.pop_back();
      }
    }
    // Depth = longest path to an output; consumers come later in the order.
    for (int i = static_cast<int>(entries.size()) - 1; i >= 0; --i) {
      for (int c : entries[i].consumers) {
        entries[i].depth = std::max(entries[i].depth, entries[c].depth + 1);
      }
      entries[i].unfinished_consumers = static_cast<int>(entries[i].consumers.size());
    }
  }

  /// Runs `visit(entry_index)` in schedule order: deepest ready node first while
  /// few intermediates are alive, shallowest (closest to consumers) beyond that.
  template <class Visit>
  void walk(Visit&& visit) {
    std::set<std::pair<int, int>> ready;  // (depth, index)
    for (int i = 0; i < static_cast<int>(entries.size()); ++i) {
      if (entries[i].pending_inputs == 0) {
        ready.insert({entries[i].depth, i});
      }
    }
    int live = 0;
    const int width = max_eval_width.load(std::memory_order_relaxed);
    while (!ready.empty()) {
      auto pick = live < width ? std::prev(ready.end()) : ready.begin();
      int i = pick->second;
      ready.erase(pick);
      visit(i);
      live += entries[i].consumers.empty() ? 0 : 1;
      for (int c : entries[i].consumers) {
        if (--entries[c].pending_inputs == 0) {
          ready.insert({entries[c].depth, c});
        }
      }
      // A producer whose consumers have all run is no longer live.
      for (int p : entries[i].producers) {
        if (--entries[p].unfinished_consumers == 0) {
          --live;
        }
      }
    }
  }
};

void run_node(const array& a) {
  auto outputs = a.outputs();
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
    detail::eval_cpu(a.primitive(), inputs, outputs);
  } catch (...) {
    for (auto& out : outputs) {
      out.set_failed(std::current_exception());
    }
  }
}

void eval_locked(const std::vector<array>& outputs) {
  Graph graph(outputs);
  graph.walk([&](int i) {
    auto& entry = graph.entries[i];
    run_node(*entry.node);
    // Dropping the primitive and inputs frees intermediates as soon as their
    // last consumer has run; the tape's own handle goes too.
    entry.node->detach();
    entry.node.reset();
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
  return EvalStatus(first_error(outputs));
}

void eval(std::vector<array> outputs) {
  auto status = try_eval(std::move(outputs));
  if (!status.ok()) {
    std::rethrow_exception(status.error());
  }
}

void async_eval(std::vector<array> outputs) {
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

int get_max_eval_width() { return max_eval_width.load(); }
void set_max_eval_width(int width) {
  if (width < 1) {
    throw_invalid("[set_max_eval_width] The width must be at least 1; got " + std::to_string(width) + ".");
  }
  max_eval_width.store(width);
}

}  // namespace nuvec
