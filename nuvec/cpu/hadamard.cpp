// The Hadamard kernel: each row (the last axis, n = m * 2^k with m 1, 12, 20 or 28) becomes scale * (H_m (x) H_2^k)
// row, split across threads by rows. H_2^k is in Sylvester order (H_2n = [[H_n, H_n], [H_n, -H_n]]); H_m for m > 1
// is MLX's matrix (core/hadamard_matrix.h). Read as an m x 2^k matrix X, the row becomes scale * H_m X H_2^k: a fast
// Walsh-Hadamard transform of each of its m pieces, then each output piece is a signed sum of the m pieces.
//
// The fast transform does its first two butterfly stages together on groups of four elements; every later stage
// combines two contiguous half-blocks with a unit-stride loop the compiler vectorizes, and the last stage applies the
// scale (when m = 1). float32 and float64 rows are transformed in the output buffer (the input's, when it can be
// donated); float16 and bfloat16 rows go through a float32 scratch row.

#include <algorithm>
#include <type_traits>
#include <vector>

#include "nuvec/core/dispatch.h"
#include "nuvec/core/hadamard_matrix.h"
#include "nuvec/cpu/copy.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

namespace {

/// x (n elements, n a power of two >= 2) becomes scale * H_n x.
template <class C>
void fwht(C* x, int64_t n, C scale) {
  int64_t h = 1;
  if (n >= 8) {
    for (int64_t i = 0; i < n; i += 4) {
      const C s0 = x[i] + x[i + 1];
      const C d0 = x[i] - x[i + 1];
      const C s1 = x[i + 2] + x[i + 3];
      const C d1 = x[i + 2] - x[i + 3];
      x[i] = s0 + s1;
      x[i + 1] = d0 + d1;
      x[i + 2] = s0 - s1;
      x[i + 3] = d0 - d1;
    }
    h = 4;
  }
  for (; 2 * h < n; h *= 2) {
    for (int64_t i = 0; i < n; i += 2 * h) {
      C* __restrict lo = x + i;
      C* __restrict hi = x + i + h;
      for (int64_t j = 0; j < h; ++j) {
        const C u = lo[j];
        const C v = hi[j];
        lo[j] = u + v;
        hi[j] = u - v;
      }
    }
  }
  C* __restrict lo = x;
  C* __restrict hi = x + h;
  for (int64_t j = 0; j < h; ++j) {
    const C u = lo[j];
    const C v = hi[j];
    lo[j] = (u + v) * scale;
    hi[j] = (u - v) * scale;
  }
}

/// x (m pieces of p elements, m * p >= 2) becomes scale * H_m X H_p; `pieces` is scratch for m * p elements. Each
/// output piece is a signed sum of the m transformed pieces, done a block of columns at a time with the sums in
/// registers.
template <class C>
void transform(C* x, int64_t p, int m, C scale, C* pieces) {
  if (m == 1) {
    fwht(x, p, scale);
    return;
  }
  if (p > 1) {
    for (int i = 0; i < m; ++i) {
      fwht(x + i * p, p, C{1});
    }
  }
  std::copy_n(x, m * p, pieces);
  constexpr int64_t block = 64 / sizeof(C) * 2;  // two cache lines of columns
  const int8_t* h = hadamard_matrix(m).data();
  // Row i of H is 2 * (its +1 entries) - (all ones), or the negative with its -1 entries: summing the rarer sign
  // takes at most m / 2 additions instead of m.
  int8_t rare[28];  // m is at most 28
  for (int i = 0; i < m; ++i) {
    rare[i] = std::count(h + i * m, h + (i + 1) * m, int8_t{1}) <= m / 2 ? 1 : -1;
  }
  for (int64_t t0 = 0; t0 < p; t0 += block) {
    const int64_t len = std::min(block, p - t0);
    C total[block] = {};
    for (int j = 0; j < m; ++j) {
      const C* __restrict piece = pieces + j * p + t0;
      for (int64_t t = 0; t < len; ++t) {
        total[t] += piece[t];
      }
    }
    for (int i = 0; i < m; ++i) {
      const int8_t* row = h + i * m;
      C sum[block] = {};
      for (int j = 0; j < m; ++j) {
        if (row[j] == rare[i]) {
          const C* __restrict piece = pieces + j * p + t0;
          for (int64_t t = 0; t < len; ++t) {
            sum[t] += piece[t];
          }
        }
      }
      const C sign = rare[i];
      C* __restrict out = x + i * p + t0;
      for (int64_t t = 0; t < len; ++t) {
        out[t] = sign * (C{2} * sum[t] - total[t]) * scale;
      }
    }
  }
}

/// Rows per thread chunk: about 16K elements.
size_t row_grain(int64_t n) { return static_cast<size_t>(std::max<int64_t>(1, (int64_t{1} << 14) / n)); }

}  // namespace

void run(const Hadamard& p, const Inputs& in, Outputs& out) {
  const auto& x = in[0];
  auto& o = out[0];
  if (x.is_donatable() && x.flags().row_contiguous && x.data_size() == x.size()) {
    o.move_shared_buffer(x);
  } else {
    copy_to_new(x, o);
  }
  const int64_t n = o.shape(-1);
  const int m = hadamard_order(n);
  const int64_t piece = n / m;
  const auto rows = static_cast<size_t>(o.size() / static_cast<size_t>(n));
  dispatch<floating_types>(o.dtype(), "Hadamard", [&]<class T>(type_tag<T>) {
    T* data = o.data<T>();
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      parallel_for(rows, row_grain(n), [&](size_t begin, size_t end) {
        std::vector<T> pieces(m > 1 ? static_cast<size_t>(n) : 0);
        for (size_t r = begin; r < end; ++r) {
          transform<T>(data + static_cast<int64_t>(r) * n, piece, m, static_cast<T>(p.scale), pieces.data());
        }
      });
    } else {
      parallel_for(rows, row_grain(n), [&](size_t begin, size_t end) {
        std::vector<float> row(static_cast<size_t>(n));
        std::vector<float> pieces(m > 1 ? static_cast<size_t>(n) : 0);
        for (size_t r = begin; r < end; ++r) {
          T* values = data + static_cast<int64_t>(r) * n;
          for (int64_t j = 0; j < n; ++j) {
            row[j] = static_cast<float>(values[j]);
          }
          transform<float>(row.data(), piece, m, p.scale, pieces.data());
          for (int64_t j = 0; j < n; ++j) {
            values[j] = static_cast<T>(row[j]);
          }
        }
      });
    }
  });
}

}  // namespace nuvec::cpu
