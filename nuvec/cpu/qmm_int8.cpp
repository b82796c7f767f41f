// Decode-shaped quantized products (a few rows of x times w (N, K)) on integer dot products.
//
// The float path spends four vector instructions on every 16 codes (shift, mask, convert, multiply-add) and is
// compute-bound. Here x is written as a sum of 8-bit levels, x ~ unit_0 * x_0 + unit_1 * x_1 + unit_2 * x_2 (the
// units exact multiples of one another), and each level meets the unpacked codes in AVX-512 VNNI's vpdpbusd (64
// unsigned times 64 signed bytes, summed by fours into 16 int32 lanes). For 2- and 4-bit codes the units are 2^8
// apart, x_0 signed and x_1, x_2 unsigned (LevelRows): x_0 meets the codes as unsigned bytes, the further levels meet
// them as signed bytes, and a lane's sums chain through one int32 (shifted by 8 bits before each further level), so
// each lane is converted and scaled once; three levels leave an error of at most unit_0 / 2^16, an eight-millionth of
// the row's largest |x|. 8-bit codes keep levels in [-127, 127] 254 apart, their sums combined in float (unit_0 / 2 /
// 254^2). Either keeps float32 accuracy: errors of a few 1e-7 of the largest output for normal x (the float path:
// 6e-7), 1e-6 to 4e-6 with 30x and 1000x outliers in x (float path: 1e-6), over 4096x4096 products. One level, as
// llama.cpp's int8 activations, would give 3e-2 and 0.14 there, two levels 6e-4, which bfloat16 outputs take (below
// their rounding). Per group, sum(q * x) * scale + sum(x) * bias as in the float path. Two rows of x share each
// unpacked vector of codes. x must be finite (the caller sends other x elsewhere).
//
// A 64-byte chunk of a packed row holds 512 / Bits codes; lane l of a vector is the chunk's packed word l, so the
// group of lane l is (chunk's first word + l) / words_per_group. x is laid out to match the unpacked codes: code
// position j of byte b of chunk c is value c * 512 / Bits + b * (8 / Bits) + j. Each task walks blocks of adjacent
// rows and prefetches the rows, scales and biases of blocks 16 KiB ahead into L2, one line per line it reads: into
// L1 the lines were evicted before use (x's levels and the codes in flight fill it) and decode waited on memory at
// 1.6-1.8x the read floor; into L2 it streams at 1.05-1.2x.

#include "nuvec/cpu/quantized.h"

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)

#include <immintrin.h>

#include <algorithm>
#include <array>
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

/// The rows of x as 8-bit levels in the chunk layout of Bits-wide codes.
///
/// A row is first scaled by a power of two that brings its largest |x| into [0.5, 1) (exact, and the units stay
/// normal floats). Each level is then rounded from rest / unit and the rest becomes rest - level * unit in one fused
/// multiply-add, which is exact: the difference is below the unit and a multiple of the smaller ulp.
///
/// Codes narrower than 8 bits (`integer_levels`): the units are 2^8 apart, the first level signed and rounded down,
/// the others unsigned (0 to 255; the rest rounded down, the last level to nearest), so that the further levels meet
/// the codes as signed bytes and the levels' integer sums combine exactly in 32 bits (a shift before each further
/// level). 8-bit codes, which are no signed bytes, keep signed levels in [-127, 127] with units 254 apart, combined in
/// float.
template <int Bits, int Levels>
struct LevelRows {
  static constexpr bool integer_levels = Bits < 8;
  static constexpr float level_ratio = integer_levels ? 256.F : 254.F;
  static constexpr int codes_per_byte = 8 / Bits;
  static constexpr int64_t chunk_values = chunk_bytes * codes_per_byte;
  static constexpr int64_t chunk_stride = chunk_bytes * codes_per_byte * Levels;  // x bytes per chunk

  hwy::AlignedFreeUniquePtr<int8_t[]> bytes;  // per row, per chunk: [code position][level][64]; aligned, as
                                              // loads that straddle cache lines would halve the kernel's speed
  std::vector<double> units;                  // per row: the last level's unit, in x's own scale
  int64_t chunks = 0;

