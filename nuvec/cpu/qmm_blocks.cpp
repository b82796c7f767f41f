// Products with weights in GGML's block formats (quantization_mode.h), read from the blocks as a GGUF file holds
// them: a model file is computed from its mapped pages, with the bytes per weight of the file itself.
//
// Decode (a few rows of x): x is written as int8 levels, x ~ unit * (254^2 x_0 + 254 x_1 + x_2) per 32 values (x_0
// from their largest |x| over 127, each further level the rounded rest). Three levels keep float32 accuracy (an error
// of at most 1 / 16.4 million of that largest |x|); two, for half-precision outputs, 1 / 64516 (one level, llama.cpp's
// int8 activations, leaves 1 / 254). Each
// 64 values of a row of blocks are unpacked in registers into 64 unsigned codes in value order and meet both levels in
// AVX-512 VNNI's vpdpbusd (sums of four code * x products in 16 int32 lanes); the lanes are converted and scaled by
// their group's scale in a float accumulator, and the groups' offsets (value = scale * code + offset) come from the
// sums of x per group. Threads split the rows of w and prefetch their rows ahead into L2; every row of x is computed
// against a row of blocks while it is in L1, so w streams from memory once.
//
// Prefill (many rows), x holding infinities or NaNs, or a CPU without AVX-512 VNNI: tiles of w are decoded to float32
// and multiplied by the sgemm.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "nuvec/cpu/block_quants.h"
#include "nuvec/cpu/decoded_gemm.h"
#include "nuvec/cpu/prefetch.h"
#include "nuvec/cpu/thread_pool.h"

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
#include <immintrin.h>
#define NUVEC_BLOCKS_VNNI 1
#endif

namespace nuvec::cpu::blocks {

namespace {

constexpr int64_t gemm_rows = 32;            // from this many rows of x, decode tiles and call the sgemm
constexpr int64_t tile_rows = 256;           // rows of w decoded per tile
constexpr int64_t bytes_per_task = 1 << 16;  // weight bytes a thread reads before splitting pays
constexpr int64_t prefetch_bytes = 1 << 14;  // how far ahead of its rows a task asks for more

void prefill(QuantizationMode mode, const float* x, int64_t rows, int64_t k, const uint8_t* w, int64_t n, float* out) {
  const int64_t row_bytes = k / block_layout(mode).values * block_layout(mode).bytes;
  decoded_gemm(
      x, rows, k, n, tile_rows, TileLayout::by_column,
      [&](int64_t t0, int64_t count, float* values) {
        parallel_for(static_cast<size_t>(count), 1, [&](size_t r0, size_t r1) {
          for (auto r = static_cast<int64_t>(r0); r < static_cast<int64_t>(r1); ++r) {
            dequantize_row(mode, w + (t0 + r) * row_bytes, k, values + r * k);
          }
        });
      },
      out);
}

#if NUVEC_BLOCKS_VNNI

bool all_finite(const float* x, int64_t count) {
  bool finite = true;
  for (int64_t i = 0; i < count; ++i) {
    finite = finite && std::isfinite(x[i]);
  }
  return finite;
}

constexpr float level_ratio = 254.F;

// All-lane masks: the zero-masking forms of the intrinsics, where GCC 12's plain forms start from an undefined vector
// and warn about it.
constexpr __mmask16 all16 = 0xFFFF;
constexpr __mmask8 all8 = 0xFF;

inline float sum_lanes(__m256 v) {
  const __m128 quarter = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 pair = _mm_add_ps(quarter, _mm_movehl_ps(quarter, quarter));
  return _mm_cvtss_f32(_mm_add_ss(pair, _mm_movehdup_ps(pair)));
}

inline float max_lane(__m512 v) {
  const __m256 half = _mm256_max_ps(_mm512_extractf32x8_ps(v, 0), _mm512_extractf32x8_ps(v, 1));
  const __m128 quarter = _mm_max_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1));
  const __m128 pair = _mm_max_ps(quarter, _mm_movehl_ps(quarter, quarter));
  return _mm_cvtss_f32(_mm_max_ss(pair, _mm_movehdup_ps(pair)));
}

