// ScaledDotProductAttentionVJP: the gradients of attention with respect to q, k, v (and the sinks), the backward
// pass of flash attention. The attention weights are recomputed block by block instead of being stored, so the
// backward pass never holds an L_q x L_kv array per head in memory.
//
// Work is split across threads by (batch, key/value head): one item owns the rows of dk and dv of its key/value
// head, so no two threads add into the same gradient, and walks the query heads of its group and their queries in
// blocks of `query_block`. With S = scale * Q K^T (+ mask) and P = softmax(S) for a block of queries:
//   dP = dO V^T,  D_i = sum_j P_ij dP_ij (= dO_i . O_i),  dS = P * (dP - D),
//   dV += P^T dO,  dQ = scale * dS K,  dK += scale * dS^T Q.
// The five products run as GEMMs on cache-resident blocks (the queries of a block, scaled once, stand in for
// scale * Q in the last one). A sink adds exp(sink) to each row's softmax denominator and takes the gradient
// -sum_i P_i,sink * D_i. Causal blocks stop at the last key their last query sees, as the forward kernel does; a
// row with every key hidden averages the values, and its constant scores pass no gradient to q and k.
// The arithmetic is float32 (float64 for float64); float16 and bfloat16 inputs are converted block by block.

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "nuvec/core/dispatch.h"
#include "nuvec/cpu/attention.h"
#include "nuvec/cpu/elementwise.h"
#include "nuvec/cpu/gemm.h"
#include "nuvec/cpu/highway.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/softmax_row.h"

// Highway's extras, included once nuvec/cpu/highway.h has chosen static dispatch.
#include <hwy/contrib/math/math-inl.h>

namespace nuvec::cpu {

namespace {

constexpr int64_t query_block = 128;

/// p *= inv in place; returns sum(p * dp) of the scaled p.
template <class A>
A normalize_dot(A* p, const A* dp, int64_t n, A inv) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto f = hn::Set(d, inv);
  auto total = hn::Zero(d);
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    const auto v = hn::Mul(hn::LoadU(d, p + j), f);
    hn::StoreU(v, d, p + j);
    total = hn::MulAdd(v, hn::LoadU(d, dp + j), total);
  }
  A result = hn::GetLane(hn::SumOfLanes(d, total));
  for (; j < n; ++j) {
    p[j] *= inv;
    result += p[j] * dp[j];
  }
  return result;
}

/// dp = p * (dp - delta) in place: the softmax's backward.
template <class A>
void softmax_backward(const A* p, A* dp, int64_t n, A delta) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto c = hn::Set(d, delta);
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    hn::StoreU(hn::Mul(hn::LoadU(d, p + j), hn::Sub(hn::LoadU(d, dp + j), c)), d, dp + j);
  }
  for (; j < n; ++j) {
    dp[j] = p[j] * (dp[j] - delta);
  }
}

template <class T>
class AttentionVjp : AttentionSizes {
  using A = compute_t<T>;

 public:
  AttentionVjp(const ScaledDotProductAttentionVJP& prim, const Inputs& inputs)
      : AttentionSizes(inputs),
        p_(prim),
        mask_(prim.mask == AttentionMask::none ? nullptr : &inputs[3]),
        sinks_(prim.has_sinks ? &inputs[inputs.size() - 2] : nullptr),
        q_(inputs[0]),
        k_(inputs[1]),
        v_(inputs[2]),
        dout_(inputs.back()) {}

