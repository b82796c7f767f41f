// The compile API: modes, the per-function cache of traced graphs (least
// recently used evicted beyond the limit) and stateful functions.

#include "nuvec/core/compile.h"

#include <atomic>
#include <bit>
#include <cstdlib>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "nuvec/core/compile/graph.h"
#include "nuvec/core/error.h"

namespace nuvec {

namespace {

CompileMode initial_mode() {
  const char* v = std::getenv("NUVEC_DISABLE_COMPILE");
  return v != nullptr && std::string(v) != "0" && std::string(v) != "" ? CompileMode::disabled : CompileMode::enabled;
}

std::atomic<CompileMode>& mode_ref() {
  static std::atomic<CompileMode> mode{initial_mode()};
  return mode;
}

std::atomic<size_t>& limit_ref() {
  static std::atomic<size_t> limit{64};
  return limit;
}

/// What a call is traced for: mode, dtypes, shapes (ranks when shapeless) and constants' bits.
using Signature = std::vector<int64_t>;

Signature signature(CompileMode mode, bool shapeless, const std::vector<array>& inputs,
                    const std::vector<double>& constants) {
  Signature key{static_cast<int64_t>(mode), static_cast<int64_t>(inputs.size())};
  for (const auto& x : inputs) {
    key.push_back(static_cast<int64_t>(x.dtype().val));
    key.push_back(x.ndim());
    if (!shapeless) {
      key.insert(key.end(), x.shape().begin(), x.shape().end());
    }
  }
  for (double c : constants) {
    key.push_back(std::bit_cast<int64_t>(c));
  }
  return key;
}

/// One compiled function: its traces, most recently used first.
class Traces {
 public:
  Traces(ConstantFunction fun, bool shapeless) : fun_(std::move(fun)), shapeless_(shapeless) {}

  std::vector<array> operator()(const std::vector<array>& inputs, const std::vector<double>& constants) {
    const CompileMode mode = compile_mode();
    if (mode == CompileMode::disabled) {
      return fun_(inputs, constants);
    }
    auto key = signature(mode, shapeless_, inputs, constants);
    std::shared_ptr<const detail::Graph> graph;
    {
      std::lock_guard lock(mutex_);
      auto it = std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == key; });
      if (it != entries_.end()) {
        entries_.splice(entries_.begin(), entries_, it);
        graph = it->second;
      } else {
        auto traced = std::make_shared<detail::Graph>(detail::trace_graph(
            [&](const std::vector<array>& xs) { return fun_(xs, constants); }, inputs));
        if (mode != CompileMode::no_simplify) {
          detail::simplify_graph(*traced);
        }
        if (mode == CompileMode::enabled) {
          detail::fuse_graph(*traced, shapeless_);
        }
        graph = traced;
        entries_.emplace_front(std::move(key), std::move(traced));
        while (entries_.size() > std::max<size_t>(compile_cache_limit(), 1)) {
          entries_.pop_back();
        }
      }
    }
    return detail::replay_graph(*graph, inputs, shapeless_);
  }

 private:
  ConstantFunction fun_;
  bool shapeless_;
  std::mutex mutex_;
  std::list<std::pair<Signature, std::shared_ptr<const detail::Graph>>> entries_;
};

}  // namespace

std::function<std::vector<array>(const std::vector<array>&, const std::vector<double>&)> compile(
    ConstantFunction fun, bool shapeless) {
  auto traces = std::make_shared<Traces>(std::move(fun), shapeless);
  return [traces](const std::vector<array>& inputs, const std::vector<double>& constants) {
    return (*traces)(inputs, constants);
  };
}

Function compile(Function fun, bool shapeless) {
  auto compiled = compile(
      ConstantFunction([fun = std::move(fun)](const std::vector<array>& xs, const std::vector<double>&) {
        return fun(xs);
      }),
      shapeless);
  return [compiled](const std::vector<array>& inputs) { return compiled(inputs, {}); };
}

Function compile(Function fun, CompileState state, bool shapeless) {
  // The state travels as extra inputs after the arguments and extra outputs after the results. While tracing, the
  // state slots hold the stand-ins, so the function reads and replaces them as it would the real arrays.
  auto with_state = [fun = std::move(fun), state](const std::vector<array>& all) {
    auto slots = state();
    const size_t num_args = all.size() - slots.size();
    std::vector<array> saved;
    for (size_t i = 0; i < slots.size(); ++i) {
      saved.push_back(*slots[i]);
      *slots[i] = all[num_args + i];
    }
    std::vector<array> args(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(num_args));
    std::vector<array> outs;
    try {
      outs = fun(args);
    } catch (...) {
      for (size_t i = 0; i < slots.size(); ++i) {
        *slots[i] = saved[i];
      }
      throw;
    }
    for (size_t i = 0; i < slots.size(); ++i) {
      outs.push_back(*slots[i]);
      *slots[i] = saved[i];
    }
    return outs;
  };
  auto compiled = compile(Function(with_state), shapeless);
  return [compiled, state = std::move(state)](const std::vector<array>& args) {
    auto slots = state();
    std::vector<array> all(args);
    for (auto* s : slots) {
      if (s == nullptr) {
        throw_invalid("[compile] the state function returned a null array pointer.");
      }
      all.push_back(*s);
    }
    auto outs = compiled(all);
    const size_t num_results = outs.size() - slots.size();
    for (size_t i = 0; i < slots.size(); ++i) {
      *slots[i] = outs[num_results + i];
    }
    outs.erase(outs.begin() + static_cast<std::ptrdiff_t>(num_results), outs.end());
    return outs;
  };
}

void disable_compile() { mode_ref() = CompileMode::disabled; }
void enable_compile() { mode_ref() = CompileMode::enabled; }
void set_compile_mode(CompileMode mode) { mode_ref() = mode; }
CompileMode compile_mode() { return mode_ref(); }

void set_compile_cache_limit(size_t limit) {
  if (limit == 0) {
    throw_invalid("[compile] the cache limit must be at least 1 signature.");
  }
  limit_ref() = limit;
}
size_t compile_cache_limit() { return limit_ref(); }

}  // namespace nuvec
