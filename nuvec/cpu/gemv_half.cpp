// Few rows of float32 activations times a weight held in half precision (float16 or bfloat16), w (n, k) row-major:
// decode-time products of half-precision models. Each weight row is widened in registers and streamed once from
// memory, one row at a time, with four vectors of it in flight; the rows of a (at most a few) share every widened
// vector. Threads split the rows of w. Four rows of w at a time, one vector of each, read at 0.2-0.7 of the read floor
// on w 8192 x 2048 (one thread; rows of 4 KiB, or a multiple, likely put the four streams on the same L1 sets) and at
// half of it on the small model's 32000 x 512 output; one row at a time reads at 0.8-1.0 of it on both
// (bench/README.md, session 14). Software prefetch 1-4 KiB ahead did not help: the hardware prefetcher follows one
// sequential stream well.

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
constexpr int unroll = 4;                    // vectors of a row in flight: independent accumulator chains

/// One half-precision value as float (the tails of rows).
template <class H>
float widened(H h) {
  using Nuvec = std::conditional_t<std::is_same_v<H, hwy::float16_t>, float16_t, bfloat16_t>;
  Nuvec v;
  std::memcpy(&v.bits, &h, sizeof(h));
  return static_cast<float>(v);
}

/// c[r * ldc] for R rows of a against one row of w: `unroll` widened vectors of the row a step, each met by the R
/// rows of a.
template <int R, class H>
void row_dot(const float* a, int64_t lda, const H* w, int64_t k, float* c, int64_t ldc) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<H, decltype(df)> dh;
  using V = hn::Vec<decltype(df)>;
  const auto lanes = static_cast<int64_t>(hn::Lanes(df));
  V acc[R][unroll];
  for (int r = 0; r < R; ++r) {
    for (int u = 0; u < unroll; ++u) {
      acc[r][u] = hn::Zero(df);
    }
  }
  int64_t i = 0;
  for (; i + unroll * lanes <= k; i += unroll * lanes) {
    for (int u = 0; u < unroll; ++u) {
      const V wv = hn::PromoteTo(df, hn::LoadU(dh, w + i + u * lanes));
      for (int r = 0; r < R; ++r) {
        acc[r][u] = hn::MulAdd(hn::LoadU(df, a + r * lda + i + u * lanes), wv, acc[r][u]);
      }
    }
  }
  for (; i + lanes <= k; i += lanes) {
    const V wv = hn::PromoteTo(df, hn::LoadU(dh, w + i));
    for (int r = 0; r < R; ++r) {
      acc[r][0] = hn::MulAdd(hn::LoadU(df, a + r * lda + i), wv, acc[r][0]);
    }
  }
  for (int r = 0; r < R; ++r) {
    V total = acc[r][0];
    for (int u = 1; u < unroll; ++u) {
      total = hn::Add(total, acc[r][u]);
    }
    float sum = hn::GetLane(hn::SumOfLanes(df, total));
    for (int64_t t = i; t < k; ++t) {
      sum += a[r * lda + t] * widened(w[t]);
    }
    c[r * ldc] = sum;
  }
}

template <class H>
void gemv(int64_t m, int64_t n, int64_t k, const float* a, const H* w, int64_t ld, float* c) {
  const int64_t row_bytes = k * static_cast<int64_t>(sizeof(H));
  const auto grain = static_cast<size_t>(std::max<int64_t>(1, bytes_per_task / std::max<int64_t>(1, row_bytes)));
  parallel_for(static_cast<size_t>(n), grain, [&](size_t j0, size_t j1) {
    for (auto j = static_cast<int64_t>(j0); j < static_cast<int64_t>(j1); ++j) {
      int64_t r = 0;
      for (; r + 4 <= m; r += 4) {
        row_dot<4>(a + r * k, k, w + j * ld, k, c + r * n + j, n);
      }
      for (; r < m; ++r) {
        row_dot<1>(a + r * k, k, w + j * ld, k, c + r * n + j, n);
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
