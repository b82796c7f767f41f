#pragma once

// Placeholder tracers: the traced inputs of vmap and compile, which stand for values not known while tracing. As in
// MLX, evaluating one of them, or an array computed from one, throws (check_no_tracers); the tracers of vjp and jvp
// are copies of real values and can be evaluated.

#include <vector>

#include "nuvec/core/array.h"

namespace nuvec::detail {

/// While alive on a thread, marks `tracers` as tracers and placeholders there, and opens a TracingScope.
class PlaceholderScope {
 public:
  explicit PlaceholderScope(std::vector<array>& tracers);
  ~PlaceholderScope();
  PlaceholderScope(const PlaceholderScope&) = delete;
  PlaceholderScope& operator=(const PlaceholderScope&) = delete;

 private:
  TracingScope tracing_;
  size_t count_;
};

}  // namespace nuvec::detail
