// Few rows of float32 activations times a weight held in half precision (float16 or bfloat16), w (n, k) row-major:
// decode-time products of half-precision models. Each weight row is widened in registers and streamed once from
// memory; the rows of a (at most a few) share every widened vector. Threads split the rows of w. (Software prefetch
// ahead into L2, which the quantized decode kernels use, measured slower here: 26-28 GB/s against 30-41 without, on
// a 134 MB float16 weight: the hardware prefetcher follows four sequential rows well.)

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "nuvec/core/half.h"
#include "nuvec/cpu/gemm.h"
#include "nuvec/cpu/highway.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

namespace {

constexpr int64_t bytes_per_task = 1 << 16;  // weight bytes a thread reads before splitting pays
constexpr int rows_of_w = 4;                 // weight rows computed together (independent accumulator chains)

/// One half-precision value as float (the tails of rows).
template <class H>
float widened(H h) {
  using Nuvec = std::conditional_t<std::is_same_v<H, hwy::float16_t>, float16_t, bfloat16_t>;
  Nuvec v;
  std::memcpy(&v.bits, &h, sizeof(h));
  return static_cast<float>(v);
}

/// c[r, j0 .. j0 + W) for R rows of a against W consecutive rows of w.
template <int R, int W, class H>
void block(const float* a, int64_t lda, const H* w, int64_t ld, int64_t k, float* c, int64_t ldc) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<H, decltype(df)> dh;
  using V = hn::Vec<decltype(df)>;
  const auto lanes = static_cast<int64_t>(hn::Lanes(df));
  V acc[R][W];
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < W; ++j) {
      acc[r][j] = hn::Zero(df);
    }
  }
  int64_t i = 0;
  for (; i + lanes <= k; i += lanes) {
    V wv[W];
    for (int j = 0; j < W; ++j) {
      wv[j] = hn::PromoteTo(df, hn::LoadU(dh, w + j * ld + i));
    }
    for (int r = 0; r < R; ++r) {
      const V av = hn::LoadU(df, a + r * lda + i);
      for (int j = 0; j < W; ++j) {
        acc[r][j] = hn::MulAdd(av, wv[j], acc[r][j]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < W; ++j) {
      float sum = hn::GetLane(hn::SumOfLanes(df, acc[r][j]));
      for (int64_t t = i; t < k; ++t) {
        sum += a[r * lda + t] * widened(w[j * ld + t]);
      }
      c[r * ldc + j] = sum;
    }
  }
}

template <int W, class H>
void rows_block(int64_t m, const float* a, int64_t k, const H* w, int64_t ld, float* c, int64_t n) {
  int64_t r = 0;
  for (; r + 4 <= m; r += 4) {
    block<4, W>(a + r * k, k, w, ld, k, c + r * n, n);
  }
  for (; r < m; ++r) {
    block<1, W>(a + r * k, k, w, ld, k, c + r * n, n);
  }
}

template <class H>
void gemv(int64_t m, int64_t n, int64_t k, const float* a, const H* w, int64_t ld, float* c) {
  const int64_t row_bytes = k * static_cast<int64_t>(sizeof(H));
  const auto tasks = static_cast<size_t>((n + rows_of_w - 1) / rows_of_w);
  const auto grain =
      static_cast<size_t>(std::max<int64_t>(1, bytes_per_task / std::max<int64_t>(1, row_bytes * rows_of_w)));
  parallel_for(tasks, grain, [&](size_t t0, size_t t1) {
    const int64_t end = std::min(n, static_cast<int64_t>(t1) * rows_of_w);
    for (auto j = static_cast<int64_t>(t0) * rows_of_w; j < end; j += rows_of_w) {
      if (j + rows_of_w <= n) {
        rows_block<rows_of_w>(m, a, k, w + j * ld, ld, c + j, n);
      } else {
        for (int64_t q = j; q < n; ++q) {
          rows_block<1>(m, a, k, w + q * ld, ld, c + q, n);
        }
      }
    }
  });
}

}  // namespace

void half_gemv(Dtype w_dtype, int64_t m, int64_t n, int64_t k, const float* a, const void* w, int64_t ld, float* c) {
  if (w_dtype == float16) {
    gemv(m, n, k, a, static_cast<const hwy::float16_t*>(w), ld, c);
  } else {
    gemv(m, n, k, a, static_cast<const hwy::bfloat16_t*>(w), ld, c);
  }
}

}  // namespace nuvec::cpu
