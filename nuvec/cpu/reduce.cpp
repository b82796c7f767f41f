// Reduce and ArgReduce: one driver for every reduction, one small "reducer" per op.
//
// The input's axes are split into kept axes (the output's, in order) and reduced axes; each list is collapsed on its
// own (size-1 axes dropped, neighbours that walk memory as one axis merged; reduced axes first sorted by stride, so
// a transposed dense input reduces as one run). Two drivers then cover every layout:
//   - row: each output element reduces runs of the innermost reduced axis (contiguous runs are vectorized). Few
//     outputs over much data (the all-reduce) are split into fixed-size chunks combined pairwise afterwards, so the
//     result does not depend on the thread count;
//   - column: when the innermost kept axis is contiguous and the reduced axes are not, whole rows of outputs are
//     accumulated at once (acc[j] op= x[j]), vectorized, over blocks of columns; float sums add groups of rows in
//     registers before they meet the accumulator row.
// Reducers: `run` reduces one run (SIMD for float types, Highway; plain loops the compiler vectorizes for the rest),
// `first`/`accumulate` fold a row into an accumulator row, `combine` joins partial results in index order, `finish`
// converts to the output type. Float sums are pairwise (blocks of pairwise_block), half floats accumulate in float32,
// integer sums and products wrap in the unsigned type of the output (no signed overflow).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "nuvec/core/dispatch.h"
#include "nuvec/cpu/element_types.h"
#include "nuvec/cpu/highway.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/prefetch.h"
#include "nuvec/cpu/strided.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

namespace {

// ---------------------------------------------------------------- tuning

constexpr int64_t pairwise_block = 4096;  // float sums: longest run summed without splitting
constexpr int64_t chunk_size = 1 << 16;   // row driver: reduced elements per chunk when outputs are few
constexpr size_t few_outputs = 16;        // below this many outputs, long reductions are chunked
constexpr int64_t column_block = 1024;    // column driver: columns per work item (acc stays in L1)
constexpr int64_t column_sub_rows = 128;  // column driver: rows summed before folding into the total (float sums)
// Column driver: rows fetched into L2 ahead of the ones summed (a 4096x4096 sum over axis 0: 2.0x -> 1.4x a copy),
// and rows added in registers before they meet the accumulator row (float sums: 0.70-0.88 of the time, turn about).
constexpr int64_t column_prefetch_rows = 8;
constexpr int64_t column_group_rows = 8;
constexpr size_t few_items = 16;        // column driver: below this many items, the reduced rows are split
constexpr size_t grain_size = 1 << 15;  // elements of work per thread before splitting pays

// ---------------------------------------------------------------- element types

/// Types with a SIMD path: their lanes are float (half types widen) or double.
template <class T>
constexpr bool simd_float_v = std::is_same_v<T, float> || std::is_same_v<T, double> || is_half_v<T>;

/// Converts an input element to the accumulator type.
template <class A, class T>
A to_acc(T x) {
  if constexpr (std::is_same_v<A, bool>) {
    if constexpr (is_half_v<T>) {
      return static_cast<float>(x) != 0.0F;
    } else {
      return x != T{};
    }
  } else if constexpr (is_half_v<T>) {
    return static_cast<A>(static_cast<float>(x));
  } else if constexpr (is_complex_v<A> && !is_complex_v<T>) {
    return A(static_cast<float>(x), 0.0F);
  } else {
    return static_cast<A>(x);
  }
}

// ---------------------------------------------------------------- SIMD runs (Highway)

template <class D, class T>
HWY_INLINE hn::Vec<D> load(D d, const T* p) {
  if constexpr (std::is_same_v<T, bfloat16_t>) {
    const hn::Rebind<hwy::bfloat16_t, D> dh;
    return hn::PromoteTo(d, hn::LoadU(dh, reinterpret_cast<const hwy::bfloat16_t*>(p)));
  } else if constexpr (std::is_same_v<T, float16_t>) {
    const hn::Rebind<hwy::float16_t, D> dh;
    return hn::PromoteTo(d, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
  } else {
    return hn::LoadU(d, p);
  }
}

/// NaN-propagating scalar max/min (NaN wins, as numpy's maximum/minimum).
template <ReduceType K, class A>
A extreme(A a, A b) {
  if (is_nan(a)) {
    return a;
  }
  if (is_nan(b)) {
    return b;
  }
  if constexpr (K == ReduceType::max) {
    return greater(b, a) ? b : a;
  } else {
    return greater(a, b) ? b : a;
  }
}

/// Sum of a contiguous run in lane precision: four vector accumulators, split pairwise above pairwise_block.
template <class T>
compute_t<T> simd_sum(const T* x, int64_t n) {
  using A = compute_t<T>;
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  if (n > pairwise_block) {
    int64_t half = (n / 2) / (4 * lanes) * (4 * lanes);
    half = half == 0 ? n / 2 : half;
    return simd_sum(x, half) + simd_sum(x + half, n - half);
  }
  auto a0 = hn::Zero(d);
  auto a1 = hn::Zero(d);
  auto a2 = hn::Zero(d);
  auto a3 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    a0 = hn::Add(a0, load(d, x + i));
    a1 = hn::Add(a1, load(d, x + i + lanes));
    a2 = hn::Add(a2, load(d, x + i + 2 * lanes));
    a3 = hn::Add(a3, load(d, x + i + 3 * lanes));
  }
  for (; i + lanes <= n; i += lanes) {
    a0 = hn::Add(a0, load(d, x + i));
  }
  A s = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  A tail = 0;
  for (; i < n; ++i) {
    tail += static_cast<A>(x[i]);
  }
  return s + tail;
}

template <class T>
compute_t<T> simd_prod(const T* x, int64_t n) {
  using A = compute_t<T>;
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  auto a0 = hn::Set(d, A{1});
  auto a1 = a0;
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    a0 = hn::Mul(a0, load(d, x + i));
    a1 = hn::Mul(a1, load(d, x + i + lanes));
  }
  for (; i + lanes <= n; i += lanes) {
    a0 = hn::Mul(a0, load(d, x + i));
  }
  HWY_ALIGN A buf[HWY_MAX_BYTES / sizeof(A)];
  hn::Store(hn::Mul(a0, a1), d, buf);
  A p = 1;
  for (int64_t j = 0; j < lanes; ++j) {
    p *= buf[j];
  }
  for (; i < n; ++i) {
    p *= static_cast<A>(x[i]);
  }
  return p;
}

