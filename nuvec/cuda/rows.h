#pragma once

// The CUDA sources of the reduction and row kernels (the rules in reduce.cpp, softmax.cpp, norm.cpp, rope.cpp and
// arange.cpp): each is a file of kernels/ with its element types and their conversions prepended, so one text
// serves every dtype (declared here for the test that compiles every source the rules can generate); and the
// row-contiguous inputs those kernels read.

#include <optional>
#include <string>

#include "nuvec/core/array.h"
#include "nuvec/core/primitives.h"

namespace nuvec::cuda {

/// The accumulator dtype of Reduce `op` from `in` to `out`, as the CPU's kernel chooses it (half floats in float32,
/// integer sums and products in the output's unsigned type, mean's integer sums in float64); nullopt where the GPU
/// has no kernel (complex64, and pairs the CPU has none for either).
std::optional<Dtype> reduce_accumulator(ReduceType op, Dtype in, Dtype out);

/// reduce.cu reading `in`, accumulating in `acc` and writing `out` (a second pass over partial results reads acc).
std::string reduce_source(ReduceType op, Dtype in, Dtype acc, Dtype out);

/// arg_reduce.cu for inputs of `in` (any dtype but complex64).
std::string arg_reduce_source(ArgReduceType op, Dtype in);

/// softmax.cu, norm.cu and rope.cu for a floating dtype (float32, float64, float16, bfloat16).
std::string softmax_source(Dtype d);
std::string norm_source(Dtype d);
std::string rope_source(Dtype d);

/// arange.cu writing `d` (any dtype but complex64).
std::string arange_source(Dtype d);

/// Whether `a`'s elements are row-contiguous from its first one, as the row kernels read them.
bool is_dense(const array& a);

/// A row-contiguous copy of `a` on `s`; nullopt where the element-wise copy has no form for its layout or dtype (the
/// caller then runs the CPU kernel).
std::optional<array> dense_copy(const array& a, const Stream& s);

/// The rows a row kernel reads: `a` itself where it is dense, else a row-contiguous copy, held in `copy`; null where
/// no copy can be made (the caller then runs the CPU kernel). A pointer rather than a handle: a rule that donates
/// `a`'s buffer needs it held once.
const array* dense_rows(const array& a, std::optional<array>& copy, const Stream& s);

}  // namespace nuvec::cuda
