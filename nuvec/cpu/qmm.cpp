// The QuantizedMatmul and GatherQMM kernels. A product never dequantizes the whole weight; it takes one of these
// paths by shape:
//   - few rows of x, w (N, K) (transpose, the decode shape): with AVX-512 VNNI, 2-, 4- and 8-bit codes meet int8
//     levels of x in integer dot products (qmm_int8.cpp; up to 127 rows of x, past gemm_rows where the prefill
//     paths would take over: int8_decode_rows). Otherwise each thread streams the packed rows of a range
//     of output columns once, four at a time; 2-, 4- and 8-bit codes are unpacked in registers (Highway: shift,
//     mask, convert) and multiplied into float32 accumulators against x, which is reordered once so that the codes
//     of one packed word meet their x values in the same lane. Per group: sum(q * x) * scale + sum(x) * bias. 3-, 5-
//     and 6-bit codes take a generic path (unpack a row to floats, then SIMD dot products).
//   - few rows, w (K, N): 2, 4 and 8 bits give each task a block of columns (up to 1 KiB of packed words a row) and
//     stream it down the K rows with the sums in registers: per vector of packed words, one accumulator per code
//     position and one for the bias, each lane scaled by its own group; the other widths give each thread a range of
//     columns and walk the K rows unpacking its slice of each.
//   - 128 rows (prefill) and more of w (N, K) in 4 or 8 bits with groups of 32 values or more, on two int8 levels of x
//     (float32 matmul precision "high" or "medium", or a bfloat16 output): the GGUF block formats' prefill kernel
//     (qmm_blocks.cpp), each 32 values of x against a block of codes, then times the group's scale, and the group's
//     bias times x's sum.
//   - other prefill, or an x holding infinities or NaNs: tiles of w are dequantized into a float32 scratch
//     block and multiplied by the sgemm (for many rows of w (N, K) in 2, 4 and 8 bits, with SIMD, in the reordered K
//     order of the decode path, x reordered to match).
// x is read as dense float32 (converted once when it is half precision or strided); the output is computed in float32
// and rounded once to x's dtype.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <utility>
#include <vector>

#include "nuvec/core/matmul_precision.h"
#include "nuvec/cpu/block_quants.h"
#include "nuvec/cpu/copy.h"
#include "nuvec/cpu/gemm.h"
#include "nuvec/cpu/highway.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/microscaled.h"
#include "nuvec/cpu/prefetch.h"
#include "nuvec/cpu/quantized.h"
#include "nuvec/cpu/row_sum.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

std::vector<float> quant::group_sums(const float* x, int64_t rows, int64_t k, int group_size) {
  const int64_t groups = k / group_size;
  std::vector<float> sums(static_cast<size_t>(rows * groups));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      sums[static_cast<size_t>(r * groups + g)] = sum_row(x + r * k + g * group_size, group_size);
    }
  }
  return sums;
}

namespace {

using quant::Matrix;

constexpr int64_t gemm_rows = 32;     // from this many rows of x, dequantize tiles and call the sgemm
constexpr int64_t tile_cols = 512;    // output columns per dequantized tile (a multiple of every group size)
constexpr int64_t plain_cols = 1024;  // w (K, N) generic decode: columns per task, so packed rows are read in runs
constexpr int64_t bytes_per_task = 1 << 16;  // packed weight bytes a thread reads before splitting pays
constexpr int64_t prefetch_bytes = 1 << 14;  // w (N, K) decode: how far ahead of its rows a task asks for more

/// Rows of x as dense float32, `k` apart.
struct Rows {
  const float* x;
  int64_t count;
  int64_t k;
};

/// Column tasks: `per_task` columns of `block` each, so that a task reads about bytes_per_task of packed weights.
size_t task_grain(int64_t block_bytes) {
  return static_cast<size_t>(std::max<int64_t>(1, bytes_per_task / block_bytes));
}

template <int N, class F>
HWY_INLINE void unroll(F&& f) {
  [&]<int... J>(std::integer_sequence<int, J...>) { (f.template operator()<J>(), ...); }
  (std::make_integer_sequence<int, N>{});
}

// ---------------------------------------------------------------- decode, w (N, K): SIMD for 2, 4 and 8 bits

template <int Bits, int GroupSize>
struct SimdDecode {
  static constexpr int values_per_word = 32 / Bits;
  static constexpr int words_per_group = GroupSize * Bits / 32;
  static constexpr int columns = 4;  // packed rows streamed together: independent FMA chains, shared x loads
  using DF = hn::CappedTag<float, words_per_group>;  // a group is a whole number of vectors of words
  using V = hn::Vec<DF>;

  /// Block b of L words holds L * values_per_word values; lane l's word has them at l * vpw + j. The reordered x
  /// puts that value at j * L + l, so the j-th codes of L words multiply one contiguous vector of x.
  static std::vector<float> reorder(const Rows& x) {
    const auto lanes = static_cast<int64_t>(hn::Lanes(DF()));
    const int64_t block = lanes * values_per_word;
    std::vector<float> xp(static_cast<size_t>(x.count * x.k));
    for (int64_t r = 0; r < x.count; ++r) {
      const float* src = x.x + r * x.k;
      float* dst = xp.data() + r * x.k;
      for (int64_t b0 = 0; b0 < x.k; b0 += block) {
        for (int64_t l = 0; l < lanes; ++l) {
          for (int64_t j = 0; j < values_per_word; ++j) {
            dst[b0 + j * lanes + l] = src[b0 + l * values_per_word + j];
          }
        }
      }
    }
    return xp;
  }