/// Max or min of a contiguous run; any NaN gives NaN.
template <ReduceType K, class T>
compute_t<T> simd_extreme(const T* x, int64_t n) {
  using A = compute_t<T>;
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  auto pick = [](auto a, auto b) {
    if constexpr (K == ReduceType::max) {
      return hn::Max(a, b);
    } else {
      return hn::Min(a, b);
    }
  };
  A r = static_cast<A>(x[0]);
  int64_t i = 0;
  if (n >= lanes) {
    auto a0 = load(d, x);
    auto a1 = a0;
    auto a2 = a0;
    auto a3 = a0;
    auto nan = hn::IsNaN(a0);
    for (; i + 4 * lanes <= n; i += 4 * lanes) {
      const auto v0 = load(d, x + i);
      const auto v1 = load(d, x + i + lanes);
      const auto v2 = load(d, x + i + 2 * lanes);
      const auto v3 = load(d, x + i + 3 * lanes);
      a0 = pick(a0, v0);
      a1 = pick(a1, v1);
      a2 = pick(a2, v2);
      a3 = pick(a3, v3);
      nan = hn::Or(nan, hn::Or(hn::Or(hn::IsNaN(v0), hn::IsNaN(v1)), hn::Or(hn::IsNaN(v2), hn::IsNaN(v3))));
    }
    for (; i + lanes <= n; i += lanes) {
      const auto v = load(d, x + i);
      a0 = pick(a0, v);
      nan = hn::Or(nan, hn::IsNaN(v));
    }
    if (!hn::AllFalse(d, nan)) {
      return std::numeric_limits<A>::quiet_NaN();
    }
    const auto all = pick(pick(a0, a1), pick(a2, a3));
    if constexpr (K == ReduceType::max) {
      r = hn::GetLane(hn::MaxOfLanes(d, all));
    } else {
      r = hn::GetLane(hn::MinOfLanes(d, all));
    }
  }
  for (; i < n; ++i) {
    r = extreme<K>(r, static_cast<A>(x[i]));
  }
  return r;
}

/// Index of the first element equal to m (the first NaN when m is NaN); n when there is none.
template <class T, class V>
int64_t find_first(const T* x, int64_t n, V m) {
  const bool nan = is_nan(m);
  int64_t i = 0;
  if constexpr (simd_float_v<T>) {
    const hn::ScalableTag<compute_t<T>> d;
    const auto lanes = static_cast<int64_t>(hn::Lanes(d));
    const auto target = hn::Set(d, static_cast<compute_t<T>>(m));
    for (; i + lanes <= n; i += lanes) {
      const auto v = load(d, x + i);
      const auto hit = nan ? hn::IsNaN(v) : hn::Eq(v, target);
      if (!hn::AllFalse(d, hit)) {
        return i + static_cast<int64_t>(hn::FindFirstTrue(d, hit));
      }
    }
  }
  while (i < n && !(nan ? is_nan(static_cast<V>(x[i])) : static_cast<V>(x[i]) == m)) {
    ++i;
  }
  return i;
}