  /// x must be finite. False where a row's largest |x| is beyond 2^+-126 (the float path takes those).
  bool build(const float* x, int64_t rows, int64_t k) {
    const hn::ScalableTag<float> df;
    const hn::RebindToSigned<decltype(df)> di;
    const hn::Rebind<int8_t, decltype(df)> d8;
    const hn::Rebind<uint8_t, decltype(df)> du8;
    const auto n = static_cast<int64_t>(hn::Lanes(df));
    chunks = (k + chunk_values - 1) / chunk_values;
    const auto size = static_cast<size_t>(rows * chunks * chunk_stride);
    bytes = hwy::AllocateAligned<int8_t>(size);
    std::fill_n(bytes.get(), size, int8_t{0});
    units.assign(static_cast<size_t>(rows), 0.0);
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
      if (exponent < -126 || exponent > 126) {  // the scale must be a normal float
        return false;
      }
      const float scale = std::ldexp(1.F, -exponent);
      float unit[Levels];
      if constexpr (integer_levels) {
        unit[0] = largest * scale / 127.F;  // powers of two apart: every unit exact
        for (int l = 1; l < Levels; ++l) {
          unit[l] = unit[l - 1] / level_ratio;
        }
      } else {
        unit[Levels - 1] = last_unit(largest * scale);
        for (int l = Levels - 2; l >= 0; --l) {
          unit[l] = unit[l + 1] * level_ratio;
        }
      }
      units[static_cast<size_t>(r)] = std::ldexp(static_cast<double>(unit[Levels - 1]), exponent);
      // Level l's least and greatest values, and whether it rounds down.
      auto least = [](int l) { return integer_levels ? (l == 0 ? -128.F : 0.F) : -127.F; };
      auto greatest = [](int l) { return integer_levels && l > 0 ? 255.F : 127.F; };
      auto down = [](int l) { return integer_levels && l + 1 < Levels; };
      auto split = [&](auto rest, auto round, auto store) {
        for (int l = 0; l < Levels; ++l) {
          const auto lev = round(l, rest, unit[l]);
          rest = store(l, lev, unit[l], rest);
        }
      };
      i = 0;
      for (; i + n <= k; i += n) {
        split(
            hn::Mul(hn::LoadU(df, xr + i), hn::Set(df, scale)),
            [&](int l, auto rest, float u) {
              const auto scaled = hn::Mul(rest, hn::Set(df, 1.F / u));
              return hn::Min(hn::Max(down(l) ? hn::Floor(scaled) : hn::Round(scaled), hn::Set(df, least(l))),
                             hn::Set(df, greatest(l)));
            },
            [&](int l, auto lev, float u, auto rest) {
              int8_t* to = level.data() + l * padded + i;
              if (least(l) < 0.F) {
                hn::StoreU(hn::DemoteTo(d8, hn::ConvertTo(di, lev)), d8, to);
              } else {
                hn::StoreU(hn::DemoteTo(du8, hn::ConvertTo(di, lev)), du8, reinterpret_cast<uint8_t*>(to));
              }
              return hn::NegMulAdd(lev, hn::Set(df, u), rest);
            });
      }
      for (; i < k; ++i) {
        split(
            xr[i] * scale,
            [&](int l, float rest, float u) {
              const float scaled = rest * (1.F / u);
              return std::clamp(down(l) ? std::floor(scaled) : std::nearbyint(scaled), least(l), greatest(l));
            },
            [&](int l, float lev, float u, float rest) {
              level[l * padded + i] = static_cast<int8_t>(static_cast<uint8_t>(static_cast<int>(lev) & 0xFF));
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
    return true;
  }

  /// The last level's unit for a row whose largest |x| is `largest`: largest / (127 * 254^(Levels - 1)) rounded up
  /// to 10 significant bits, so that the units (it times 254^l, whose 254^2 has 14 significant bits) are exact
  /// multiples of one another and the integer sums of all levels combine into one value, while level 0 still
  /// spans its range.
  static float last_unit(float largest) {
    float reach = 127.F;
    for (int l = 1; l < Levels; ++l) {
      reach *= level_ratio;
    }
    int exponent = 0;
    const float mantissa = std::frexp(largest / reach, &exponent);
    return std::ldexp(std::ceil(std::ldexp(mantissa, 10)), exponent - 10);
  }
};

template <int Bits, int GroupSize, int Levels>
struct Int8Decode {
  static constexpr int words_per_group = GroupSize * Bits / 32;
  static constexpr int span = std::max(1, words_per_group / lanes);  // chunks summed before one conversion
  using Rows = LevelRows<Bits, Levels>;
  static constexpr int codes_per_byte = Rows::codes_per_byte;

  using DF = hn::Full512<float>;
  using DI = hn::Full512<int32_t>;
  using DB = hn::Full512<uint8_t>;
  using VF = hn::Vec<DF>;
  using VI = hn::Vec<DI>;
  using VB = hn::Vec<DB>;

  /// acc += the sums by fours of unsigned bytes a times signed bytes b (AVX-512 VNNI; Highway 1.0 lacks it).
  static VI dot_bytes(VI acc, VB a, VB b) { return VI{_mm512_dpbusd_epi32(acc.raw, a.raw, b.raw)}; }

  /// Lane l's scale in the span starting at chunk c: one group for the whole vector, or a group per words_per_group
  /// lanes. sb is padded so that a whole vector can be read past the row's last group.
  static VF lane_scales(const float* sb, int64_t c) {
    const DF df;
    if constexpr (words_per_group >= lanes) {
      return hn::Set(df, sb[c * lanes / words_per_group]);
    } else {
      alignas(64) static constexpr auto lane_group = [] {
        std::array<int32_t, lanes> group{};
        for (int l = 0; l < lanes; ++l) {
          group[static_cast<size_t>(l)] = l / words_per_group;
        }
        return group;
      }();
      return hn::TableLookupLanes(hn::LoadU(df, sb + c * lanes / words_per_group),
                                  hn::SetTableIndices(df, lane_group.data()));
    }
  }

  /// sums[r][c] = the sum over the row of q * (ratio^(Levels-1) x_0 + ... + x_{Levels-1}), each group's sum scaled
  /// by the group's scale, for `columns` packed rows w[c] (row_bytes each) and R rows of x (xq[r]).
  template <int R>
  static void block(const int8_t* const* xq, int64_t chunks, int64_t row_bytes, const uint8_t* const* w,
                    const float* const* sb, float (&sums)[R][columns]) {
    const DF df;
    VF scaled[R][columns];
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < columns; ++c) {
        scaled[r][c] = hn::Zero(df);
      }
    }
    if constexpr (Rows::integer_levels) {
      add_integer_levels<R>(xq, chunks, row_bytes, w, sb, scaled);
    } else {
      add_float_levels<R>(xq, chunks, row_bytes, w, sb, scaled);
    }
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < columns; ++c) {
        sums[r][c] = hn::GetLane(hn::SumOfLanes(df, scaled[r][c]));
      }
    }
  }

  /// The packed chunk ch of the row w (a masked load for a last partial chunk), prefetching the rows of blocks ahead.
  static VB load_chunk(const uint8_t* w, int64_t ch, int64_t row_bytes) {
    const DB db;
    const int64_t full = row_bytes / chunk_bytes;
    const uint8_t* p = w + ch * chunk_bytes;
    __builtin_prefetch(p + prefetch_blocks * columns * row_bytes, 0, 2);
    return ch < full ? hn::LoadU(db, p)
                     : hn::MaskedLoad(hn::FirstN(db, static_cast<size_t>(row_bytes - full * chunk_bytes)), db, p);
  }

  /// Code position j of every byte of a packed chunk.
  static VB codes_at(VB packed, int j) {
    const DB db;
    const hn::Full512<uint16_t> dw;
    if constexpr (Bits == 8) {
      return packed;
    } else {
      // Shifting 16-bit lanes moves bits across bytes; the mask keeps each byte's own code.
      return hn::And(hn::BitCast(db, hn::ShiftRightSame(hn::BitCast(dw, packed), j * Bits)),
                     hn::Set(db, static_cast<uint8_t>((1 << Bits) - 1)));
    }
  }

  /// scaled += block's lanes for integer levels: per chunk (a group or less: span 1), the levels' sums chain through
  /// one int32 lane each (x_0 against the unsigned codes, then a shift by 8 bits before each further level, which
  /// meets the codes as signed bytes), converted and scaled once. A lane sums at most 4 * codes_per_byte products per
  /// level: below 2^31 combined for 2- and 4-bit codes.
  template <int R>
  static void add_integer_levels(const int8_t* const* xq, int64_t chunks, int64_t row_bytes, const uint8_t* const* w,
                                 const float* const* sb, VF (&scaled)[R][columns]) {
    static_assert(span == 1);
    const DF df;
    const DI di;
    const DB db;
    for (int64_t ch = 0; ch < chunks; ++ch) {
      VB q[codes_per_byte][columns];
      VF scale[columns];
      for (int c = 0; c < columns; ++c) {
        const VB packed = load_chunk(w[c], ch, row_bytes);
        for (int j = 0; j < codes_per_byte; ++j) {
          q[j][c] = codes_at(packed, j);
        }
        scale[c] = lane_scales(sb[c], ch);
      }
      for (int r = 0; r < R; ++r) {
        const auto* xc = reinterpret_cast<const uint8_t*>(xq[r] + ch * Rows::chunk_stride);
        VI acc[columns];
        for (int c = 0; c < columns; ++c) {
          acc[c] = hn::Zero(di);
        }
        for (int l = 0; l < Levels; ++l) {
          if (l > 0) {
            for (int c = 0; c < columns; ++c) {
              acc[c] = hn::ShiftLeft<8>(acc[c]);
            }
          }
          for (int j = 0; j < codes_per_byte; ++j) {
            const VB xv = hn::LoadU(db, xc + (j * Levels + l) * chunk_bytes);
            for (int c = 0; c < columns; ++c) {
              acc[c] = l == 0 ? dot_bytes(acc[c], q[j][c], xv) : dot_bytes(acc[c], xv, q[j][c]);
            }
          }
        }
        for (int c = 0; c < columns; ++c) {
          scaled[r][c] = hn::MulAdd(hn::ConvertTo(df, acc[c]), scale[c], scaled[r][c]);
        }
      }
    }
  }

  /// scaled += block's lanes for 8-bit codes: each level's sums over a span, combined in float.
  template <int R>
  static void add_float_levels(const int8_t* const* xq, int64_t chunks, int64_t row_bytes, const uint8_t* const* w,
                               const float* const* sb, VF (&scaled)[R][columns]) {
    const DF df;
    const DI di;
    const DB db;
    const VF ratio = hn::Set(df, Rows::level_ratio);
    for (int64_t c0 = 0; c0 < chunks; c0 += span) {  // chunks is a multiple of span (rows are whole groups)
      VI acc[R][columns][Levels];
      for (int r = 0; r < R; ++r) {
        for (int c = 0; c < columns; ++c) {
          for (int l = 0; l < Levels; ++l) {
            acc[r][c][l] = hn::Zero(di);
          }
        }
      }
      for (int64_t ch = c0; ch < c0 + span; ++ch) {
        VB packed[columns];
        for (int c = 0; c < columns; ++c) {
          packed[c] = load_chunk(w[c], ch, row_bytes);
        }
        for (int j = 0; j < codes_per_byte; ++j) {
          VB q[columns];
          for (int c = 0; c < columns; ++c) {
            q[c] = codes_at(packed[c], j);
          }
          for (int r = 0; r < R; ++r) {
            const auto* xc =
                reinterpret_cast<const uint8_t*>(xq[r] + ch * Rows::chunk_stride) + int64_t{j} * Levels * chunk_bytes;
            for (int l = 0; l < Levels; ++l) {
              const VB xv = hn::LoadU(db, xc + l * chunk_bytes);
              for (int c = 0; c < columns; ++c) {
                acc[r][c][l] = dot_bytes(acc[r][c][l], q[c], xv);
              }
            }
          }
        }
      }
      // The span's levels combine by Horner's rule in float (254 (254 s_0 + s_1) + s_2) and are scaled by their
      // groups' scales.
      for (int c = 0; c < columns; ++c) {
        const VF scale = lane_scales(sb[c], c0);
        for (int r = 0; r < R; ++r) {
          VF combined = hn::ConvertTo(df, acc[r][c][0]);
          for (int l = 1; l < Levels; ++l) {
            combined = hn::MulAdd(combined, ratio, hn::ConvertTo(df, acc[r][c][l]));
          }
          scaled[r][c] = hn::MulAdd(combined, scale, scaled[r][c]);
        }
      }
    }
  }

  static bool run(const float* x, int64_t rows, int64_t k, const Matrix& m, float* out) {
    Rows levels;
    if (!levels.build(x, rows, k)) {
      return false;
    }
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
          prefetch_scales(m, std::min(col + prefetch_blocks * columns, n - 1));
        }
        const int64_t valid = std::min<int64_t>(columns, n - b * columns);
        // Two rows of x a pass share each unpacked vector of codes; an odd last row goes alone.
        auto rows_from = [&]<int R>(int64_t r0) {
          const int8_t* xq[R];
          for (int r = 0; r < R; ++r) {
            xq[r] = levels.bytes.get() + (r0 + r) * levels.chunks * Rows::chunk_stride;
          }
          float sums[R][columns];
          block<R>(xq, levels.chunks, row_bytes, w, scales, sums);
          for (int r = 0; r < R; ++r) {
            const int64_t row = r0 + r;
            for (int64_t c = 0; c < valid; ++c) {
              const float* bias = scales[c] + groups + lanes;
              out[row * n + b * columns + c] =
                  static_cast<float>(levels.units[static_cast<size_t>(row)] * sums[r][c] +
                                     static_cast<double>(dot(bias, xsum.data() + row * groups, groups)));
            }
          }
        };
        int64_t r0 = 0;
        for (; r0 + 2 <= rows; r0 += 2) {
          rows_from.template operator()<2>(r0);
        }
        if (r0 < rows) {
          rows_from.template operator()<1>(r0);
        }
      }
    });
    return true;
  }
};

template <int Bits, int Levels>
bool dispatch_group(const float* x, int64_t rows, int64_t k, const Matrix& m, float* out) {
  switch (m.group_size) {
    case 16:
      return Int8Decode<Bits, 16, Levels>::run(x, rows, k, m, out);
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