  /// res[r][c] = row r of x (reordered, k apart) times packed row w[c], for RB rows and `columns` packed rows;
  /// sb holds each packed row's scales then biases (2 * groups floats per row).
  template <int RB>
  static void block(const float* xp, const float* xsum, int64_t k, const uint32_t* const* w, const float* sb,
                    int64_t ahead, float (&res)[RB][columns]) {
    const DF df;
    const hn::RebindToUnsigned<DF> du;
    const hn::RebindToSigned<DF> di;
    const auto lanes = static_cast<int64_t>(hn::Lanes(df));
    const auto mask = hn::Set(du, (1U << Bits) - 1U);
    const int64_t groups = k / GroupSize;
    V total[RB][columns];
    float bias[RB][columns];
    for (int r = 0; r < RB; ++r) {
      for (int c = 0; c < columns; ++c) {
        total[r][c] = hn::Zero(df);
        bias[r][c] = 0.F;
      }
    }
    for (int64_t g = 0; g < groups; ++g) {
      V acc[RB][columns];
      for (int r = 0; r < RB; ++r) {
        for (int c = 0; c < columns; ++c) {
          acc[r][c] = hn::Zero(df);
        }
      }
      for (int64_t word = 0; word < words_per_group; word += lanes) {
        hn::Vec<hn::RebindToUnsigned<DF>> packed[columns];
        for (int c = 0; c < columns; ++c) {
          packed[c] = hn::LoadU(du, w[c] + g * words_per_group + word);
          __builtin_prefetch(w[c] + g * words_per_group + word + ahead, 0, 2);
        }
        const float* xb = xp + g * GroupSize + word * values_per_word;
        unroll<values_per_word>([&]<int J>() {
          V q[columns];
          for (int c = 0; c < columns; ++c) {
            q[c] = hn::ConvertTo(df, hn::BitCast(di, hn::And(hn::ShiftRight<J * Bits>(packed[c]), mask)));
          }
          for (int r = 0; r < RB; ++r) {
            const V xv = hn::LoadU(df, xb + r * k + J * lanes);
            for (int c = 0; c < columns; ++c) {
              acc[r][c] = hn::MulAdd(q[c], xv, acc[r][c]);
            }
          }
        });
      }
      for (int c = 0; c < columns; ++c) {
        const V scale = hn::Set(df, sb[c * 2 * groups + g]);
        const float b = sb[(c * 2 + 1) * groups + g];
        for (int r = 0; r < RB; ++r) {
          total[r][c] = hn::MulAdd(acc[r][c], scale, total[r][c]);
          bias[r][c] += b * xsum[r * groups + g];
        }
      }
    }
    for (int r = 0; r < RB; ++r) {
      for (int c = 0; c < columns; ++c) {
        res[r][c] = hn::GetLane(hn::SumOfLanes(df, total[r][c])) + bias[r][c];
      }
    }
  }

  static void run(const Rows& x, const Matrix& m, float* out) {
    const int64_t n = m.rows;
    const int64_t groups = m.groups();
    const auto xp = reorder(x);
    const auto xsum = quant::group_sums(x.x, x.count, x.k, GroupSize);
    const int64_t blocks = (n + columns - 1) / columns;
    // Rows are adjacent: ask for the rows (and their scales) about 16 KiB ahead, into L2, while a block runs.
    const int64_t ahead_rows = std::max<int64_t>(columns, prefetch_bytes / (m.words() * 4));
    const int64_t ahead = ahead_rows * m.words();
    parallel_for(static_cast<size_t>(blocks), task_grain(columns * m.words() * 4), [&](size_t b0, size_t b1) {
      std::vector<float> sb(static_cast<size_t>(columns * 2 * groups));
      for (auto b = static_cast<int64_t>(b0); b < static_cast<int64_t>(b1); ++b) {
        const uint32_t* w[columns];
        for (int c = 0; c < columns; ++c) {
          const int64_t col = std::min(b * columns + c, n - 1);  // the last block repeats its last row
          w[c] = m.row(col);
          m.load(m.scales, col * groups, groups, sb.data() + c * 2 * groups);
          m.load(m.biases, col * groups, groups, sb.data() + (c * 2 + 1) * groups);
          quant::prefetch_scales(m, std::min(col + ahead_rows, n - 1));
        }
        const int64_t valid = std::min<int64_t>(columns, n - b * columns);
        auto store = [&]<int RB>(int64_t r0, const float(&res)[RB][columns]) {
          for (int r = 0; r < RB; ++r) {
            for (int64_t c = 0; c < valid; ++c) {
              out[(r0 + r) * n + b * columns + c] = res[r][c];
            }
          }
        };
        int64_t r0 = 0;
        for (; r0 + 2 <= x.count; r0 += 2) {
          float res[2][columns];
          block<2>(xp.data() + r0 * x.k, xsum.data() + r0 * groups, x.k, w, sb.data(), ahead, res);
          store(r0, res);
        }
        if (r0 < x.count) {
          float res[1][columns];
          block<1>(xp.data() + r0 * x.k, xsum.data() + r0 * groups, x.k, w, sb.data(), ahead, res);
          store(r0, res);
        }
      }
    });
  }

