// Decode-shaped quantized products (a few rows of x times w (N, K)) on integer dot products.
//
// The float path spends four vector instructions on every 16 codes (shift, mask, convert, multiply-add) and is
// compute-bound. Here x is written as a sum of int8 levels, x ~ unit_0 * x_0 + unit_1 * x_1 + unit_2 * x_2 with
// unit_{l+1} = unit_l / 254 and every x_l in [-127, 127], and each level meets the unpacked codes in AVX-512 VNNI's
// vpdpbusd (64 unsigned codes times 64 signed bytes, summed by fours into 16 int32 lanes). Three levels leave an
// error of at most unit_0 / 2 / 254^2, a sixteen-millionth of the row's largest |x|, so the result keeps float32
// accuracy (~1e-6 of the largest output, with outliers in x too); one level, as llama.cpp's int8 activations, would
// give 3e-2 here and 0.14 with 30x outliers, two levels 6e-4, which bfloat16 outputs take (below their rounding).
// Per group, sum(q * x) * scale + sum(x) * bias as in the float path; the integer sums are converted and scaled once
// per group (per 64 bytes when groups are shorter). x must be finite (the caller sends other x elsewhere).
//
// A 64-byte chunk of a packed row holds 512 / Bits codes; lane l of a vector is the chunk's packed word l, so the
// group of lane l is (chunk's first word + l) / words_per_group. x is laid out to match the unpacked codes: code
// position j of byte b of chunk c is value c * 512 / Bits + b * (8 / Bits) + j. Each task walks blocks of adjacent
// rows and prefetches the rows, scales and biases of blocks 16 KiB ahead (measured best of 4, 8 and 16 KiB), so that
// decode runs nearer the memory's read bandwidth when w is not cached.

#include "nuvec/cpu/quantized.h"

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "nuvec/cpu/highway.h"
#include "nuvec/cpu/row_sum.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu::quant {

namespace {

constexpr int64_t chunk_bytes = 64;
constexpr int lanes = 16;
constexpr int columns = 2;  // packed rows streamed together: shared x loads, independent chains
constexpr int64_t bytes_per_task = 1 << 16;
constexpr int64_t prefetch_blocks = 4;  // ask for the packed rows, scales and biases of blocks this far ahead
constexpr float level_ratio = 254.F;

/// The rows of x as int8 levels in the chunk layout of Bits-wide codes.
///
/// A row is first scaled by a power of two that brings its largest |x| into [0.5, 1) (exact, and the units stay
/// normal floats; rows whose largest |x| is beyond 2^+-126 land just outside). Each level is then round(rest / unit)
/// and the rest becomes rest - level * unit in one fused multiply-add, which is exact: the difference is at most unit /
/// 2 and a multiple of the smaller ulp.
template <int Bits, int Levels>
struct LevelRows {
  static constexpr int codes_per_byte = 8 / Bits;
  static constexpr int64_t chunk_values = chunk_bytes * codes_per_byte;
  static constexpr int64_t chunk_stride = chunk_bytes * codes_per_byte * Levels;  // x bytes per chunk

  hwy::AlignedFreeUniquePtr<int8_t[]> bytes;  // per row, per chunk: [code position][level][64]; aligned, as
                                              // loads that straddle cache lines would halve the kernel's speed
  std::vector<double> units;                  // per row: unit_0 .. unit_{Levels-1}, in x's own scale
  int64_t chunks = 0;

