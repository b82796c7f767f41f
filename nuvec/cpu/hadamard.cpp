// The Hadamard kernel: each row (the last axis, n = m * 2^k with m 1, 12, 20 or 28) becomes scale * (H_m (x) H_2^k)
// row, split across threads by rows. H_2^k is in Sylvester order (H_2n = [[H_n, H_n], [H_n, -H_n]]); H_m for m > 1
// is the Paley matrix of hadamard_matrix.h. Read as an m x 2^k matrix X, the row becomes scale * H_m X H_2^k: a fast
// Walsh-Hadamard transform of each of its m pieces, then each output piece is a signed sum of the m pieces.
//
// The fast transform does its first two butterfly stages together on groups of four elements; every later stage
// combines two contiguous half-blocks with a unit-stride loop the compiler vectorizes, and the last stage applies the
// scale (when m = 1). float32 and float64 rows are transformed in the output buffer (the input's, when it can be
// donated); float16 and bfloat16 rows go through a float32 scratch row.

#include <algorithm>
#include <bit>
#include <type_traits>
#include <vector>

#include "nuvec/core/dispatch.h"
#include "nuvec/cpu/copy.h"
#include "nuvec/cpu/hadamard_matrix.h"
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

/// x (m pieces of p elements, m * p >= 2) becomes scale * H_m X H_p; `pieces` is scratch for m * p elements.
/// With H_m = C (x) K1 + I (x) K2 (hadamard_matrix.h), pieces 2i and 2i + 1 give u_i = x_2i + x_2i+1 and
/// v_i = x_2i - x_2i+1, and the outputs are y_2i = sum_j C_ij u_j + v_i and y_2i+1 = sum_j C_ij v_j - u_i: half the
/// additions of a product by H_m, done a block of columns at a time with the sums in registers.
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
  const int c = m / 2;
  C* u = pieces;
  C* v = pieces + c * p;
  for (int j = 0; j < c; ++j) {
    const C* __restrict a = x + 2 * j * p;
    const C* __restrict b = a + p;
    for (int64_t t = 0; t < p; ++t) {
      u[j * p + t] = a[t] + b[t];
      v[j * p + t] = a[t] - b[t];
    }
  }
  constexpr int64_t block = 64 / sizeof(C) * 2;  // two cache lines of columns
  const int8_t* conference = conference_matrix(m).data();
  for (int64_t t0 = 0; t0 < p; t0 += block) {
    const int64_t len = std::min(block, p - t0);
    for (int i = 0; i < c; ++i) {
      C su[block] = {};
      C sv[block] = {};
      for (int j = 0; j < c; ++j) {
        const int8_t sign = conference[i * c + j];
        const C* __restrict uj = u + j * p + t0;
        const C* __restrict vj = v + j * p + t0;
        if (sign > 0) {
          for (int64_t t = 0; t < len; ++t) {
            su[t] += uj[t];
            sv[t] += vj[t];
          }
        } else if (sign < 0) {
          for (int64_t t = 0; t < len; ++t) {
            su[t] -= uj[t];
            sv[t] -= vj[t];
          }
        }
      }
      C* __restrict even = x + 2 * i * p + t0;
      C* __restrict odd = even + p;
      for (int64_t t = 0; t < len; ++t) {
        even[t] = (su[t] + v[i * p + t0 + t]) * scale;
        odd[t] = (sv[t] - u[i * p + t0 + t]) * scale;
      }
    }
  }
}

/// The m of n = m * 2^k (1 when n is a power of two); the op lets only such sizes through.
int odd_factor(int64_t n) {
  for (int m : {12, 20, 28}) {
    if (n % m == 0 && std::has_single_bit(static_cast<uint64_t>(n / m))) {
      return m;
    }
  }
  return 1;
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
  const int m = odd_factor(n);
  const int64_t piece = n / m;
  const auto rows = static_cast<size_t>(o.size() / static_cast<size_t>(n));
  dispatch(o.dtype(), [&]<class T>(type_tag<T>) {
    T* data = o.data<T>();
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      parallel_for(rows, row_grain(n), [&](size_t begin, size_t end) {
        std::vector<T> pieces(m > 1 ? static_cast<size_t>(n) : 0);
        for (size_t r = begin; r < end; ++r) {
          transform<T>(data + static_cast<int64_t>(r) * n, piece, m, static_cast<T>(p.scale), pieces.data());
        }
      });
    } else if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
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
    } else {
      throw_internal("[hadamard_transform] The kernel takes real floating point types only.");
    }
  });
}

}  // namespace nuvec::cpu