  /// Rows r0..r1 of w (N, K) dequantized `ld` apart, K in the order of `reorder` (the sgemm's sum over K does not
  /// depend on the order, so prefill multiplies them by the reordered x without putting them back).
  static void dequantize_reordered(const Matrix& m, int64_t r0, int64_t r1, float* out, int64_t ld) {
    const DF df;
    const hn::RebindToUnsigned<DF> du;
    const hn::RebindToSigned<DF> di;
    const auto lanes = static_cast<int64_t>(hn::Lanes(df));
    const auto mask = hn::Set(du, (1U << Bits) - 1U);
    const int64_t groups = m.groups();
    std::vector<float> sb(static_cast<size_t>(2 * groups));
    for (int64_t r = r0; r < r1; ++r) {
      m.load(m.scales, r * groups, groups, sb.data());
      m.load(m.biases, r * groups, groups, sb.data() + groups);
      const uint32_t* row = m.row(r);
      float* o = out + (r - r0) * ld;
      for (int64_t g = 0; g < groups; ++g) {
        const V scale = hn::Set(df, sb[g]);
        const V bias = hn::Set(df, sb[groups + g]);
        for (int64_t word = 0; word < words_per_group; word += lanes) {
          const auto packed = hn::LoadU(du, row + g * words_per_group + word);
          float* p = o + g * GroupSize + word * values_per_word;
          unroll<values_per_word>([&]<int J>() {
            const V q = hn::ConvertTo(df, hn::BitCast(di, hn::And(hn::ShiftRight<J * Bits>(packed), mask)));
            hn::StoreU(hn::MulAdd(q, scale, bias), df, p + J * lanes);
          });
        }
      }
    }
  }
};

// ---------------------------------------------------------------- decode, w (N, K): any width

template <int Bits>
void decode_generic(const Rows& x, const Matrix& m, float* out) {
  const int64_t n = m.rows;
  const int64_t groups = m.groups();
  const int gs = m.group_size;
  const auto xsum = quant::group_sums(x.x, x.count, x.k, gs);
  parallel_for(static_cast<size_t>(n), task_grain(m.words() * 4), [&](size_t c0, size_t c1) {
    std::vector<float> q(static_cast<size_t>(x.k));
    std::vector<float> sb(static_cast<size_t>(2 * groups));
    for (auto c = static_cast<int64_t>(c0); c < static_cast<int64_t>(c1); ++c) {
      quant::unpack<Bits>(m.row(c), 0, x.k, q.data());
      m.load(m.scales, c * groups, groups, sb.data());
      m.load(m.biases, c * groups, groups, sb.data() + groups);
      for (int64_t r = 0; r < x.count; ++r) {
        float acc = 0.F;
        for (int64_t g = 0; g < groups; ++g) {
          acc += sb[g] * dot(q.data() + g * gs, x.x + r * x.k + g * gs, gs) + sb[groups + g] * xsum[r * groups + g];
        }
        out[r * n + c] = acc;
      }
    }
  });
}

void decode_transposed(const Rows& x, const Matrix& m, float* out) {
  quant::dispatch_bits(m.bits, [&](auto bits_c) {
    constexpr int Bits = decltype(bits_c)::value;
    if constexpr (32 % Bits == 0) {
      switch (m.group_size) {
        case 16:
          return SimdDecode<Bits, 16>::run(x, m, out);
        case 32:
          return SimdDecode<Bits, 32>::run(x, m, out);
        case 64:
          return SimdDecode<Bits, 64>::run(x, m, out);
        case 128:
          return SimdDecode<Bits, 128>::run(x, m, out);
      }
    }
    decode_generic<Bits>(x, m, out);
  });
}

// ---------------------------------------------------------------- decode, w (K, N): SIMD for 2, 4 and 8 bits

/// x @ w for w (K, N) quantized along N. A "line" is L consecutive packed words of a row (one vector; a cache line
/// with AVX-512); a task owns a block of lines and a range of K, and streams that block down its rows with the
/// sums of every x row in registers: per packed word vector, `values_per_word` accumulators (the j-th codes of the
/// L words) and one for the bias. Each lane's scale and bias come from its own group (a table lookup of the row's
/// scales, so several groups can share a vector). When there are few blocks, K is split into parts whose sums are
/// added in part order, so the result depends on the shape only, never on the thread count.
template <int Bits, int GroupSize, class DF>
struct ColumnDecode {
  static constexpr int values_per_word = 32 / Bits;
  static constexpr int words_per_group = GroupSize * Bits / 32;
  static constexpr int sums = values_per_word + 1;                           // accumulators per x row: codes, then bias
  static constexpr int registers = HWY_TARGET <= HWY_AVX3 ? 32 : 16;         // vector registers of the target
  static constexpr int rows_per_pass = std::max(1, (registers - 8) / sums);  // x rows whose sums stay in registers
  static constexpr int64_t block_lines = 16;     // lines per task: 1 KiB of each row with 64-byte vectors
  static constexpr int64_t chunk_rows = 32;      // K rows per pass over the block (their scales converted at once)
  static constexpr int64_t min_tasks = 16;       // split K when there are fewer blocks than this
  static constexpr int64_t min_part_rows = 256;  // ... into parts of at least this many rows
  using V = hn::Vec<DF>;

