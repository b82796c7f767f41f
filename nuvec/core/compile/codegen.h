#pragma once

// C++ source for a fused chain: a per-element body built from the tape, called
// from a flat loop (row-major inputs, any of them possibly one value broadcast
// everywhere, read from a block filled once) and from a strided walk that stages its
// inputs at unit stride in blocks (tiles of rows for transposed inputs), written
// so that GCC vectorizes it with -O3 -march=native (math calls go to glibc's
// vector math library through `declare simd`). One-value constants are literals.

#include <string>
#include <vector>

#include "nuvec/core/fused.h"

namespace nuvec::detail {

/// Whether the generator has an expression for primitive `p` on arguments of these dtypes giving `out`.
bool can_generate(const Primitive& p, const std::vector<Dtype>& arg_dtypes, Dtype out);

/// Whether input i of `kernel` is a literal in the kernel's source rather than read.
bool is_literal(const FusedKernel& kernel, size_t i);
/// The literal inputs' declarations (`const float v0 = ...;`), each line starting with `indent`; `dtypes` holds the
/// dtype of every value (inputs, then steps).
std::string literal_declarations(const FusedKernel& kernel, const std::vector<Dtype>& dtypes, const std::string& indent);
/// The declaration of step s's value (`const float v3 = ...;`): its expression over the values before it (named
/// v0, v1, ...), rounded to its dtype. Shared by the CPU and CUDA generators.
std::string step_code(const FusedKernel& kernel, const std::vector<Dtype>& dtypes, size_t s);

/// The kernel's source; its entry points are `nuvec_fused_contiguous` and `nuvec_fused_strided`.
std::string generate_source(const FusedKernel& kernel);

}  // namespace nuvec::detail
