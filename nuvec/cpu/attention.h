#pragma once

// What the attention kernel (attention.cpp) and its vjp (attention_vjp.cpp) share: the sizes, the (B, N, L, D)
// layout and how the causal limit or a mask changes a row of scores.

#include <algorithm>
#include <cstdint>
#include <limits>

#include "nuvec/core/array.h"
#include "nuvec/core/primitives.h"
#include "nuvec/cpu/kernels.h"

namespace nuvec::cpu {

/// The sizes of an attention: queries (B, Nq, Lq, D), keys (B, Nkv, Lkv, D) and values (B, Nkv, Lkv, Dv).
struct AttentionSizes {
  int64_t B, Nq, Lq, D, Nkv, Lkv, Dv;
  int64_t repeats;  // query heads per key/value head
  int64_t offset;   // Lkv - Lq: the causal limit lets query i see keys j <= i + offset
  explicit AttentionSizes(const Inputs& in)
      : B(in[0].shape(0)),
        Nq(in[0].shape(1)),
        Lq(in[0].shape(2)),
        D(in[0].shape(3)),
        Nkv(in[1].shape(1)),
        Lkv(in[1].shape(2)),
        Dv(in[2].shape(3)),
        repeats(Nkv == 0 ? 1 : Nq / Nkv),
        offset(Lkv - Lq) {}
};

/// Element offsets of a (B, N, L, D) array.
struct Layout4 {
  const void* data;
  int64_t b, h, l, d;
  explicit Layout4(const array& a)
      : data(a.raw_data()), b(a.strides(0)), h(a.strides(1)), l(a.strides(2)), d(a.strides(3)) {}
  template <class T>
  [[nodiscard]] const T* at(int64_t bi, int64_t hi, int64_t li) const {
    return static_cast<const T*>(data) + bi * b + hi * h + li * l;
  }
};

/// Applies the causal limit (key j seen by query i when j <= i + offset) or the mask (`mask`, an input of dtype T or
/// bool) to the scores s of query i of head h in batch b against keys [j0, j0 + kb). A boolean mask and the causal
/// limit set hidden scores to the lowest finite value (MLX's convention: a row with every key hidden averages them
/// all); an additive mask is added.
template <class T, class A>
void mask_scores(bool causal, AttentionMask mode, const array* mask, int64_t offset, int64_t b, int64_t h, int64_t i,
                 int64_t j0, int64_t kb, A* s) {
  const A lowest = std::numeric_limits<A>::lowest();
  if (causal) {
    for (int64_t j = std::max<int64_t>(0, i + offset + 1 - j0); j < kb; ++j) {
      s[j] = lowest;
    }
    return;
  }
  switch (mode) {
    case AttentionMask::none:
      return;
    case AttentionMask::boolean: {
      const bool* mp = mask->data<bool>() + b * mask->strides(0) + h * mask->strides(1) + i * mask->strides(2);
      const int64_t ms = mask->strides(3);
      for (int64_t j = 0; j < kb; ++j) {
        s[j] = mp[(j0 + j) * ms] ? s[j] : lowest;
      }
      return;
    }
    case AttentionMask::additive: {
      const T* mp = mask->data<T>() + b * mask->strides(0) + h * mask->strides(1) + i * mask->strides(2);
      const int64_t ms = mask->strides(3);
      for (int64_t j = 0; j < kb; ++j) {
        s[j] += static_cast<A>(mp[(j0 + j) * ms]);
      }
      return;
    }
  }
}

}  // namespace nuvec::cpu