/// acc[j] += x[j] + x[s + j] + ... over `rows` rows of n elements: the rows meet in registers, four vectors of
/// columns at a time, so the accumulator row is read and written once per `rows` rows instead of once per row.
template <class T>
void simd_accumulate_rows(compute_t<T>* acc, const T* x, int64_t s, int64_t rows, int64_t n) {
  using A = compute_t<T>;
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t j = 0;
  for (; j + 4 * lanes <= n; j += 4 * lanes) {
    auto v0 = load(d, x + j);
    auto v1 = load(d, x + j + lanes);
    auto v2 = load(d, x + j + 2 * lanes);
    auto v3 = load(d, x + j + 3 * lanes);
    for (int64_t r = 1; r < rows; ++r) {
      const T* row = x + r * s + j;
      v0 = hn::Add(v0, load(d, row));
      v1 = hn::Add(v1, load(d, row + lanes));
      v2 = hn::Add(v2, load(d, row + 2 * lanes));
      v3 = hn::Add(v3, load(d, row + 3 * lanes));
    }
    hn::StoreU(hn::Add(hn::LoadU(d, acc + j), v0), d, acc + j);
    hn::StoreU(hn::Add(hn::LoadU(d, acc + j + lanes), v1), d, acc + j + lanes);
    hn::StoreU(hn::Add(hn::LoadU(d, acc + j + 2 * lanes), v2), d, acc + j + 2 * lanes);
    hn::StoreU(hn::Add(hn::LoadU(d, acc + j + 3 * lanes), v3), d, acc + j + 3 * lanes);
  }
  for (; j < n; ++j) {
    A v = static_cast<A>(x[j]);
    for (int64_t r = 1; r < rows; ++r) {
      v += static_cast<A>(x[r * s + j]);
    }
    acc[j] += v;
  }
}

/// acc[j] = acc[j] op x[j] over a contiguous row.
template <ReduceType K, class T>
void simd_accumulate(compute_t<T>* acc, const T* x, int64_t n) {
  using A = compute_t<T>;
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    const auto a = hn::LoadU(d, acc + j);
    const auto v = load(d, x + j);
    if constexpr (K == ReduceType::sum) {
      hn::StoreU(hn::Add(a, v), d, acc + j);
    } else if constexpr (K == ReduceType::prod) {
      hn::StoreU(hn::Mul(a, v), d, acc + j);
    } else if constexpr (K == ReduceType::max) {
      hn::StoreU(hn::IfThenElse(hn::Or(hn::Gt(v, a), hn::IsNaN(v)), v, a), d, acc + j);
    } else {
      hn::StoreU(hn::IfThenElse(hn::Or(hn::Lt(v, a), hn::IsNaN(v)), v, a), d, acc + j);
    }
  }
  for (; j < n; ++j) {
    const auto v = static_cast<A>(x[j]);
    if constexpr (K == ReduceType::sum) {
      acc[j] += v;
    } else if constexpr (K == ReduceType::prod) {
      acc[j] *= v;
    } else {
      acc[j] = extreme<K>(acc[j], v);
    }
  }
}

// ---------------------------------------------------------------- reducers

/// Reduction K of T elements, accumulated in A, written as O.
template <ReduceType K, class T, class A, class O>
struct Reducer {
  using In = T;
  using Acc = A;
  using Out = O;
  static constexpr bool simd =
      simd_float_v<T> && std::is_same_v<A, compute_t<T>> && K != ReduceType::all && K != ReduceType::any;
  /// Float sums fold rows in blocks (pairwise-like) to bound rounding error.
  static constexpr bool blocked_sum = K == ReduceType::sum && (std::is_floating_point_v<A> || is_complex_v<A>);

  static A identity() {
    switch (K) {
      case ReduceType::sum:
        return A{};
      case ReduceType::prod:
        return to_acc<A>(1);
      case ReduceType::all:
        return to_acc<A>(true);
      case ReduceType::any:
        return to_acc<A>(false);
      case ReduceType::max:
      case ReduceType::min:
        break;
    }
    return A{};  // max/min of nothing: the op rejects it before a node exists
  }

  static A combine(A a, A b) {
    if constexpr (K == ReduceType::sum) {
      return a + b;
    } else if constexpr (K == ReduceType::prod) {
      return a * b;
    } else if constexpr (K == ReduceType::all) {
      return a && b;
    } else if constexpr (K == ReduceType::any) {
      return a || b;
    } else {
      return extreme<K>(a, b);
    }
  }

