// The placeholders of vmap and compile, and the check that keeps eval from computing them.

#include "nuvec/core/tracing.h"

#include <string>
#include <unordered_set>

#include "nuvec/core/error.h"
#include "nuvec/core/op_prefix.h"

namespace nuvec::detail {

namespace {

/// The ids of this thread's live placeholders, innermost last.
std::vector<uintptr_t>& placeholders() {
  thread_local std::vector<uintptr_t> ids;
  return ids;
}

}  // namespace

PlaceholderScope::PlaceholderScope(std::vector<array>& tracers) : count_(tracers.size()) {
  for (auto& t : tracers) {
    t.set_tracer(true);
    placeholders().push_back(t.id());
  }
}

PlaceholderScope::~PlaceholderScope() { placeholders().resize(placeholders().size() - count_); }

void check_no_tracers(const std::vector<array>& outputs, const char* op) {
  if (placeholders().empty()) {
    return;
  }
  const std::unordered_set<uintptr_t> sources(placeholders().begin(), placeholders().end());
  // Only tracers can depend on a placeholder (the flag passes to every array computed from one), so the walk stays
  // inside the traced part of the graph.
  std::unordered_set<uintptr_t> seen;
  std::vector<array> stack;
  for (const auto& out : outputs) {
    if (out.is_tracer()) {
      stack.push_back(out);
    }
  }
  while (!stack.empty()) {
    array a = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(a.id()).second) {
      continue;
    }
    if (sources.contains(a.id())) {
      throw_invalid(op_prefix(op).append(
          "Attempting to eval an array during function transformations like compile or vmap is not allowed."));
    }
    if (a.has_primitive()) {
      for (const auto& in : a.inputs()) {
        if (in.is_tracer()) {
          stack.push_back(in);
        }
      }
    }
  }
}

}  // namespace nuvec::detail
