// Reductions of a dense input seen as [outer, length, inner]: output (o, c) folds x[(o * length + r) * inner + c]
// over r. reduce.cpp prepends the element types and the op: in_t (stored input), acc_t (accumulator), out_t (stored
// output), NV_OP (0 sum, 1 prod, 2 max, 3 min, 4 all, 5 any), nv_value (an input as its compute value), nv_out
// (an accumulator as a stored output) and nv_identity. The result of a long row or column split across blocks is
// a partial accumulator per piece, folded by a second launch whose in_t is acc_t.
#include "nuvec/cuda/prelude.cuh"

template <class A>
inline A nv_combine(A a, A b) {
  if constexpr (NV_OP == 0) {
    return a + b;
  } else if constexpr (NV_OP == 1) {
    return a * b;
  } else if constexpr (NV_OP == 2 || NV_OP == 3) {
    // NaN wins, as numpy's max and min (a != a only for NaN).
    if (a != a) {
      return a;
    }
    if (b != b) {
      return b;
    }
    return (NV_OP == 2 ? b > a : b < a) ? b : a;
  } else if constexpr (NV_OP == 4) {
    return a && b;
  } else {
    return a || b;
  }
}

inline acc_t nv_load(in_t x) {
  if constexpr (NV_OP >= 4) {
    return nv_value(x) != 0;
  } else {
    return (acc_t)nv_value(x);
  }
}

/// __shfl_xor_sync has no overload for types narrower than int: those travel as int.
template <class T>
inline T nv_shfl_xor(T v, int mask) {
  if constexpr (sizeof(T) < 4) {
    return (T)__shfl_xor_sync(0xffffffffu, (int)v, mask);
  } else {
    return __shfl_xor_sync(0xffffffffu, v, mask);
  }
}

inline acc_t nv_warp_reduce(acc_t a) {
  for (int mask = 16; mask > 0; mask /= 2) {
    a = nv_combine(a, nv_shfl_xor(a, mask));
  }
  return a;
}

/// The block's fold, valid in thread 0.
inline acc_t nv_block_reduce(acc_t a) {
  __shared__ acc_t partial[32];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  a = nv_warp_reduce(a);
  if (lane == 0) {
    partial[warp] = a;
  }
  __syncthreads();
  if (warp == 0) {
    a = lane < (int)(blockDim.x / 32) ? partial[lane] : nv_identity();
    a = nv_warp_reduce(a);
  }
  return a;
}

/// 16-byte loads: the row's first elements up to a 16-byte boundary one by one, then whole vectors, then the tail.
constexpr int nv_lanes = 16 / sizeof(in_t);
struct alignas(16) nv_vector {
  in_t v[nv_lanes];
};

/// Thread t of `count` folds its share of x[0, n).
inline acc_t nv_fold_range(const in_t* x, int64_t n, int t, int count) {
  acc_t a = nv_identity();
  int64_t head = (int64_t)(((16 - (uint64_t)x % 16) % 16) / sizeof(in_t));
  head = head < n ? head : n;
  if (t < head) {
    a = nv_combine(a, nv_load(x[t]));
  }
  const nv_vector* body = (const nv_vector*)(x + head);
  const int64_t vectors = (n - head) / nv_lanes;
#pragma unroll 4
  for (int64_t i = t; i < vectors; i += count) {
    const nv_vector v = body[i];
#pragma unroll
    for (int j = 0; j < nv_lanes; ++j) {
      a = nv_combine(a, nv_load(v.v[j]));
    }
  }
  for (int64_t i = head + vectors * nv_lanes + t; i < n; i += count) {
    a = nv_combine(a, nv_load(x[i]));
  }
  return a;
}

/// Short rows (inner 1): a thread per row.
extern "C" __global__ void nv_reduce_rows_thread(const in_t* x, out_t* y, int64_t rows, int64_t n) {
  for (int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; row < rows;
       row += (int64_t)gridDim.x * blockDim.x) {
    acc_t a = nv_identity();
    for (int64_t i = 0; i < n; ++i) {
      a = nv_combine(a, nv_load(x[row * n + i]));
    }
    y[row] = nv_out(a);
  }
}

/// Rows of up to a few thousand elements: a warp per row.
extern "C" __global__ void nv_reduce_rows_warp(const in_t* x, out_t* y, int64_t rows, int64_t n) {
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) {
    return;  // the whole warp: the shuffles below need every lane
  }
  const int lane = threadIdx.x % 32;
  const acc_t a = nv_warp_reduce(nv_fold_range(x + row * n, n, lane, 32));
  if (lane == 0) {
    y[row] = nv_out(a);
  }
}

/// Long rows: block b folds piece b % splits (`chunk` elements) of row b / splits; with one piece per row it
/// writes the output, else the piece's accumulator to partial[b].
extern "C" __global__ void nv_reduce_rows_block(const in_t* x, out_t* y, acc_t* partial, int64_t n, int64_t chunk,
                                                int splits) {
  const int64_t row = blockIdx.x / splits;
  const int64_t begin = (blockIdx.x % splits) * chunk;
  const int64_t end = begin + chunk < n ? begin + chunk : n;
  const int64_t length = end > begin ? end - begin : 0;
  const acc_t a = nv_block_reduce(nv_fold_range(x + row * n + begin, length, threadIdx.x, blockDim.x));
  if (threadIdx.x == 0) {
    if (splits == 1) {
      y[row] = nv_out(a);
    } else {
      partial[blockIdx.x] = a;
    }
  }
}

/// inner > 1: a block of 256 threads takes `width` neighbouring columns (a power of two up to 32; consecutive threads
/// read consecutive columns of a row) and 256 / width rows at a time. grid.x = outer * column blocks, grid.y =
/// pieces of `chunk` rows; with several pieces each writes its accumulators to partial[(o * splits + piece) * inner
/// + c], which is again a column reduction.
extern "C" __global__ void nv_reduce_columns(const in_t* x, out_t* y, acc_t* partial, int64_t length, int64_t inner,
                                             int64_t column_blocks, int width, int64_t chunk) {
  __shared__ acc_t tile[256];
  const int64_t o = blockIdx.x / column_blocks;
  const int64_t c = (blockIdx.x % column_blocks) * width + threadIdx.x % width;
  const int ty = threadIdx.x / width;
  const int row_lanes = blockDim.x / width;
  const int64_t begin = blockIdx.y * chunk;
  const int64_t end = begin + chunk < length ? begin + chunk : length;
  acc_t a = nv_identity();
  if (c < inner) {
    const in_t* p = x + o * length * inner + c;
    for (int64_t r = begin + ty; r < end; r += row_lanes) {
      a = nv_combine(a, nv_load(p[r * inner]));
    }
  }
  tile[threadIdx.x] = a;
  __syncthreads();
  for (int half = row_lanes / 2; half > 0; half /= 2) {
    if (ty < half) {
      tile[threadIdx.x] = nv_combine(tile[threadIdx.x], tile[threadIdx.x + half * width]);
    }
    __syncthreads();
  }
  if (ty == 0 && c < inner) {
    if (gridDim.y == 1) {
      y[o * inner + c] = nv_out(tile[threadIdx.x]);
    } else {
      partial[(o * gridDim.y + blockIdx.y) * inner + c] = tile[threadIdx.x];
    }
  }
}
