// ScaledDotProductAttention: flash-attention style on the CPU. Never materializes the L_q x L_kv scores.
//
// Work is split across threads by (batch, key/value head, block of queries). One item takes the queries of every
// query head that shares its key/value head (grouped-query attention reads each key once per group), scaled and
// converted to the compute type (float32, float64 for float64), and walks the keys in blocks of `key_block`:
//   1. scores S = Q K^T for the block;
//   2. the mask (boolean: masked scores become the lowest finite value; additive: added) or the causal limit;
//   3. the online softmax: each row keeps its running max m and sum l, rescales its output accumulator by
//      exp(m_old - m_new) and adds exp(S - m_new) of the block;
//   4. O += P V for the block.
// The output is O / l, rounded to the output dtype once. Sinks start each row with m = sink and l = 1.
//
// Two ways to run steps 1 and 4: with few rows (decode, L_q = 1) each score is a dot product of a query with a key
// row read in place and each value row is added in place, so keys and values stream through once and the kernel is
// memory-bound; with more rows the key block is transposed (and converted) into a cache-resident tile and both
// products run as register-tiled micro-kernels (4 rows x 2 vectors), the GEMM-like part of the work.
// Causal items skip the key blocks that every row of the block masks (exact: those weights underflow to 0).

#include "nuvec/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "nuvec/core/dispatch.h"
#include "nuvec/cpu/elementwise.h"
#include "nuvec/cpu/highway.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/row_sum.h"
#include "nuvec/cpu/softmax_row.h"

// Highway's extras, included once nuvec/cpu/highway.h has chosen static dispatch.
#include <hwy/contrib/math/math-inl.h>

namespace nuvec::cpu {

namespace {

constexpr int64_t key_block = 64;
constexpr int64_t target_rows = 64;  // rows (query heads x queries) per work item
constexpr int64_t tiled_min_rows = 4;

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

/// y += a * x.
template <class A>
void axpy(A a, const A* x, A* y, int64_t n) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto av = hn::Set(d, a);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::MulAdd(av, hn::LoadU(d, x + i), hn::LoadU(d, y + i)), d, y + i);
  }
  for (; i < n; ++i) {
    y[i] += a * x[i];
  }
}

/// c[r][0, n) = sum_{e < k} a[r][e] * b[e][0, n) for r < rows (added to c's values with Accumulate): rows of a, b
/// and c lda, ldb and ldc apart, n a multiple of two vectors. Register-tiled, 4 rows x 2 vectors: the scores
/// S = Q K^T (with K^T a tile) and the update O += P V of a key block.
template <bool Accumulate, class A>
void tile_product(const A* a, int64_t lda, int64_t rows, int64_t k, const A* b, int64_t ldb, int64_t n, A* c,
                  int64_t ldc) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  auto start = [&](const A* p) {
    if constexpr (Accumulate) {
      return hn::LoadU(d, p);
    } else {
      return hn::Zero(d);
    }
  };
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const A* a0 = a + r * lda;
    A* c0 = c + r * ldc;
    for (int64_t j = 0; j < n; j += 2 * lanes) {
      auto c00 = start(c0 + j), c01 = start(c0 + j + lanes);
      auto c10 = start(c0 + ldc + j), c11 = start(c0 + ldc + j + lanes);
      auto c20 = start(c0 + 2 * ldc + j), c21 = start(c0 + 2 * ldc + j + lanes);
      auto c30 = start(c0 + 3 * ldc + j), c31 = start(c0 + 3 * ldc + j + lanes);
      for (int64_t e = 0; e < k; ++e) {
        const auto b0 = hn::LoadU(d, b + e * ldb + j);
        const auto b1 = hn::LoadU(d, b + e * ldb + j + lanes);
        const auto x0 = hn::Set(d, a0[e]);
        const auto x1 = hn::Set(d, a0[lda + e]);
        const auto x2 = hn::Set(d, a0[2 * lda + e]);
        const auto x3 = hn::Set(d, a0[3 * lda + e]);
        c00 = hn::MulAdd(x0, b0, c00);
        c01 = hn::MulAdd(x0, b1, c01);
        c10 = hn::MulAdd(x1, b0, c10);
        c11 = hn::MulAdd(x1, b1, c11);
        c20 = hn::MulAdd(x2, b0, c20);
        c21 = hn::MulAdd(x2, b1, c21);
        c30 = hn::MulAdd(x3, b0, c30);
        c31 = hn::MulAdd(x3, b1, c31);
      }
      hn::StoreU(c00, d, c0 + j);
      hn::StoreU(c01, d, c0 + j + lanes);
      hn::StoreU(c10, d, c0 + ldc + j);
      hn::StoreU(c11, d, c0 + ldc + j + lanes);
      hn::StoreU(c20, d, c0 + 2 * ldc + j);
      hn::StoreU(c21, d, c0 + 2 * ldc + j + lanes);
      hn::StoreU(c30, d, c0 + 3 * ldc + j);
      hn::StoreU(c31, d, c0 + 3 * ldc + j + lanes);
    }
  }
  for (; r < rows; ++r) {
    for (int64_t j = 0; j < n; j += lanes) {
      auto acc = start(c + r * ldc + j);
      for (int64_t e = 0; e < k; ++e) {
        acc = hn::MulAdd(hn::Set(d, a[r * lda + e]), hn::LoadU(d, b + e * ldb + j), acc);
      }
      hn::StoreU(acc, d, c + r * ldc + j);
    }
  }
}

