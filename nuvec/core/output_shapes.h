#pragma once

// The outputs of a primitive from its inputs: one shape rule (output_shapes.cpp) and one dtype rule
// (output_dtype_rules.h) per primitive, each an exhaustive visit. The ops build their nodes through them (make_node),
// compile's shapeless replay follows new input shapes through them, and tests/core/output_shapes_test.cpp checks them
// on every primitive.

#include <vector>

#include "nuvec/core/array.h"

namespace nuvec::detail {

/// The shapes of the outputs of primitive `p` applied to `inputs`. Depends gives one shape per input (its outputs
/// are the first of them).
std::vector<Shape> output_shapes(const Primitive& p, const std::vector<array>& inputs);

/// Whether the output shape of `p` is one of its parameters (Reshape, Broadcast, Slice, Arange, ...) rather than a
/// function of its inputs' shapes: such a node cannot follow new input shapes (compile's shapeless replay).
bool shape_is_parameter(const Primitive& p);

/// The dtypes of the outputs of primitive `p` applied to `inputs` (as output_shapes, one per output).
std::vector<Dtype> output_dtypes(const Primitive& p, const std::vector<array>& inputs);

/// The output of a single-output primitive, its shape and dtype given by the rules; the op has validated the inputs.
array make_node(Primitive&& p, std::vector<array> inputs, Stream stream);
/// All outputs of a primitive, their shapes and dtypes given by the rules.
std::vector<array> make_nodes(Primitive&& p, std::vector<array> inputs, Stream stream);

}  // namespace nuvec::detail
