#pragma once

// Output shapes of a primitive from its inputs: one rule per primitive (output_shapes.cpp, an exhaustive visit), used
// where a node is rebuilt on inputs of new shapes (compile's shapeless replay) and checked against the shapes the ops
// give (tests/core/output_shapes_test.cpp).

#include <vector>

#include "nuvec/core/array.h"

namespace nuvec::detail {

/// The shapes of the outputs of primitive `p` applied to `inputs`. Depends gives one shape per input (its outputs
/// are the first of them). Throws error(unsupported) for a primitive whose output shape is set by the op's
/// arguments rather than by its inputs' shapes (Reshape, Slice, ...): such a node cannot be replayed shapeless.
std::vector<Shape> output_shapes(const Primitive& p, const std::vector<array>& inputs);

}  // namespace nuvec::detail