  void operator()(Outputs& out) const {
    for (auto& o : out) {
      o.set_data(allocator::malloc(o.nbytes()));
    }
    std::vector<A> dsinks(static_cast<size_t>(B * Nq), A{0});  // per (batch, head), added in order below
    parallel_for(static_cast<size_t>(B * Nkv), 1, [&](size_t begin, size_t end) {
      Scratch sc;
      for (size_t item = begin; item < end; ++item) {
        const auto i = static_cast<int64_t>(item);
        run_item(i / Nkv, i % Nkv, sc, out, dsinks);
      }
    });
    if (sinks_ != nullptr) {
      std::vector<A> total(static_cast<size_t>(Nq), A{0});
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t h = 0; h < Nq; ++h) {
          total[static_cast<size_t>(h)] += dsinks[static_cast<size_t>(b * Nq + h)];
        }
      }
      store_block(out[3].data<T>(), total.data(), Nq);
    }
  }

 private:
  struct Scratch {
    std::vector<A> k, v, dk, dv, q, dout, s, dp, dq;
  };

  /// A (rows x n) block of a (B, N, L, D) input starting at row l0 of head h, as a compute-type matrix: in place
  /// when the input already is one (its row stride returned in `ld`), else converted into `buf`.
  const A* block(const Layout4& a, int64_t b, int64_t h, int64_t l0, int64_t rows, int64_t n, std::vector<A>& buf,
                 int64_t& ld) const {
    if constexpr (std::is_same_v<T, A>) {
      if (a.d == 1) {
        ld = a.l;
        return a.at<T>(b, h, l0);
      }
    }
    buf.resize(static_cast<size_t>(rows * n));
    for (int64_t r = 0; r < rows; ++r) {
      load_block(buf.data() + r * n, Strided<T>{a.at<T>(b, h, l0 + r), a.d}, n);
    }
    ld = n;
    return buf.data();
  }

  /// c (m x n, dense) = alpha * a @ b + beta * c.
  static void product(int64_t m, int64_t n, int64_t k, float alpha, MatrixBatch a, MatrixBatch b, float beta, A* c) {
    gemm(dtype_v<A>, 1, m, n, k, alpha, a, b, beta, c);
  }

  /// A dense compute-type gradient of rows x n: the output itself when it has the compute type, else `buf`.
  A* gradient(array& o, int64_t first, int64_t rows, int64_t n, std::vector<A>& buf) const {
    if constexpr (std::is_same_v<T, A>) {
      return o.data<T>() + first;
    }
    buf.resize(static_cast<size_t>(rows * n));
    return buf.data();
  }

  void run_item(int64_t b, int64_t kvh, Scratch& sc, Outputs& out, std::vector<A>& dsinks) const {
    int64_t ldk = 0;
    int64_t ldv = 0;
    const A* kp = block(k_, b, kvh, 0, Lkv, D, sc.k, ldk);
    const A* vp = block(v_, b, kvh, 0, Lkv, Dv, sc.v, ldv);
    A* dk = gradient(out[1], (b * Nkv + kvh) * Lkv * D, Lkv, D, sc.dk);
    A* dv = gradient(out[2], (b * Nkv + kvh) * Lkv * Dv, Lkv, Dv, sc.dv);
    std::fill(dk, dk + Lkv * D, A{0});
    std::fill(dv, dv + Lkv * Dv, A{0});
    for (int64_t h = kvh * repeats; h < (kvh + 1) * repeats; ++h) {
      for (int64_t q0 = 0; q0 < Lq; q0 += query_block) {
        const int64_t rows = std::min(query_block, Lq - q0);
        A* dq = gradient(out[0], ((b * Nq + h) * Lq + q0) * D, rows, D, sc.dq);
        // Keys past the last query's causal limit have weight 0 for every row of the block (as in the forward).
        const int64_t keys = p_.causal && q0 + offset >= 0 ? std::min(Lkv, q0 + rows + offset) : Lkv;
        if (keys == 0) {
          std::fill(dq, dq + rows * D, A{0});
        } else {
          query_block_gradient(b, h, q0, rows, keys, kp, ldk, vp, ldv, sc, dq, dk, dv, dsinks);
        }
        if constexpr (!std::is_same_v<T, A>) {
          store_block(out[0].data<T>() + ((b * Nq + h) * Lq + q0) * D, dq, rows * D);
        }
      }
    }
    if constexpr (!std::is_same_v<T, A>) {
      store_block(out[1].data<T>() + (b * Nkv + kvh) * Lkv * D, dk, Lkv * D);
      store_block(out[2].data<T>() + (b * Nkv + kvh) * Lkv * Dv, dv, Lkv * Dv);
    }
  }

  void query_block_gradient(int64_t b, int64_t h, int64_t q0, int64_t rows, int64_t keys, const A* kp, int64_t ldk,
                            const A* vp, int64_t ldv, Scratch& sc, A* dq, A* dk, A* dv,
                            std::vector<A>& dsinks) const {
    const auto scale = static_cast<A>(p_.scale);
    // The block's queries scaled once: S = Qs K^T, and dK += dS^T Qs.
    sc.q.resize(static_cast<size_t>(rows * D));
    for (int64_t r = 0; r < rows; ++r) {
      A* qr = sc.q.data() + r * D;
      load_block(qr, Strided<T>{q_.at<T>(b, h, q0 + r), q_.d}, D);
      for (int64_t e = 0; e < D; ++e) {
        qr[e] *= scale;
      }
    }
    int64_t ldo = 0;
    const A* dout = block(dout_, b, h, q0, rows, Dv, sc.dout, ldo);
    sc.s.resize(static_cast<size_t>(rows * keys));
    sc.dp.resize(static_cast<size_t>(rows * keys));
    A* s = sc.s.data();
    A* dp = sc.dp.data();
    product(rows, keys, D, 1.F, {sc.q.data(), 0, D, 1}, {kp, 0, 1, ldk}, 0.F, s);
    product(rows, keys, Dv, 1.F, {dout, 0, ldo, 1}, {vp, 0, 1, ldv}, 0.F, dp);
    const A sink = sinks_ != nullptr ? static_cast<A>(sinks_->data<T>()[h * sinks_->strides(0)]) : A{0};
    A sink_gradient = A{0};
    for (int64_t r = 0; r < rows; ++r) {
      A* sr = s + r * keys;
      A* dpr = dp + r * keys;
      mask_scores<T>(p_.causal, p_.mask, mask_, offset, b, h, q0 + r, 0, keys, sr);
      A m = row_max(sr, keys);
      // A row whose every key is hidden (boolean mask, causal rows before the first key) averages the values, but
      // its scores are constants: they take no gradient.
      const bool hidden = m == std::numeric_limits<A>::lowest();
      if (sinks_ != nullptr) {
        m = std::max(m, sink);
      }
      // A row of -inf scores (additive masks) has no finite weight: exp(-inf - 0) = 0, then 0 / 0 as in the forward.
      const A shift = m == -std::numeric_limits<A>::infinity() ? A{0} : m;
      const A sink_weight = sinks_ != nullptr ? std::exp(sink - shift) : A{0};
      const A inv = A{1} / (exp_store_sum(sr, sr, keys, shift) + sink_weight);
      const A d = normalize_dot(sr, dpr, keys, inv);
      if (hidden) {
        std::fill(dpr, dpr + keys, A{0});
      } else {
        softmax_backward(sr, dpr, keys, d);
      }
      sink_gradient -= sink_weight * inv * d;
    }
    dsinks[static_cast<size_t>(b * Nq + h)] += sink_gradient;
    // dV += P^T dO, dQ = scale * dS K, dK += dS^T Qs.
    product(keys, Dv, rows, 1.F, {s, 0, 1, keys}, {dout, 0, ldo, 1}, 1.F, dv);
    product(rows, D, keys, p_.scale, {dp, 0, keys, 1}, {kp, 0, ldk, 1}, 0.F, dq);
    product(keys, D, rows, 1.F, {dp, 0, 1, keys}, {sc.q.data(), 0, D, 1}, 1.F, dk);
  }

  const ScaledDotProductAttentionVJP& p_;
  const array* mask_;
  const array* sinks_;
  Layout4 q_, k_, v_, dout_;
};

}  // namespace

void run(const ScaledDotProductAttentionVJP& p, const Inputs& in, Outputs& out) {
  dispatch<floating_types>(in[0].dtype(), "ScaledDotProductAttentionVJP",
                           [&]<class T>(type_tag<T>) { AttentionVjp<T>(p, in)(out); });
}

}  // namespace nuvec::cpu
