// Scan: cumulative sum, product, max, min and logaddexp along one axis.
//
// The op gives the kernel an input of the output's dtype. A row-contiguous input is read in place (or donated);
// any other layout is first copied into the output, which is then scanned in place. The output is viewed as
// (outer, n, inner):
//   - inner == 1: each row is one tight sequential loop;
//   - inner > 1: a block of inner columns is scanned together, acc[j] op= x[j] for each step along the axis, a loop
//     the compiler vectorizes.
// Accumulators: float16/bfloat16 in float32 (rounded once per output), integer sums and products in the unsigned
// type of the same width (wrapping, no signed overflow), max/min propagate NaN as np.maximum.accumulate does, and
// logaddexp is max(a, b) + log1p(exp(-|a - b|)), which never overflows.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "nuvec/core/dispatch.h"
#include "nuvec/cpu/copy.h"
#include "nuvec/cpu/element_types.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

namespace {

constexpr size_t grain_elements = size_t{1} << 15;
constexpr int64_t column_block = 512;  // inner columns scanned together (their accumulators stay in L1)

/// The accumulator: float for half types, the unsigned twin for integers (wrapping), T otherwise.
template <class T>
struct Acc {
  using type = T;
};
template <class T>
  requires(is_half_v<T>)
struct Acc<T> {
  using type = float;
};
template <class T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
struct Acc<T> {
  using type = std::make_unsigned_t<T>;
};
template <class T>
using acc_t = typename Acc<T>::type;

/// The running operation K on accumulators of type A (the scan of input type T).
template <ScanType K, class T>
struct Op {
  using A = acc_t<T>;

  static A identity() {
    if constexpr (std::is_same_v<T, bool>) {
      return K == ScanType::prod || K == ScanType::min;
    } else if constexpr (K == ScanType::sum) {
      return A{};
    } else if constexpr (K == ScanType::prod) {
      return A(1);
    } else if constexpr (is_complex_v<A>) {
      constexpr float far = K == ScanType::min ? std::numeric_limits<float>::infinity()
                                               : -std::numeric_limits<float>::infinity();
      return A(far, 0.0F);
    } else if constexpr (std::is_floating_point_v<A>) {
      return K == ScanType::min ? std::numeric_limits<A>::infinity() : -std::numeric_limits<A>::infinity();
    } else {
      // The extremes of T itself (A is T's unsigned twin for integers).
      return static_cast<A>(K == ScanType::min ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest());
    }
  }

