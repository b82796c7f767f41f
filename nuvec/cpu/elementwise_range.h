#pragma once

// One run of a unary or binary element-wise primitive over raw buffers, through the per-run kernels cpu::unary and
// cpu::binary use: what the chain runner (chain.cpp) calls per tile, so a chain computes exactly what its nodes
// computed one by one.

#include <cstdint>

#include "nuvec/core/array.h"

namespace nuvec::cpu {

/// Elements ptr[0], ptr[stride], ... of an input's dtype (stride 0: one value for the whole run).
struct RawRun {
  const void* ptr;
  int64_t stride;
};

/// out[0, n) = p(x) for a UnaryPrimitive p on `in`-typed elements; out holds `out_dtype`. `stream`: out is too large
/// for the caches.
void unary_range(const Primitive& p, Dtype in, Dtype out_dtype, void* out, int64_t n, RawRun x, bool stream);
/// out[0, n) = p(a, b) for a BinaryPrimitive p on `in`-typed elements.
void binary_range(const Primitive& p, Dtype in, Dtype out_dtype, void* out, int64_t n, RawRun a, RawRun b, bool stream);

}  // namespace nuvec::cpu