/// One online-softmax step for a row of scores s[0, kbp) (entries past the block are -inf): s becomes the weights
/// exp(s - m_new); m, l and the output row o[0, dv) are updated.
template <class A>
void softmax_step(A* s, int64_t kbp, A& m, A& l, A* o, int64_t dv) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  auto mv = hn::Set(d, -std::numeric_limits<A>::infinity());
  for (int64_t j = 0; j < kbp; j += lanes) {
    mv = hn::Max(mv, hn::LoadU(d, s + j));
  }
  const A m_new = std::max(m, hn::GetLane(hn::MaxOfLanes(d, mv)));
  // A row that is -inf so far (additive masks) has no weight yet: shift by 0 so its weights are exp(-inf) = 0.
  const A shift = m_new == -std::numeric_limits<A>::infinity() ? A{0} : m_new;
  const auto sv = hn::Set(d, shift);
  auto total = hn::Zero(d);
  for (int64_t j = 0; j < kbp; j += lanes) {
    const auto e = exp_nonpositive(d, hn::Sub(hn::LoadU(d, s + j), sv));
    hn::StoreU(e, d, s + j);
    total = hn::Add(total, e);
  }
  const A correction = std::exp(m - shift);
  if (correction != A{1}) {
    scale_row(o, dv, correction);
  }
  l = l * correction + hn::GetLane(hn::SumOfLanes(d, total));
  m = m_new;
}

template <class T>
struct AttentionKernel : AttentionSizes {
  using A = compute_t<T>;

  const ScaledDotProductAttention& p;
  const Inputs& in;
  Layout4 q, k, v;

  AttentionKernel(const ScaledDotProductAttention& prim, const Inputs& inputs)
      : AttentionSizes(inputs), p(prim), in(inputs), q(inputs[0]), k(inputs[1]), v(inputs[2]) {}

  void operator()(array& out) const {
    out.set_data(allocator::malloc(out.nbytes()));
    if (out.size() == 0) {
      return;
    }
    const int64_t per_block = std::max<int64_t>(1, std::min(Lq, target_rows / repeats));
    const int64_t q_blocks = (Lq + per_block - 1) / per_block;
    const auto items = static_cast<size_t>(B * Nkv * q_blocks);
    T* dst = out.data<T>();
    parallel_for(items, 1, [&](size_t begin, size_t end) {
      Scratch scratch(*this, per_block);
      for (size_t item = begin; item < end; ++item) {
        const auto i = static_cast<int64_t>(item);
        const int64_t q0 = (i % q_blocks) * per_block;
        run_item(i / q_blocks / Nkv, (i / q_blocks) % Nkv, q0, std::min(per_block, Lq - q0), scratch, dst);
      }
    });
  }