inline float sum_lanes(__m512 v) {
  return sum_lanes(_mm256_add_ps(_mm512_extractf32x8_ps(v, 0), _mm512_extractf32x8_ps(v, 1)));
}

float half_at(const uint8_t* p) {
  uint16_t bits = 0;
  std::memcpy(&bits, p, 2);
  return _cvtsh_ss(bits);
}

/// For q4_k's 64-value chunk c of a block: lanes 0-7 to sub-block 2c's scale, lanes 8-15 to 2c + 1's.
inline __m512i sub_block_lanes(int c) {
  return _mm512_mask_blend_epi32(0xFF00, _mm512_set1_epi32(2 * c), _mm512_set1_epi32(2 * c + 1));
}

/// For q6_k's 64-value chunk c of a block: lane l (values 4l to 4l + 3) to its group's scale 4c + l / 4.
inline __m512i group_lanes(int c) {
  const int g = 4 * c;
  return _mm512_set_epi32(g + 3, g + 3, g + 3, g + 3, g + 2, g + 2, g + 2, g + 2, g + 1, g + 1, g + 1, g + 1, g, g, g,
                          g);
}

/// Rows of x as `levels` int8 levels in value order ([row][level][k]), with a unit per 32 values (so that an outlier
/// coarsens only its own 32 values), laid out per 64-value chunk as the 16 lanes of vpdpbusd's sums see them; and the
/// rows' sums per 16 and per 32 values.
struct Levels {
  int64_t k;
  int levels;
  std::vector<int8_t> bytes;
  std::vector<float> lane_units;  // [row][chunk][16]
  std::vector<float> per16;
  std::vector<float> per32;

  Levels(const float* x, int64_t rows, int64_t k, int levels)
      : k(k),
        levels(levels),
        bytes(static_cast<size_t>(rows * levels * k)),
        lane_units(static_cast<size_t>(rows * (k / 4))),
        per16(static_cast<size_t>(rows * (k / 16))),
        per32(static_cast<size_t>(rows * (k / 32))) {
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = x + r * k;
      int8_t* first = bytes.data() + r * levels * k;
      for (int64_t b = 0; b < k / 32; ++b) {
        __m512 rest[2] = {_mm512_loadu_ps(row + 32 * b), _mm512_loadu_ps(row + 32 * b + 16)};
        const float largest = max_lane(_mm512_maskz_max_ps(all16, _mm512_abs_ps(rest[0]), _mm512_abs_ps(rest[1])));
        float unit = largest > 0.F ? largest / 127.F : 1.F;
        for (int l = 0; l < levels; ++l) {
          const __m512 inverse = _mm512_set1_ps(1.F / unit);
          for (int h = 0; h < 2; ++h) {
            // Rounded to nearest and kept in [-127, 127] (the reciprocal's rounding can reach 127.5).
            const __m512 q = _mm512_maskz_min_ps(
                all16,
                _mm512_maskz_max_ps(
                    all16,
                    _mm512_maskz_roundscale_ps(all16, _mm512_mul_ps(rest[h], inverse), _MM_FROUND_TO_NEAREST_INT),
                    _mm512_set1_ps(-127.F)),
                _mm512_set1_ps(127.F));
            rest[h] = _mm512_fnmadd_ps(q, _mm512_set1_ps(unit), rest[h]);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(first + l * k + 32 * b + 16 * h),
                             _mm512_maskz_cvtsepi32_epi8(all16, _mm512_maskz_cvtps_epi32(all16, q)));
          }
          if (l + 1 < levels) {
            unit /= level_ratio;
          }
        }
        // Block b fills lanes (b % 2) * 8 to + 8 of chunk b / 2, with the unit of the last level.
        std::fill_n(lane_units.data() + r * (k / 4) + b * 8, 8, unit);
        const float low = sum_lanes(_mm512_loadu_ps(row + 32 * b));
        const float high = sum_lanes(_mm512_loadu_ps(row + 32 * b + 16));
        per16[static_cast<size_t>(r * (k / 16) + 2 * b)] = low;
        per16[static_cast<size_t>(r * (k / 16) + 2 * b + 1)] = high;
        per32[static_cast<size_t>(r * (k / 32) + b)] = low + high;
      }
    }
  }
  [[nodiscard]] const int8_t* level(int64_t r, int l) const { return bytes.data() + (r * levels + l) * k; }
  /// The units of the 16 lanes of the chunk at value v.
  [[nodiscard]] const float* units(int64_t r, int64_t v) const { return lane_units.data() + r * (k / 4) + v / 4; }
  [[nodiscard]] const float* sums(int64_t r) const { return per16.data() + r * (k / 16); }
  [[nodiscard]] const float* sums32(int64_t r) const { return per32.data() + r * (k / 32); }
};

