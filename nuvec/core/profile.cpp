// Kernel profiling. Timing is on the evaluating thread around each node's kernel, so the row totals add up to the
// evaluation's kernel time; the lock is taken once per node only while profiling is on.

#include "nuvec/core/profile.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "nuvec/core/profile_hook.h"

namespace nuvec::profile {

namespace {

struct Row {
  double seconds = 0;
  long calls = 0;
};

struct Profiler {
  std::mutex mutex;
  std::map<std::string, Row> rows;
  std::atomic<bool> on{false};
  std::atomic<bool> by_shape{true};
};

Profiler& profiler() {
  static Profiler* instance = new Profiler;  // outlives every static that might still evaluate at exit
  return *instance;
}

std::string key_of(const array& node) {
  std::string key(name(node.primitive()));
  if (!profiler().by_shape.load(std::memory_order_relaxed)) {
    return key;
  }
  key += ' ';
  key += std::string(dtype_name(node.dtype()));
  key += " (";
  for (size_t i = 0; i < node.shape().size(); ++i) {
    key += (i > 0 ? ", " : "") + std::to_string(node.shape()[i]);
  }
  return key + ")";
}

/// NUVEC_PROFILE in the environment: on from the start, report at exit.
const bool from_environment = [] {
  const char* value = std::getenv("NUVEC_PROFILE");
  if (value == nullptr || *value == '\0' || std::strcmp(value, "0") == 0) {
    return false;
  }
  enable(std::strcmp(value, "names") != 0);
  std::atexit([] { std::fputs(report().c_str(), stderr); });
  return true;
}();

}  // namespace

void enable(bool by_shape) {
  profiler().by_shape = by_shape;
  profiler().on = true;
}

void disable() { profiler().on = false; }

bool enabled() { return profiler().on.load(std::memory_order_relaxed); }

void reset() {
  std::lock_guard lock(profiler().mutex);
  profiler().rows.clear();
}

std::string report(int max_rows) {
  std::vector<std::pair<std::string, Row>> rows;
  {
    std::lock_guard lock(profiler().mutex);
    rows.assign(profiler().rows.begin(), profiler().rows.end());
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  double total = 0;
  long calls = 0;
  for (const auto& [key, row] : rows) {
    total += row.seconds;
    calls += row.calls;
  }
  std::string out;
  char line[96];
  std::snprintf(line, sizeof line, "nuvec profile: %.1f ms in %ld kernels\n%10s %6s %8s %10s  %s\n", total * 1e3, calls,
                "total ms", "share", "calls", "mean us", "kernel");
  out += line;
  for (size_t i = 0; i < rows.size() && static_cast<int>(i) < max_rows; ++i) {
    const auto& [key, row] = rows[i];
    std::snprintf(line, sizeof line, "%10.2f %5.1f%% %8ld %10.1f  ", row.seconds * 1e3,
                  total > 0 ? 100 * row.seconds / total : 0.0, row.calls, 1e6 * row.seconds / row.calls);
    out += line + key + "\n";
  }
  return out;
}

namespace detail {

void record(const array& node, double seconds) {
  auto key = key_of(node);
  std::lock_guard lock(profiler().mutex);
  auto& row = profiler().rows[key];
  row.seconds += seconds;
  ++row.calls;
}

}  // namespace detail

}  // namespace nuvec::profile