  /// Whether a row of m is a whole number of lines.
  static bool fits(const Matrix& m) { return m.words() % static_cast<int64_t>(hn::Lanes(DF())) == 0; }

  /// acc (R rows of `sums` vectors, `acc_stride` apart) += the rows k of a line for R rows of x. sb holds each K
  /// row's converted scales, then its biases `bias_at` further, `sb_stride` apart, starting at the line's group.
  template <int R>
  static void pass(const float* x, int64_t ldx, const uint32_t* w, int64_t words, const float* sb, int64_t sb_stride,
                   int64_t bias_at, int64_t rows, const int32_t* lane_group, float* acc, int64_t acc_stride) {
    const DF df;
    const hn::RebindToUnsigned<DF> du;
    const hn::RebindToSigned<DF> di;
    const auto lanes = static_cast<int64_t>(hn::Lanes(df));
    const auto mask = hn::Set(du, (1U << Bits) - 1U);
    const auto table = hn::SetTableIndices(df, lane_group);
    // Every loop over the sums is unrolled, so that they become registers: as an array indexed at run time they would
    // stay in memory, stored after every update (float loads may alias Highway's vector types).
    V a[R][sums];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 32
      for (int j = 0; j < sums; ++j) {
        a[r][j] = hn::LoadU(df, acc + r * acc_stride + j * lanes);
      }
    }
    for (int64_t k = 0; k < rows; ++k) {
      const auto packed = hn::LoadU(du, w + k * words);
      __builtin_prefetch(w + (k + chunk_rows) * words, 0, 2);  // this line of the next chunk's row, into L2
      const float* sbk = sb + k * sb_stride;
      const V scale = hn::TableLookupLanes(hn::LoadU(df, sbk), table);
      const V bias = hn::TableLookupLanes(hn::LoadU(df, sbk + bias_at), table);
      V coef[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const V xv = hn::Set(df, x[r * ldx + k]);
        coef[r] = hn::Mul(xv, scale);
        a[r][values_per_word] = hn::MulAdd(xv, bias, a[r][values_per_word]);
      }
      unroll<values_per_word>([&]<int J>() {
        const V q = hn::ConvertTo(df, hn::BitCast(di, hn::And(hn::ShiftRight<J * Bits>(packed), mask)));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          a[r][J] = hn::MulAdd(q, coef[r], a[r][J]);
        }
      });
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 32
      for (int j = 0; j < sums; ++j) {
        hn::StoreU(a[r][j], df, acc + r * acc_stride + j * lanes);
      }
    }
  }

  static void run(const Rows& x, const Matrix& m, float* out) {
    const auto lanes = static_cast<int64_t>(hn::Lanes(DF()));
    const int64_t n = m.cols;
    const int64_t words = m.words();
    const int64_t groups = m.groups();
    const int64_t lines = words / lanes;
    const int64_t blocks = (lines + block_lines - 1) / block_lines;
    const int64_t parts =
        std::clamp((min_tasks + blocks - 1) / blocks, int64_t{1}, std::max<int64_t>(1, x.k / min_part_rows));
    const int64_t part_rows = (x.k + parts - 1) / parts;
    // Lane l of a line reads the scale of group (first group of the line) + lane_group[l].
    std::vector<int32_t> lane_group(static_cast<size_t>(lanes));
    for (int64_t l = 0; l < lanes; ++l) {
      lane_group[l] = static_cast<int32_t>(l / words_per_group);
    }
    std::vector<float> partial(parts > 1 ? static_cast<size_t>(parts * x.count * n) : 0);
    parallel_for(static_cast<size_t>(blocks * parts), 1, [&](size_t t0, size_t t1) {
      std::vector<float> acc;
      std::vector<float> sb;
      for (auto t = static_cast<int64_t>(t0); t < static_cast<int64_t>(t1); ++t) {
        const int64_t part = t % parts;
        const int64_t line0 = t / parts * block_lines;
        const int64_t count = std::min(block_lines, lines - line0);
        const int64_t g0 = line0 * lanes / words_per_group;
        const int64_t ng = ((line0 + count) * lanes + words_per_group - 1) / words_per_group - g0;
        const int64_t bias_at = ng + lanes;  // each row's scales, padded so that a whole vector can be loaded
        const int64_t sb_stride = 2 * bias_at;
        const int64_t acc_stride = count * sums * lanes;
        acc.assign(static_cast<size_t>(x.count * acc_stride), 0.F);
        sb.resize(static_cast<size_t>(chunk_rows * sb_stride));
        const int64_t k_end = std::min(x.k, (part + 1) * part_rows);
        for (int64_t k0 = part * part_rows; k0 < k_end; k0 += chunk_rows) {
          const int64_t rows = std::min(chunk_rows, k_end - k0);
          // The rows are far apart: ask for the next chunk's scales and biases while this one runs (its packed words
          // are asked for line by line in pass(): a burst of them all at once was mostly dropped, and streamed 4-bit
          // decode took 1.5-1.8 ms instead of 0.77-0.86).
          for (int64_t k = k0 + chunk_rows; k < std::min(k_end, k0 + 2 * chunk_rows); ++k) {
            prefetch_l2(m.scale_row(m.scales, k) + g0 * m.item, ng * m.item);
            prefetch_l2(m.scale_row(m.biases, k) + g0 * m.item, ng * m.item);
          }
          for (int64_t k = 0; k < rows; ++k) {
            m.load(m.scales, (k0 + k) * groups + g0, ng, sb.data() + k * sb_stride);
            m.load(m.biases, (k0 + k) * groups + g0, ng, sb.data() + k * sb_stride + bias_at);
          }
          for (int64_t line = 0; line < count; ++line) {
            const uint32_t* w = m.row(k0) + (line0 + line) * lanes;
            const float* sbl = sb.data() + (line0 + line) * lanes / words_per_group - g0;
            float* a = acc.data() + line * sums * lanes;
            int64_t r = 0;
            auto passes = [&]<int R>() {
              for (; r + R <= x.count; r += R) {
                pass<R>(x.x + r * x.k + k0, x.k, w, words, sbl, sb_stride, bias_at, rows, lane_group.data(),
                        a + r * acc_stride, acc_stride);
              }
            };
            passes.template operator()<rows_per_pass>();
            if constexpr (rows_per_pass > 2) {
              passes.template operator()<2>();  // the rest two at a time, then one
            }
            passes.template operator()<1>();
          }
        }
        // Lane l's j-th sum is column (line start) + l * values_per_word + j; its bias sum adds to all of them.
        float* dst = parts > 1 ? partial.data() + part * x.count * n : out;
        for (int64_t r = 0; r < x.count; ++r) {
          for (int64_t line = 0; line < count; ++line) {
            const float* a = acc.data() + r * acc_stride + line * sums * lanes;
            float* o = dst + r * n + (line0 + line) * lanes * values_per_word;
            for (int64_t l = 0; l < lanes; ++l) {
              for (int j = 0; j < values_per_word; ++j) {
                o[l * values_per_word + j] = a[j * lanes + l] + a[values_per_word * lanes + l];
              }
            }
          }
        }
      }
    });
    if (parts > 1) {
      std::copy_n(partial.data(), x.count * n, out);
      for (int64_t part = 1; part < parts; ++part) {
        const float* p = partial.data() + part * x.count * n;
        for (int64_t i = 0; i < x.count * n; ++i) {
          out[i] += p[i];
        }
      }
    }
  }
};