  /// Reduces n >= 1 elements x[0], x[s], ...; `start` (the run's reduced index) is unused here.
  static A run(const T* x, int64_t n, int64_t s, int64_t /*start*/) {
    if constexpr (simd) {
      if (s == 1) {
        if constexpr (K == ReduceType::sum) {
          return simd_sum(x, n);
        } else if constexpr (K == ReduceType::prod) {
          return simd_prod(x, n);
        } else {
          return simd_extreme<K>(x, n);
        }
      }
    }
    if constexpr (K == ReduceType::all || K == ReduceType::any) {
      // Blocks keep the inner loop branch-free (vectorizable) and still stop early.
      constexpr int64_t block = 4096;
      for (int64_t b = 0; b < n; b += block) {
        const int64_t m = std::min(block, n - b);
        const T* p = x + b * s;
        unsigned hits = 0;
        if (s == 1) {
          for (int64_t i = 0; i < m; ++i) {
            hits += to_acc<bool>(p[i]) == (K == ReduceType::any) ? 1U : 0U;
          }
        } else {
          for (int64_t i = 0; i < m; ++i) {
            hits += to_acc<bool>(p[i * s]) == (K == ReduceType::any) ? 1U : 0U;
          }
        }
        if (hits > 0) {
          return K == ReduceType::any;
        }
      }
      return K == ReduceType::all;
    } else {
      if constexpr (blocked_sum) {
        if (n > pairwise_block) {
          const int64_t half = n / 2;
          return run(x, half, s, 0) + run(x + half * s, n - half, s, 0);
        }
      }
      // Eight independent lanes let the compiler vectorize without reassociating.
      constexpr int64_t w = 8;
      if (n < 2 * w) {
        A r = to_acc<A>(x[0]);
        for (int64_t i = 1; i < n; ++i) {
          r = combine(r, to_acc<A>(x[i * s]));
        }
        return r;
      }
      A acc[w];
      for (int64_t j = 0; j < w; ++j) {
        acc[j] = to_acc<A>(x[j * s]);
      }
      int64_t i = w;
      if (s == 1) {
        for (; i + w <= n; i += w) {
          for (int64_t j = 0; j < w; ++j) {
            acc[j] = combine(acc[j], to_acc<A>(x[i + j]));
          }
        }
      } else {
        for (; i + w <= n; i += w) {
          for (int64_t j = 0; j < w; ++j) {
            acc[j] = combine(acc[j], to_acc<A>(x[(i + j) * s]));
          }
        }
      }
      for (; i < n; ++i) {
        acc[0] = combine(acc[0], to_acc<A>(x[i * s]));
      }
      return combine(combine(combine(acc[0], acc[1]), combine(acc[2], acc[3])),
                     combine(combine(acc[4], acc[5]), combine(acc[6], acc[7])));
    }
  }

  /// acc[j] = x[j] for a contiguous row of n elements.
  static void first(A* acc, const T* x, int64_t n, int64_t /*row*/) {
    for (int64_t j = 0; j < n; ++j) {
      acc[j] = to_acc<A>(x[j]);
    }
  }

  /// acc[j] = acc[j] op x[j] for a contiguous row of n elements.
  static void accumulate(A* acc, const T* x, int64_t n, int64_t /*row*/) {
    if constexpr (simd) {
      simd_accumulate<K>(acc, x, n);
    } else {
      for (int64_t j = 0; j < n; ++j) {
        acc[j] = combine(acc[j], to_acc<A>(x[j]));
      }
    }
  }

  /// accumulate over `rows` contiguous rows of n elements, s elements apart; float sums add the rows in registers.
  static void accumulate_rows(A* acc, const T* x, int64_t s, int64_t rows, int64_t n, int64_t row) {
    if constexpr (simd && K == ReduceType::sum) {
      simd_accumulate_rows(acc, x, s, rows, n);
    } else {
      for (int64_t r = 0; r < rows; ++r) {
        accumulate(acc, x + r * s, n, row + r);
      }
    }
  }

  /// dst[j] = dst[j] op src[j]: folds a block of partial results.
  static void merge(A* dst, const A* src, int64_t n) {
    for (int64_t j = 0; j < n; ++j) {
      dst[j] = combine(dst[j], src[j]);
    }
  }

  static O finish(A a) {
    if constexpr (std::is_same_v<O, A>) {
      return a;
    } else if constexpr (is_half_v<O>) {
      return O(static_cast<float>(a));
    } else {
      return static_cast<O>(a);
    }
  }
};

