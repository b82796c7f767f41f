#pragma once

// What a Compiled primitive carries: the unfused tape of one element-wise chain
// and the kernel generated for it. The tape is kept for the transforms (they
// differentiate and map the chain through it) and for the generated source.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nuvec/core/array.h"

namespace nuvec::detail {

/// One primitive of a fused chain. Values are numbered: 0 .. num_inputs - 1 are the kernel's inputs, then one per
/// step in order. A step's value has the chain's iteration shape, or in a row kernel possibly its row shape (the
/// last axis 1).
struct FusedStep {
  Primitive primitive;
  std::vector<int> args;
  Dtype dtype;
};

/// The generated kernel's two entry points. `in` and `out` hold element pointers (the first element of each).
/// contiguous: elements [begin, end) of row-major inputs (an input read as one value where the source says so, or
/// where `once` is nonzero for it: one value broadcast everywhere at run time);
/// strided: elements [begin, end) of the iteration space (a row kernel: rows [begin, end)) walked with the inputs'
/// element strides (ndim per input).
using ContiguousEntry = void (*)(const void* const* in, const unsigned char* once, void* const* out, int64_t begin,
                                 int64_t end);
using StridedEntry = void (*)(const void* const* in, void* const* out, const int64_t* shape, const int64_t* strides,
                              int ndim, int64_t begin, int64_t end);

struct FusedKernel {
  /// A row kernel also holds reductions over the last axis: it walks rows, one pass per reduction depth.
  bool rows = false;
  /// The iteration shape when traced.
  Shape shape;
  /// Per value (inputs, then steps): whether it has the row shape.
  std::vector<bool> row_values;
  int num_inputs = 0;
  std::vector<Dtype> input_dtypes;
  /// Inputs of one element when traced: the contiguous entry reads them once.
  std::vector<bool> scalar_inputs;
  /// Inputs that are traced constants holding one value (a 0-d array, a broadcast of one): the generated code has
  /// the value as a literal and never reads the input.
  std::vector<std::optional<double>> literals;
  std::vector<FusedStep> steps;
  /// The values the node outputs, in order.
  std::vector<int> outputs;
  std::string source;
  std::shared_ptr<void> library;  // keeps the shared object loaded
  ContiguousEntry contiguous = nullptr;  // null for row kernels
  StridedEntry strided = nullptr;         // for row kernels: rows [begin, end), all passes
};

/// The shape with its last axis 1.
Shape row_shape(Shape shape);

/// The iteration shape of a fused node with these inputs and outputs: an output without the row shape gives it,
/// else the inputs' broadcast, else the traced shape.
Shape iteration_shape(const FusedKernel& kernel, const std::vector<array>& inputs, const std::vector<array>& outputs);

/// The chain's tape applied to new inputs with plain primitives; `shape` is the iteration shape.
std::vector<array> replay_fused(const FusedKernel& kernel, const std::vector<array>& inputs, const Shape& shape);

}  // namespace nuvec::detail
