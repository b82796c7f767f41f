#pragma once

// Evaluation that never waits: for callers holding a lock that evaluation may take (the Python bindings, holding the
// GIL). Apart from eval.h, which most of the library includes, since only they use it.

#include <cstddef>

#include "nuvec/core/array.h"

namespace nuvec::detail {

/// Computes `a` now when its graph is small (an op and the few nodes it adds, outputs and inputs of at most
/// `max_bytes`) and no evaluation is running; otherwise returns false, having done nothing. It never waits for the
/// evaluation lock, so a caller holding a lock that evaluation may take (Python's GIL, which frees Python objects
/// held by graph nodes) can try it before releasing that lock for eval. Throws the error of a failed evaluation.
bool try_eval_small_node(const array& a, size_t max_bytes);

}  // namespace nuvec::detail
