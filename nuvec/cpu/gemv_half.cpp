// Few rows of float32 activations times a weight held in half precision (float16 or bfloat16), w (n, k) row-major:
// decode-time products of half-precision models. Each weight row is widened in registers and streamed once from
// memory, one row at a time, with four vectors of it in flight; the rows of a (at most a few) share every widened
// vector. Threads split the rows of w. Four rows of w at a time, one vector of each, read at 0.2-0.7 of the read floor
// on w 8192 x 2048 (one thread; rows of 4 KiB, or a multiple, likely put the four streams on the same L1 sets) and at
// half of it on the small model's 32000 x 512 output; one row at a time reads at 0.8-1.0 of it on both
// (bench/README.md, session 14). The hardware prefetcher follows that one sequential stream, but not far enough
// ahead for two threads: asking for the line 8 KiB ahead of each one read, into L2, takes w 8192 x 2048 and
// 32768 x 2048 from 1.29-1.37x of the read floor to 1.08-1.10x on two threads (4 to 32 KiB ahead alike; session 23;
// into L1, 1-4 KiB ahead on one thread, it had not helped in session 14).
//
// Rows of a longer than 16 KiB (k > 4096: a Llama MLP's down projection) no longer stay in the 32 KiB L1 beside the
// streaming weight and come back from L2 for every row of w: one row at a time then reads at half the rate
// (w 2048 x 8192, one thread: 13.5 GB/s against 29 with a short a). There eight rows of w share each vector of a
// (22.5 GB/s; two threads 24.7 -> 43.7). Splitting k into panels that fit L1 breaks the weight's sequential stream
// and was no faster (12-15 GB/s with or without software prefetch; session 22).

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "nuvec/core/half.h"
#include "nuvec/cpu/gemm.h"
#include "nuvec/cpu/highway.h"
#include "nuvec/cpu/prefetch.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

namespace {

constexpr int64_t bytes_per_task = 1 << 16;  // weight bytes a thread reads before splitting pays
constexpr int unroll = 4;                    // vectors of a row in flight: independent accumulator chains
constexpr int64_t l1_row_bytes = 16 << 10;   // rows of a longer than this leave L1 while a weight streams through
constexpr int shared_rows = 8;               // rows of w that share each vector of a long row of a
constexpr int64_t prefetch_lead = 8 << 10;   // bytes of a row ahead of the one read that are asked for into L2

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
    prefetch_l2(reinterpret_cast<const char*>(w + i) + prefetch_lead, unroll * lanes * int64_t{sizeof(H)});
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

/// c[j] for one row of a against W consecutive rows of w (`ld` apart): each vector of a, loaded once, meets the W
/// widened vectors of the rows beside it, two vectors of each row a step.
template <int W, class H>
void rows_dot(const float* a, const H* w, int64_t ld, int64_t k, float* c) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<H, decltype(df)> dh;
  using V = hn::Vec<decltype(df)>;
  const auto lanes = static_cast<int64_t>(hn::Lanes(df));
  V acc[W][2];
  for (int j = 0; j < W; ++j) {
    acc[j][0] = hn::Zero(df);
    acc[j][1] = hn::Zero(df);
  }
  int64_t i = 0;
  for (; i + 2 * lanes <= k; i += 2 * lanes) {
    const V a0 = hn::LoadU(df, a + i);
    const V a1 = hn::LoadU(df, a + i + lanes);
    for (int j = 0; j < W; ++j) {
      acc[j][0] = hn::MulAdd(a0, hn::PromoteTo(df, hn::LoadU(dh, w + j * ld + i)), acc[j][0]);
      acc[j][1] = hn::MulAdd(a1, hn::PromoteTo(df, hn::LoadU(dh, w + j * ld + i + lanes)), acc[j][1]);
    }
  }
  for (int j = 0; j < W; ++j) {
    float sum = hn::GetLane(hn::SumOfLanes(df, hn::Add(acc[j][0], acc[j][1])));
    for (int64_t t = i; t < k; ++t) {
      sum += a[t] * widened(w[j * ld + t]);
    }
    c[j] = sum;
  }
}

/// gemv for rows of a too long for L1: blocks of shared_rows rows of w, each met by every row of a in turn (the
/// block, at most 8 rows of 32 KiB, stays in L2 for the rows of a after the first).
template <class H>
void gemv_long_rows(int64_t m, int64_t n, int64_t k, const float* a, const H* w, int64_t ld, float* c) {
  const int64_t block_bytes = shared_rows * k * static_cast<int64_t>(sizeof(H));
  const auto grain = static_cast<size_t>(std::max<int64_t>(1, bytes_per_task / block_bytes));
  const int64_t blocks = (n + shared_rows - 1) / shared_rows;
  parallel_for(static_cast<size_t>(blocks), grain, [&](size_t b0, size_t b1) {
    for (auto b = static_cast<int64_t>(b0); b < static_cast<int64_t>(b1); ++b) {
      const int64_t j0 = b * shared_rows;
      for (int64_t r = 0; r < m; ++r) {
        if (j0 + shared_rows <= n) {
          rows_dot<shared_rows>(a + r * k, w + j0 * ld, ld, k, c + r * n + j0);
          continue;
        }
        for (int64_t j = j0; j < n; ++j) {
          rows_dot<1>(a + r * k, w + j * ld, ld, k, c + r * n + j);
        }
      }
    }
  });
}

template <class H>
void gemv(int64_t m, int64_t n, int64_t k, const float* a, const H* w, int64_t ld, float* c) {
  if (k * static_cast<int64_t>(sizeof(float)) > l1_row_bytes) {
    gemv_long_rows(m, n, k, a, w, ld, c);
    return;
  }
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