  /// x must be finite.
  void build(const float* x, int64_t rows, int64_t k) {
    const hn::ScalableTag<float> df;
    const hn::RebindToSigned<decltype(df)> di;
    const hn::Rebind<int8_t, decltype(df)> d8;
    const auto n = static_cast<int64_t>(hn::Lanes(df));
    chunks = (k + chunk_values - 1) / chunk_values;
    const auto size = static_cast<size_t>(rows * chunks * chunk_stride);
    bytes = hwy::AllocateAligned<int8_t>(size);
    std::fill_n(bytes.get(), size, int8_t{0});
    units.assign(static_cast<size_t>(rows * Levels), 0.0);
    const int64_t padded = chunks * chunk_values;
    std::vector<int8_t> level(static_cast<size_t>(Levels * padded), 0);  // one row, level by level in x's order
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * k;
      auto largest_v = hn::Zero(df);
      int64_t i = 0;
      for (; i + n <= k; i += n) {
        largest_v = hn::Max(largest_v, hn::Abs(hn::LoadU(df, xr + i)));
      }
      float largest = hn::GetLane(hn::MaxOfLanes(df, largest_v));
      for (; i < k; ++i) {
        largest = std::max(largest, std::abs(xr[i]));
      }
      if (largest == 0.F) {
        continue;
      }
      int exponent = 0;
      std::frexp(largest, &exponent);
      exponent = std::clamp(exponent, -126, 126);  // the scale itself must be a normal float
      const float scale = std::ldexp(1.F, -exponent);
      float unit[Levels];
      unit[0] = largest * scale / 127.F;
      for (int l = 1; l < Levels; ++l) {
        unit[l] = unit[l - 1] / level_ratio;
      }
      for (int l = 0; l < Levels; ++l) {
        units[r * Levels + l] = std::ldexp(static_cast<double>(unit[l]), exponent);
      }
      auto split = [&](auto rest, auto round, auto store) {
        for (int l = 0; l < Levels; ++l) {
          const auto lev = round(rest, unit[l]);
          rest = store(l, lev, unit[l], rest);
        }
      };
      i = 0;
      for (; i + n <= k; i += n) {
        split(
            hn::Mul(hn::LoadU(df, xr + i), hn::Set(df, scale)),
            [&](auto rest, float u) {
              return hn::Min(hn::Max(hn::Round(hn::Mul(rest, hn::Set(df, 1.F / u))), hn::Set(df, -127.F)),
                             hn::Set(df, 127.F));
            },
            [&](int l, auto lev, float u, auto rest) {
              hn::StoreU(hn::DemoteTo(d8, hn::ConvertTo(di, lev)), d8, level.data() + l * padded + i);
              return hn::NegMulAdd(lev, hn::Set(df, u), rest);
            });
      }
      for (; i < k; ++i) {
        split(
            xr[i] * scale,
            [](float rest, float u) { return std::clamp(std::nearbyint(rest * (1.F / u)), -127.F, 127.F); },
            [&](int l, float lev, float u, float rest) {
              level[l * padded + i] = static_cast<int8_t>(lev);
              return std::fma(-lev, u, rest);
            });
      }
      // Code position j of byte b takes value b * codes_per_byte + j of the chunk: a de-interleave per chunk.
      const hn::Full512<uint8_t> db;
      auto* dst = reinterpret_cast<uint8_t*>(bytes.get() + r * chunks * chunk_stride);
      for (int l = 0; l < Levels; ++l) {
        for (int64_t c = 0; c < chunks; ++c) {
          const auto* src = reinterpret_cast<const uint8_t*>(level.data() + l * padded + c * chunk_values);
          uint8_t* out = dst + c * chunk_stride + l * chunk_bytes;
          constexpr int64_t position = Levels * chunk_bytes;  // from one code position to the next
          if constexpr (codes_per_byte == 1) {
            hn::StoreU(hn::LoadU(db, src), db, out);
          } else if constexpr (codes_per_byte == 2) {
            hn::Vec<decltype(db)> v0, v1;
            hn::LoadInterleaved2(db, src, v0, v1);
            hn::StoreU(v0, db, out);
            hn::StoreU(v1, db, out + position);
          } else {
            hn::Vec<decltype(db)> v0, v1, v2, v3;
            hn::LoadInterleaved4(db, src, v0, v1, v2, v3);
            hn::StoreU(v0, db, out);
            hn::StoreU(v1, db, out + position);
            hn::StoreU(v2, db, out + 2 * position);
            hn::StoreU(v3, db, out + 3 * position);
          }
        }
      }
    }
  }
};

template <int Bits, int GroupSize, int Levels>
struct Int8Decode {
  static constexpr int words_per_group = GroupSize * Bits / 32;
  static constexpr int span = std::max(1, words_per_group / lanes);  // chunks summed before one conversion
  static constexpr int codes_per_byte = 8 / Bits;
  using Rows = LevelRows<Bits, Levels>;

  using DF = hn::Full512<float>;
  using DI = hn::Full512<int32_t>;
  using DB = hn::Full512<uint8_t>;
  using VF = hn::Vec<DF>;
  using VI = hn::Vec<DI>;
  using VB = hn::Vec<DB>;

  /// acc += the sums by fours of unsigned codes q times signed bytes x (AVX-512 VNNI; Highway 1.0 lacks it).
  static VI dot_bytes(VI acc, VB q, VB x) { return VI{_mm512_dpbusd_epi32(acc.raw, q.raw, x.raw)}; }