  static A apply(A acc, A x) {
    if constexpr (std::is_same_v<T, bool>) {
      return (K == ScanType::prod || K == ScanType::min) ? (acc && x) : (acc || x);
    } else if constexpr (K == ScanType::sum) {
      return static_cast<A>(acc + x);
    } else if constexpr (K == ScanType::prod) {
      return static_cast<A>(acc * x);
    } else if constexpr (K == ScanType::logaddexp) {
      if constexpr (std::is_floating_point_v<A>) {
        if (std::isnan(acc) || std::isnan(x)) {
          return std::numeric_limits<A>::quiet_NaN();
        }
        const A m = std::max(acc, x);
        if (std::isinf(m)) {
          return m;  // +inf wins; both -inf stay -inf (and avoid inf - inf)
        }
        return m + std::log1p(std::exp(-std::abs(acc - x)));
      } else {
        return x;  // the op accepts floating inputs only
      }
    } else {
      if (is_nan(acc)) {
        return acc;
      }
      if (is_nan(x)) {
        return x;
      }
      // Integers compare as T (A is T's unsigned twin).
      using C = std::conditional_t<std::is_integral_v<T>, T, A>;
      const auto a = static_cast<C>(acc);
      const auto b = static_cast<C>(x);
      return (K == ScanType::max ? greater(b, a) : greater(a, b)) ? x : acc;
    }
  }
};

template <class A, class T>
A to_acc(T x) {
  if constexpr (is_half_v<T>) {
    return static_cast<float>(x);
  } else {
    return static_cast<A>(x);
  }
}

/// Scans rows of `outer` x n x `inner` elements from x into y (which may be x).
template <ScanType K, class T>
void scan(const T* x, T* y, size_t outer, int64_t n, int64_t inner, bool reverse, bool inclusive) {
  using O = Op<K, T>;
  using A = typename O::A;
  const int64_t step = reverse ? -inner : inner;
  const int64_t first = reverse ? (n - 1) * inner : 0;
  if (inner == 1) {
    parallel_for(outer, std::max<size_t>(1, grain_elements / static_cast<size_t>(n)), [&](size_t b, size_t e) {
      for (size_t r = b; r < e; ++r) {
        const T* src = x + r * static_cast<size_t>(n) + first;
        T* dst = y + r * static_cast<size_t>(n) + first;
        A acc = O::identity();
        for (int64_t i = 0; i < n; ++i) {
          const A v = to_acc<A>(src[i * step]);
          if (inclusive) {
            acc = O::apply(acc, v);
            dst[i * step] = static_cast<T>(acc);
          } else {
            dst[i * step] = static_cast<T>(acc);
            acc = O::apply(acc, v);
          }
        }
      }
    });
    return;
  }
  const auto blocks = static_cast<size_t>((inner + column_block - 1) / column_block);
  const size_t work = static_cast<size_t>(n) * static_cast<size_t>(std::min(inner, column_block));
  parallel_for(outer * blocks, std::max<size_t>(1, grain_elements / work), [&](size_t b, size_t e) {
    std::vector<A> acc(static_cast<size_t>(column_block));
    for (size_t item = b; item < e; ++item) {
      const size_t o = item / blocks;
      const int64_t j0 = static_cast<int64_t>(item % blocks) * column_block;
      const int64_t width = std::min(column_block, inner - j0);
      const size_t base = o * static_cast<size_t>(n * inner) + static_cast<size_t>(first + j0);
      const T* src = x + base;
      T* dst = y + base;
      std::fill(acc.begin(), acc.begin() + width, O::identity());
      for (int64_t i = 0; i < n; ++i) {
        const T* s = src + i * step;
        T* d = dst + i * step;
        if (inclusive) {
          for (int64_t j = 0; j < width; ++j) {
            acc[j] = O::apply(acc[j], to_acc<A>(s[j]));
            d[j] = static_cast<T>(acc[j]);
          }
        } else {
          for (int64_t j = 0; j < width; ++j) {
            const A v = to_acc<A>(s[j]);
            d[j] = static_cast<T>(acc[j]);
            acc[j] = O::apply(acc[j], v);
          }
        }
      }
    }
  });
}

}  // namespace

void run(const Scan& p, const Inputs& in, Outputs& out) {
  const auto& a = in[0];
  auto& o = out[0];
  const void* src = nullptr;
  if (a.flags().row_contiguous && a.data_size() == a.size()) {
    src = a.raw_data();  // read before a donation moves the buffer: the scan then runs in place
    allocate_or_donate(o, a);
  } else {
    copy_to_new(a, o);
    src = o.raw_data();
  }
  if (o.size() == 0) {
    return;
  }
  const int64_t n = o.shape(p.axis);
  int64_t inner = 1;
  for (int i = p.axis + 1; i < o.ndim(); ++i) {
    inner *= o.shape(i);
  }
  const size_t outer = o.size() / static_cast<size_t>(n * inner);
  dispatch(o.dtype(), [&]<class T>(type_tag<T>) {
    const auto* x = static_cast<const T*>(src);
    auto* y = o.data<T>();
    switch (p.type) {
      case ScanType::sum:
        scan<ScanType::sum, T>(x, y, outer, n, inner, p.reverse, p.inclusive);
        return;
      case ScanType::prod:
        scan<ScanType::prod, T>(x, y, outer, n, inner, p.reverse, p.inclusive);
        return;
      case ScanType::max:
        scan<ScanType::max, T>(x, y, outer, n, inner, p.reverse, p.inclusive);
        return;
      case ScanType::min:
        scan<ScanType::min, T>(x, y, outer, n, inner, p.reverse, p.inclusive);
        return;
      case ScanType::logaddexp:
        scan<ScanType::logaddexp, T>(x, y, outer, n, inner, p.reverse, p.inclusive);
        return;
    }
  });
}

}  // namespace nuvec::cpu
