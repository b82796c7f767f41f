// softmax(scale q k^T [mask]) v, one block of NV_THREADS threads per (query row, head, batch entry): the keys in
// tiles of NV_THREADS (a score per thread), an online softmax over the tiles (running max m and sum l, the output
// accumulators rescaled by exp(m_old - m_new)), and each thread accumulating NV_DV_PER_THREAD output features.
// Masked scores are the lowest finite float, as on the CPU: a row that sees no key averages every value, and sinks
// start each row with m = sink and l = 1. The file is prefixed with the element types and options:
// T, NV_LOAD(x), NV_STORE(x); M and NV_MASK_LOAD(x) (mask element); NV_MASK (0 none, 1 boolean, 2 additive);
// NV_CAUSAL, NV_SINKS (0 or 1); NV_THREADS; NV_DV_PER_THREAD.

struct nv_strides4 {
  int64_t s[4];
};

constexpr float nv_lowest = -3.4028234663852886e38f;

__device__ float nv_block_reduce(float x, float* scratch, bool take_max) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, x, offset);
    x = take_max ? fmaxf(x, other) : x + other;
  }
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) {
    scratch[warp] = x;
  }
  __syncthreads();
  x = scratch[0];
  for (int w = 1; w < NV_THREADS / 32; ++w) {
    x = take_max ? fmaxf(x, scratch[w]) : x + scratch[w];
  }
  __syncthreads();
  return x;
}

extern "C" __global__ void nuvec_attention(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                           const M* __restrict__ mask, const T* __restrict__ sinks,
                                           T* __restrict__ out, nv_strides4 qs, nv_strides4 ks, nv_strides4 vs,
                                           nv_strides4 ms, int lq, int lk, int d, int dv, int group, float scale) {
  extern __shared__ float shared[];
  float* qv = shared;          // the scaled query row, d floats
  float* p = shared + d;       // the tile's weights, NV_THREADS floats
  float* scratch = p + NV_THREADS;  // one float per warp
  const int i = blockIdx.x;
  const int h = blockIdx.y;
  const int b = blockIdx.z;
  const int hk = h / group;
  const T* qrow = q + b * qs.s[0] + h * qs.s[1] + i * qs.s[2];
  for (int c = threadIdx.x; c < d; c += NV_THREADS) {
    qv[c] = NV_LOAD(qrow[c * qs.s[3]]) * scale;
  }
  __syncthreads();
  float m = nv_lowest;
  float l = 0.0f;
#if NV_SINKS
  m = NV_LOAD(sinks[h]);
  l = 1.0f;
#endif
  float acc[NV_DV_PER_THREAD];
  for (int u = 0; u < NV_DV_PER_THREAD; ++u) {
    acc[u] = 0.0f;
  }
  const T* kbase = k + b * ks.s[0] + hk * ks.s[1];
  const T* vbase = v + b * vs.s[0] + hk * vs.s[1];
  for (int tile = 0; tile < lk; tile += NV_THREADS) {
    const int j = tile + threadIdx.x;
    float s = nv_lowest;
    if (j < lk) {
      const T* krow = kbase + j * ks.s[2];
      float dot = 0.0f;
      for (int c = 0; c < d; ++c) {
        dot = fmaf(qv[c], NV_LOAD(krow[c * ks.s[3]]), dot);
      }
      s = dot;
#if NV_MASK == 1
      if (!mask[b * ms.s[0] + h * ms.s[1] + i * ms.s[2] + j * ms.s[3]]) {
        s = nv_lowest;
      }
#elif NV_MASK == 2
      s += NV_MASK_LOAD(mask[b * ms.s[0] + h * ms.s[1] + i * ms.s[2] + j * ms.s[3]]);
#endif
#if NV_CAUSAL
      if (j > i + lk - lq) {
        s = nv_lowest;
      }
#endif
    }
    const float m_new = fmaxf(m, nv_block_reduce(s, scratch, true));
    const float weight = j < lk ? expf(s - m_new) : 0.0f;
    p[threadIdx.x] = weight;
    const float alpha = expf(m - m_new);
    l = l * alpha + nv_block_reduce(weight, scratch, false);
    m = m_new;
    const int count = min(NV_THREADS, lk - tile);
    for (int u = 0; u < NV_DV_PER_THREAD; ++u) {
      const int c = threadIdx.x + u * NV_THREADS;
      if (c < dv) {
        float a = acc[u] * alpha;
        for (int jj = 0; jj < count; ++jj) {
          a = fmaf(p[jj], NV_LOAD(vbase[(tile + jj) * vs.s[2] + c * vs.s[3]]), a);
        }
        acc[u] = a;
      }
    }
    __syncthreads();
  }
  T* orow = out + ((static_cast<int64_t>(b) * gridDim.y + h) * lq + i) * dv;
  for (int u = 0; u < NV_DV_PER_THREAD; ++u) {
    const int c = threadIdx.x + u * NV_THREADS;
    if (c < dv) {
      orow[c] = NV_STORE(acc[u] / l);
    }
  }
}
