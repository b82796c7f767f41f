#pragma once

// mx.random.state: MLX's list holding the global key, which compile takes as state (inputs= and outputs=) so that
// the draws of a compiled function advance at every call. The key itself lives in C++
// (random::KeySequence::default_(), which the C++ layers draw from too); the list mirrors it: a key written into the
// list becomes the sequence's at once, and the list is brought up to date wherever it is read.

#include "python/src/bindings.h"

namespace nuvec::python {

/// The list, its key brought up to date.
py::list random_state();

/// Puts the calling thread's current key into the list (without writing it back to the sequence).
void refresh_random_state();

/// Whether `tree` (lists, tuples and dicts) holds the list.
bool holds_random_state(const py::handle& tree);

}  // namespace nuvec::python
