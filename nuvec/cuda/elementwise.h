#pragma once

// Element-wise kernels: one generated CUDA source per chain of element-wise primitives (a single primitive is a
// chain of one step), with the expressions the CPU's compile uses (core/compile/codegen.h), so both devices compute
// the same values. Each source has two entry points: a flat loop over row-contiguous operands (any input possibly one
// value read everywhere) and a strided walk of up to max_dims axes.

#include <string>
#include <vector>

#include "nuvec/core/array.h"
#include "nuvec/core/fused.h"

namespace nuvec::cuda {

/// The most axes the strided entry walks once adjacent axes that are contiguous in every operand are merged.
inline constexpr int max_dims = 8;

/// The CUDA source of an element-wise chain (not a row kernel).
std::string generate_elementwise_source(const detail::FusedKernel& k);

/// Whether `elementwise` computes `outputs` from `inputs` with kernel `k`: dtypes the generator has (no complex64)
/// and at most max_dims axes after merging.
bool can_run_elementwise(const detail::FusedKernel& k, const std::vector<array>& inputs,
                         const std::vector<array>& outputs);

/// Runs chain `k` on `s`: each output (of the iteration shape `outputs[0]` has) is given a fresh buffer unless it
/// already has one (a view to write into, as Concatenate's).
void elementwise(const detail::FusedKernel& k, const std::vector<array>& inputs, std::vector<array>& outputs,
                 const Stream& s);

/// The chain of the one element-wise primitive `p` with these inputs, giving an output of dtype `out`.
detail::FusedKernel single_step(const Primitive& p, const std::vector<array>& inputs, Dtype out);

/// Copies `in` into `out` (same shape; `out` a fresh or existing buffer of any layout) on `s`, converting to out's
/// dtype.
void copy(const array& in, array& out, const Stream& s);

}  // namespace nuvec::cuda