/// Index of the first max (argmax) or min: NaN counts as the extreme (numpy).
template <bool Max, class T>
struct ArgReducer {
  using In = T;
  using V = compute_t<T>;
  struct Acc {
    V value;
    int64_t index;
  };
  using Out = uint32_t;
  static constexpr bool blocked_sum = false;
  static constexpr ReduceType kind = Max ? ReduceType::max : ReduceType::min;

  /// Whether `v` replaces the current best `best` (later indices only win strictly).
  static bool better(V v, V best) {
    if (is_nan(best)) {
      return false;
    }
    if (is_nan(v)) {
      return true;
    }
    return Max ? greater(v, best) : greater(best, v);
  }

  static Acc identity() { return {V{}, 0}; }  // never used: arg reductions of nothing are rejected by the op
  static Acc combine(Acc a, Acc b) { return better(b.value, a.value) ? b : a; }

  static Acc run(const T* x, int64_t n, int64_t s, int64_t start) {
    if constexpr (!is_complex_v<T>) {
      if (s == 1) {
        // The extreme first (vectorized), then its first position.
        const V m = Reducer<kind, T, V, V>::run(x, n, 1, 0);
        return {m, start + std::min(find_first(x, n, m), n - 1)};
      }
    }
    Acc best{static_cast<V>(x[0]), 0};
    for (int64_t i = 1; i < n; ++i) {
      const auto v = static_cast<V>(x[i * s]);
      if (better(v, best.value)) {
        best = {v, i};
      }
    }
    best.index += start;
    return best;
  }

  static void first(Acc* acc, const T* x, int64_t n, int64_t row) {
    for (int64_t j = 0; j < n; ++j) {
      acc[j] = {static_cast<V>(x[j]), row};
    }
  }

  static void accumulate(Acc* acc, const T* x, int64_t n, int64_t row) {
    for (int64_t j = 0; j < n; ++j) {
      const auto v = static_cast<V>(x[j]);
      if (better(v, acc[j].value)) {
        acc[j] = {v, row};
      }
    }
  }

  static void accumulate_rows(Acc* acc, const T* x, int64_t s, int64_t rows, int64_t n, int64_t row) {
    for (int64_t r = 0; r < rows; ++r) {
      accumulate(acc, x + r * s, n, row + r);
    }
  }

  static void merge(Acc* dst, const Acc* src, int64_t n) {
    for (int64_t j = 0; j < n; ++j) {
      dst[j] = combine(dst[j], src[j]);
    }
  }

  static Out finish(Acc a) { return static_cast<Out>(a.index); }
};

// ---------------------------------------------------------------- layouts

/// The reduction's geometry: kept axes in output order, reduced axes innermost-last; both collapsed.
struct Plan {
  StridedLayout<1> kept;
  StridedLayout<1> reduced;
  size_t n_out;
  size_t n_red;
};

Plan make_plan(const array& a, const std::vector<int>& axes, bool sort_reduced) {
  Shape kshape;
  Strides kstrides;
  std::vector<std::pair<int32_t, int64_t>> red;  // (size, stride)
  size_t n_red = 1;
  for (int i = 0; i < a.ndim(); ++i) {
    if (std::find(axes.begin(), axes.end(), i) != axes.end()) {
      red.emplace_back(a.shape(i), a.strides(i));
      n_red *= static_cast<size_t>(a.shape(i));
    } else {
      kshape.push_back(a.shape(i));
      kstrides.push_back(a.strides(i));
    }
  }
  if (sort_reduced) {
    // Innermost (smallest |stride|) last, so contiguous axes merge into long runs; order only affects rounding.
    std::stable_sort(red.begin(), red.end(),
                     [](const auto& x, const auto& y) { return std::abs(x.second) > std::abs(y.second); });
  }
  Shape rshape;
  Strides rstrides;
  for (const auto& [size, stride] : red) {
    rshape.push_back(size);
    rstrides.push_back(stride);
  }
  return Plan{StridedLayout<1>(kshape, {kstrides}), StridedLayout<1>(rshape, {rstrides}), shape_size(kshape), n_red};
}

/// Calls fn(offset, index, length) for each piece of an innermost run that covers flat indices [begin, end).
template <class Fn>
void for_each_run(const StridedLayout<1>& layout, int64_t begin, int64_t end, Fn&& fn) {
  const int64_t n = layout.inner_size();
  const int64_t s = layout.inner_stride(0);
  if (layout.shape.size() == 1) {
    fn(begin * s, begin, end - begin);
    return;
  }
  auto row = begin / n;
  layout.for_each_row(static_cast<size_t>(begin / n), static_cast<size_t>((end + n - 1) / n),
                      [&](const std::array<int64_t, 1>& offset) {
                        const int64_t a = std::max(begin, row * n);
                        const int64_t b = std::min(end, (row + 1) * n);
                        fn(offset[0] + (a - row * n) * s, a, b - a);
                        ++row;
                      });
}