 private:
  struct Scratch {
    int64_t kbp;  // key block padded to two vectors
    int64_t dvp;  // value width padded to two vectors
    std::vector<A> q, kt, s, vb, o, m, l, row;
    Scratch(const AttentionKernel& a, int64_t per_block) {
      const auto two = static_cast<int64_t>(2 * hn::Lanes(hn::ScalableTag<A>()));
      kbp = round_up(key_block, two);
      dvp = round_up(std::max<int64_t>(a.Dv, 1), two);
      const int64_t rows = a.repeats * per_block;
      q.resize(static_cast<size_t>(rows * a.D));
      kt.resize(static_cast<size_t>(a.D * kbp + two));
      s.resize(static_cast<size_t>(rows * kbp + two));
      vb.resize(static_cast<size_t>(kbp * dvp + two));
      o.resize(static_cast<size_t>(rows * dvp));
      m.resize(static_cast<size_t>(rows));
      l.resize(static_cast<size_t>(rows));
      row.resize(static_cast<size_t>(std::max(a.D, a.Dv)));
    }
  };

  /// Row r of an item: query head and query index.
  struct RowMap {
    int64_t first_head;
    int64_t q0;
    int64_t count;  // queries per head in this item
    [[nodiscard]] int64_t head(int64_t r) const { return first_head + r / count; }
    [[nodiscard]] int64_t query(int64_t r) const { return q0 + r % count; }
  };

  /// A row of n elements of a (B, N, L, D) input as compute-type values: in place when possible, else in `buf`.
  const A* row_of(const Layout4& a, int64_t b, int64_t h, int64_t l, int64_t n, A* buf) const {
    const T* ptr = a.at<T>(b, h, l);
    if constexpr (std::is_same_v<T, A>) {
      if (a.d == 1) {
        return ptr;
      }
    }
    load_block(buf, Strided<T>{ptr, a.d}, n);
    return buf;
  }