  /// Lane l's scale in the span starting at chunk c: one group for the whole vector, or a group per words_per_group
  /// lanes. sb is padded so that a whole vector can be read past the row's last group.
  static VF lane_scales(const float* sb, int64_t c) {
    const DF df;
    if constexpr (words_per_group >= lanes) {
      return hn::Set(df, sb[c * lanes / words_per_group]);
    } else {
      alignas(64) static constexpr int32_t lane_group[lanes] = {
          0 / words_per_group,  1 / words_per_group,  2 / words_per_group,  3 / words_per_group,
          4 / words_per_group,  5 / words_per_group,  6 / words_per_group,  7 / words_per_group,
          8 / words_per_group,  9 / words_per_group,  10 / words_per_group, 11 / words_per_group,
          12 / words_per_group, 13 / words_per_group, 14 / words_per_group, 15 / words_per_group};
      return hn::TableLookupLanes(hn::LoadU(df, sb + c * lanes / words_per_group), hn::SetTableIndices(df, lane_group));
    }
  }

  /// sums[c][l] = the sum over the row of q * x_l, each group's integer sum scaled by the group's scale, for
  /// `columns` packed rows w[c] (row_bytes each) and one x row.
  static void block(const int8_t* xq, int64_t chunks, int64_t row_bytes, const uint8_t* const* w,
                    const float* const* sb, float (&sums)[columns][Levels]) {
    const DF df;
    const DI di;
    const DB db;
    const VB code_mask = hn::Set(db, static_cast<uint8_t>((1 << Bits) - 1));
    const hn::Full512<uint16_t> dw;
    VF scaled[columns][Levels];
    for (int c = 0; c < columns; ++c) {
      for (int l = 0; l < Levels; ++l) {
        scaled[c][l] = hn::Zero(df);
      }
    }
    VI acc[columns][Levels];
    // Adds chunk ch of every row into acc; the last chunk of a row may be partial.
    auto add_chunk = [&](int64_t ch, auto load) {
      VB packed[columns];
      for (int c = 0; c < columns; ++c) {
        packed[c] = load(w[c] + ch * chunk_bytes);
        __builtin_prefetch(w[c] + ch * chunk_bytes + prefetch_blocks * columns * row_bytes);
      }
      const auto* xc = reinterpret_cast<const uint8_t*>(xq + ch * Rows::chunk_stride);
      for (int j = 0; j < codes_per_byte; ++j) {
        VB xv[Levels];
        for (int l = 0; l < Levels; ++l) {
          xv[l] = hn::LoadU(db, xc + (j * Levels + l) * chunk_bytes);
        }
        for (int c = 0; c < columns; ++c) {
          // Shifting 16-bit lanes moves bits across bytes; the mask keeps each byte's own code.
          const VB q =
              Bits == 8 ? packed[c]
                        : hn::And(hn::BitCast(db, hn::ShiftRightSame(hn::BitCast(dw, packed[c]), j * Bits)), code_mask);
          for (int l = 0; l < Levels; ++l) {
            acc[c][l] = dot_bytes(acc[c][l], q, xv[l]);
          }
        }
      }
    };
    // Converts and scales the integer sums of the span of chunks from c0.
    auto scale_span = [&](int64_t c0) {
      for (int c = 0; c < columns; ++c) {
        const VF scale = lane_scales(sb[c], c0);
        for (int l = 0; l < Levels; ++l) {
          scaled[c][l] = hn::MulAdd(hn::ConvertTo(df, acc[c][l]), scale, scaled[c][l]);
          acc[c][l] = hn::Zero(di);
        }
      }
    };
    for (auto& a : acc) {
      for (auto& v : a) {
        v = hn::Zero(di);
      }
    }
    const int64_t full = row_bytes / chunk_bytes;  // a multiple of span (rows are whole groups)
    const auto whole = [&](const uint8_t* p) { return hn::LoadU(db, p); };
    for (int64_t c0 = 0; c0 < full; c0 += span) {
      for (int s = 0; s < span; ++s) {
        add_chunk(c0 + s, whole);
      }
      scale_span(c0);
    }
    if (full < chunks) {  // a partial last chunk: span is 1 then
      const auto valid = hn::FirstN(db, static_cast<size_t>(row_bytes - full * chunk_bytes));
      add_chunk(full, [&](const uint8_t* p) { return hn::MaskedLoad(valid, db, p); });
      scale_span(full);
    }
    for (int c = 0; c < columns; ++c) {
      for (int l = 0; l < Levels; ++l) {
        sums[c][l] = hn::GetLane(hn::SumOfLanes(df, scaled[c][l]));
      }
    }
  }