/// Reduces flat reduced indices [r0, r1) of the element block starting at `x`.
template <class R>
typename R::Acc reduce_range(const typename R::In* x, const StridedLayout<1>& reduced, int64_t r0, int64_t r1) {
  const int64_t s = reduced.inner_stride(0);
  if (reduced.shape.size() == 1) {
    return R::run(x + r0 * s, r1 - r0, s, r0);
  }
  typename R::Acc acc{};
  bool first = true;
  for_each_run(reduced, r0, r1, [&](int64_t offset, int64_t start, int64_t length) {
    auto v = R::run(x + offset, length, s, start);
    acc = first ? v : R::combine(acc, v);
    first = false;
  });
  return acc;
}

/// Combines n partial results p[0], p[stride], ... pairwise, keeping index order.
template <class R>
typename R::Acc combine_pairwise(const typename R::Acc* p, size_t n, size_t stride) {
  if (n == 1) {
    return p[0];
  }
  const size_t half = n / 2;
  return R::combine(combine_pairwise<R>(p, half, stride), combine_pairwise<R>(p + half * stride, n - half, stride));
}

// ---------------------------------------------------------------- drivers

template <class R>
void row_reduce(const typename R::In* x, typename R::Out* y, const Plan& plan) {
  const auto n_red = static_cast<int64_t>(plan.n_red);
  if (plan.n_out < few_outputs && n_red >= 4 * chunk_size) {
    // Few long reductions: fixed-size chunks in parallel, then a pairwise combine.
    const auto chunks = static_cast<size_t>((n_red + chunk_size - 1) / chunk_size);
    auto partial = std::make_unique<typename R::Acc[]>(plan.n_out * chunks);  // not vector: Acc may be bool
    parallel_for(plan.n_out * chunks, 1, [&](size_t b, size_t e) {
      for (size_t item = b; item < e; ++item) {
        const size_t o = item / chunks;
        const auto c = static_cast<int64_t>(item % chunks);
        const auto base = element_offset(o, plan.kept.shape, plan.kept.strides[0]);
        partial[item] = reduce_range<R>(x + base, plan.reduced, c * chunk_size, std::min(n_red, (c + 1) * chunk_size));
      }
    });
    for (size_t o = 0; o < plan.n_out; ++o) {
      y[o] = R::finish(combine_pairwise<R>(partial.get() + o * chunks, chunks, 1));
    }
    return;
  }
  const size_t grain = std::max<size_t>(1, grain_size / plan.n_red);
  const int64_t ks = plan.kept.inner_stride(0);
  parallel_for(plan.n_out, grain, [&](size_t b, size_t e) {
    for_each_run(plan.kept, static_cast<int64_t>(b), static_cast<int64_t>(e),
                 [&](int64_t offset, int64_t index, int64_t length) {
                   for (int64_t j = 0; j < length; ++j) {
                     y[index + j] = R::finish(reduce_range<R>(x + offset + j * ks, plan.reduced, 0, n_red));
                   }
                 });
  });
}

/// Folds rows of one column block into an accumulator row. Float sums are pairwise over blocks of column_sub_rows
/// rows (a binary counter of partial rows, O(log n) of them), so error grows with log(rows) instead of rows.
template <class R>
class ColumnAccumulator {
 public:
  using Acc = typename R::Acc;
  explicit ColumnAccumulator(int64_t width) : width_(width) {}

  /// Adds `count` rows s elements apart, the first being row `index` of the reduction; rows of one block of
  /// column_sub_rows meet in registers a group at a time (R::accumulate_rows).
  void add(const typename R::In* row, int64_t s, int64_t count, int64_t index) {
    while (count > 0) {
      if (stack_.empty() || (R::blocked_sum && rows_in_top_ == column_sub_rows)) {
        start_block(row, index);
        row += s;
        ++index;
        --count;
        continue;
      }
      const int64_t take = R::blocked_sum ? std::min(count, column_sub_rows - rows_in_top_) : count;
      R::accumulate_rows(stack_.back().row.get(), row, s, take, width_, index);
      rows_in_top_ += take;
      row += take * s;
      index += take;
      count -= take;
    }
  }

  /// The folded row (call once, after at least one add); earlier rows combine on the left.
  const Acc* result() {
    while (stack_.size() >= 2) {
      auto top = std::move(stack_.back());
      stack_.pop_back();
      R::merge(stack_.back().row.get(), top.row.get(), width_);
      pool_.push_back(std::move(top.row));
    }
    return stack_.back().row.get();
  }