// ---------------------------------------------------------------- decode, w (K, N): any width

template <int Bits>
void decode_plain_generic(const Rows& x, const Matrix& m, int64_t width, float* out) {
  const int64_t n = m.cols;
  const int gs = m.group_size;
  const int64_t tasks = (n + width - 1) / width;
  parallel_for(static_cast<size_t>(tasks), task_grain(x.k * width * Bits / 8), [&](size_t t0, size_t t1) {
    const int64_t ng = width / gs;
    std::vector<float> acc(static_cast<size_t>(x.count * width));
    std::vector<float> bias(static_cast<size_t>(x.count * ng));
    std::vector<float> q(static_cast<size_t>(width));
    std::vector<float> sb(static_cast<size_t>(2 * ng));
    for (auto t = static_cast<int64_t>(t0); t < static_cast<int64_t>(t1); ++t) {
      const int64_t c0 = t * width;
      const int64_t cw = std::min(width, n - c0);
      const int64_t groups = cw / gs;
      std::fill(acc.begin(), acc.end(), 0.F);
      std::fill(bias.begin(), bias.end(), 0.F);
      for (int64_t kk = 0; kk < x.k; ++kk) {
        quant::unpack<Bits>(m.row(kk), c0, cw, q.data());
        m.load(m.scales, kk * m.groups() + c0 / gs, groups, sb.data());
        m.load(m.biases, kk * m.groups() + c0 / gs, groups, sb.data() + groups);
        for (int64_t r = 0; r < x.count; ++r) {
          const float xv = x.x[r * x.k + kk];
          float* a = acc.data() + r * width;
          for (int64_t g = 0; g < groups; ++g) {
            const float coef = xv * sb[g];
            for (int64_t i = g * gs; i < (g + 1) * gs; ++i) {
              a[i] += coef * q[i];
            }
            bias[r * ng + g] += xv * sb[groups + g];
          }
        }
      }
      for (int64_t r = 0; r < x.count; ++r) {
        for (int64_t i = 0; i < cw; ++i) {
          out[r * n + c0 + i] = acc[r * width + i] + bias[r * ng + i / gs];
        }
      }
    }
  });
}

