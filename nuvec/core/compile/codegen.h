#pragma once

// C++ source for a fused chain: a per-element body built from the tape, called
// from a flat loop (row-major inputs) and from a strided row walk, written so
// that GCC vectorizes it with -O3 -march=native (math calls go to glibc's
// vector math library through `declare simd`).

#include <string>

#include "nuvec/core/compile/fused.h"

namespace nuvec::detail {

/// Whether the generator has a body for this primitive on inputs of dtype `in` producing `out`.
bool can_generate(const Primitive& p, Dtype in, Dtype out);

/// The kernel's source; its entry points are `nuvec_fused_contiguous` and `nuvec_fused_strided`.
std::string generate_source(const FusedKernel& kernel);

}  // namespace nuvec::detail