  void reset(int64_t width) {
    width_ = width;
    for (auto& entry : stack_) {
      pool_.push_back(std::move(entry.row));
    }
    stack_.clear();
  }

 private:
  struct Entry {
    std::unique_ptr<Acc[]> row;  // not vector: Acc may be bool
    int level;
  };
  /// Opens a block with `row`, first merging the finished block with equal-sized partial results below it.
  void start_block(const typename R::In* row, int64_t index) {
    if (R::blocked_sum) {
      while (stack_.size() >= 2 && stack_.back().level == stack_[stack_.size() - 2].level) {
        auto top = std::move(stack_.back());
        stack_.pop_back();
        R::merge(stack_.back().row.get(), top.row.get(), width_);
        ++stack_.back().level;
        pool_.push_back(std::move(top.row));
      }
    }
    stack_.push_back({take_row(), 0});
    R::first(stack_.back().row.get(), row, width_, index);
    rows_in_top_ = 1;
  }
  std::unique_ptr<Acc[]> take_row() {
    if (pool_.empty()) {
      return std::make_unique<Acc[]>(static_cast<size_t>(column_block));
    }
    auto row = std::move(pool_.back());
    pool_.pop_back();
    return row;
  }
  int64_t width_;
  int64_t rows_in_top_ = 0;
  std::vector<Entry> stack_;
  std::vector<std::unique_ptr<Acc[]>> pool_;
};

template <class R>
void column_reduce(const typename R::In* x, typename R::Out* y, const Plan& plan) {
  using Acc = typename R::Acc;
  const int64_t cols = plan.kept.inner_size();
  const auto n_red = static_cast<int64_t>(plan.n_red);
  const size_t kept_rows = plan.n_out / static_cast<size_t>(cols);
  const auto blocks = static_cast<size_t>((cols + column_block - 1) / column_block);
  const size_t base_items = kept_rows * blocks;
  // Too few items for the threads: split the reduced rows too, folding the partial rows afterwards.
  int64_t rows_per_chunk = n_red;
  if (base_items < few_items && plan.n_red * static_cast<size_t>(cols) >= 8 * grain_size) {
    const auto want = static_cast<int64_t>((few_items + base_items - 1) / base_items);
    rows_per_chunk = std::max<int64_t>(16, (n_red + want - 1) / want);
  }
  const auto chunks = static_cast<size_t>((n_red + rows_per_chunk - 1) / rows_per_chunk);
  auto partial = std::make_unique<Acc[]>(chunks > 1 ? chunks * plan.n_out : 0);  // not vector: Acc may be bool
  const int64_t rs = plan.reduced.inner_stride(0);
  const size_t work = static_cast<size_t>(rows_per_chunk) * static_cast<size_t>(std::min(cols, column_block));
  parallel_for(base_items * chunks, std::max<size_t>(1, grain_size / work), [&](size_t b, size_t e) {
    ColumnAccumulator<R> acc(column_block);
    for (size_t item = b; item < e; ++item) {
      const auto c = static_cast<int64_t>(item % chunks);
      const size_t kb = item / chunks;
      const size_t k = kb / blocks;
      const int64_t j0 = static_cast<int64_t>(kb % blocks) * column_block;
      const int64_t width = std::min(column_block, cols - j0);
      const auto* x0 = x + element_offset(k * static_cast<size_t>(cols), plan.kept.shape, plan.kept.strides[0]) + j0;
      const int64_t r0 = c * rows_per_chunk;
      acc.reset(width);
      const auto row_bytes = width * static_cast<int64_t>(sizeof(*x0));
      for_each_run(plan.reduced, r0, std::min(n_red, r0 + rows_per_chunk),
                   [&](int64_t offset, int64_t start, int64_t length) {
                     for (int64_t i = 0; i < length; i += column_group_rows) {
                       const int64_t count = std::min(column_group_rows, length - i);
                       const int64_t ahead = std::min(length, i + column_prefetch_rows + count);
                       for (int64_t p = i + column_prefetch_rows; p < ahead; ++p) {
                         prefetch_l2(x0 + offset + p * rs, row_bytes);
                       }
                       acc.add(x0 + offset + i * rs, rs, count, start + i);
                     }
                   });
      const Acc* folded = acc.result();
      const size_t out0 = k * static_cast<size_t>(cols) + static_cast<size_t>(j0);
      if (chunks == 1) {
        for (int64_t j = 0; j < width; ++j) {
          y[out0 + static_cast<size_t>(j)] = R::finish(folded[j]);
        }
      } else {
        std::copy(folded, folded + width, partial.get() + static_cast<size_t>(c) * plan.n_out + out0);
      }
    }
  });
  if (chunks > 1) {
    parallel_for(plan.n_out, std::max<size_t>(1, grain_size / chunks), [&](size_t b, size_t e) {
      for (size_t o = b; o < e; ++o) {
        y[o] = R::finish(combine_pairwise<R>(partial.get() + o, chunks, plan.n_out));
      }
    });
  }
}

