// argmax and argmin of a dense input seen as [outer, length, inner] (as reduce.cu), giving uint32 indices.
// reduce.cpp prepends in_t (stored input), val_t (its compute type), nv_value (an input as a val_t) and NV_MAX (1
// for argmax, 0 for argmin).
#include "nuvec/cuda/prelude.cuh"

/// A candidate: a value and its index along the reduced axis; index nv_none marks a thread that saw no element.
struct nv_best {
  val_t v;
  uint32_t i;
};
constexpr uint32_t nv_none = 0xffffffffu;

/// Whether candidate b beats a: NaN first (numpy), then the larger (argmax) or smaller value, then the smaller
/// index, so the fold gives the first extreme whatever order it meets the candidates in.
inline bool nv_beats(nv_best b, nv_best a) {
  if (b.i == nv_none) {
    return false;
  }
  if (a.i == nv_none) {
    return true;
  }
  const bool a_nan = a.v != a.v;
  const bool b_nan = b.v != b.v;
  if (a_nan || b_nan) {
    return b_nan && (!a_nan || b.i < a.i);
  }
  if (NV_MAX ? b.v > a.v : b.v < a.v) {
    return true;
  }
  return b.v == a.v && b.i < a.i;
}

inline nv_best nv_pick(nv_best a, nv_best b) { return nv_beats(b, a) ? b : a; }

/// __shfl_xor_sync has no overload for types narrower than int: those travel as int.
template <class T>
inline T nv_shfl_xor(T v, int mask) {
  if constexpr (sizeof(T) < 4) {
    return (T)__shfl_xor_sync(0xffffffffu, (int)v, mask);
  } else {
    return __shfl_xor_sync(0xffffffffu, v, mask);
  }
}

inline nv_best nv_warp_pick(nv_best a) {
  for (int mask = 16; mask > 0; mask /= 2) {
    const nv_best other{nv_shfl_xor(a.v, mask), nv_shfl_xor(a.i, mask)};
    a = nv_pick(a, other);
  }
  return a;
}

/// The block's pick, valid in thread 0.
inline nv_best nv_block_pick(nv_best a) {
  __shared__ val_t values[32];
  __shared__ uint32_t indices[32];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  a = nv_warp_pick(a);
  if (lane == 0) {
    values[warp] = a.v;
    indices[warp] = a.i;
  }
  __syncthreads();
  if (warp == 0) {
    a = lane < (int)(blockDim.x / 32) ? nv_best{values[lane], indices[lane]} : nv_best{val_t(0), nv_none};
    a = nv_warp_pick(a);
  }
  return a;
}

constexpr int nv_lanes = 16 / sizeof(in_t);
struct alignas(16) nv_vector {
  in_t v[nv_lanes];
};

/// Thread t of `count` picks among x[0, n) (16-byte loads, as reduce.cu).
inline nv_best nv_pick_range(const in_t* x, int64_t n, int t, int count) {
  nv_best a{val_t(0), nv_none};
  int64_t head = (int64_t)(((16 - (uint64_t)x % 16) % 16) / sizeof(in_t));
  head = head < n ? head : n;
  if (t < head) {
    a = nv_pick(a, nv_best{nv_value(x[t]), (uint32_t)t});
  }
  const nv_vector* body = (const nv_vector*)(x + head);
  const int64_t vectors = (n - head) / nv_lanes;
#pragma unroll 4
  for (int64_t i = t; i < vectors; i += count) {
    const nv_vector v = body[i];
#pragma unroll
    for (int j = 0; j < nv_lanes; ++j) {
      a = nv_pick(a, nv_best{nv_value(v.v[j]), (uint32_t)(head + i * nv_lanes + j)});
    }
  }
  for (int64_t i = head + vectors * nv_lanes + t; i < n; i += count) {
    a = nv_pick(a, nv_best{nv_value(x[i]), (uint32_t)i});
  }
  return a;
}

/// Short rows (inner 1): a thread per row.
extern "C" __global__ void nv_arg_rows_thread(const in_t* x, uint32_t* y, int64_t rows, int64_t n) {
  for (int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; row < rows;
       row += (int64_t)gridDim.x * blockDim.x) {
    const in_t* p = x + row * n;
    nv_best a{nv_value(p[0]), 0};
    for (int64_t i = 1; i < n; ++i) {
      a = nv_pick(a, nv_best{nv_value(p[i]), (uint32_t)i});
    }
    y[row] = a.i;
  }
}

/// A warp per row.
extern "C" __global__ void nv_arg_rows_warp(const in_t* x, uint32_t* y, int64_t rows, int64_t n) {
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) {
    return;  // the whole warp: the shuffles below need every lane
  }
  const int lane = threadIdx.x % 32;
  const nv_best a = nv_warp_pick(nv_pick_range(x + row * n, n, lane, 32));
  if (lane == 0) {
    y[row] = a.i;
  }
}

/// A block per row.
extern "C" __global__ void nv_arg_rows_block(const in_t* x, uint32_t* y, int64_t n) {
  const int64_t row = blockIdx.x;
  const nv_best a = nv_block_pick(nv_pick_range(x + row * n, n, threadIdx.x, blockDim.x));
  if (threadIdx.x == 0) {
    y[row] = a.i;
  }
}

/// inner > 1: blocks of 256 threads over `width` neighbouring columns and 256 / width rows at a time (as reduce.cu's
/// nv_reduce_columns, without pieces); grid.x = outer * column blocks.
extern "C" __global__ void nv_arg_columns(const in_t* x, uint32_t* y, int64_t length, int64_t inner,
                                          int64_t column_blocks, int width) {
  __shared__ val_t values[256];
  __shared__ uint32_t indices[256];
  const int64_t o = blockIdx.x / column_blocks;
  const int64_t c = (blockIdx.x % column_blocks) * width + threadIdx.x % width;
  const int ty = threadIdx.x / width;
  const int row_lanes = blockDim.x / width;
  nv_best a{val_t(0), nv_none};
  if (c < inner) {
    const in_t* p = x + o * length * inner + c;
    for (int64_t r = ty; r < length; r += row_lanes) {
      a = nv_pick(a, nv_best{nv_value(p[r * inner]), (uint32_t)r});
    }
  }
  values[threadIdx.x] = a.v;
  indices[threadIdx.x] = a.i;
  __syncthreads();
  for (int half = row_lanes / 2; half > 0; half /= 2) {
    if (ty < half) {
      const nv_best b = nv_pick(nv_best{values[threadIdx.x], indices[threadIdx.x]},
                                nv_best{values[threadIdx.x + half * width], indices[threadIdx.x + half * width]});
      values[threadIdx.x] = b.v;
      indices[threadIdx.x] = b.i;
    }
    __syncthreads();
  }
  if (ty == 0 && c < inner) {
    y[o * inner + c] = indices[threadIdx.x];
  }
}
