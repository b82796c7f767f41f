// Integer and bool matrix products, which no BLAS offers.
//
// numpy accumulates an integer product in the output type, wrapping on overflow. Wrapping is
// arithmetic modulo 2^bits, so accumulating in a wider unsigned type (uint32 for 8- to 32-bit
// types, uint64 for 64-bit ones) and truncating once at the end gives the same bits, and
// unsigned overflow is defined. bool is "any(a & b)": a count of matching pairs that is
// tested against zero.
//
// The loop nest is the classic blocked GEMM: a kc x nc block of b is packed (converted to the
// accumulator type, in panels of nr columns), each thread packs mr rows of a for that block
// and keeps an mr x nr tile of accumulators in vector registers. Packing reads any strides,
// so no operand is ever copied first.

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "nuvec/core/dispatch.h"
#include "nuvec/core/error.h"
#include "nuvec/cpu/gemm.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

namespace {

template <class T>
using Accumulator = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;

/// x modulo 2^bits of Acc: signed values are sign-extended, so products wrap exactly as in T.
template <class Acc, class T>
Acc widen(T x) {
  if constexpr (std::is_signed_v<T>) {
    return static_cast<Acc>(static_cast<std::make_signed_t<Acc>>(x));
  } else {
    return static_cast<Acc>(x);
  }
}

constexpr int64_t kc_block = 256;
constexpr int64_t nc_block = 256;
constexpr int mr = 6;

/// 64 bytes of accumulators (a GCC/Clang vector type: one AVX-512 register, two AVX2 ones).
template <class Acc>
struct VecOf;
template <>
struct VecOf<uint32_t> {
  using type __attribute__((vector_size(64))) = uint32_t;
};
template <>
struct VecOf<uint64_t> {
  using type __attribute__((vector_size(64))) = uint64_t;
};
template <class Acc>
using Vec = typename VecOf<Acc>::type;
template <class Acc>
constexpr int lanes = 64 / static_cast<int>(sizeof(Acc));
template <class Acc>
constexpr int nr = 2 * lanes<Acc>;  // columns per tile: two vectors

template <class Acc>
Vec<Acc> load(const Acc* p) {
  Vec<Acc> v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

/// Tile of accumulators: acc[i][j] = sum over p of ap[p][i] * bp[p][j], in 2 * mr vector registers.
template <class Acc>
void micro_kernel(int64_t kc, const Acc* ap, const Acc* bp, Acc (&out)[mr][nr<Acc>]) {
  Vec<Acc> acc[mr][2] = {};
  for (int64_t p = 0; p < kc; ++p) {
    const Vec<Acc> b0 = load(bp + p * nr<Acc>);
    const Vec<Acc> b1 = load(bp + p * nr<Acc> + lanes<Acc>);
    for (int i = 0; i < mr; ++i) {
      const Acc av = ap[p * mr + i];
      acc[i][0] += b0 * av;
      acc[i][1] += b1 * av;
    }
  }
  std::memcpy(out, acc, sizeof(out));
}

template <class T>
void integer_gemm(int64_t m, int64_t n, int64_t k, const MatrixBatch& a, const MatrixBatch& b, T* c) {
  using Acc = Accumulator<T>;
  constexpr int64_t panel_width = nr<Acc>;
  const T* a_data = static_cast<const T*>(a.data);
  const T* b_data = static_cast<const T*>(b.data);
  const int64_t row_panels = (m + mr - 1) / mr;
  std::vector<Acc> b_packed(static_cast<size_t>(kc_block * nc_block));

  for (int64_t jc = 0; jc < n; jc += nc_block) {
    const int64_t nc = std::min(nc_block, n - jc);
    const int64_t col_panels = (nc + panel_width - 1) / panel_width;
    for (int64_t pc = 0; pc < k; pc += kc_block) {
      const int64_t kc = std::min(kc_block, k - pc);
      const bool first = pc == 0;
      // Pack b[pc:pc+kc, jc:jc+nc] as col_panels panels of kc x panel_width, zero padded.
      for (int64_t q = 0; q < col_panels; ++q) {
        Acc* dst = b_packed.data() + q * kc * panel_width;
        const int64_t j0 = jc + q * panel_width;
        const int64_t width = std::min<int64_t>(panel_width, n - j0);
        for (int64_t p = 0; p < kc; ++p) {
          const T* src = b_data + (pc + p) * b.row_stride + j0 * b.col_stride;
          int64_t j = 0;
          for (; j < width; ++j) {
            dst[p * panel_width + j] = widen<Acc>(src[j * b.col_stride]);
          }
          for (; j < panel_width; ++j) {
            dst[p * panel_width + j] = 0;
          }
        }
      }
      // One task per (row panel, column panel) tile; a task packs its rows of a when they change.
      const size_t tiles = static_cast<size_t>(row_panels * col_panels);
      const size_t grain =
          std::max<size_t>(1, static_cast<size_t>(1 << 16) / static_cast<size_t>(mr * panel_width * kc));
      parallel_for(tiles, grain, [&](size_t begin, size_t end) {
        Acc a_packed[kc_block * mr];
        int64_t packed_panel = -1;
        for (size_t t = begin; t < end; ++t) {
          const int64_t rp = static_cast<int64_t>(t) / col_panels;
          const int64_t cp = static_cast<int64_t>(t) % col_panels;
          const int64_t i0 = rp * mr;
          const int64_t height = std::min<int64_t>(mr, m - i0);
          if (rp != packed_panel) {
            for (int64_t p = 0; p < kc; ++p) {
              for (int i = 0; i < mr; ++i) {
                a_packed[p * mr + i] =
                    i < height ? widen<Acc>(a_data[(i0 + i) * a.row_stride + (pc + p) * a.col_stride]) : Acc{0};
              }
            }
            packed_panel = rp;
          }
          Acc acc[mr][panel_width];
          micro_kernel<Acc>(kc, a_packed, b_packed.data() + cp * kc * panel_width, acc);
          const int64_t j0 = jc + cp * panel_width;
          const int64_t width = std::min<int64_t>(panel_width, n - j0);
          for (int64_t i = 0; i < height; ++i) {
            T* row = c + (i0 + i) * n + j0;
            for (int64_t j = 0; j < width; ++j) {
              if constexpr (std::is_same_v<T, bool>) {
                row[j] = (!first && row[j]) || acc[i][j] != 0;
              } else {
                row[j] = static_cast<T>(first ? acc[i][j] : widen<Acc>(row[j]) + acc[i][j]);
              }
            }
          }
        }
      });
    }
  }
}

}  // namespace

void gemm_integer(Dtype dtype, int64_t m, int64_t n, int64_t k, const MatrixBatch& a, const MatrixBatch& b, void* c) {
  using integral_types = type_list<bool, uint8_t, uint16_t, uint32_t, uint64_t, int8_t, int16_t, int32_t, int64_t>;
  dispatch<integral_types>(dtype, "Matmul",
                           [&]<class T>(type_tag<T>) { integer_gemm<T>(m, n, k, a, b, static_cast<T*>(c)); });
}

}  // namespace nuvec::cpu