/// Reduces `axes` of `a` into the row-contiguous `out` (reduced axes kept with size 1).
template <class R>
void reduce_array(const array& a, array& out, const std::vector<int>& axes, bool sort_reduced) {
  auto* y = out.data<typename R::Out>();
  if (out.size() == 0) {
    return;
  }
  auto plan = make_plan(a, axes, sort_reduced);
  if (plan.n_red == 0) {
    std::fill(y, y + out.size(), R::finish(R::identity()));
    return;
  }
  const auto* x = a.data<typename R::In>();
  const bool column =
      std::abs(plan.reduced.inner_stride(0)) != 1 && plan.kept.inner_stride(0) == 1 && plan.kept.inner_size() >= 8;
  if (column) {
    column_reduce<R>(x, y, plan);
  } else {
    row_reduce<R>(x, y, plan);
  }
}

// ---------------------------------------------------------------- dtype routing

/// Accumulator and output of sum/prod (MLX's dtype rule; integers accumulate in the output's unsigned type).
template <class T>
struct SumTypes {
  using Out = T;
  using Acc = compute_t<T>;
};
template <class T>
requires(std::is_integral_v<T>) struct SumTypes<T> {
  using Out = std::conditional_t<sizeof(T) == 8, T,
                                 std::conditional_t<std::is_signed_v<T> || std::is_same_v<T, bool>, int32_t, uint32_t>>;
  using Acc = std::make_unsigned_t<std::conditional_t<std::is_same_v<Out, bool>, int32_t, Out>>;
};

template <ReduceType K, class T>
void sum_or_prod(const array& a, array& out, const std::vector<int>& axes) {
  using Types = SumTypes<T>;
  if (out.dtype() == dtype_v<typename Types::Out>) {
    reduce_array<Reducer<K, T, typename Types::Acc, typename Types::Out>>(a, out, axes, true);
    return;
  }
  if constexpr (!std::is_same_v<T, double> && !is_complex_v<T>) {
    // mean's sums: float32 output, integers accumulated in double.
    if (out.dtype() == float32) {
      using Acc = std::conditional_t<std::is_integral_v<T>, double, float>;
      reduce_array<Reducer<K, T, Acc, float>>(a, out, axes, true);
      return;
    }
  }
  throw_internal("[Reduce] No kernel for " + std::string(dtype_name(a.dtype())) + " to " +
                 std::string(dtype_name(out.dtype())) + ".");
}

}  // namespace

void run(const Reduce& p, const Inputs& in, Outputs& out) {
  const auto& a = in[0];
  auto& o = out[0];
  o.set_data(allocator::malloc(o.nbytes()));
  dispatch(a.dtype(), [&]<class T>(type_tag<T>) {
    switch (p.type) {
      case ReduceType::sum:
        sum_or_prod<ReduceType::sum, T>(a, o, p.axes);
        return;
      case ReduceType::prod:
        sum_or_prod<ReduceType::prod, T>(a, o, p.axes);
        return;
      case ReduceType::max:
        reduce_array<Reducer<ReduceType::max, T, compute_t<T>, T>>(a, o, p.axes, true);
        return;
      case ReduceType::min:
        reduce_array<Reducer<ReduceType::min, T, compute_t<T>, T>>(a, o, p.axes, true);
        return;
      case ReduceType::all:
        reduce_array<Reducer<ReduceType::all, T, bool, bool>>(a, o, p.axes, true);
        return;
      case ReduceType::any:
        reduce_array<Reducer<ReduceType::any, T, bool, bool>>(a, o, p.axes, true);
        return;
    }
  });
}

void run(const ArgReduce& p, const Inputs& in, Outputs& out) {
  const auto& a = in[0];
  auto& o = out[0];
  o.set_data(allocator::malloc(o.nbytes()));
  dispatch(a.dtype(), [&]<class T>(type_tag<T>) {
    switch (p.type) {
      case ArgReduceType::argmax:
        reduce_array<ArgReducer<true, T>>(a, o, {p.axis}, false);
        return;
      case ArgReduceType::argmin:
        reduce_array<ArgReducer<false, T>>(a, o, {p.axis}, false);
        return;
    }
  });
}

}  // namespace nuvec::cpu