/// The dot of 64 codes with value positions [v, v + 64) of R rows, all L levels, scaled per lane and added to
/// acc.
template <int R, int L>
inline void accumulate(__m512i codes, __m512 lane_scales, const Levels& x, int64_t r0, int64_t v, __m512* acc) {
  for (int r = 0; r < R; ++r) {
    __m512 combined = _mm512_setzero_ps();
    for (int l = 0; l < L; ++l) {
      const __m512i level = _mm512_loadu_si512(x.level(r0 + r, l) + v);
      const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), codes, level);
      combined = _mm512_fmadd_ps(combined, _mm512_set1_ps(level_ratio), _mm512_maskz_cvtepi32_ps(all16, sums));
    }
    acc[r] = _mm512_fmadd_ps(combined, _mm512_mul_ps(lane_scales, _mm512_loadu_ps(x.units(r0 + r, v))), acc[r]);
  }
}

/// Per 16-bit word of a vector: no shift in the low 256 bits, `bits` in the high ones (or per 128 bits: 0,
/// bits, 0, bits with `interleaved`).
inline __m512i shift_counts(int bits, bool interleaved) {
  const __m512i shifted = _mm512_set1_epi16(static_cast<int16_t>(bits));
  return _mm512_maskz_mov_epi16(interleaved ? 0xFF00FF00U : 0xFFFF0000U, shifted);
}

/// 32 bytes of 4-bit codes as 64 codes: the low nibbles, then the high ones.
inline __m512i nibbles(__m256i packed) {
  const __m512i both = _mm512_maskz_broadcast_i64x4(all8, packed);
  return _mm512_and_si512(_mm512_srlv_epi16(both, shift_counts(4, false)), _mm512_set1_epi8(0x0F));
}

/// Two 32-value blocks (q4_0, q8_0) of one row against R rows of x: per block, codes, a scale d and an offset
/// `offset * d` per value.
template <int R, int L, bool Q8>
void rows_q32(const uint8_t* w, int64_t blocks, const Levels& x, int64_t r0, float* out) {
  constexpr int bytes = Q8 ? 34 : 18;
  constexpr float offset = Q8 ? -128.F : -8.F;
  __m512 acc[R];
  float bias[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm512_setzero_ps();
    bias[r] = 0.F;
  }
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    const uint8_t* b0 = w + b * bytes;
    const uint8_t* b1 = b0 + bytes;
    const float d0 = half_at(b0);
    const float d1 = half_at(b1);
    __m512i codes;
    if constexpr (Q8) {
      const __m256i c0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + 2));
      const __m256i c1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1 + 2));
      const __m512i both = _mm512_mask_broadcast_i64x4(_mm512_maskz_broadcast_i64x4(0x0F, c0), 0xF0, c1);
      codes = _mm512_xor_si512(both, _mm512_set1_epi8(-128));
    } else {
      // 16-byte lanes [c0 c0 c1 c1], shifted by [0 4 0 4]: value order [low0 high0 low1 high1].
      const __m128i c0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + 2));
      const __m128i c1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b1 + 2));
      const __m512i lanes = _mm512_mask_broadcast_i32x4(_mm512_maskz_broadcast_i32x4(0x00FF, c0), 0xFF00, c1);
      codes = _mm512_and_si512(_mm512_srlv_epi16(lanes, shift_counts(4, true)), _mm512_set1_epi8(0x0F));
    }
    const __m512 scales = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(d0), _mm512_set1_ps(d1));
    accumulate<R, L>(codes, scales, x, r0, b * 32, acc);
    for (int r = 0; r < R; ++r) {
      const float* s = x.sums32(r0 + r) + b;
      bias[r] += offset * (d0 * s[0] + d1 * s[1]);
    }
  }
  for (int r = 0; r < R; ++r) {
    out[r] = sum_lanes(acc[r]) + bias[r];
  }
}

