// Softmax and logsumexp of dense rows (row r is x[r * n, (r + 1) * n)), a warp or a block per row, in float32
// (float64 for float64). softmax.cpp prepends in_t (stored element), acc_t (compute type), nv_value (an element as
// an acc_t) and nv_store (an acc_t as a stored element).
//
// One pass gathers each thread's running max m and sum s of exp(x - m) (rescaled when m grows), the threads' pairs
// are merged, and softmax writes exp(x - m) / s in a second pass. As the CPU: a row whose max is NaN or infinite
// (NaN anywhere, +inf, or all -inf) is NaN throughout for softmax; logsumexp gives NaN for NaN and the max itself
// for +inf or a row of -inf (the empty row included).
#include "nuvec/cuda/prelude.cuh"

inline float nv_exp(float x) { return expf(x); }
inline double nv_exp(double x) { return exp(x); }
inline float nv_log(float x) { return logf(x); }
inline double nv_log(double x) { return log(x); }

inline acc_t nv_inf() { return (acc_t)__builtin_inf(); }

inline bool nv_finite(acc_t v) { return v == v && v != nv_inf() && v != -nv_inf(); }

/// A running max and the sum of exp(x - max) over the elements seen.
struct nv_stats {
  acc_t m;
  acc_t s;
};

/// Adds element v. A NaN becomes the max for good (v > NaN is false); while the max is -inf every element seen is
/// -inf and adds nothing. Sums of rows whose max ends up not finite are never read.
inline void nv_add(nv_stats& st, acc_t v) {
  if (v > st.m || v != v) {
    st.s = st.s * nv_exp(st.m - v) + 1;
    st.m = v;
  } else if (st.m != -nv_inf()) {
    st.s += nv_exp(v - st.m);
  }
}

inline nv_stats nv_merge(nv_stats a, nv_stats b) {
  nv_stats r;
  r.m = (a.m != a.m || b.m != b.m) ? (a.m != a.m ? a.m : b.m) : (b.m > a.m ? b.m : a.m);
  r.s = r.m == -nv_inf() ? 0 : a.s * nv_exp(a.m - r.m) + b.s * nv_exp(b.m - r.m);
  return r;
}

/// The row's stats in every thread of the group: a warp, or (Block) the whole block.
template <bool Block>
inline nv_stats nv_row_stats(const in_t* x, int64_t n, int t, int count) {
  nv_stats st{-nv_inf(), 0};
  for (int64_t i = t; i < n; i += count) {
    nv_add(st, nv_value(x[i]));
  }
  for (int mask = 16; mask > 0; mask /= 2) {
    st = nv_merge(st, nv_stats{__shfl_xor_sync(0xffffffffu, st.m, mask), __shfl_xor_sync(0xffffffffu, st.s, mask)});
  }
  // Lane 0's pair for all: merging in another order may round differently.
  st = nv_stats{__shfl_sync(0xffffffffu, st.m, 0), __shfl_sync(0xffffffffu, st.s, 0)};
  if constexpr (Block) {
    __shared__ acc_t ms[32];
    __shared__ acc_t ss[32];
    if (t % 32 == 0) {
      ms[t / 32] = st.m;
      ss[t / 32] = st.s;
    }
    __syncthreads();
    st = nv_stats{ms[0], ss[0]};
    for (int w = 1; w < count / 32; ++w) {
      st = nv_merge(st, nv_stats{ms[w], ss[w]});
    }
  }
  return st;
}

template <bool Block>
inline void nv_softmax_row(const in_t* x, in_t* y, int64_t n, int t, int count) {
  const nv_stats st = nv_row_stats<Block>(x, n, t, count);
  const bool finite = nv_finite(st.m);
  const acc_t scale = finite ? 1 / st.s : (acc_t)__builtin_nan("");
  // x may be y (the output took over the input's buffer): each element is read before the same thread writes it.
  for (int64_t i = t; i < n; i += count) {
    y[i] = nv_store(finite ? nv_exp(nv_value(x[i]) - st.m) * scale : scale);
  }
}

template <bool Block>
inline void nv_logsumexp_row(const in_t* x, in_t* y, int64_t n, int t, int count) {
  const nv_stats st = nv_row_stats<Block>(x, n, t, count);
  if (t == 0) {
    *y = nv_store(nv_finite(st.m) ? st.m + nv_log(st.s) : st.m);
  }
}

extern "C" __global__ void nv_softmax_warp(const in_t* x, in_t* y, int64_t rows, int64_t n) {
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row < rows) {  // uniform over the warp
    nv_softmax_row<false>(x + row * n, y + row * n, n, threadIdx.x % 32, 32);
  }
}

extern "C" __global__ void nv_softmax_block(const in_t* x, in_t* y, int64_t n) {
  const int64_t row = blockIdx.x;
  nv_softmax_row<true>(x + row * n, y + row * n, n, threadIdx.x, blockDim.x);
}

extern "C" __global__ void nv_logsumexp_warp(const in_t* x, in_t* y, int64_t rows, int64_t n) {
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row < rows) {
    nv_logsumexp_row<false>(x + row * n, y + row, n, threadIdx.x % 32, 32);
  }
}

extern "C" __global__ void nv_logsumexp_block(const in_t* x, in_t* y, int64_t n) {
  const int64_t row = blockIdx.x;
  nv_logsumexp_row<true>(x + row * n, y + row, n, threadIdx.x, blockDim.x);
}
