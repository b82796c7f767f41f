// RMSNorm and LayerNorm of dense rows (row r is x[r * n, (r + 1) * n)), a warp or a block per row, in float32
// (float64 for float64), rounded to the output once after weight and bias, as the CPU. norm.cpp prepends in_t
// (stored element), acc_t (compute type), nv_value (an element as an acc_t) and nv_store (an acc_t as a stored
// element).
//
// Per row: mean = sum(x) / n when centered (LayerNorm), else 0; inv = 1 / sqrt(sum((x - mean)^2) / n + eps);
// y = (x - mean) * inv * w + b, with w = 1 and b = 0 for a missing weight or bias (null pointers; their strides
// may be anything, 0 for a broadcast).
#include "nuvec/cuda/prelude.cuh"

inline float nv_sqrt(float x) { return sqrtf(x); }
inline double nv_sqrt(double x) { return sqrt(x); }

/// The sum over the group (a warp, or with Block the whole block), the same in every thread.
template <bool Block>
inline acc_t nv_group_sum(acc_t v, int t, int count) {
  for (int mask = 16; mask > 0; mask /= 2) {
    v += __shfl_xor_sync(0xffffffffu, v, mask);
  }
  if constexpr (Block) {
    __shared__ acc_t partial[32];
    if (t % 32 == 0) {
      partial[t / 32] = v;
    }
    __syncthreads();
    v = partial[0];
    for (int w = 1; w < count / 32; ++w) {
      v += partial[w];
    }
    __syncthreads();  // partial is written again by the next sum
  }
  return v;
}

template <bool Block>
inline void nv_norm_row(const in_t* x, in_t* y, int64_t n, const in_t* w, int64_t ws, const in_t* b, int64_t bs,
                        float eps, bool centered, int t, int count) {
  acc_t mean = 0;
  if (centered) {
    acc_t s = 0;
    for (int64_t i = t; i < n; i += count) {
      s += nv_value(x[i]);
    }
    mean = nv_group_sum<Block>(s, t, count) / (acc_t)n;
  }
  acc_t squares = 0;
  for (int64_t i = t; i < n; i += count) {
    const acc_t d = nv_value(x[i]) - mean;
    squares += d * d;
  }
  const acc_t inv = 1 / nv_sqrt(nv_group_sum<Block>(squares, t, count) / (acc_t)n + (acc_t)eps);
  // x may be y (the output took over the input's buffer): each element is read before the same thread writes it.
  for (int64_t i = t; i < n; i += count) {
    acc_t v = (nv_value(x[i]) - mean) * inv;
    if (w != nullptr) {
      v *= nv_value(w[i * ws]);
    }
    if (b != nullptr) {
      v += nv_value(b[i * bs]);
    }
    y[i] = nv_store(v);
  }
}

extern "C" __global__ void nv_norm_warp(const in_t* x, in_t* y, int64_t rows, int64_t n, const in_t* w, int64_t ws,
                                        const in_t* b, int64_t bs, float eps, int centered) {
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row < rows) {  // uniform over the warp
    nv_norm_row<false>(x + row * n, y + row * n, n, w, ws, b, bs, eps, centered != 0, threadIdx.x % 32, 32);
  }
}

extern "C" __global__ void nv_norm_block(const in_t* x, in_t* y, int64_t n, const in_t* w, int64_t ws, const in_t* b,
                                         int64_t bs, float eps, int centered) {
  const int64_t row = blockIdx.x;
  nv_norm_row<true>(x + row * n, y + row * n, n, w, ws, b, bs, eps, centered != 0, threadIdx.x, blockDim.x);
}