/// One q4_k row (blocks of 256: eight 32-value sub-blocks with 6-bit scales and mins) against R rows of x.
template <int R, int L>
void rows_q4_k(const uint8_t* w, int64_t blocks, const Levels& x, int64_t r0, float* out) {
  __m512 acc[R];
  __m256 bias[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm512_setzero_ps();
    bias[r] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = w + b * 144;
    // The eight 6-bit scales and mins from three little-endian words of packed fields (quantization_mode.h).
    uint32_t packed[3];
    std::memcpy(packed, block + 4, sizeof(packed));
    const uint64_t scale_bytes =
        (packed[0] & 0x3F3F3F3FU) | uint64_t{(packed[2] & 0x0F0F0F0FU) | (((packed[0] >> 6) & 0x03030303U) << 4)} << 32;
    const uint64_t min_bytes =
        (packed[1] & 0x3F3F3F3FU) | uint64_t{((packed[2] >> 4) & 0x0F0F0F0FU) | (((packed[1] >> 6) & 0x03030303U) << 4)}
                                        << 32;
    const __m512 scales = _mm512_mul_ps(
        _mm512_set1_ps(half_at(block)),
        _mm512_maskz_cvtepi32_ps(
            all16, _mm512_maskz_cvtepu8_epi32(all16, _mm_cvtsi64_si128(static_cast<int64_t>(scale_bytes)))));
    const __m256 offsets =
        _mm256_mul_ps(_mm256_set1_ps(-half_at(block + 2)),
                      _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(min_bytes)))));
    for (int r = 0; r < R; ++r) {
      bias[r] = _mm256_fmadd_ps(offsets, _mm256_loadu_ps(x.sums32(r0 + r) + b * 8), bias[r]);
    }
    for (int c = 0; c < 4; ++c) {
      const __m512i codes = nibbles(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 16 + 32 * c)));
      const __m512 lane_scales = _mm512_maskz_permutexvar_ps(all16, sub_block_lanes(c), scales);
      accumulate<R, L>(codes, lane_scales, x, r0, b * 256 + 64 * c, acc);
    }
  }
  for (int r = 0; r < R; ++r) {
    out[r] = sum_lanes(
        _mm256_add_ps(_mm256_add_ps(_mm512_extractf32x8_ps(acc[r], 0), _mm512_extractf32x8_ps(acc[r], 1)), bias[r]));
  }
}

/// One q6_k row (blocks of 256: 6-bit codes in two planes, an int8 scale per 16 values) against R rows of x.
template <int R, int L>
void rows_q6_k(const uint8_t* w, int64_t blocks, const Levels& x, int64_t r0, float* out) {
  __m512 acc[R];
  __m512 bias[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm512_setzero_ps();
    bias[r] = _mm512_setzero_ps();
  }
  const __m512i low_mask = _mm512_set1_epi8(0x0F);
  const __m512i high_mask = _mm512_set1_epi8(0x30);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = w + b * 210;
    const __m512 scales = _mm512_mul_ps(
        _mm512_set1_ps(half_at(block + 208)),
        _mm512_maskz_cvtepi32_ps(
            all16, _mm512_maskz_cvtepi8_epi32(all16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 192)))));
    for (int r = 0; r < R; ++r) {
      bias[r] = _mm512_fmadd_ps(scales, _mm512_loadu_ps(x.sums(r0 + r) + b * 16), bias[r]);
    }
    for (int n = 0; n < 2; ++n) {
      const __m512i low = _mm512_loadu_si512(block + 64 * n);
      const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 128 + 32 * n));
      // Bits 0-1 of the high plane belong to values 0-31, bits 2-3 to 32-63, 4-5 to 64-95, 6-7 to 96-127.
      const __m512i h = _mm512_srlv_epi16(_mm512_maskz_broadcast_i64x4(all8, high), shift_counts(2, false));
      const __m512i first =
          _mm512_or_si512(_mm512_and_si512(low, low_mask), _mm512_and_si512(_mm512_slli_epi16(h, 4), high_mask));
      const __m512i second =
          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(low, 4), low_mask), _mm512_and_si512(h, high_mask));
      const int64_t v = b * 256 + 128 * n;
      accumulate<R, L>(first, _mm512_maskz_permutexvar_ps(all16, group_lanes(2 * n), scales), x, r0, v, acc);
      accumulate<R, L>(second, _mm512_maskz_permutexvar_ps(all16, group_lanes(2 * n + 1), scales), x, r0, v + 64, acc);
    }
  }
  for (int r = 0; r < R; ++r) {
    out[r] = sum_lanes(_mm512_fmadd_ps(_mm512_set1_ps(-32.F), bias[r], acc[r]));
  }
}