/// Full vectors when a row is a whole number of them, else vectors of one group (rows are whole groups).
template <int Bits, int GroupSize>
void decode_columns(const Rows& x, const Matrix& m, float* out) {
  using Wide = ColumnDecode<Bits, GroupSize, hn::ScalableTag<float>>;
  using Narrow = ColumnDecode<Bits, GroupSize, hn::CappedTag<float, GroupSize * Bits / 32>>;
  if (Wide::fits(m)) {
    Wide::run(x, m, out);
  } else {
    Narrow::run(x, m, out);
  }
}

void decode_plain(const Rows& x, const Matrix& m, float* out) {
  quant::dispatch_bits(m.bits, [&](auto bits_c) {
    constexpr int Bits = decltype(bits_c)::value;
    if constexpr (32 % Bits == 0) {
      switch (m.group_size) {
        case 16:
          return decode_columns<Bits, 16>(x, m, out);
        case 32:
          return decode_columns<Bits, 32>(x, m, out);
        case 64:
          return decode_columns<Bits, 64>(x, m, out);
        case 128:
          return decode_columns<Bits, 128>(x, m, out);
      }
    }
    decode_plain_generic<Bits>(x, m, std::min(m.cols, plain_cols), out);
  });
}

// ---------------------------------------------------------------- many rows: dequantized tiles and the sgemm

/// Dequantizes whole rows r0..r1 of w (N, K), `ld` apart, in the K order of x's rows.
using RowDequantizer = void (*)(const Matrix& m, int64_t r0, int64_t r1, float* out, int64_t ld);

void dequantize_whole_rows(const Matrix& m, int64_t r0, int64_t r1, float* out, int64_t ld) {
  quant::dequantize_rows(m, r0, r1, 0, m.cols, out, ld);
}

void prefill(const Rows& x, const Matrix& m, bool transpose, RowDequantizer rows_of_w, float* out) {
  const int64_t n = transpose ? m.rows : m.cols;
  const int64_t k = x.k;
  const int64_t tile = std::min(n, tile_cols);
  std::vector<float> deq(static_cast<size_t>(tile * k));
  std::vector<float> scratch(tile < n ? static_cast<size_t>(x.count * tile) : 0);
  const MatrixBatch a{x.x, 0, k, 1};
  for (int64_t t0 = 0; t0 < n; t0 += tile) {
    const int64_t count = std::min(tile, n - t0);
    if (transpose) {  // rows t0.. of w become columns of b
      parallel_for(static_cast<size_t>(count), 1, [&](size_t r0, size_t r1) {
        rows_of_w(m, t0 + static_cast<int64_t>(r0), t0 + static_cast<int64_t>(r1),
                  deq.data() + static_cast<int64_t>(r0) * k, k);
      });
    } else {
      parallel_for(static_cast<size_t>(k), 1, [&](size_t r0, size_t r1) {
        quant::dequantize_rows(m, static_cast<int64_t>(r0), static_cast<int64_t>(r1), t0, count,
                               deq.data() + static_cast<int64_t>(r0) * count, count);
      });
    }
    const MatrixBatch b = transpose ? MatrixBatch{deq.data(), 0, 1, k} : MatrixBatch{deq.data(), 0, count, 1};
    float* c = count == n ? out : scratch.data();
    gemm(float32, 1, x.count, count, k, 1.F, a, b, 0.F, c);
    if (c != out) {
      for (int64_t r = 0; r < x.count; ++r) {
        std::copy_n(c + r * count, count, out + r * n + t0);
      }
    }
  }
}

/// NUVEC_QMM_INT8=0 sends decode products to the float path and prefill to the tiles, for comparisons and for
/// testing them on CPUs that have VNNI; read at each product.
bool int8_decode_enabled() {
  const char* value = std::getenv("NUVEC_QMM_INT8");
  return value == nullptr || std::string_view(value) != "0";
}