  static bool run(const float* x, int64_t rows, int64_t k, const Matrix& m, float* out) {
    Rows levels;
    levels.build(x, rows, k);
    const int64_t n = m.rows;
    const int64_t groups = m.groups();
    const int64_t row_bytes = m.words() * 4;
    const auto xsum = group_sums(x, rows, k, GroupSize);
    const int64_t sb_stride = 2 * groups + lanes;  // scales, padding for a whole vector, then biases
    const int64_t blocks = (n + columns - 1) / columns;
    const auto grain = static_cast<size_t>(std::max<int64_t>(1, bytes_per_task / (columns * row_bytes)));
    parallel_for(static_cast<size_t>(blocks), grain, [&](size_t b0, size_t b1) {
      std::vector<float> sb(static_cast<size_t>(columns * sb_stride), 0.F);
      for (auto b = static_cast<int64_t>(b0); b < static_cast<int64_t>(b1); ++b) {
        const uint8_t* w[columns];
        const float* scales[columns];
        for (int c = 0; c < columns; ++c) {
          const int64_t col = std::min(b * columns + c, n - 1);  // the last block repeats its last row
          w[c] = reinterpret_cast<const uint8_t*>(m.row(col));
          float* s = sb.data() + c * sb_stride;
          m.load(m.scales, col * groups, groups, s);
          m.load(m.biases, col * groups, groups, s + groups + lanes);
          scales[c] = s;
          const int64_t ahead = std::min(col + prefetch_blocks * columns, n - 1);
          for (int64_t byte = 0; byte < groups * m.item; byte += 64) {
            __builtin_prefetch(m.scale_row(m.scales, ahead) + byte);
            __builtin_prefetch(m.scale_row(m.biases, ahead) + byte);
          }
        }
        const int64_t valid = std::min<int64_t>(columns, n - b * columns);
        for (int64_t r = 0; r < rows; ++r) {
          float sums[columns][Levels];
          block(levels.bytes.get() + r * levels.chunks * Rows::chunk_stride, levels.chunks, row_bytes, w, scales, sums);
          const double* unit = levels.units.data() + r * Levels;
          for (int64_t c = 0; c < valid; ++c) {
            const float* bias = scales[c] + groups + lanes;
            double total = dot(bias, xsum.data() + r * groups, groups);
            for (int l = Levels - 1; l >= 0; --l) {
              total += unit[l] * sums[c][l];
            }
            out[r * n + b * columns + c] = static_cast<float>(total);
          }
        }
      }
    });
    return true;
  }
};

template <int Bits, int Levels>
bool dispatch_group(const float* x, int64_t rows, int64_t k, const Matrix& m, float* out) {
  switch (m.group_size) {
    case 32:
      return Int8Decode<Bits, 32, Levels>::run(x, rows, k, m, out);
    case 64:
      return Int8Decode<Bits, 64, Levels>::run(x, rows, k, m, out);
    case 128:
      return Int8Decode<Bits, 128, Levels>::run(x, rows, k, m, out);
  }
  return false;
}

template <int Levels>
bool dispatch_width(const float* x, int64_t rows, int64_t k, const Matrix& m, float* out) {
  switch (m.bits) {
    case 2:
      return dispatch_group<2, Levels>(x, rows, k, m, out);
    case 4:
      return dispatch_group<4, Levels>(x, rows, k, m, out);
    case 8:
      return dispatch_group<8, Levels>(x, rows, k, m, out);
  }
  return false;
}

}  // namespace

bool int8_decode(const float* x, int64_t rows, int64_t k, const Matrix& m, int levels, float* out) {
  switch (levels) {
    case 2:
      return dispatch_width<2>(x, rows, k, m, out);
    case 3:
      return dispatch_width<3>(x, rows, k, m, out);
  }
  return false;
}

}  // namespace nuvec::cpu::quant

#else

namespace nuvec::cpu::quant {

bool int8_decode(const float*, int64_t, int64_t, const Matrix&, int, float*) { return false; }

}  // namespace nuvec::cpu::quant

#endif