/// One row of w against R rows of x on L levels.
template <int R, int L>
void rows_of(QuantizationMode mode, const uint8_t* w, int64_t blocks, const Levels& x, int64_t r0, float* out) {
  switch (mode) {
    case QuantizationMode::affine:
    case QuantizationMode::mxfp4:
    case QuantizationMode::mxfp8:
    case QuantizationMode::nvfp4:
      return;  // not block formats: the ops never send them here
    case QuantizationMode::q4_0:
      return rows_q32<R, L, false>(w, blocks, x, r0, out);
    case QuantizationMode::q8_0:
      return rows_q32<R, L, true>(w, blocks, x, r0, out);
    case QuantizationMode::q4_k:
      return rows_q4_k<R, L>(w, blocks, x, r0, out);
    case QuantizationMode::q6_k:
      return rows_q6_k<R, L>(w, blocks, x, r0, out);
  }
}

template <int L>
void int8_product(QuantizationMode mode, const float* xf, int64_t rows, int64_t k, const uint8_t* w, int64_t n,
                  float* out) {
  const Levels x(xf, rows, k, L);
  const BlockLayout layout = block_layout(mode);
  const int64_t blocks = k / layout.values;
  const int64_t row_bytes = blocks * layout.bytes;
  const int64_t ahead = std::max<int64_t>(1, prefetch_bytes / std::max<int64_t>(1, row_bytes));
  const auto grain = static_cast<size_t>(std::max<int64_t>(1, bytes_per_task / std::max<int64_t>(1, row_bytes)));
  parallel_for(static_cast<size_t>(n), grain, [&](size_t n0, size_t n1) {
    const auto end = static_cast<int64_t>(n1);
    float dots[4];
    for (auto j = static_cast<int64_t>(n0); j < end; ++j) {
      if (j + ahead < end) {
        prefetch_l2(w + (j + ahead) * row_bytes, row_bytes);
      }
      const uint8_t* row = w + j * row_bytes;
      int64_t r = 0;
      for (; r + 4 <= rows; r += 4) {
        rows_of<4, L>(mode, row, blocks, x, r, dots);
        for (int i = 0; i < 4; ++i) {
          out[(r + i) * n + j] = dots[i];
        }
      }
      for (; r < rows; ++r) {
        rows_of<1, L>(mode, row, blocks, x, r, dots);
        out[r * n + j] = dots[0];
      }
    }
  });
}

#endif

}  // namespace

void product(QuantizationMode mode, const float* x, int64_t rows, int64_t k, const uint8_t* w, int64_t n,
             [[maybe_unused]] int levels, float* out) {
  if (rows == 0 || n == 0) {
    return;
  }
  if (k == 0) {
    std::fill_n(out, rows * n, 0.F);
    return;
  }
#if NUVEC_BLOCKS_VNNI
  // The decode path reads 64 values at a time; its sums of code * x would turn an infinite x into NaN where the
  // product with the decoded weight gives an infinity.
  if (rows < gemm_rows && k % 64 == 0 && all_finite(x, rows * k)) {
    return levels == 2 ? int8_product<2>(mode, x, rows, k, w, n, out) : int8_product<3>(mode, x, rows, k, w, n, out);
  }
#endif
  prefill(mode, x, rows, k, w, n, out);
}

}  // namespace nuvec::cpu::blocks