bool all_finite(const Rows& x) {
  const hn::ScalableTag<float> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t n = x.count * x.k;
  auto finite = hn::IsFinite(hn::Zero(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    finite = hn::And(finite, hn::IsFinite(hn::LoadU(d, x.x + i)));
  }
  bool all = hn::AllTrue(d, finite);
  for (; i < n; ++i) {
    all = all && std::isfinite(x.x[i]);
  }
  return all;
}

/// Rows of x below which the int8 decode kernel (two rows of x a pass, units per row) takes products of w (N, K) that
/// would otherwise go to the prefill paths (gemm_rows and more). Alone, against the prefill kernel's panels (4-bit
/// 8192 x 2048 under "high"), it wins at 40 rows (5.3 against 6.0-9.0 ms) and ties at 64; in a 1B model's batched
/// decode, where the panels' table of scales (blocks::affine_prefill) is rebuilt for the large output layer at every
/// step, it gives 4-bit 64 and 96 sequences 68 and 65 tok/s against 49 and 55 (8-bit 48 and 50 against 42 and 51),
/// while a 512-token prompt keeps the panels (4-bit 128-132 tok/s against 100, 8-bit 122-125 against 79).
constexpr int64_t int8_decode_rows = 128;

/// out (x.count x n, dense) = x @ w.T (transpose) or x @ w; products on int8 levels of x take `levels` of them (fewer
/// for half-precision outputs).
void product(const Rows& x, const Matrix& m, bool transpose, int levels, float* out) {
  const int64_t n = transpose ? m.rows : m.cols;
  if (x.count == 0 || n == 0) {
    return;
  }
  if (x.k == 0) {
    std::fill_n(out, x.count * n, 0.F);
    return;
  }
  // x's levels against the codes (AVX-512 VNNI), where they apply; each path says false where it does not. Their
  // sums of q * x and of x times the bias would turn an infinite x into NaN (inf - inf, 0 * inf) where the product
  // with the dequantized weight gives an infinity, so such x take the float paths.
  const bool int8 = transpose && int8_decode_enabled();
  if (int8 && x.count < int8_decode_rows && all_finite(x) && quant::int8_decode(x.x, x.count, x.k, m, levels, out)) {
    return;
  }
  if (int8 && x.count >= int8_decode_rows && blocks::affine_prefill(x.x, x.count, m, levels, out)) {
    return;
  }
  if (x.count >= gemm_rows && transpose && 32 % m.bits == 0) {
    quant::dispatch_bits(m.bits, [&](auto bits_c) {
      constexpr int Bits = decltype(bits_c)::value;
      if constexpr (32 % Bits == 0) {
        auto simd = [&]<int GroupSize>() {
          using S = SimdDecode<Bits, GroupSize>;
          const auto xp = S::reorder(x);
          prefill(Rows{xp.data(), x.count, x.k}, m, true, &S::dequantize_reordered, out);
        };
        switch (m.group_size) {
          case 16:
            return simd.template operator()<16>();
          case 32:
            return simd.template operator()<32>();
          case 64:
            return simd.template operator()<64>();
          case 128:
            return simd.template operator()<128>();
        }
      }
    });
  } else if (x.count >= gemm_rows || !all_finite(x)) {
    prefill(x, m, transpose, &dequantize_whole_rows, out);
  } else if (transpose) {
    decode_transposed(x, m, out);
  } else {
    decode_plain(x, m, out);
  }
}

/// x as dense float32: its own buffer when it already is, else a converted copy held in `storage`.
const float* float_rows(const array& x, std::vector<float>& storage) {
  if (x.dtype() == float32 && x.flags().row_contiguous) {
    return quant::data_of<const float>(x);
  }
  storage.resize(x.size());
  copy_strided(x, storage.data(), row_major_strides(x.shape()), float32);
  return storage.data();
}

/// int8 levels of x for decode products. Three keep float32 accuracy (a few 1e-6 of the largest output at worst, with
/// outliers in x; qmm_int8.cpp); two leave up to ~6e-4 with a 30x outlier, below bfloat16's rounding but not
/// float16's, and are what float32_matmul_precision() "high" allows.
int decode_levels(Dtype out) {
  return out == bfloat16 || float32_matmul_precision() != MatmulPrecision::highest ? 2 : 3;
}

/// Levels of x for the block formats, whose units are per 32 values: "medium" takes one, x rounded to 8 bits per 32
/// values as llama.cpp's q8_0 activations are (qmm_blocks.cpp), where the affine decode's units per row keep two.
int block_levels(Dtype out) { return float32_matmul_precision() == MatmulPrecision::medium ? 1 : decode_levels(out); }

/// Runs `body(float* out)` into o's buffer (for kernel `op`), through a float32 scratch when o is half precision or
/// float64.
template <class Body>
void into_output(array& o, const char* op, Body&& body) {
  o.set_data(allocator::malloc(o.nbytes()));
  if (o.size() == 0) {
    return;
  }
  dispatch<floating_types>(o.dtype(), op, [&]<class T>(type_tag<T>) {
    if constexpr (std::is_same_v<T, float>) {
      body(quant::data_of<float>(o), &quant::to_float<T>);
    } else {
      std::vector<float> tmp(o.size());
      body(tmp.data(), &quant::to_float<T>);
      T* dst = quant::data_of<T>(o);
      for (size_t i = 0; i < tmp.size(); ++i) {
        dst[i] = static_cast<T>(tmp[i]);
      }
    }
  });
}

}  // namespace

