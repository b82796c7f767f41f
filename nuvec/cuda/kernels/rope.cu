// RoPE of x (B, M, L, D) with any strides (the middle axes merged into M by the caller) into the row-contiguous y:
// a thread per rotated pair of features, and per feature past `dims`, which is copied. rope.cpp prepends in_t
// (stored element), acc_t (compute type: float32, float64 for float64), nv_value and nv_store (as softmax.cu).
//
// The arithmetic is the CPU's (nuvec/cpu/rope.cpp): the position (l + offset) rounded to float32 before it is
// scaled, the angle pos * inv_freq[i] in acc_t, inv_freq from the table given (inverted when it holds freqs), and
// the rotation y1 = x1 c - x2 s, y2 = x2 c + x1 s with the first product rounded before the fused multiply-add.
#include "nuvec/cuda/prelude.cuh"

inline void nv_sincos(float x, float* s, float* c) { sincosf(x, s, c); }
inline void nv_sincos(double x, double* s, double* c) { sincos(x, s, c); }
inline float nv_fma(float a, float b, float c) { return fmaf(a, b, c); }
inline double nv_fma(double a, double b, double c) { return fma(a, b, c); }
inline float nv_mul(float a, float b) { return __fmul_rn(a, b); }
inline double nv_mul(double a, double b) { return __dmul_rn(a, b); }

struct nv_rope_layout {
  int64_t batch, mid, length, features;              // B, M, L, D
  int64_t batch_stride, mid_stride, length_stride, feature_stride;
  int64_t offset_stride;  // between the offsets of consecutive batches, 0 for one offset
  int64_t table_stride;
  int half;               // dims / 2
  int traditional;        // pairs (2i, 2i + 1) instead of (i, i + half)
  int invert;             // the table holds freqs: inv_freq = 1 / freqs
  float scale;
};

extern "C" __global__ void nv_rope(const in_t* x, in_t* y, const int32_t* offset, const float* table,
                                   nv_rope_layout g) {
  const int64_t work = g.features - g.half;  // per row: the pairs, then the features past dims
  const int64_t total = g.batch * g.mid * g.length * work;
  for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
       idx += (int64_t)gridDim.x * blockDim.x) {
    const int64_t j = idx % work;
    const int64_t row = idx / work;  // (b * M + m) * L + l, y's row
    const int64_t l = row % g.length;
    const int64_t m = (row / g.length) % g.mid;
    const int64_t b = row / (g.length * g.mid);
    const in_t* xr = x + b * g.batch_stride + m * g.mid_stride + l * g.length_stride;
    in_t* yr = y + row * g.features;
    if (j >= g.half) {
      const int64_t f = j + g.half;
      yr[f] = xr[f * g.feature_stride];
      continue;
    }
    const float stored = table[j * g.table_stride];
    const float inv_freq = g.invert ? 1.0f / stored : stored;
    const float pos = __fmul_rn(__fadd_rn((float)l, (float)offset[b * g.offset_stride]), g.scale);
    acc_t s;
    acc_t c;
    nv_sincos(nv_mul((acc_t)pos, (acc_t)inv_freq), &s, &c);
    const int64_t i1 = g.traditional ? 2 * j : j;
    const int64_t i2 = g.traditional ? 2 * j + 1 : j + g.half;
    const acc_t x1 = nv_value(xr[i1 * g.feature_stride]);
    const acc_t x2 = nv_value(xr[i2 * g.feature_stride]);
    yr[i1] = nv_store(nv_fma(-x2, s, nv_mul(x1, c)));
    yr[i2] = nv_store(nv_fma(x2, c, nv_mul(x1, s)));
  }
}