  void run_item(int64_t b, int64_t kvh, int64_t q0, int64_t count, Scratch& sc, T* dst) const {
    const RowMap map{kvh * repeats, q0, count};
    const int64_t rows = repeats * count;
    const int64_t kbp = sc.kbp;
    const int64_t dvp = sc.dvp;
    const auto scale = static_cast<A>(p.scale);
    for (int64_t r = 0; r < rows; ++r) {
      A* qr = sc.q.data() + r * D;
      const A* src = row_of(q, b, map.head(r), map.query(r), D, sc.row.data());
      for (int64_t e = 0; e < D; ++e) {
        qr[e] = src[e] * scale;
      }
    }
    std::fill(sc.o.begin(), sc.o.end(), A{0});
    for (int64_t r = 0; r < rows; ++r) {
      if (p.has_sinks) {
        const array& sinks = in.back();
        sc.m[static_cast<size_t>(r)] = static_cast<A>(sinks.data<T>()[map.head(r) * sinks.strides(0)]);
        sc.l[static_cast<size_t>(r)] = A{1};
      } else {
        sc.m[static_cast<size_t>(r)] = -std::numeric_limits<A>::infinity();
        sc.l[static_cast<size_t>(r)] = A{0};
      }
    }
    // Causal: keys past the last query's limit are masked for every row; skipping them is exact when every row
    // sees at least one key (its weights for masked keys underflow to 0).
    int64_t key_end = Lkv;
    if (p.causal && q0 + offset >= 0) {
      key_end = std::min(Lkv, q0 + count + offset);
    }
    const bool tiled = rows >= tiled_min_rows;
    for (int64_t j0 = 0; j0 < key_end; j0 += key_block) {
      const int64_t kb = std::min(key_block, key_end - j0);
      if (tiled) {
        load_keys_transposed(b, kvh, j0, kb, sc);
        tile_product<false>(sc.q.data(), D, rows, D, sc.kt.data(), kbp, kbp, sc.s.data(), kbp);
      } else {
        for (int64_t j = 0; j < kb; ++j) {
          const A* kr = row_of(k, b, kvh, j0 + j, D, sc.row.data());
          for (int64_t r = 0; r < rows; ++r) {
            sc.s[static_cast<size_t>(r * kbp + j)] = dot(sc.q.data() + r * D, kr, D);
          }
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        A* srow = sc.s.data() + r * kbp;
        apply_mask(b, map.head(r), map.query(r), j0, kb, srow);
        std::fill(srow + kb, srow + kbp, -std::numeric_limits<A>::infinity());
        softmax_step(srow, kbp, sc.m[static_cast<size_t>(r)], sc.l[static_cast<size_t>(r)], sc.o.data() + r * dvp, Dv);
      }
      if (tiled) {
        const auto [values, value_stride] = value_block(b, kvh, j0, kb, sc);
        tile_product<true>(sc.s.data(), kbp, rows, kb, values, value_stride, dvp, sc.o.data(), dvp);
      } else {
        for (int64_t j = 0; j < kb; ++j) {
          const A* vr = row_of(v, b, kvh, j0 + j, Dv, sc.row.data());
          for (int64_t r = 0; r < rows; ++r) {
            axpy(sc.s[static_cast<size_t>(r * kbp + j)], vr, sc.o.data() + r * dvp, Dv);
          }
        }
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      A* orow = sc.o.data() + r * dvp;
      // No keys at all gives zeros (an empty weighted sum); a row of -inf scores gives 0 / 0 = NaN, as softmax does.
      scale_row(orow, Dv, Lkv == 0 ? A{0} : A{1} / sc.l[static_cast<size_t>(r)]);
      store_block(dst + ((b * Nq + map.head(r)) * Lq + map.query(r)) * Dv, orow, Dv);
    }
  }

  /// Values (j0 + j) for j < kb as a tile's rows, and the distance between them: read where the cache holds them when
  /// they are compute-type rows as wide as the tile, else copied into vb with zero padding.
  std::pair<const A*, int64_t> value_block(int64_t b, int64_t kvh, int64_t j0, int64_t kb, Scratch& sc) const {
    const int64_t dvp = sc.dvp;
    if constexpr (std::is_same_v<T, A>) {
      if (v.d == 1 && Dv == dvp) {
        return {v.at<T>(b, kvh, j0), v.l};
      }
    }
    for (int64_t j = 0; j < kb; ++j) {
      const A* vr = row_of(v, b, kvh, j0 + j, Dv, sc.row.data());
      std::copy(vr, vr + Dv, sc.vb.data() + j * dvp);
      std::fill(sc.vb.data() + j * dvp + Dv, sc.vb.data() + (j + 1) * dvp, A{0});
    }
    return {sc.vb.data(), dvp};
  }

  /// kt[e][j] = key (j0 + j)'s feature e for j < kb; the padding columns are zero.
  void load_keys_transposed(int64_t b, int64_t kvh, int64_t j0, int64_t kb, Scratch& sc) const {
    const int64_t kbp = sc.kbp;
    A* kt = sc.kt.data();
    for (int64_t j = 0; j < kb; ++j) {
      const A* kr = row_of(k, b, kvh, j0 + j, D, sc.row.data());
      for (int64_t e = 0; e < D; ++e) {
        kt[e * kbp + j] = kr[e];
      }
    }
    if (kb < kbp) {
      for (int64_t e = 0; e < D; ++e) {
        std::fill(kt + e * kbp + kb, kt + (e + 1) * kbp, A{0});
      }
    }
  }

  /// Applies the causal limit or the mask to the scores of query `i` of head `h` against keys [j0, j0 + kb).
  void apply_mask(int64_t b, int64_t h, int64_t i, int64_t j0, int64_t kb, A* s) const {
    mask_scores<T>(p.causal, p.mask, p.mask == AttentionMask::none ? nullptr : &in[3], offset, b, h, i, j0, kb, s);
  }
};

}  // namespace

void run(const ScaledDotProductAttention& p, const Inputs& in, Outputs& out) {
  dispatch<floating_types>(in[0].dtype(), "ScaledDotProductAttention",
                           [&]<class T>(type_tag<T>) { AttentionKernel<T>(p, in)(out[0]); });
}

}  // namespace nuvec::cpu