void run(const QuantizedMatmul& p, const Inputs& in, Outputs& out) {
  auto& o = out[0];
  if (is_block_format(p.mode)) {
    const array w = quant::dense(in[1]);
    into_output(o, "QuantizedMatmul", [&](float* dst, quant::ToFloat) {
      std::vector<float> storage;
      const int64_t n = o.shape(-1);
      const int64_t rows = n == 0 ? 0 : static_cast<int64_t>(o.size()) / n;
      blocks::product(p.mode, float_rows(in[0], storage), rows, in[0].shape(-1), quant::data_of<const uint8_t>(w), n,
                      block_levels(o.dtype()), dst);
    });
    return;
  }
  if (is_microscaled(p.mode)) {
    const array w = quant::dense(in[1]);
    const array scales = quant::dense(in[2]);
    into_output(o, "QuantizedMatmul", [&](float* dst, quant::ToFloat) {
      std::vector<float> storage;
      const int64_t n = o.shape(-1);
      const int64_t k = in[0].shape(-1);
      const quant::ScaledMatrix m{quant::data_of<const uint32_t>(w),
                                  quant::data_of<const uint8_t>(scales),
                                  w.shape(-2),
                                  p.transpose ? k : n,
                                  p.mode,
                                  1.F};
      quant::scaled_product(float_rows(in[0], storage), static_cast<int64_t>(o.size()) / n, k, m, p.transpose, dst);
    });
    return;
  }
  const array w = quant::dense(in[1]);
  const array scales = quant::dense(in[2]);
  const array biases = quant::dense(in[3]);
  into_output(o, "QuantizedMatmul", [&](float* dst, quant::ToFloat load) {
    std::vector<float> storage;
    const int64_t n = o.shape(-1);
    const Rows x{float_rows(in[0], storage), static_cast<int64_t>(o.size()) / n, in[0].shape(-1)};
    const Matrix m{quant::data_of<const uint32_t>(w),
                   scales.raw_data(),
                   biases.raw_data(),
                   w.shape(-2),
                   p.transpose ? x.k : n,
                   p.bits,
                   p.group_size,
                   load,
                   static_cast<int>(scales.itemsize())};
    product(x, m, p.transpose, decode_levels(o.dtype()), dst);
  });
}

void run(const GatherQMM& p, const Inputs& in, Outputs& out) {
  auto& o = out[0];
  const array& x_in = in[0];
  const bool microscaled = is_microscaled(p.mode);
  const array w = quant::dense(in[1]);
  const array scales = quant::dense(in[2]);
  const array biases = microscaled ? scales : quant::dense(in[3]);  // microscaled modes have none
  const array lhs = quant::dense(in[in.size() - 2]);
  const array rhs = quant::dense(in.back());
  const int64_t m_rows = x_in.shape(-2);
  const int64_t k = x_in.shape(-1);
  const int64_t n = o.shape(-1);
  const int64_t x_count = m_rows * k == 0 ? 0 : static_cast<int64_t>(x_in.size()) / (m_rows * k);
  const int64_t w_rows = w.shape(-2);
  const int64_t w_words = w_rows * w.shape(-1);
  const int64_t w_count = w_words == 0 ? 0 : static_cast<int64_t>(w.size()) / w_words;
  const int64_t s_per = w_rows * scales.shape(-1);
  const auto* li = quant::data_of<const uint32_t>(lhs);
  const auto* ri = quant::data_of<const uint32_t>(rhs);
  const auto pairs = static_cast<int64_t>(lhs.size());
  for (int64_t i = 0; i < pairs; ++i) {
    if (li[i] >= x_count || ri[i] >= w_count) {
      throw_invalid("[gather_qmm] Index out of range: lhs_indices " + std::to_string(li[i]) + " for " +
                    std::to_string(x_count) + " matrices of x, rhs_indices " + std::to_string(ri[i]) + " for " +
                    std::to_string(w_count) + " matrices of w.");
    }
  }
  into_output(o, "GatherQMM", [&](float* dst, quant::ToFloat load) {
    std::vector<float> storage;
    const float* xf = float_rows(x_in, storage);
    const auto item = static_cast<int64_t>(scales.itemsize());
    const int64_t block = m_rows * k;
    std::vector<float> gathered;
    // Consecutive pairs on one expert share a single pass over its weights (MoE tokens routed to the same expert).
    for (int64_t i = 0; i < pairs;) {
      int64_t j = i + 1;
      while (j < pairs && ri[j] == ri[i]) {
        ++j;
      }
      const float* rows = xf + li[i] * block;
      if (j - i > 1) {
        gathered.resize(static_cast<size_t>((j - i) * block));
        for (int64_t t = i; t < j; ++t) {
          std::copy_n(xf + li[t] * block, block, gathered.data() + (t - i) * block);
        }
        rows = gathered.data();
      }
      const int64_t e = ri[i];
      if (microscaled) {
        const quant::ScaledMatrix m{quant::data_of<const uint32_t>(w) + e * w_words,
                                    quant::data_of<const uint8_t>(scales) + e * s_per,
                                    w_rows,
                                    p.transpose ? k : n,
                                    p.mode,
                                    1.F};
        quant::scaled_product(rows, (j - i) * m_rows, k, m, p.transpose, dst + i * m_rows * n);
        i = j;
        continue;
      }
      const Matrix m{quant::data_of<const uint32_t>(w) + e * w_words,
                     static_cast<const char*>(scales.raw_data()) + e * s_per * item,
                     static_cast<const char*>(biases.raw_data()) + e * s_per * item,
                     w_rows,
                     p.transpose ? k : n,
                     p.bits,
                     p.group_size,
                     load,
                     static_cast<int>(item)};
      product(Rows{rows, (j - i) * m_rows, k}, m, p.transpose, decode_levels(o.dtype()), dst + i * m_rows * n);
      i = j;
    }
  });
}

}  // namespace nuvec::cpu
