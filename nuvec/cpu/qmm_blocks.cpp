// Products with weights in GGML's block formats (quantization_mode.h), read from the blocks as a GGUF file holds
// them: a model file is computed from its mapped pages, with the bytes per weight of the file itself.
//
// Decode (a few rows of x): x is written as 8-bit levels, x ~ unit * (2^16 x_0 + 2^8 x_1 + x_2) per 32 values: x_0
// signed, from their largest |x| over 127, rounded down; each further level unsigned (0 to 255), the rest rounded
// down, the last one rounded to nearest. Three levels keep float32 accuracy (an error of at most 1 / 8.3 million of
// that largest |x|); two, for bfloat16 outputs and the float32 matmul precision "high", 1 / 32512; one, under
// "medium" (llama.cpp's q8_0 activations, which its own products of these formats take), 1 / 254.
// x's levels meet the codes in AVX-512 VNNI's vpdpbusd (sums of four unsigned * signed byte products in 16 int32
// lanes); the levels' sums combine in the integer lanes (shifted by 8 bits before each further level: exact in 32 bits
// for 4- and 6-bit codes), so each lane is converted and scaled by its group's scale once. Where a format's codes carry
// a fixed offset (q4_0 -8, q8_0 -128 as unsigned codes, q6_k -32), the offset times the lane's sum of x joins each
// lane's integer sum, so the lanes sum the offset codes times x exactly and no float bias term is kept per block.
// - q8_0 (Levels): each 64 values of a row are 64 codes in value order: x_0 against the codes as unsigned bytes, the
//   further levels (unsigned) against the codes with their offset as signed bytes, combined in float (8-bit codes
//   would overflow the integer lanes). A pass computes four rows of w, sharing each load of x's levels and units.
// - q4_0 and q4_k (BlockDigits): a vector holds 16 code bytes of each of four rows of w, so that a block's or
//   sub-block's scale is its own lanes' (one vector of scales where the rows' own order needs a permute per 64 values),
//   and x's levels are written again as signed digits, every one against the codes as unsigned bytes; q4_k's mins meet
//   the sums of x per 32 values. Their passes take eight rows.
// - q4_0x8 (q4_0's rows interleaved in eights, quantization_mode.h; BlockDigits): q4_0's lanes, each 64 code bytes
//   one load and a pass of eight rows one run of memory (q4_0's passes gather 16 bytes from each of eight rows and
//   their scales one by one); 1.6x q4_0's speed from cache.
// - q4_kx16 and q4_0x16 (q4_k's and q4_0's rows interleaved by dwords in sixteens, quantization_mode.h;
//   BlockDigits): a vector holds one code dword of each of sixteen rows, so that a lane sums a whole (sub-)block of
//   its own row against x's digits broadcast four at a time (the prefill kernel's arrangement, from the layout
//   itself), and a block's scales (q4_k's scales and mins unpacked from three vectors) are one vector: q4_kx16 2.1x
//   q4_k's speed from cache, where q4_k's passes spent more on moving codes and unpacking fields than on the sums.
// - q6_k (SpanDigits): x's digits are stored in an order that puts 8 values of one 16-value group in each lane, and
//   the codes are moved into that order in registers, so that one chain of sums covers 128 values.
// - q8_0x16 (q8_0's rows interleaved by dwords in sixteens, every block's d after the codes; BlockDigits): q4_0x16's
//   arrangement with eight code dwords a block and no nibbles to split, the group's bytes asked for at the pace they
//   are read (a prefetch that stepped over the codes alone left the d's span unasked for in every next group: 0.85x
//   q8_0's decoding speed). One row of x streams as q8_0 does; 8 and 16 rows 1.7x and 2.2x q8_0's speed, the prefill
//   1.15-1.3x (loads where q8_0's panels gather).
// - q6_kx16 (q6_k's rows interleaved by dwords in sixteens, in the order the kernel reads them; BlockDigits): a lane
//   per row, each 16 values a chain per digit, the 6-bit codes of four sub-blocks merged from two low-bit vectors and
//   one high-bit vector (a shift and a ternary-logic merge each): 1.5x q6_k's speed from cache, 1.45x with 64 rows
//   of x. Its blocks stream in order with no software prefetch, which the hardware's prefetcher follows better.
// Threads split the rows of w; each block read asks for the bytes a few passes ahead to be brought into L2, and every
// row of x is computed against the rows of blocks while they are in L1, so w streams from memory once.
//
// Prefill (24 rows of x and more: batched decode too) with q4_0x8, q8_0, q4_k, q6_k or the x16 layouts, on one or two
// levels (prefill_panels): panels of 16 rows of w are moved into vectors whose lane i holds four codes of row i
// (q4_0x8 by permutes of its interleaved rows, the x16 layouts by loads, the others by gathers), so that each lane sums
// a whole block (q4_k: sub-block) of one row against digits of x broadcast from memory and is converted and scaled once
// per block, q4_k's mins meeting x's sums per 32 values (eight vpdpbusd and three float instructions per block, 16 rows
// of w and a row of x, where the sgemm takes 32 multiply-adds): q4_0x8 2.9x the decoded tiles' speed on one
// level, 1.5-1.6x on two; q8_0 2.6x and 1.5x; q4_k 2.4x and 1.45x. A lane's sum of two levels stays in 32 bits with
// 8-bit codes too (255 * 32 * 2^16). q6_k, from 32 rows (its two gathers per code vector make the panels no faster than
// decode's below), sums each half of a sub-block apart for its scale per 16 values: 2.2x and 1.4x; 3.5x the tiles at 32
// to 40 rows of x. The same kernel takes affine weights of 4 and 8 bits whose groups are whole blocks (affine_prefill:
// codes gathered as q8_0's, a 4-bit row's nibble pairs met by x's records in the same order, the biases as
// mins): 1.4-1.6x their decoded tiles' speed on two levels. Other prefill, three levels, x holding infinities or NaNs
// or a block of values below 2^-100 (too small for the levels' units), or a CPU without AVX-512 VNNI: tiles of w are
// decoded to float32 and multiplied by the sgemm.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "nuvec/cpu/block_quants.h"
#include "nuvec/cpu/decoded_gemm.h"
#include "nuvec/cpu/prefetch.h"
#include "nuvec/cpu/quantized.h"
#include "nuvec/cpu/scratch.h"
#include "nuvec/cpu/thread_pool.h"

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
#include <immintrin.h>
#define NUVEC_BLOCKS_VNNI 1
#endif

namespace nuvec::cpu::blocks {

namespace {

constexpr int64_t gemm_rows = 32;            // from this many rows of x, decode tiles and call the sgemm
constexpr int64_t tile_rows = 128;           // rows of w decoded per tile
constexpr int64_t bytes_per_task = 1 << 16;  // weight bytes a thread reads before splitting pays
constexpr int64_t prefetch_bytes = 1 << 14;  // how far ahead of its rows a task asks for more
constexpr int prefill_levels = 2;            // prefill on int8 levels of x up to this many, past it the sgemm
constexpr int64_t panel_from_rows = 24;      // from this many rows of x the prefill kernel beats decode's (17-20%)
constexpr int64_t prefill_rows = 128;        // the int8 prefill's tiles of x: rows
constexpr int64_t prefill_blocks = 32;       // and blocks of 32 values

void prefill(QuantizationMode mode, const float* x, int64_t rows, int64_t k, const uint8_t* w, int64_t n, float* out) {
  decoded_gemm(
      x, rows, k, n, tile_rows, TileLayout::by_column,
      [&](int64_t t0, int64_t count, float* values) {
        parallel_for(static_cast<size_t>(count), 1, [&](size_t r0, size_t r1) {
          for (auto r = static_cast<int64_t>(r0); r < static_cast<int64_t>(r1); ++r) {
            dequantize_row(mode, w, t0 + r, k, values + r * k);
          }
        });
      },
      out);
}

#if NUVEC_BLOCKS_VNNI

/// Whether every value is finite: x - x is 0 exactly for them and NaN for infinities and NaNs.
bool all_finite(const float* x, int64_t count) {
  __mmask16 finite = 0xFFFF;
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    finite &= _mm512_cmp_ps_mask(_mm512_sub_ps(v, v), _mm512_setzero_ps(), _CMP_EQ_OQ);
  }
  bool all = finite == 0xFFFF;
  for (; i < count; ++i) {
    all = all && std::isfinite(x[i]);
  }
  return all;
}

constexpr int level_bits = 8;  // each further level of x is 2^8 times finer
constexpr float level_ratio = 1 << level_bits;

// All-lane masks: the zero-masking forms of the intrinsics, where GCC 12's plain forms start from an undefined vector
// and warn about it.
constexpr __mmask16 all16 = 0xFFFF;
constexpr __mmask8 all8 = 0xFF;

inline int32_t load_i32(const int8_t* p) {
  int32_t value = 0;
  std::memcpy(&value, p, sizeof(value));
  return value;
}

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

/// The sum of 32 floats.
inline float sum32(const float* values) {
  return sum_lanes(_mm512_add_ps(_mm512_loadu_ps(values), _mm512_loadu_ps(values + 16)));
}

uint16_t load_u16(const uint8_t* p) {
  uint16_t bits = 0;
  std::memcpy(&bits, p, 2);
  return bits;
}

float half_at(const uint8_t* p) { return _cvtsh_ss(load_u16(p)); }

/// A block of 32 values of x as levels: q[l][h] holds level l of values 16h to 16h + 15 (as floats), the first signed
/// and rounded down, each further one unsigned (0 to 255), the rest rounded down, the last one rounded to nearest;
/// unit is the last level's.
struct BlockLevels {
  __m512 q[3][2];
  float unit;
};

/// Splits the 32 values at `values` into `levels` levels; false where their largest |x| is too small for the units.
inline bool split_levels(const float* values, int levels, BlockLevels& out) {
  __m512 rest[2] = {_mm512_loadu_ps(values), _mm512_loadu_ps(values + 16)};
  const float largest = max_lane(_mm512_maskz_max_ps(all16, _mm512_abs_ps(rest[0]), _mm512_abs_ps(rest[1])));
  float unit = largest > 0.F ? largest / 127.F : 1.F;
  for (int l = 0; l < levels; ++l) {
    const __m512 inverse = _mm512_set1_ps(1.F / unit);
    // Rounded down, so the rest is in [0, unit) and the next level unsigned; the last level to nearest. The bounds
    // catch the reciprocal's rounding, the rest carrying what they cut to the next level.
    const __m512 least = _mm512_set1_ps(l == 0 ? -128.F : 0.F);
    const __m512 greatest = _mm512_set1_ps(l == 0 ? 127.F : 255.F);
    for (int h = 0; h < 2; ++h) {
      const __m512 scaled = _mm512_mul_ps(rest[h], inverse);
      const __m512 rounded = l + 1 == levels ? _mm512_maskz_roundscale_ps(all16, scaled, _MM_FROUND_TO_NEAREST_INT)
                                             : _mm512_maskz_roundscale_ps(all16, scaled, _MM_FROUND_TO_NEG_INF);
      out.q[l][h] = _mm512_maskz_min_ps(all16, _mm512_maskz_max_ps(all16, rounded, least), greatest);
      rest[h] = _mm512_fnmadd_ps(out.q[l][h], _mm512_set1_ps(unit), rest[h]);
    }
    if (l + 1 < levels) {
      unit /= level_ratio;
    }
  }
  out.unit = unit;
  // The last level's unit, largest / (127 * 2^16), and its reciprocal stay normal floats from 2^-100.
  return largest == 0.F || largest >= 0x1p-100F;
}

/// Rows of x for q8_0's kernel as `levels` 8-bit levels in value order ([row][level][k]; the first signed, the others
/// unsigned), with a unit per 32 values (so that an outlier coarsens only its own 32 values), laid out per 64-value
/// chunk as the 16 lanes of vpdpbusd's sums see them; and the code offset (value = scale * (code + offset)) times each
/// lane's sum of the first level, which starts the lane's integer sum so that it is the sum of the offset codes times
/// x exactly, with no float bias term per block.
struct Levels {
  int64_t k;
  int levels;
  std::vector<int8_t> bytes;
  std::vector<float> lane_units;    // [row][chunk][16]
  std::vector<int32_t> lane_start;  // [row][k / 4]
  bool units_normal = true;         // false where a block's largest |x| is too small for its levels' units

  Levels(const float* x, int64_t rows, int64_t k, int levels, int code_offset)
      : k(k),
        levels(levels),
        bytes(static_cast<size_t>(rows * levels * k)),
        lane_units(static_cast<size_t>(rows * (k / 4))),
        lane_start(static_cast<size_t>(rows * (k / 4))) {
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = x + r * k;
      int8_t* first = bytes.data() + r * levels * k;
      for (int64_t b = 0; b < k / 32; ++b) {
        BlockLevels split{};
        units_normal = split_levels(row + 32 * b, levels, split) && units_normal;
        for (int l = 0; l < levels; ++l) {
          for (int h = 0; h < 2; ++h) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(first + l * k + 32 * b + int64_t{16} * h),
                             _mm512_maskz_cvtepi32_epi8(all16, _mm512_maskz_cvtps_epi32(all16, split.q[l][h])));
          }
        }
        // Block b fills lanes (b % 2) * 8 to + 8 of chunk b / 2, with the unit of the last level.
        std::fill_n(lane_units.data() + r * (k / 4) + b * 8, 8, split.unit);
      }
      // The offsets are negative: -(|offset| * the sums by fours), the sums from vpdpbusd against |offset| bytes.
      const __m512i magnitude = _mm512_set1_epi8(static_cast<char>(-code_offset));
      for (int64_t v = 0; v < k; v += 64) {
        const __m512i sums =
            _mm512_dpbusd_epi32(_mm512_setzero_si512(), magnitude, _mm512_loadu_si512(level(r, 0) + v));
        _mm512_storeu_si512(lane_start.data() + r * (k / 4) + v / 4, _mm512_sub_epi32(_mm512_setzero_si512(), sums));
      }
    }
  }
  [[nodiscard]] const int8_t* level(int64_t r, int l) const { return bytes.data() + (r * levels + l) * k; }
  /// The units of the 16 lanes of the chunk at value v.
  [[nodiscard]] const float* units(int64_t r, int64_t v) const { return lane_units.data() + r * (k / 4) + v / 4; }
  /// The starting integer sums of the first level's 16 lanes of the chunk at value v.
  [[nodiscard]] const int32_t* start(int64_t r, int64_t v) const { return lane_start.data() + r * (k / 4) + v / 4; }
};

/// A block of 32 values of x as the integer Q = 2^16 q_0 + 2^8 q_1 + q_2 of its levels (two levels: 2^8 q_0 + q_1),
/// written again as balanced base-256 digits, each in [-128, 127], so that every digit is a signed byte against the
/// codes as unsigned ones and the digits' sums combine by shifts as the levels' do (|Q| < 2^23 either way).
struct BlockIntegers {
  alignas(64) int32_t whole[32];     // Q per value
  alignas(16) int8_t digits[3][32];  // [digit][value], the first the most significant
  float unit;                        // the last level's

  /// The sum of Q over values [first, first + 4) and [second, second + 4): the values of one lane of sums.
  [[nodiscard]] int32_t lane_sum(size_t first, size_t second) const {
    int32_t sum = 0;
    for (size_t i = 0; i < 4; ++i) {
      sum += whole[first + i] + whole[second + i];
    }
    return sum;
  }
};

/// Splits the 32 values at `values` as split_levels does into `out`; false where it does.
inline bool block_integers(const float* values, int levels, BlockIntegers& out) {
  BlockLevels split{};
  const bool normal = split_levels(values, levels, split);
  out.unit = split.unit;
  const __m512i half = _mm512_set1_epi32(128);
  const __m512i low_byte = _mm512_set1_epi32(255);
  for (int h = 0; h < 2; ++h) {
    __m512 value = split.q[0][h];
    for (int l = 1; l < levels; ++l) {
      value = _mm512_fmadd_ps(value, _mm512_set1_ps(level_ratio), split.q[l][h]);  // exact: |Q| < 2^24
    }
    __m512i rest = _mm512_maskz_cvtps_epi32(all16, value);
    _mm512_store_si512(out.whole + int64_t{16} * h, rest);
    for (int l = levels - 1; l >= 0; --l) {
      const __m512i carried = _mm512_add_epi32(rest, half);
      const __m512i digit = l == 0 ? rest : _mm512_sub_epi32(_mm512_and_si512(carried, low_byte), half);
      _mm_store_si128(reinterpret_cast<__m128i*>(out.digits[l] + int64_t{16} * h),
                      _mm512_maskz_cvtepi32_epi8(all16, digit));
      rest = _mm512_maskz_srai_epi32(all16, carried, level_bits);
    }
  }
  return normal;
}

/// Rows of x for the kernels whose vectors hold four rows of w (q4_0, q4_k: lanes 4i to 4i + 3 row i's sums for one
/// block or sub-block, so that its scale is its lanes' own), one record per block of 32 values: its digits
/// (BlockIntegers), the code offset times each lane's sum of Q (lane j: values 4j to 4j + 3 and 16 + 4j to 16 + 4j +
/// 3), added to the lanes' integer sums once, and the block's unit; a kernel walks one pointer per row of x. Beside
/// them, the sums of x per 32 values, for q4_k's mins.
struct BlockDigits {
  // A record: 32 bytes per digit, then the four int32 lane offsets, the float unit, the offsets' int32 total and
  // that of the record's first 16 values alone (for q6_k's scales per 16 values), and the code offset times the sum
  // of the first digit alone (for q8_0x16 on three levels), 32 bytes in all.
  static constexpr int64_t record_bytes(int levels) { return int64_t{32} * levels + 32; }
  static constexpr int64_t offsets_at(int levels) { return int64_t{32} * levels; }
  static constexpr int64_t unit_at(int levels) { return int64_t{32} * levels + 16; }
  static constexpr int64_t total_at(int levels) { return int64_t{32} * levels + 20; }
  static constexpr int64_t first_half_total_at(int levels) { return int64_t{32} * levels + 24; }
  static constexpr int64_t first_digit_total_at(int levels) { return int64_t{32} * levels + 28; }

  int64_t k;
  int levels;
  Scratch storage;           // the records, then the sums: from the allocator's cache, as prefill asks for megabytes
  int8_t* bytes;             // [row][block][record]
  float* per32;              // [row][block]
  bool units_normal = true;  // false where a block's largest |x| is too small for its levels' units

  /// With `nibble_pairs`, each block's values are taken in the order of a packed row of 4-bit codes' nibbles as a
  /// PanelBlock holds them (AffinePanels): record position 4j + t is value 8j + 2t and 16 + 4j + t is 8j + 2t + 1.
  BlockDigits(const float* x, int64_t rows, int64_t k, int levels, int code_offset, bool nibble_pairs = false)
      : k(k),
        levels(levels),
        storage(static_cast<size_t>(rows * (k / 32) * (record_bytes(levels) + 4))),
        bytes(static_cast<int8_t*>(storage.get())),
        per32(reinterpret_cast<float*>(bytes + rows * (k / 32) * record_bytes(levels))) {
    std::vector<char> normal(static_cast<size_t>(rows), 1);
    parallel_for(static_cast<size_t>(rows), 16, [&](size_t r0, size_t r1) {
      for (auto r = static_cast<int64_t>(r0); r < static_cast<int64_t>(r1); ++r) {
        for (int64_t b = 0; b < k / 32; ++b) {
          const float* values = x + r * k + 32 * b;
          alignas(64) float ordered[32];
          if (nibble_pairs) {
            for (int p = 0; p < 32; ++p) {
              ordered[p] = values[8 * (p % 16 / 4) + 2 * (p % 4) + p / 16];
            }
            values = ordered;
          }
          int8_t* out = bytes + (r * (k / 32) + b) * record_bytes(levels);
          per32[r * (k / 32) + b] = sum32(values);
          BlockIntegers block;
          if (!block_integers(values, levels, block)) {
            normal[static_cast<size_t>(r)] = 0;
          }
          std::memcpy(out, block.digits, size_t{32} * static_cast<size_t>(levels));
          int32_t offsets[4];
          for (size_t j = 0; j < 4; ++j) {
            offsets[j] = code_offset * block.lane_sum(4 * j, 16 + 4 * j);
          }
          const int32_t total = offsets[0] + offsets[1] + offsets[2] + offsets[3];
          const int32_t first_half = code_offset * block.lane_sum(0, 4) + code_offset * block.lane_sum(8, 12);
          std::memcpy(out + offsets_at(levels), offsets, sizeof(offsets));
          std::memcpy(out + unit_at(levels), &block.unit, sizeof(float));
          std::memcpy(out + total_at(levels), &total, sizeof(total));
          std::memcpy(out + first_half_total_at(levels), &first_half, sizeof(first_half));
          int32_t first_digits = 0;
          for (const int8_t digit : block.digits[0]) {
            first_digits += digit;
          }
          const int32_t first_digit_total = code_offset * first_digits;
          std::memcpy(out + first_digit_total_at(levels), &first_digit_total, sizeof(first_digit_total));
        }
      }
    });
    units_normal = std::ranges::all_of(normal, [](char n) { return n != 0; });
  }
  /// Row r's first block record.
  [[nodiscard]] const int8_t* row(int64_t r) const { return bytes + r * (k / 32) * record_bytes(levels); }
  [[nodiscard]] const float* sums32(int64_t r) const { return per32 + r * (k / 32); }
};

/// The digits of a BlockDigits record as the four-rows kernels take them: digits[l][h] holds digit l of values 16h to
/// 16h + 15 in each 128-bit lane.
template <int L>
inline void broadcast_digits(const int8_t* record, __m512i (&digits)[L][2]) {
  for (int l = 0; l < L; ++l) {
    for (int h = 0; h < 2; ++h) {
      digits[l][h] = _mm512_maskz_broadcast_i32x4(
          all16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(record + int64_t{32} * l + int64_t{16} * h)));
    }
  }
}

/// A BlockDigits record's four lane offsets in each 128-bit lane.
template <int L>
inline __m512i broadcast_offsets(const int8_t* record) {
  return _mm512_maskz_broadcast_i32x4(
      all16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(record + BlockDigits::offsets_at(L))));
}

/// Rows of x for q6_k's kernel, whose groups of 16 values each have a scale: per 128 values (a span), two vectors of
/// digits, P and Q, whose lane l holds 8 values of the group l / 2, P the dwords 4 (l / 2) + l % 2 of the span and Q
/// the dwords two further on, so that one chain of sums covers 128 values where the values' own order needs two.
/// A span's record: its digits ([digit][P, Q], 128 bytes each), the code offset times each lane's sum of Q (16 int32)
/// and each lane's unit (16 floats). The sums of a lane's 8 values stay in 32 bits where the offset codes' do:
/// 8 * 32 * |Q| < 2^31; the unsigned codes' partial sums may wrap, which two's complement undoes.
struct SpanDigits {
  static constexpr int64_t record_bytes(int levels) { return int64_t{128} * levels + 128; }
  static constexpr int64_t offsets_at(int levels) { return int64_t{128} * levels; }
  static constexpr int64_t units_at(int levels) { return int64_t{128} * levels + 64; }

  int64_t k;
  int levels;
  std::vector<int8_t> bytes;  // [row][span][record]
  bool units_normal = true;   // false where a block's largest |x| is too small for its levels' units

  SpanDigits(const float* x, int64_t rows, int64_t k, int levels, int code_offset)
      : k(k), levels(levels), bytes(static_cast<size_t>(rows * (k / 128) * record_bytes(levels))) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t s = 0; s < k / 128; ++s) {
        int8_t* out = bytes.data() + (r * (k / 128) + s) * record_bytes(levels);
        int32_t offsets[16];
        float units[16];
        for (int t = 0; t < 4; ++t) {  // block t of the span: lanes 4t to 4t + 3
          BlockIntegers block;
          units_normal = block_integers(x + r * k + 128 * s + int64_t{32} * t, levels, block) && units_normal;
          // The block's dwords 0, 1 to P's lanes 4t, 4t + 1, dwords 2, 3 to Q's, 4, 5 to P's lanes 4t + 2, 4t + 3,
          // 6, 7 to Q's.
          for (int l = 0; l < levels; ++l) {
            int8_t* digits = out + int64_t{128} * l + int64_t{16} * t;
            for (int piece = 0; piece < 4; ++piece) {
              std::memcpy(digits + int64_t{64} * (piece % 2) + int64_t{8} * (piece / 2),
                          block.digits[l] + int64_t{8} * piece, 8);
            }
          }
          for (int u = 0; u < 4; ++u) {  // lane 4t + u: dwords u % 2 + 4 (u / 2) and two further on
            const auto lane = static_cast<size_t>(u);
            const size_t first = 4 * (lane % 2) + 16 * (lane / 2);
            offsets[4 * t + u] = code_offset * block.lane_sum(first, first + 8);
            units[4 * t + u] = block.unit;
          }
        }
        std::memcpy(out + offsets_at(levels), offsets, sizeof(offsets));
        std::memcpy(out + units_at(levels), units, sizeof(units));
      }
    }
  }
  /// Row r's record of span s.
  [[nodiscard]] const int8_t* span(int64_t r, int64_t s) const {
    return bytes.data() + (r * (k / 128) + s) * record_bytes(levels);
  }
};

/// The code offset of a block format whose values are scale * (code + offset) (0 where offsets vary per block).
int code_offset(QuantizationMode mode) {
  switch (mode) {
    case QuantizationMode::affine:
    case QuantizationMode::mxfp4:
    case QuantizationMode::mxfp8:
    case QuantizationMode::nvfp4:
    case QuantizationMode::q4_k:
    case QuantizationMode::q4_kx16:
      return 0;
    case QuantizationMode::q4_0:
    case QuantizationMode::q4_0x8:
    case QuantizationMode::q4_0x16:
      return -8;
    case QuantizationMode::q8_0:
    case QuantizationMode::q8_0x16:
      return -128;
    case QuantizationMode::q6_k:
    case QuantizationMode::q6_kx16:
      return -32;
  }
  return 0;
}

/// The 64 codes of a row of w at a chunk: as unsigned bytes for the first level of x (signed), and with their offset
/// as signed bytes for the further levels (unsigned).
struct Codes {
  __m512i plain;
  __m512i offset;
};

/// The dots of 64 codes of each of C rows of w with value positions [v, v + 64) of R rows of x, all L levels, scaled
/// per lane and added to acc. The levels and units of x are read once for the C rows of w. The levels' sums are
/// combined in float: against 8-bit codes the integer lanes would overflow.
template <int R, int C, int L>
inline void accumulate(const Codes (&codes)[C], const __m512 (&lane_scales)[C], const Levels& x, int64_t r0, int64_t v,
                       __m512 (&acc)[R][C]) {
  for (int r = 0; r < R; ++r) {
    const __m512i first = _mm512_loadu_si512(x.level(r0 + r, 0) + v);
    const __m512i start = _mm512_loadu_si512(x.start(r0 + r, v));
    __m512 combined[C];
    for (int c = 0; c < C; ++c) {
      combined[c] = _mm512_maskz_cvtepi32_ps(all16, _mm512_dpbusd_epi32(start, codes[c].plain, first));
    }
    for (int l = 1; l < L; ++l) {
      const __m512i level = _mm512_loadu_si512(x.level(r0 + r, l) + v);
      for (int c = 0; c < C; ++c) {
        const __m512 further =
            _mm512_maskz_cvtepi32_ps(all16, _mm512_dpbusd_epi32(_mm512_setzero_si512(), level, codes[c].offset));
        combined[c] = _mm512_fmadd_ps(combined[c], _mm512_set1_ps(level_ratio), further);
      }
    }
    const __m512 units = _mm512_loadu_ps(x.units(r0 + r, v));
    for (int c = 0; c < C; ++c) {
      acc[r][c] = _mm512_fmadd_ps(combined[c], _mm512_mul_ps(lane_scales[c], units), acc[r][c]);
    }
  }
}

/// Per 16-bit word of a vector: no shift in the low 256 bits, `bits` in the high ones.
inline __m512i shift_counts(int bits) {
  return _mm512_maskz_mov_epi16(0xFFFF0000U, _mm512_set1_epi16(static_cast<int16_t>(bits)));
}

/// The float16 scales of two blocks as a vector: lanes 0-7 the first's, 8-15 the second's.
inline __m512 pair_scales(const uint8_t* first, const uint8_t* second) {
  uint16_t bits[2];
  std::memcpy(&bits[0], first, 2);
  std::memcpy(&bits[1], second, 2);
  const __m256i halves =
      _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(bits[1])), _mm_set1_epi16(static_cast<int16_t>(bits[0])));
  return _mm512_maskz_cvtph_ps(all16, halves);
}

/// Sums each accumulator's lanes into out[r][c].
template <int R, int C>
inline void store_sums(const __m512 (&acc)[R][C], float (&out)[R][C]) {
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      out[r][c] = sum_lanes(acc[r][c]);
    }
  }
}

/// For the kernels taking four rows of w a vector: each group's four row pointers (rows past C repeat the last one)
/// and zeroed accumulators.
template <int R, int C>
inline void start_row_groups(const uint8_t* w, int64_t row_bytes, const uint8_t* (&rows)[(C + 3) / 4][4],
                             __m512 (&acc)[R][(C + 3) / 4]) {
  for (int g = 0; g < (C + 3) / 4; ++g) {
    for (int i = 0; i < 4; ++i) {
      rows[g][i] = w + std::min(4 * g + i, C - 1) * row_bytes;
    }
    for (int r = 0; r < R; ++r) {
      acc[r][g] = _mm512_setzero_ps();
    }
  }
}

/// Sums each accumulator of four rows of w (lanes 4i to 4i + 3 row i's) into out[r][4g + i], for the C rows there are.
template <int R, int C>
inline void store_row_groups(const __m512 (&acc)[R][(C + 3) / 4], float (&out)[R][C]) {
  for (int r = 0; r < R; ++r) {
    for (int g = 0; g < (C + 3) / 4; ++g) {
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, acc[r][g]);
      for (size_t i = 0; i < 4; ++i) {
        const size_t c = size_t{4} * g + i;
        if (c < C) {
          out[r][c] = lanes[4 * i] + lanes[4 * i + 1] + lanes[4 * i + 2] + lanes[4 * i + 3];
        }
      }
    }
  }
}

/// C q8_0 rows (blocks of 32 int8 codes and a scale d), row_bytes apart, against R rows of x, two blocks at a time:
/// the codes as unsigned bytes (code + 128), the offset -128 in the levels' starting sums.
template <int R, int C, int L>
void rows_q8_0(const uint8_t* w, int64_t row_bytes, int64_t lead, int64_t blocks, const Levels& x, int64_t r0,
               float (&out)[R][C]) {
  constexpr int bytes = 34;
  __m512 acc[R][C];
  for (auto& row : acc) {
    std::fill_n(row, C, _mm512_setzero_ps());
  }
  for (int64_t b = 0; b < blocks; b += 2) {
    Codes codes[C];
    __m512 scales[C];
    for (int c = 0; c < C; ++c) {
      const uint8_t* b0 = w + c * row_bytes + b * bytes;
      const uint8_t* b1 = b0 + bytes;
      prefetch_l2(b0 + lead, int64_t{2} * bytes);
      scales[c] = pair_scales(b0, b1);
      const __m256i c0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + 2));
      const __m256i c1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1 + 2));
      const __m512i both = _mm512_mask_broadcast_i64x4(_mm512_maskz_broadcast_i64x4(0x0F, c0), 0xF0, c1);
      codes[c] = {_mm512_xor_si512(both, _mm512_set1_epi8(-128)), both};
    }
    accumulate<R, C, L>(codes, scales, x, r0, b * 32, acc);
  }
  store_sums(acc, out);
}

/// C q4_0 rows (blocks of 32 4-bit codes and a scale d), row_bytes apart, against R rows of x: four rows of w a
/// vector, row i's 16 code bytes in bytes 16i to 16i + 15, as low nibbles and as high ones against two 16-byte
/// broadcasts of each digit of x, so that lane 4i + j sums row i's values 4j to 4j + 3 and 16 + 4j to 16 + 4j + 3 of
/// a block and the block's scale d is its four lanes' own (one vector of scales per block, where the rows' own order
/// needs two per 64 values of each row). Rows past C repeat the last one.
template <int R, int C, int L>
void rows_q4_0(const uint8_t* w, int64_t row_bytes, int64_t lead, int64_t blocks, const BlockDigits& x, int64_t r0,
               float (&out)[R][C]) {
  constexpr int bytes = 18;
  constexpr int groups = (C + 3) / 4;
  const uint8_t* rows[groups][4];
  __m512 acc[R][groups];
  start_row_groups<R, C>(w, row_bytes, rows, acc);
  const int8_t* x_rows[R];
  for (int r = 0; r < R; ++r) {
    x_rows[r] = x.row(r0 + r);
  }
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  const __m512i row_lanes = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  for (int64_t b = 0; b < blocks; ++b) {
    __m512i low[groups];
    __m512i high[groups];
    __m512 scales[groups];
    for (int g = 0; g < groups; ++g) {
      const int64_t at = b * bytes;
      const uint8_t* const* row = rows[g];
      if (b % 2 == 0) {  // one line per 36 bytes of each row: every line of the rows
        for (int i = 0; i < 4; ++i) {
          prefetch_l2(row[i] + at + lead, 1);
        }
      }
      __m512i codes = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row[0] + at + 2)));
      codes = _mm512_inserti32x4(codes, _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[1] + at + 2)), 1);
      codes = _mm512_inserti32x4(codes, _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[2] + at + 2)), 2);
      codes = _mm512_inserti32x4(codes, _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[3] + at + 2)), 3);
      uint64_t halves = 0;
      for (int i = 0; i < 4; ++i) {
        halves |= uint64_t{load_u16(row[i] + at)} << (16 * i);
      }
      low[g] = _mm512_and_si512(codes, nibble);
      high[g] = _mm512_and_si512(_mm512_srli_epi16(codes, 4), nibble);
      // The four scales gathered in a general register: one vector conversion and one permute.
      scales[g] = _mm512_maskz_permutexvar_ps(
          all16, row_lanes, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<int64_t>(halves)))));
    }
    for (int r = 0; r < R; ++r) {
      const int8_t* block = x_rows[r] + b * BlockDigits::record_bytes(L);
      __m512i digits[L][2];
      broadcast_digits<L>(block, digits);
      const __m512i offsets = broadcast_offsets<L>(block);
      float unit_value = 0;
      std::memcpy(&unit_value, block + BlockDigits::unit_at(L), sizeof(float));
      const __m512 unit = _mm512_set1_ps(unit_value);
      for (int g = 0; g < groups; ++g) {
        // The low and the high nibbles' sums in chains of their own: two short chains of dependent vpdpbusd keep
        // more of them in flight than one long one.
        __m512i lows = _mm512_dpbusd_epi32(_mm512_setzero_si512(), low[g], digits[0][0]);
        __m512i highs = _mm512_dpbusd_epi32(_mm512_setzero_si512(), high[g], digits[0][1]);
        for (int l = 1; l < L; ++l) {
          lows = _mm512_dpbusd_epi32(_mm512_maskz_slli_epi32(all16, lows, level_bits), low[g], digits[l][0]);
          highs = _mm512_dpbusd_epi32(_mm512_maskz_slli_epi32(all16, highs, level_bits), high[g], digits[l][1]);
        }
        acc[r][g] =
            _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(all16, _mm512_add_epi32(_mm512_add_epi32(lows, highs), offsets)),
                            _mm512_mul_ps(scales[g], unit), acc[r][g]);
      }
    }
  }
  store_row_groups<R, C>(acc, out);
}

/// Each 128-bit lane of `heads` holds a q4_k block's first 16 bytes (f16 d, f16 dmin, the 12 bytes of packed 6-bit
/// fields; quantization_mode.h): its lane becomes the block's eight scales (bytes 0-7) and eight mins (bytes 8-15).
/// Scale j < 4 is field byte j's low six bits, min j < 4 byte j + 4's; from j = 4 on, the low four bits come from byte
/// j + 4 (its low nibble for the scale, its high one for the min) and the top two from the top bits of byte j - 4 (the
/// scale) or byte j (the min).
inline __m512i q4_k_scales_and_mins(__m512i heads) {
  // Field byte q is byte 4 + q of the lane; 0x80 gives a zero byte.
  const __m512i low_source =
      _mm512_maskz_broadcast_i32x4(all16, _mm_setr_epi8(4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15));
  const __m512i top_source = _mm512_maskz_broadcast_i32x4(
      all16, _mm_setr_epi8(-128, -128, -128, -128, 4, 5, 6, 7, -128, -128, -128, -128, 8, 9, 10, 11));
  const __m512i low = _mm512_shuffle_epi8(heads, low_source);
  const __m512i top = _mm512_shuffle_epi8(heads, top_source);
  const __m512i low_bits =
      _mm512_maskz_broadcast_i32x4(all16, _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0));
  const __m512i high_nibbles = _mm512_and_si512(_mm512_srli_epi16(low, 4), _mm512_set1_epi8(0x0F));
  const __m512i fields =
      _mm512_or_si512(_mm512_and_si512(low, low_bits), _mm512_maskz_mov_epi8(0xF000F000F000F000ULL, high_nibbles));
  // (byte >> 6) << 4: within each 16-bit word the masked top bits cannot cross into the neighbouring byte.
  return _mm512_or_si512(fields, _mm512_srli_epi16(_mm512_and_si512(top, _mm512_set1_epi8(-64)), 2));
}

/// Lanes 4i to 4i + 3 to byte `at` of 128-bit lane i, as floats: a q4_k sub-block's scale or min for each of 4 rows.
inline __m512 lane_bytes(__m512i fields, int at) {
  return _mm512_maskz_cvtepi32_ps(all16,
                                  _mm512_shuffle_epi8(fields, _mm512_set1_epi32(static_cast<int>(0x80808000U) | at)));
}

/// C q4_k rows (blocks of 256: eight 32-value sub-blocks, each with a 6-bit scale and min, in four 64-value chunks
/// whose 32 code bytes hold one sub-block in the low nibbles and the next in the high ones), row_bytes apart, against
/// R rows of x, in q4_0's layout: four rows of w a vector, row i's 16 code bytes in bytes 16i to 16i + 15, so that a
/// sub-block's scale is its lanes' own; both 16-byte halves of a chunk go into one chain of sums per sub-block. The
/// mins meet the sums of x per 32 values, four sub-blocks a vector. Rows past C repeat the last one.
template <int R, int C, int L>
void rows_q4_k(const uint8_t* w, int64_t row_bytes, int64_t lead, int64_t blocks, const BlockDigits& x, int64_t r0,
               float (&out)[R][C]) {
  constexpr int bytes = 144;
  constexpr int groups = (C + 3) / 4;
  const uint8_t* rows[groups][4];
  __m512 acc[R][groups];
  start_row_groups<R, C>(w, row_bytes, rows, acc);
  const int8_t* x_rows[R];
  const float* x_sums[R];
  for (int r = 0; r < R; ++r) {
    x_rows[r] = x.row(r0 + r);
    x_sums[r] = x.sums32(r0 + r);
  }
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  // Words 8i (d) and 8i + 1 (dmin) of the block heads to lanes 4i to 4i + 3 of the low and the high 256 bits.
  const __m512i head_words = _mm512_set_epi16(25, 25, 25, 25, 17, 17, 17, 17, 9, 9, 9, 9, 1, 1, 1, 1, 24, 24, 24, 24,
                                              16, 16, 16, 16, 8, 8, 8, 8, 0, 0, 0, 0);
  // Lanes 4i + j to min j (and 4 + j) of row i.
  const __m512i first_mins = _mm512_maskz_broadcast_i32x4(
      all16, _mm_setr_epi8(8, -128, -128, -128, 9, -128, -128, -128, 10, -128, -128, -128, 11, -128, -128, -128));
  const __m512i last_mins = _mm512_add_epi32(first_mins, _mm512_set1_epi32(4));
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t at = b * bytes;
    __m512 scales[groups][8];
    __m512 mins[groups][2];
    for (int g = 0; g < groups; ++g) {
      const uint8_t* const* row = rows[g];
      for (int i = 0; i < 4; ++i) {
        prefetch_l2(row[i] + at + lead, bytes);
      }
      __m512i heads = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row[0] + at)));
      heads = _mm512_inserti32x4(heads, _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[1] + at)), 1);
      heads = _mm512_inserti32x4(heads, _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[2] + at)), 2);
      heads = _mm512_inserti32x4(heads, _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[3] + at)), 3);
      const __m512i halves = _mm512_permutexvar_epi16(head_words, heads);
      const __m512 d = _mm512_maskz_cvtph_ps(all16, _mm512_maskz_extracti64x4_epi64(all8, halves, 0));
      const __m512 negative_dmin = _mm512_sub_ps(
          _mm512_setzero_ps(), _mm512_maskz_cvtph_ps(all16, _mm512_maskz_extracti64x4_epi64(all8, halves, 1)));
      const __m512i fields = q4_k_scales_and_mins(heads);
      for (int s = 0; s < 8; ++s) {
        scales[g][s] = _mm512_mul_ps(lane_bytes(fields, s), d);
      }
      mins[g][0] =
          _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(all16, _mm512_shuffle_epi8(fields, first_mins)), negative_dmin);
      mins[g][1] =
          _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(all16, _mm512_shuffle_epi8(fields, last_mins)), negative_dmin);
    }
    for (int r = 0; r < R; ++r) {
      const float* sums = x_sums[r] + b * 8;
      const __m512 first_sums = _mm512_maskz_broadcast_f32x4(all16, _mm_loadu_ps(sums));
      const __m512 last_sums = _mm512_maskz_broadcast_f32x4(all16, _mm_loadu_ps(sums + 4));
      for (int g = 0; g < groups; ++g) {
        acc[r][g] = _mm512_fmadd_ps(mins[g][0], first_sums, acc[r][g]);
        acc[r][g] = _mm512_fmadd_ps(mins[g][1], last_sums, acc[r][g]);
      }
    }
    for (int q = 0; q < 4; ++q) {
      __m512i low[groups][2];
      __m512i high[groups][2];
      for (int g = 0; g < groups; ++g) {
        const uint8_t* const* row = rows[g];
        const int64_t codes_at = at + 16 + int64_t{32} * q;
        const auto chunk = [&](int i) {
          return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row[i] + codes_at));
        };
        const __m512i first_pair = _mm512_maskz_inserti64x4(all8, _mm512_castsi256_si512(chunk(0)), chunk(1), 1);
        const __m512i last_pair = _mm512_maskz_inserti64x4(all8, _mm512_castsi256_si512(chunk(2)), chunk(3), 1);
        for (int h = 0; h < 2; ++h) {
          // Half h of each row's 32 code bytes: 128-bit lanes h and 2 + h of each pair.
          const __m512i codes = h == 0
                                    ? _mm512_maskz_shuffle_i64x2(all8, first_pair, last_pair, _MM_SHUFFLE(2, 0, 2, 0))
                                    : _mm512_maskz_shuffle_i64x2(all8, first_pair, last_pair, _MM_SHUFFLE(3, 1, 3, 1));
          low[g][h] = _mm512_and_si512(codes, nibble);
          high[g][h] = _mm512_and_si512(_mm512_srli_epi16(codes, 4), nibble);
        }
      }
      for (int r = 0; r < R; ++r) {
        for (int n = 0; n < 2; ++n) {  // the low nibbles' sub-block, then the high nibbles'
          const int s = 2 * q + n;
          const int8_t* block = x_rows[r] + (b * 8 + s) * BlockDigits::record_bytes(L);
          __m512i digits[L][2];
          broadcast_digits<L>(block, digits);
          float unit_value = 0;
          std::memcpy(&unit_value, block + BlockDigits::unit_at(L), sizeof(float));
          const __m512 unit = _mm512_set1_ps(unit_value);
          for (int g = 0; g < groups; ++g) {
            const __m512i(&codes)[2] = n == 0 ? low[g] : high[g];
            __m512i sums = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), codes[0], digits[0][0]),
                                               codes[1], digits[0][1]);
            for (int l = 1; l < L; ++l) {
              sums = _mm512_dpbusd_epi32(_mm512_maskz_slli_epi32(all16, sums, level_bits), codes[0], digits[l][0]);
              sums = _mm512_dpbusd_epi32(sums, codes[1], digits[l][1]);
            }
            acc[r][g] =
                _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(all16, sums), _mm512_mul_ps(scales[g][s], unit), acc[r][g]);
          }
        }
      }
    }
  }
  store_row_groups<R, C>(acc, out);
}

/// C q6_k rows (blocks of 256: 6-bit codes in two planes, an int8 scale per 16 values), row_bytes apart, against R
/// rows of x as spans (SpanDigits): each 128 values' codes, unpacked in value order, are moved by dwords into P and Q,
/// the order of x's digits, so that one chain of sums takes the 128 values; the codes' offset -32 is added once.
template <int R, int C, int L>
void rows_q6_k(const uint8_t* w, int64_t row_bytes, int64_t lead, int64_t blocks, const SpanDigits& x, int64_t r0,
               float (&out)[R][C]) {
  __m512 acc[R][C];
  for (auto& row : acc) {
    std::fill_n(row, C, _mm512_setzero_ps());
  }
  const __m512i low_mask = _mm512_set1_epi8(0x0F);
  const __m512i high_mask = _mm512_set1_epi8(0x30);
  // Lane l of P: dword 4 (l / 2) + l % 2 of the 128 values' codes (32 dwords across two vectors); of Q: two further on.
  const __m512i first_dwords = _mm512_set_epi32(29, 28, 25, 24, 21, 20, 17, 16, 13, 12, 9, 8, 5, 4, 1, 0);
  const __m512i last_dwords = _mm512_add_epi32(first_dwords, _mm512_set1_epi32(2));
  for (int64_t b = 0; b < blocks; ++b) {
    __m512 scales[C];
    for (int c = 0; c < C; ++c) {
      const uint8_t* block = w + c * row_bytes + b * 210;
      prefetch_l2(block + lead, 210);
      scales[c] = _mm512_mul_ps(
          _mm512_set1_ps(half_at(block + 208)),
          _mm512_maskz_cvtepi32_ps(all16, _mm512_maskz_cvtepi8_epi32(
                                              all16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 192)))));
    }
    for (int n = 0; n < 2; ++n) {
      __m512i codes[C][2];
      __m512 lane_scales[C];
      // Lane l's group: 8n + l / 2.
      const __m512i groups =
          _mm512_add_epi32(_mm512_srli_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), 1),
                           _mm512_set1_epi32(8 * n));
      for (int c = 0; c < C; ++c) {
        const uint8_t* block = w + c * row_bytes + b * 210;
        const __m512i low = _mm512_loadu_si512(block + int64_t{64} * n);
        const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 128 + int64_t{32} * n));
        // Bits 0-1 of the high plane belong to values 0-31, bits 2-3 to 32-63, 4-5 to 64-95, 6-7 to 96-127.
        const __m512i h = _mm512_srlv_epi16(_mm512_maskz_broadcast_i64x4(all8, high), shift_counts(2));
        const __m512i first_codes =
            _mm512_or_si512(_mm512_and_si512(low, low_mask), _mm512_and_si512(_mm512_slli_epi16(h, 4), high_mask));
        const __m512i second_codes =
            _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(low, 4), low_mask), _mm512_and_si512(h, high_mask));
        codes[c][0] = _mm512_permutex2var_epi32(first_codes, first_dwords, second_codes);
        codes[c][1] = _mm512_permutex2var_epi32(first_codes, last_dwords, second_codes);
        lane_scales[c] = _mm512_maskz_permutexvar_ps(all16, groups, scales[c]);
      }
      for (int r = 0; r < R; ++r) {
        const int8_t* span = x.span(r0 + r, 2 * b + n);
        __m512i digits[L][2];
        for (int l = 0; l < L; ++l) {
          digits[l][0] = _mm512_loadu_si512(span + int64_t{128} * l);
          digits[l][1] = _mm512_loadu_si512(span + int64_t{128} * l + 64);
        }
        const __m512i offsets = _mm512_loadu_si512(span + SpanDigits::offsets_at(L));
        const __m512 units = _mm512_loadu_ps(reinterpret_cast<const float*>(span + SpanDigits::units_at(L)));
        for (int c = 0; c < C; ++c) {
          __m512i sums = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), codes[c][0], digits[0][0]),
                                             codes[c][1], digits[0][1]);
          for (int l = 1; l < L; ++l) {
            sums = _mm512_dpbusd_epi32(_mm512_maskz_slli_epi32(all16, sums, level_bits), codes[c][0], digits[l][0]);
            sums = _mm512_dpbusd_epi32(sums, codes[c][1], digits[l][1]);
          }
          acc[r][c] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(all16, _mm512_add_epi32(sums, offsets)),
                                      _mm512_mul_ps(lane_scales[c], units), acc[r][c]);
        }
      }
    }
  }
  store_sums(acc, out);
}

/// Eight q4_0x8 rows (a group: B x 8 scales, then B x 128 code bytes; quantization_mode.h) against R rows of x, two
/// blocks at a time: each 64 code bytes hold four rows' 16 (rows 4q to 4q + 3 in vector q), so that lane 4i + j sums
/// values 4j to 4j + 3 and 16 + 4j to 16 + 4j + 3 of one row's block, as in rows_q4_0, from one load. The two
/// blocks' 16 scales convert at once, times each block's unit of x, and each vector takes its four lanes' own by a
/// permute. Each digit of x gets a chain of sums of its own (the last one starting from the offsets), combined by
/// shifts at the end, so that the chains are short and independent.
template <int R, int L>
void rows_q4_0x8(const uint8_t* group, int64_t lead, int64_t blocks, const BlockDigits& x, int64_t r0,
                 float (&out)[R][8]) {
  const uint8_t* scale_bytes = group;
  const uint8_t* code_bytes = group + blocks * 16;
  __m512 acc[R][2];
  const int8_t* x_rows[R];
  for (int r = 0; r < R; ++r) {
    acc[r][0] = _mm512_setzero_ps();
    acc[r][1] = _mm512_setzero_ps();
    x_rows[r] = x.row(r0 + r);
  }
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  // Lane 4i + j of vector q of block h takes scale 8h + 4q + i of the two blocks'.
  __m512i scale_lanes[2][2];
  for (int h = 0; h < 2; ++h) {
    for (int q = 0; q < 2; ++q) {
      scale_lanes[h][q] = _mm512_add_epi32(_mm512_set1_epi32(8 * h + 4 * q),
                                           _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0));
    }
  }
  const __m512i unit_lanes = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  for (int64_t b = 0; b < blocks; b += 2) {
    prefetch_l2(code_bytes + b * 128 + lead, 256);
    if (b % 4 == 0) {  // the scales, one line per four blocks (lead is whole groups: the same place in a later one)
      prefetch_l2(scale_bytes + b * 16 + lead, 64);
    }
    const __m512 scales =
        _mm512_maskz_cvtph_ps(all16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(scale_bytes + b * 16)));
    __m512i low[2][2];
    __m512i high[2][2];
    for (int h = 0; h < 2; ++h) {
      for (int q = 0; q < 2; ++q) {
        const __m512i codes = _mm512_loadu_si512(code_bytes + (b + h) * 128 + 64 * q);
        low[h][q] = _mm512_and_si512(codes, nibble);
        high[h][q] = _mm512_and_si512(_mm512_srli_epi16(codes, 4), nibble);
      }
    }
    for (int r = 0; r < R; ++r) {
      const int8_t* pair = x_rows[r] + b * BlockDigits::record_bytes(L);
      float units[2];
      for (int h = 0; h < 2; ++h) {
        std::memcpy(&units[h], pair + h * BlockDigits::record_bytes(L) + BlockDigits::unit_at(L), sizeof(float));
      }
      const __m512 scaled = _mm512_mul_ps(
          scales, _mm512_maskz_permutexvar_ps(all16, unit_lanes,
                                              _mm512_castps128_ps512(_mm_setr_ps(units[0], units[1], 0.F, 0.F))));
      for (int h = 0; h < 2; ++h) {
        const int8_t* block = pair + h * BlockDigits::record_bytes(L);
        __m512i digits[L][2];
        broadcast_digits<L>(block, digits);
        const __m512i offsets = broadcast_offsets<L>(block);
        for (int q = 0; q < 2; ++q) {
          __m512i sums[L];
          for (int l = 0; l < L; ++l) {
            sums[l] = _mm512_dpbusd_epi32(l == L - 1 ? offsets : _mm512_setzero_si512(), low[h][q], digits[l][0]);
            sums[l] = _mm512_dpbusd_epi32(sums[l], high[h][q], digits[l][1]);
          }
          __m512i total = sums[0];
          for (int l = 1; l < L; ++l) {
            total = _mm512_add_epi32(_mm512_maskz_slli_epi32(all16, total, level_bits), sums[l]);
          }
          acc[r][q] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(all16, total),
                                      _mm512_maskz_permutexvar_ps(all16, scale_lanes[h][q], scaled), acc[r][q]);
        }
      }
    }
  }
  store_row_groups<R, 8>(acc, out);
}

/// The low and the high nibbles of the 64 code bytes at p, as unsigned bytes (the x16 layouts' code dwords).
inline void split_nibbles(const uint8_t* p, __m512i& low, __m512i& high) {
  const __m512i bytes = _mm512_loadu_si512(p);
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  low = _mm512_and_si512(bytes, nibble);
  high = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), nibble);
}

/// A q4_kx16 block's sixteen rows' d * scale (scales[s]) and dmin * min (mins[s]) of each sub-block s, lane i row
/// i's: dword 0 of a row holds d and dmin, dwords 1 to 3 q4_k's 12 bytes of 6-bit fields (q4_k_scale_min), so that
/// byte t of every lane of dword 1 & 63 is scale t, of dword 2 & 63 min t, and scale 4 + t is dword 3's low nibble
/// under dword 1's top two bits, min 4 + t dword 3's high nibble under dword 2's.
inline void q4_kx16_fields(const uint8_t* block, __m512 (&scales)[8], __m512 (&mins)[8]) {
  const __m512i heads = _mm512_loadu_si512(block);
  const __m512 d = _mm512_maskz_cvtph_ps(all16, _mm512_maskz_cvtepi32_epi16(all16, heads));
  const __m512 dmin =
      _mm512_maskz_cvtph_ps(all16, _mm512_maskz_cvtepi32_epi16(all16, _mm512_maskz_srli_epi32(all16, heads, 16)));
  const __m512i first = _mm512_loadu_si512(block + 64);
  const __m512i second = _mm512_loadu_si512(block + 128);
  const __m512i third = _mm512_loadu_si512(block + 192);
  const __m512i six_bits = _mm512_set1_epi8(0x3F);
  const __m512i low_nibble = _mm512_set1_epi8(0x0F);
  // Bits 0-3 of each byte from the first operand, 4-7 from the second (ternary logic 0xE4: c ? a : b), then six bits.
  const auto nibble_under = [&](__m512i low, __m512i top) {
    return _mm512_and_si512(_mm512_ternarylogic_epi32(low, top, low_nibble, 0xE4), six_bits);
  };
  const __m512i fields[4] = {_mm512_and_si512(first, six_bits), _mm512_and_si512(second, six_bits),
                             nibble_under(third, _mm512_srli_epi16(first, 2)),
                             nibble_under(_mm512_srli_epi16(third, 4), _mm512_srli_epi16(second, 2))};
  for (int t = 0; t < 4; ++t) {
    // Byte t of each dword to the dword's low byte, the rest zero (0x80).
    const __m512i byte_t = _mm512_maskz_broadcast_i32x4(
        all16, _mm_setr_epi32(static_cast<int>(0x80808000U) | t, static_cast<int>(0x80808004U) | t,
                              static_cast<int>(0x80808008U) | t, static_cast<int>(0x8080800CU) | t));
    const auto field = [&](int f) { return _mm512_maskz_cvtepi32_ps(all16, _mm512_shuffle_epi8(fields[f], byte_t)); };
    scales[t] = _mm512_mul_ps(field(0), d);
    mins[t] = _mm512_mul_ps(field(1), dmin);
    scales[4 + t] = _mm512_mul_ps(field(2), d);
    mins[4 + t] = _mm512_mul_ps(field(3), dmin);
  }
}

/// Sixteen q4_kx16 rows (a group, one block after another) against R rows of x: lane i of out[r] is row i's dot with
/// row r of x. Code dword j of a 64-value chunk holds, in each row's lane, values 4j to 4j + 3 of its first sub-block
/// (low nibbles) and of its second (high nibbles), so that a lane sums a whole sub-block of its row against x's
/// digits broadcast four at a time, in chains of half a sub-block per digit, and is converted and scaled once per
/// sub-block; the mins meet x's sums per 32 values. The levels' sums combine in the integer lanes up to two levels
/// (32 values * 15 * 128 * 2^8 < 2^31); a third is added in float.
template <int R, int L>
void rows_q4_kx16(const uint8_t* group, int64_t lead, int64_t blocks, const BlockDigits& x, int64_t r0,
                  __m512 (&out)[R]) {
  __m512 acc[R];
  const int8_t* x_rows[R];
  const float* x_sums[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm512_setzero_ps();
    x_rows[r] = x.row(r0 + r);
    x_sums[r] = x.sums32(r0 + r);
  }
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = group + b * 2304;
    prefetch_l2(block + lead, 2304);
    __m512 scales[8];
    __m512 mins[8];
    q4_kx16_fields(block, scales, mins);
    for (int r = 0; r < R; ++r) {
      for (int s = 0; s < 8; ++s) {
        acc[r] = _mm512_fnmadd_ps(mins[s], _mm512_set1_ps(x_sums[r][8 * b + s]), acc[r]);
      }
    }
    for (int q = 0; q < 4; ++q) {
      __m512i codes[2][8];  // [low nibbles: sub-block 2q, high: 2q + 1][dword]
      for (int j = 0; j < 8; ++j) {
        split_nibbles(block + 256 + 512 * q + 64 * j, codes[0][j], codes[1][j]);
      }
      for (int r = 0; r < R; ++r) {
        for (int h = 0; h < 2; ++h) {
          const int8_t* record = x_rows[r] + (8 * b + 2 * q + h) * BlockDigits::record_bytes(L);
          __m512i sums[L][2];
          for (int l = 0; l < L; ++l) {
            for (int half = 0; half < 2; ++half) {
              sums[l][half] = _mm512_setzero_si512();
              for (int j = 4 * half; j < 4 * half + 4; ++j) {
                sums[l][half] = _mm512_dpbusd_epi32(sums[l][half], codes[h][j],
                                                    _mm512_set1_epi32(load_i32(record + 32 * l + 4 * j)));
              }
            }
          }
          __m512i high = _mm512_add_epi32(sums[0][0], sums[0][1]);
          if constexpr (L > 1) {
            high = _mm512_add_epi32(_mm512_maskz_slli_epi32(all16, high, level_bits),
                                    _mm512_add_epi32(sums[1][0], sums[1][1]));
          }
          __m512 total = _mm512_maskz_cvtepi32_ps(all16, high);
          if constexpr (L > 2) {
            total = _mm512_fmadd_ps(total, _mm512_set1_ps(level_ratio),
                                    _mm512_maskz_cvtepi32_ps(all16, _mm512_add_epi32(sums[2][0], sums[2][1])));
          }
          float unit_value = 0;
          std::memcpy(&unit_value, record + BlockDigits::unit_at(L), sizeof(float));
          acc[r] = _mm512_fmadd_ps(total, _mm512_mul_ps(scales[2 * q + h], _mm512_set1_ps(unit_value)), acc[r]);
        }
      }
    }
  }
  std::copy_n(acc, R, out);
}

/// Sixteen q4_0x16 rows (a group: per block the sixteen d, then four code dwords of each row) against R rows of x:
/// lane i of out[r] is row i's dot with row r of x. Code dword j holds, in each row's lane, values 4j to 4j + 3 of
/// its block (low nibbles) and 16 + 4j to 16 + 4j + 3 (high), which x's record lane j's offset covers, so that a
/// lane sums its row's whole block against x's digits broadcast four at a time and is converted and scaled once. Up
/// to two levels the block's sums and its offset total combine in the integer lanes; with three, each dword's chain
/// keeps its own offset (eight values, as q4_0x8's lanes) and the four are added in float.
template <int R, int L>
void rows_q4_0x16(const uint8_t* group, int64_t lead, int64_t blocks, const BlockDigits& x, int64_t r0,
                  __m512 (&out)[R]) {
  __m512 acc[R];
  const int8_t* x_rows[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm512_setzero_ps();
    x_rows[r] = x.row(r0 + r);
  }
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = group + b * 288;
    prefetch_l2(block + lead, 288);
    const __m512 scales = _mm512_maskz_cvtph_ps(all16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block)));
    __m512i codes[2][4];  // [low nibbles: values 4j on, high: 16 + 4j on][dword j]
    for (int j = 0; j < 4; ++j) {
      split_nibbles(block + 32 + 64 * j, codes[0][j], codes[1][j]);
    }
    for (int r = 0; r < R; ++r) {
      const int8_t* record = x_rows[r] + b * BlockDigits::record_bytes(L);
      __m512i sums[L][4];
      for (int l = 0; l < L; ++l) {
        for (int j = 0; j < 4; ++j) {
          const int8_t* digits = record + 32 * l;
          sums[l][j] = _mm512_dpbusd_epi32(
              _mm512_dpbusd_epi32(_mm512_setzero_si512(), codes[0][j], _mm512_set1_epi32(load_i32(digits + 4 * j))),
              codes[1][j], _mm512_set1_epi32(load_i32(digits + 16 + 4 * j)));
        }
      }
      __m512 total;
      if constexpr (L < 3) {
        __m512i sum = _mm512_setzero_si512();
        for (int l = 0; l < L; ++l) {
          sum = _mm512_add_epi32(
              _mm512_maskz_slli_epi32(all16, sum, level_bits),
              _mm512_add_epi32(_mm512_add_epi32(sums[l][0], sums[l][1]), _mm512_add_epi32(sums[l][2], sums[l][3])));
        }
        sum = _mm512_add_epi32(sum, _mm512_set1_epi32(load_i32(record + BlockDigits::total_at(L))));
        total = _mm512_maskz_cvtepi32_ps(all16, sum);
      } else {
        total = _mm512_setzero_ps();
        for (int j = 0; j < 4; ++j) {
          __m512i sum = sums[0][j];
          for (int l = 1; l < L; ++l) {
            sum = _mm512_add_epi32(_mm512_maskz_slli_epi32(all16, sum, level_bits), sums[l][j]);
          }
          sum = _mm512_add_epi32(sum, _mm512_set1_epi32(load_i32(record + BlockDigits::offsets_at(L) + 4 * j)));
          total = _mm512_add_ps(total, _mm512_maskz_cvtepi32_ps(all16, sum));
        }
      }
      float unit_value = 0;
      std::memcpy(&unit_value, record + BlockDigits::unit_at(L), sizeof(float));
      acc[r] = _mm512_fmadd_ps(total, _mm512_mul_ps(scales, _mm512_set1_ps(unit_value)), acc[r]);
    }
  }
  std::copy_n(acc, R, out);
}

/// The eight code vectors of block b of a q8_0x16 group (dword j of every row in vector j), made unsigned (code + 128;
/// the offset -128 is in x's records).
inline void q8_0x16_codes(const uint8_t* group, int64_t b, __m512i (&codes)[8]) {
  const __m512i sign = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int j = 0; j < 8; ++j) {
    codes[j] = _mm512_xor_si512(_mm512_loadu_si512(group + b * 512 + 64 * j), sign);
  }
}

/// The sixteen d of block b of a q8_0x16 group of `blocks` blocks: after the blocks' codes.
inline __m512 q8_0x16_d(const uint8_t* group, int64_t blocks, int64_t b) {
  return _mm512_maskz_cvtph_ps(all16,
                               _mm256_loadu_si256(reinterpret_cast<const __m256i*>(group + blocks * 512 + 32 * b)));
}

/// Sixteen q8_0x16 rows (a group: each block's eight code dwords of every row, 512 bytes, then every block's d)
/// against R rows of x: lane i of out[r] is row i's dot with row r of x. Code dword j holds values 4j to 4j + 3 of
/// each row's block, made unsigned (code + 128) and met by x's digits broadcast four at a time, so that a lane sums
/// its row's whole block. Up to two levels the digits' sums and x's offset total (-128 times the sum of Q) combine in
/// the integer lanes (below 2^29); with three, Q = 2^16 d_0 + R splits into the first digit's sum and that of the
/// other two, each with its own offset (the records carry -1 times the sums of Q and of d_0), joined in float.
template <int R, int L>
void rows_q8_0x16(const uint8_t* group, int64_t lead, int64_t blocks, const BlockDigits& x, int64_t r0,
                  __m512 (&out)[R]) {
  __m512 acc[R];
  const int8_t* x_rows[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm512_setzero_ps();
    x_rows[r] = x.row(r0 + r);
  }
  for (int64_t b = 0; b < blocks; ++b) {
    // The group's bytes (codes, then the d) are asked for at the pace they are read, so that the stream ahead has no
    // gaps where a group's d lies.
    prefetch_l2(group + b * 544 + lead, 544);
    const __m512 scales = q8_0x16_d(group, blocks, b);
    __m512i codes[8];
    q8_0x16_codes(group, b, codes);
    for (int r = 0; r < R; ++r) {
      const int8_t* record = x_rows[r] + b * BlockDigits::record_bytes(L);
      __m512i sums[L];  // each level's two chains of four dwords, added
      for (int l = 0; l < L; ++l) {
        const int8_t* digits = record + 32 * l;
        __m512i chains[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
        for (int j = 0; j < 8; ++j) {
          chains[j % 2] = _mm512_dpbusd_epi32(chains[j % 2], codes[j], _mm512_set1_epi32(load_i32(digits + 4 * j)));
        }
        sums[l] = _mm512_add_epi32(chains[0], chains[1]);
      }
      const int32_t total = load_i32(record + BlockDigits::total_at(L));
      __m512 dot;
      if constexpr (L < 3) {
        __m512i sum = sums[0];
        for (int l = 1; l < L; ++l) {
          sum = _mm512_add_epi32(_mm512_maskz_slli_epi32(all16, sum, level_bits), sums[l]);
        }
        dot = _mm512_maskz_cvtepi32_ps(all16, _mm512_add_epi32(sum, _mm512_set1_epi32(total)));
      } else {
        const int32_t first = load_i32(record + BlockDigits::first_digit_total_at(L));  // -(sum of d_0)
        const __m512i high = _mm512_add_epi32(sums[0], _mm512_set1_epi32(128 * first));
        const __m512i rest = _mm512_add_epi32(_mm512_maskz_slli_epi32(all16, sums[1], level_bits), sums[2]);
        const __m512i low = _mm512_add_epi32(rest, _mm512_set1_epi32(128 * (total - first * 65536)));
        dot = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(all16, high), _mm512_set1_ps(65536.F),
                              _mm512_maskz_cvtepi32_ps(all16, low));
      }
      float unit_value = 0;
      std::memcpy(&unit_value, record + BlockDigits::unit_at(L), sizeof(float));
      acc[r] = _mm512_fmadd_ps(dot, _mm512_mul_ps(scales, _mm512_set1_ps(unit_value)), acc[r]);
    }
  }
  std::copy_n(acc, R, out);
}

/// The 6-bit codes of step m of half h of a q6_kx16 block (values 128h + 32t + 4m to + 3 of each row, in codes[t]):
/// the half's vectors 2 + 3m and 3 + 3m (its low-bit dwords m and 8 + m) hold their low four bits, t = 0 and 1 in the
/// low nibbles and 2 and 3 in the high ones, and vector 4 + 3m (its high-bit dword m) their high two bits at bits 2t
/// and 2t + 1 (q6_k's planes; quantization_mode.h).
inline void q6_kx16_codes(const uint8_t* block, int64_t h, int64_t m, __m512i (&codes)[4]) {
  const uint8_t* step = block + 64 * (26 * h + 2 + 3 * m);
  __m512i low[2][2];  // [t % 2][t / 2]
  split_nibbles(step, low[0][0], low[0][1]);
  split_nibbles(step + 64, low[1][0], low[1][1]);
  const __m512i high = _mm512_loadu_si512(step + 128);
  const __m512i placed[4] = {_mm512_slli_epi16(high, 4), _mm512_slli_epi16(high, 2), high,
                             _mm512_srli_epi16(high, 2)};  // bits 2t and 2t + 1 at bits 4 and 5
  const __m512i bits_4_5 = _mm512_set1_epi8(0x30);
  for (int t = 0; t < 4; ++t) {
    // a | (b & c): ternary logic 0xF8.
    codes[t] = _mm512_ternarylogic_epi32(low[t % 2][t / 2], placed[t], bits_4_5, 0xF8);
  }
}

/// A q6_kx16 block's sixteen rows' scales of their values 16g to 16g + 15, lane i row i's: d (the block's sixteen
/// float16 d, converted in `d`) times the int8 byte g % 4 of the half's scale vector g % 8 / 4.
inline __m512 q6_kx16_scale(const uint8_t* block, __m512 d, int g) {
  const __m512i dword = _mm512_loadu_si512(block + 64 * (26 * (g / 8) + g % 8 / 4));
  const __m512i scale = _mm512_maskz_srai_epi32(all16, _mm512_maskz_slli_epi32(all16, dword, 24 - 8 * (g % 4)), 24);
  return _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(all16, scale), d);
}

/// The sixteen d of block b of a q6_kx16 group of `blocks` blocks: after the blocks' code and scale dwords.
inline __m512 q6_kx16_d(const uint8_t* group, int64_t blocks, int64_t b) {
  return _mm512_maskz_cvtph_ps(all16,
                               _mm256_loadu_si256(reinterpret_cast<const __m256i*>(group + blocks * 3328 + 32 * b)));
}

/// Sixteen q6_kx16 rows (a group: each block's dwords, then every block's d) against R rows of x: lane i of out[r] is
/// row i's dot with row r of x. A code vector holds values 4m to 4m + 3 of a sub-block of every row (q6_kx16_codes), so
/// that a lane sums each 16 values of its row against x's digits broadcast four at a time and is converted and scaled
/// once per scale. Up to two levels the sums and the code offset's (-32 times the values' sum of Q, x's record's
/// first-half total or the rest) combine in the integer lanes (16 * 63 * 2^15 < 2^31); with three, the first two levels
/// do and the third is added in float, and x's records carry -1 times the sums of Q (-32 times them could pass 2^31),
/// which are multiplied by 32 in float.
template <int R, int L>
void rows_q6_kx16(const uint8_t* group, int64_t blocks, const BlockDigits& x, int64_t r0, __m512 (&out)[R]) {
  constexpr int64_t record_bytes = BlockDigits::record_bytes(L);
  __m512 acc[R];
  const int8_t* x_rows[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm512_setzero_ps();
    x_rows[r] = x.row(r0 + r);
  }
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = group + b * 3328;
    // The blocks are read in order, which the hardware's prefetcher follows better than prefetches of them did
    // (1.15 times the bandwidth floor against 1.6 on one thread); the d, read apart, are asked for a group ahead.
    if (b == 0) {
      prefetch_l2(group + blocks * 3360 + blocks * 3328, blocks * 32);
    }
    const __m512 d = q6_kx16_d(group, blocks, b);
    // Unrolled, so that the sums stay in registers and the scales' shifts are constants.
#pragma GCC unroll 2
    for (int64_t h = 0; h < 2; ++h) {
      const int64_t first_record = (8 * b + 4 * h) * record_bytes;  // of sub-block 4h, then one per t
#pragma GCC unroll 2
      for (int half = 0; half < 2; ++half) {
        __m512i sums[R][4][L];
        for (auto& row : sums) {
          for (auto& sub_block : row) {
            std::fill_n(sub_block, L, _mm512_setzero_si512());
          }
        }
#pragma GCC unroll 4
        for (int64_t j = 0; j < 4; ++j) {
          const int64_t m = 4 * half + j;
          __m512i codes[4];
          q6_kx16_codes(block, h, m, codes);
          for (int r = 0; r < R; ++r) {
            for (int t = 0; t < 4; ++t) {
              const int8_t* digits = x_rows[r] + first_record + t * record_bytes + 4 * m;
              for (int l = 0; l < L; ++l) {
                sums[r][t][l] =
                    _mm512_dpbusd_epi32(sums[r][t][l], codes[t], _mm512_set1_epi32(load_i32(digits + 32 * l)));
              }
            }
          }
        }
        for (int t = 0; t < 4; ++t) {
          const __m512 scale = q6_kx16_scale(block, d, static_cast<int>(8 * h) + 2 * t + half);
          for (int r = 0; r < R; ++r) {
            const int8_t* record = x_rows[r] + first_record + t * record_bytes;
            const int32_t first_half = load_i32(record + BlockDigits::first_half_total_at(L));
            const int32_t offset = half == 0 ? first_half : load_i32(record + BlockDigits::total_at(L)) - first_half;
            __m512i high = sums[r][t][0];
            if constexpr (L > 1) {
              high = _mm512_add_epi32(_mm512_maskz_slli_epi32(all16, high, level_bits), sums[r][t][1]);
            }
            __m512 total;
            if constexpr (L < 3) {
              total = _mm512_maskz_cvtepi32_ps(all16, _mm512_add_epi32(high, _mm512_set1_epi32(offset)));
            } else {
              total = _mm512_add_ps(_mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(all16, high), _mm512_set1_ps(level_ratio),
                                                    _mm512_maskz_cvtepi32_ps(all16, sums[r][t][2])),
                                    _mm512_set1_ps(32.F * static_cast<float>(offset)));
            }
            float unit_value = 0;
            std::memcpy(&unit_value, record + BlockDigits::unit_at(L), sizeof(float));
            acc[r] = _mm512_fmadd_ps(total, _mm512_mul_ps(scale, _mm512_set1_ps(unit_value)), acc[r]);
          }
        }
      }
    }
  }
  std::copy_n(acc, R, out);
}

/// One block of a panel of 16 rows of w for the prefill kernel: its codes as eight vectors of unsigned bytes whose lane
/// i holds four codes of row i, vector j values 4j to 4j + 3 of the block and vector 4 + j values 16 + 4j to 16 + 4j +
/// 3, and the rows' scales.
struct PanelBlock {
  __m512i codes[8];
  __m512 scales;       // of the block, or of its first 16 values (vectors 0-3) where the format has two
  __m512 mins;         // q4_k's, which meet x's sums per 32 values; the formats without mins leave them unset
  __m512 last_scales;  // q6_k's, of the block's last 16 values (vectors 4-7); the others leave them unset
};

/// q4_0x8 rows as panels: two groups each (the last one alone where the groups are odd). A group's vector a (its rows
/// 4a to 4a + 3, 16 code bytes each) holds in lane 4a + r its row's code bytes 4r to 4r + 3, so vector j of a panel
/// gathers dword j of every row: two-source permutes collect dwords j and j + 1 of one group's eight rows, and 128-bit
/// shuffles join the two groups; the low nibbles are values 4j to 4j + 3, the high ones 16 + 4j on.
struct InterleavedPanels {
  static constexpr bool has_mins = false;
  static constexpr bool two_scales = false;
  static constexpr int64_t blocks_per_move = 1;
  const uint8_t* w;
  int64_t blocks;
  int64_t groups;

  void move(int64_t p, int64_t b, PanelBlock* moved) const {
    PanelBlock& out = *moved;
    const int64_t group_bytes = int64_t{8} * blocks * 18;
    const uint8_t* first = w + 2 * p * group_bytes;
    const uint8_t* second = 2 * p + 1 < groups ? first + group_bytes : first;
    const uint8_t* codes[2] = {first + blocks * 16 + b * 128, second + blocks * 16 + b * 128};
    __m512i rows[2][2];
    for (int g = 0; g < 2; ++g) {
      rows[g][0] = _mm512_loadu_si512(codes[g]);
      rows[g][1] = _mm512_loadu_si512(codes[g] + 64);
    }
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    for (int j = 0; j < 4; j += 2) {
      // Lanes 0-7: dword j of the group's rows 0-7 (16 + x: of its second vector); lanes 8-15: dword j + 1.
      const __m512i index = _mm512_add_epi32(
          _mm512_set1_epi32(j), _mm512_set_epi32(29, 25, 21, 17, 13, 9, 5, 1, 28, 24, 20, 16, 12, 8, 4, 0));
      const __m512i a = _mm512_permutex2var_epi32(rows[0][0], index, rows[0][1]);
      const __m512i c = _mm512_permutex2var_epi32(rows[1][0], index, rows[1][1]);
      const __m512i dwords[2] = {_mm512_maskz_shuffle_i64x2(all8, a, c, 0x44),
                                 _mm512_maskz_shuffle_i64x2(all8, a, c, 0xEE)};
      for (int i = 0; i < 2; ++i) {
        out.codes[j + i] = _mm512_and_si512(dwords[i], nibble);
        out.codes[4 + j + i] = _mm512_and_si512(_mm512_srli_epi16(dwords[i], 4), nibble);
      }
    }
    out.scales = _mm512_maskz_cvtph_ps(
        all16, _mm256_inserti128_si256(
                   _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(first + b * 16))),
                   _mm_loadu_si128(reinterpret_cast<const __m128i*>(second + b * 16)), 1));
  }
};

/// q4_0x16 rows as panels: each group of sixteen rows is one, its code dwords already one vector each (the low
/// nibbles values 4j to 4j + 3, the high ones 16 + 4j on), so that a move is loads.
struct Q4_0x16Panels {
  static constexpr bool has_mins = false;
  static constexpr bool two_scales = false;
  static constexpr int64_t blocks_per_move = 1;
  const uint8_t* w;
  int64_t blocks;

  void move(int64_t p, int64_t b, PanelBlock* moved) const {
    PanelBlock& out = *moved;
    const uint8_t* block = w + (p * blocks + b) * 288;
    for (int j = 0; j < 4; ++j) {
      split_nibbles(block + 32 + 64 * j, out.codes[j], out.codes[4 + j]);
    }
    out.scales = _mm512_maskz_cvtph_ps(all16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block)));
  }
};

/// q8_0x16 rows as panels: each group of sixteen rows is one, its code dwords already one vector each
/// (q8_0x16_codes), so that a move is loads.
struct Q8_0x16Panels {
  static constexpr bool has_mins = false;
  static constexpr bool two_scales = false;
  static constexpr int64_t blocks_per_move = 1;
  const uint8_t* w;
  int64_t blocks;

  void move(int64_t p, int64_t b, PanelBlock* moved) const {
    const uint8_t* group = w + p * blocks * 544;
    q8_0x16_codes(group, b, moved->codes);
    moved->scales = q8_0x16_d(group, blocks, b);
  }
};

/// Byte offsets of panel p's 16 rows (of n, row_bytes apart) from its first, for gathers; rows past the last repeat it.
inline __m512i panel_row_starts(int64_t n, int64_t p, int64_t row_bytes) {
  const __m512i rows =
      _mm512_maskz_min_epi32(all16, _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                             _mm512_set1_epi32(static_cast<int>(std::min<int64_t>(16, n - 16 * p) - 1)));
  return _mm512_mullo_epi32(rows, _mm512_set1_epi32(static_cast<int>(row_bytes)));
}

/// The dword at `at` plus each lane's start.
inline __m512i gather_dwords(__m512i starts, const uint8_t* at) {
  return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), all16, starts, at, 1);
}

/// q8_0 rows (blocks of a float16 scale and 32 int8 codes) as panels of 16 rows: dword j of each row's block gathered
/// into lane i of vector j, the codes made unsigned (code + 128; the offset -128 is in x's records), rows past the
/// last repeating it.
struct Q8_0Panels {
  static constexpr bool has_mins = false;
  static constexpr bool two_scales = false;
  static constexpr int64_t blocks_per_move = 1;
  const uint8_t* w;
  int64_t blocks;
  int64_t n;

  void move(int64_t p, int64_t b, PanelBlock* moved) const {
    PanelBlock& out = *moved;
    const int64_t row_bytes = blocks * 34;
    const __m512i starts = panel_row_starts(n, p, row_bytes);
    const uint8_t* block = w + 16 * p * row_bytes + b * 34;
    const __m512i sign = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int j = 0; j < 8; ++j) {
      out.codes[j] = _mm512_xor_si512(gather_dwords(starts, block + 2 + 4 * j), sign);
    }
    out.scales = _mm512_maskz_cvtph_ps(all16, _mm512_maskz_cvtepi32_epi16(all16, gather_dwords(starts, block)));
  }
};

/// Where a panel's 16 rows of 256-value blocks (`block_bytes` each) are for its sub-blocks b to b + 7: the rows'
/// offsets for gathers, the first row's block, and the last row (the rows past it repeat it).
struct SuperBlockRows {
  int64_t row_bytes;
  int64_t last;
  __m512i starts;
  const uint8_t* block;

  SuperBlockRows(const uint8_t* w, int64_t blocks, int64_t n, int64_t block_bytes, int64_t p, int64_t b)
      : row_bytes(blocks / 8 * block_bytes),
        last(std::min<int64_t>(16, n - 16 * p) - 1),
        starts(panel_row_starts(n, p, row_bytes)),
        block(w + 16 * p * row_bytes + b / 8 * block_bytes) {}
  /// Row i's block.
  [[nodiscard]] const uint8_t* row(int64_t i) const { return block + std::min(i, last) * row_bytes; }
};

/// q4_k rows (blocks of 256 values: float16 d and dmin, 12 bytes of 6-bit sub-block scales and mins, then 32 code
/// bytes per 64 values, the first 32 of them in the low nibbles and the next 32 in the high ones) as panels of 16 rows,
/// one sub-block of 32 values a PanelBlock: dword j of its 32 code bytes gathered into lane i of vector j, and each
/// row's d * scale and dmin * min; rows past the last repeat it.
struct Q4_KPanels {
  static constexpr bool has_mins = true;
  static constexpr bool two_scales = false;
  static constexpr int64_t blocks_per_move = 8;  // a q4_k block's sub-blocks, which share its gathers and fields
  const uint8_t* w;
  int64_t blocks;  // of 32 values
  int64_t n;

  /// Sub-blocks b to b + 7 (b a multiple of 8) into out[0] to out[7].
  void move(int64_t p, int64_t b, PanelBlock* out) const {
    const SuperBlockRows rows(w, blocks, n, 144, p, b);
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    for (int64_t c = 0; c < 4; ++c) {
      for (int j = 0; j < 8; ++j) {
        const __m512i bytes = gather_dwords(rows.starts, rows.block + 16 + 32 * c + 4 * j);
        out[2 * c].codes[j] = _mm512_and_si512(bytes, nibble);
        out[2 * c + 1].codes[j] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), nibble);
      }
    }
    alignas(64) float scales[8][16];
    alignas(64) float mins[8][16];
    for (int64_t i = 0; i < 16; ++i) {
      const uint8_t* row = rows.row(i);
      const float d = half_at(row);
      const float dmin = half_at(row + 2);
      for (int sub = 0; sub < 8; ++sub) {
        int scale = 0;
        int min = 0;
        q4_k_scale_min(row + 4, sub, scale, min);
        scales[sub][i] = d * static_cast<float>(scale);
        mins[sub][i] = dmin * static_cast<float>(min);
      }
    }
    for (int sub = 0; sub < 8; ++sub) {
      out[sub].scales = _mm512_load_ps(scales[sub]);
      out[sub].mins = _mm512_load_ps(mins[sub]);
    }
  }
};

/// q4_kx16 rows as panels: each group of sixteen rows is one, its code dwords already one vector per dword of the
/// rows' sub-block pair, so that a move is loads (q4_k's panels gather them).
struct Q4_Kx16Panels {
  static constexpr bool has_mins = true;
  static constexpr bool two_scales = false;
  static constexpr int64_t blocks_per_move = 8;  // a block's sub-blocks, which share its fields
  const uint8_t* w;
  int64_t blocks;  // of 32 values

  /// Sub-blocks b to b + 7 (b a multiple of 8) into out[0] to out[7].
  void move(int64_t p, int64_t b, PanelBlock* out) const {
    const uint8_t* block = w + (p * (blocks / 8) + b / 8) * 2304;
    for (int64_t c = 0; c < 4; ++c) {
      for (int j = 0; j < 8; ++j) {
        split_nibbles(block + 256 + 512 * c + 64 * j, out[2 * c].codes[j], out[2 * c + 1].codes[j]);
      }
    }
    __m512 scales[8];
    __m512 mins[8];
    q4_kx16_fields(block, scales, mins);
    for (int sub = 0; sub < 8; ++sub) {
      out[sub].scales = scales[sub];
      out[sub].mins = mins[sub];
    }
  }
};

/// q6_k rows (blocks of 256 values: 128 bytes of low four bits, 64 of high two, 16 int8 scales, one per 16 values,
/// and float16 d) as panels of 16 rows, one sub-block of 32 values a PanelBlock with a scale for each half: value
/// 128h + 32t + l has its low bits in the low (t < 2) or high nibble of byte 64h + 32 (t % 2) + l and its high bits
/// at bit 2t of byte 128 + 32h + l, so dword j of both is gathered for each 128 values and the codes of values 4j to
/// 4j + 3 of each of their four sub-blocks are put together in registers; the codes' offset -32 is in x's records.
struct Q6_KPanels {
  static constexpr bool has_mins = false;
  static constexpr bool two_scales = true;
  static constexpr int64_t blocks_per_move = 8;  // a q6_k block's sub-blocks, which share its gathers and scales
  const uint8_t* w;
  int64_t blocks;  // of 32 values
  int64_t n;

  /// Sub-blocks b to b + 7 (b a multiple of 8) into out[0] to out[7].
  void move(int64_t p, int64_t b, PanelBlock* out) const {
    const SuperBlockRows rows(w, blocks, n, 210, p, b);
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    const __m512i two_bits = _mm512_set1_epi8(0x03);
    for (int64_t h = 0; h < 2; ++h) {
      for (int j = 0; j < 8; ++j) {
        const __m512i high = gather_dwords(rows.starts, rows.block + 128 + 32 * h + 4 * j);
        for (int64_t half = 0; half < 2; ++half) {  // t % 2: which 32 bytes of low bits
          const __m512i low = gather_dwords(rows.starts, rows.block + 64 * h + 32 * half + 4 * j);
          for (int64_t nibbles = 0; nibbles < 2; ++nibbles) {  // t / 2: which nibble
            const int64_t t = 2 * nibbles + half;
            const __m512i low_bits = _mm512_and_si512(nibbles == 0 ? low : _mm512_srli_epi16(low, 4), nibble);
            const __m512i high_bits = _mm512_and_si512(_mm512_srl_epi16(high, _mm_cvtsi64_si128(2 * t)), two_bits);
            out[4 * h + t].codes[j] = _mm512_or_si512(low_bits, _mm512_slli_epi16(high_bits, 4));
          }
        }
      }
    }
    alignas(64) float scales[16][16];  // [scale of 16 values][row]
    for (int64_t i = 0; i < 16; ++i) {
      const uint8_t* row = rows.row(i);
      const float d = half_at(row + 208);
      for (int s = 0; s < 16; ++s) {
        scales[s][i] = d * static_cast<float>(static_cast<int8_t>(row[192 + s]));
      }
    }
    for (int sub = 0; sub < 8; ++sub) {
      out[sub].scales = _mm512_load_ps(scales[2 * sub]);
      out[sub].last_scales = _mm512_load_ps(scales[2 * sub + 1]);
    }
  }
};

/// q6_kx16 rows as panels: each group of sixteen rows is one, a code vector of every row per dword of a sub-block
/// put together from the layout's loads (q6_kx16_codes; q6_k's panels gather them), and each row's scale of each 16
/// values.
struct Q6_Kx16Panels {
  static constexpr bool has_mins = false;
  static constexpr bool two_scales = true;
  static constexpr int64_t blocks_per_move = 8;  // a block's sub-blocks, which share its scales
  const uint8_t* w;
  int64_t blocks;  // of 32 values

  /// Sub-blocks b to b + 7 (b a multiple of 8) into out[0] to out[7].
  void move(int64_t p, int64_t b, PanelBlock* out) const {
    const uint8_t* group = w + p * (blocks / 8) * 3360;
    const uint8_t* block = group + b / 8 * 3328;
    for (int64_t h = 0; h < 2; ++h) {
      for (int64_t m = 0; m < 8; ++m) {
        __m512i codes[4];
        q6_kx16_codes(block, h, m, codes);
        for (int64_t t = 0; t < 4; ++t) {
          out[4 * h + t].codes[m] = codes[t];
        }
      }
    }
    const __m512 d = q6_kx16_d(group, blocks / 8, b / 8);
    for (int sub = 0; sub < 8; ++sub) {
      out[sub].scales = q6_kx16_scale(block, d, 2 * sub);
      out[sub].last_scales = q6_kx16_scale(block, d, 2 * sub + 1);
    }
  }
};

/// The scales and biases of affine rows as float32, panel by panel ([panel][group][16 rows], rows past the last
/// repeating it), the biases with their sign turned (the prefill kernel takes its mins off): a PanelBlock's come in
/// one load each, where loading them row by row took a fourteenth of the prefill's time.
struct PanelScales {
  Scratch storage;
  float* scales;
  float* mins;

  explicit PanelScales(const quant::Matrix& m)
      : storage(static_cast<size_t>((m.rows + 15) / 16 * 16 * m.groups() * 2) * sizeof(float)),
        scales(static_cast<float*>(storage.get())),
        mins(scales + (m.rows + 15) / 16 * 16 * m.groups()) {
    const int64_t groups = m.groups();
    parallel_for(static_cast<size_t>((m.rows + 15) / 16), 1, [&](size_t p0, size_t p1) {
      std::vector<float> row(static_cast<size_t>(2 * groups));
      for (auto p = static_cast<int64_t>(p0); p < static_cast<int64_t>(p1); ++p) {
        for (int64_t i = 0; i < 16; ++i) {
          const int64_t r = std::min(16 * p + i, m.rows - 1);
          m.load(m.scales, r * groups, groups, row.data());
          m.load(m.biases, r * groups, groups, row.data() + groups);
          for (int64_t g = 0; g < groups; ++g) {
            scales[(p * groups + g) * 16 + i] = row[static_cast<size_t>(g)];
            mins[(p * groups + g) * 16 + i] = -row[static_cast<size_t>(groups + g)];
          }
        }
      }
    });
  }
};

/// Affine rows (MLX's packing: codes of Bits = 4 or 8 bits, little-endian in each row; a scale and a bias per group of
/// a multiple of 32 values) as panels of 16 rows, one block of 32 values a PanelBlock: dword j of each row's block
/// gathered into lane i, its 8-bit codes as vector j, or its 4-bit codes' low nibbles (values 8j, 8j + 2, ...) as
/// vector j and high nibbles (8j + 1, ...) as vector 4 + j, which x's records take in that order (BlockDigits'
/// nibble_pairs).
template <int Bits>
struct AffinePanels {
  static constexpr bool has_mins = true;
  static constexpr bool two_scales = false;
  static constexpr int64_t blocks_per_move = 1;
  const quant::Matrix& m;
  const PanelScales& group_scales;

  void move(int64_t p, int64_t b, PanelBlock* moved) const {
    PanelBlock& out = *moved;
    const __m512i starts = panel_row_starts(m.rows, p, m.words() * 4);
    const uint8_t* block = reinterpret_cast<const uint8_t*>(m.row(16 * p)) + b * 4 * Bits;
    if constexpr (Bits == 8) {
      for (int j = 0; j < 8; ++j) {
        out.codes[j] = gather_dwords(starts, block + 4 * j);
      }
    } else {
      const __m512i nibble = _mm512_set1_epi8(0x0F);
      for (int j = 0; j < 4; ++j) {
        const __m512i bytes = gather_dwords(starts, block + 4 * j);
        out.codes[j] = _mm512_and_si512(bytes, nibble);
        out.codes[4 + j] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), nibble);
      }
    }
    const int64_t at = (p * m.groups() + b * 32 / m.group_size) * 16;
    out.scales = _mm512_loadu_ps(group_scales.scales + at);
    out.mins = _mm512_loadu_ps(group_scales.mins + at);
  }
};

/// The sums of the L digits of an x record (`record`) with `count` code vectors of a panel block from vector `first`
/// (values 4j to 4j + 3 of the record in vector j), chained by shifts as in decode, `offset` (the code offset times the
/// values' sum) added once.
template <int L>
inline __m512i digit_sums(const PanelBlock& p, const int8_t* record, int first, int count, __m512i offset) {
  __m512i sum = L == 1 ? offset : _mm512_setzero_si512();
  for (int l = 0; l < L; ++l) {
    if (l > 0) {
      sum = _mm512_maskz_slli_epi32(all16, sum, level_bits);
    }
    if (l > 0 && l == L - 1) {
      sum = _mm512_add_epi32(sum, offset);
    }
    const int8_t* digits = record + int64_t{32} * l;
    for (int j = first; j < first + count; ++j) {
      sum = _mm512_dpbusd_epi32(sum, p.codes[j], _mm512_set1_epi32(load_i32(digits + 4 * j)));
    }
  }
  return sum;
}

/// Eight rows of x (pointers to their first block records, and to their sums per 32 values) against a panel, every
/// block: out[r] lane i = row r's dot with the panel's row i. Each lane sums its row's whole block against x's digits
/// broadcast four at a time, with the code offset's total added once; with TwoScales, each half of the block apart,
/// for its own scale; with Mins, the block's min times x's sum is taken off.
template <int L, bool Mins, bool TwoScales>
void panel_rows(const PanelBlock* panel, int64_t blocks, const int8_t* const (&x)[8], const float* const (&sums)[8],
                __m512 (&out)[8]) {
  __m512 acc[8];
  for (auto& a : acc) {
    a = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < blocks; ++b) {
    const PanelBlock& p = panel[b];
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) {  // unrolled, so that the accumulators stay in registers
      const int8_t* record = x[r] + b * BlockDigits::record_bytes(L);
      float unit_value = 0.F;
      std::memcpy(&unit_value, record + BlockDigits::unit_at(L), sizeof(unit_value));
      const __m512 unit = _mm512_set1_ps(unit_value);
      const int32_t total = load_i32(record + BlockDigits::total_at(L));
      if constexpr (TwoScales) {
        const int32_t first_half = load_i32(record + BlockDigits::first_half_total_at(L));
        const __m512i first = digit_sums<L>(p, record, 0, 4, _mm512_set1_epi32(first_half));
        const __m512i last = digit_sums<L>(p, record, 4, 4, _mm512_set1_epi32(total - first_half));
        acc[r] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(all16, first), _mm512_mul_ps(p.scales, unit), acc[r]);
        acc[r] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(all16, last), _mm512_mul_ps(p.last_scales, unit), acc[r]);
      } else {
        const __m512i sum = digit_sums<L>(p, record, 0, 8, _mm512_set1_epi32(total));
        acc[r] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(all16, sum), _mm512_mul_ps(p.scales, unit), acc[r]);
      }
      if constexpr (Mins) {
        acc[r] = _mm512_fnmadd_ps(p.mins, _mm512_set1_ps(sums[r][b]), acc[r]);
      }
    }
  }
  std::copy_n(acc, 8, out);
}

/// Prefill on L levels of x: threads split the panels of 16 rows of w. Each thread takes x in tiles of prefill_rows
/// rows and prefill_blocks blocks (256 to 384 KiB of records, which stay in L2 while the thread's panels pass), moves
/// each panel's blocks of the tile once (PanelBlock) and meets them with the tile's rows, eight at a time; the tiles'
/// sums are added into out in block order.
template <int L, class Panels>
void prefill_panels(const BlockDigits& x, int64_t rows, const Panels& panels, int64_t n, float* out) {
  const int64_t blocks = x.k / 32;
  parallel_for(static_cast<size_t>((n + 15) / 16), 1, [&](size_t p0, size_t p1) {
    std::vector<PanelBlock> panel(static_cast<size_t>(std::min(blocks, prefill_blocks)));
    for (int64_t b0 = 0; b0 < blocks; b0 += prefill_blocks) {
      const int64_t count = std::min(prefill_blocks, blocks - b0);
      for (int64_t t0 = 0; t0 < rows; t0 += prefill_rows) {
        const int64_t t1 = std::min(rows, t0 + prefill_rows);
        for (auto p = static_cast<int64_t>(p0); p < static_cast<int64_t>(p1); ++p) {
          for (int64_t b = 0; b < count; b += Panels::blocks_per_move) {
            panels.move(p, b0 + b, panel.data() + b);
          }
          const auto lanes = static_cast<__mmask16>((1U << std::min<int64_t>(16, n - 16 * p)) - 1);
          for (int64_t r0 = t0; r0 < t1; r0 += 8) {
            const int8_t* x_rows[8];
            const float* x_sums[8];
            for (int64_t r = 0; r < 8; ++r) {
              x_rows[r] = x.row(std::min(r0 + r, t1 - 1)) + b0 * BlockDigits::record_bytes(L);
              x_sums[r] = x.sums32(std::min(r0 + r, t1 - 1)) + b0;
            }
            __m512 dots[8];
            panel_rows<L, Panels::has_mins, Panels::two_scales>(panel.data(), count, x_rows, x_sums, dots);
            for (int64_t r = 0; r < std::min<int64_t>(8, t1 - r0); ++r) {
              float* dst = out + (r0 + r) * n + 16 * p;
              _mm512_mask_storeu_ps(dst, lanes,
                                    b0 == 0 ? dots[r] : _mm512_add_ps(_mm512_maskz_loadu_ps(lanes, dst), dots[r]));
            }
          }
        }
      }
    }
  });
}

/// The int8 prefill of the formats that have one (q4_0x8, q4_0x16, q8_0, q4_k, q4_kx16, q6_k, q6_kx16); false,
/// computing nothing, for the others and where x has values too small for the levels' units.
template <int L>
bool int8_prefill(QuantizationMode mode, const float* xf, int64_t rows, int64_t k, const uint8_t* w, int64_t n,
                  float* out) {
  auto on_panels = [&](const auto& panels) {
    const BlockDigits x(xf, rows, k, L, code_offset(mode));
    if (x.units_normal) {
      prefill_panels<L>(x, rows, panels, n, out);
    }
    return x.units_normal;
  };
  switch (mode) {
    case QuantizationMode::affine:
    case QuantizationMode::mxfp4:
    case QuantizationMode::mxfp8:
    case QuantizationMode::nvfp4:
    case QuantizationMode::q4_0:
      return false;  // decoded tiles (a GGUF file's q4_0 linear layers are loaded as q4_0x8)
    case QuantizationMode::q4_0x8:
      return on_panels(InterleavedPanels{w, k / 32, n / 8});
    case QuantizationMode::q8_0:
      return on_panels(Q8_0Panels{w, k / 32, n});
    case QuantizationMode::q4_k:
      return on_panels(Q4_KPanels{w, k / 32, n});
    case QuantizationMode::q4_kx16:
      return on_panels(Q4_Kx16Panels{w, k / 32});
    case QuantizationMode::q4_0x16:
      return on_panels(Q4_0x16Panels{w, k / 32});
    case QuantizationMode::q6_k:  // twice q4_k's gathers: below gemm_rows rows of x the decode kernel is as fast
      return rows >= gemm_rows && on_panels(Q6_KPanels{w, k / 32, n});
    case QuantizationMode::q6_kx16:
      return on_panels(Q6_Kx16Panels{w, k / 32});
    case QuantizationMode::q8_0x16:
      return on_panels(Q8_0x16Panels{w, k / 32});
  }
  return false;
}

/// Every group of eight q4_0x8 rows against the rows of x, two rows of x at a time, then one: threads split the
/// groups.
template <int L>
void stream_groups_q4_0x8(const BlockDigits& x, int64_t rows, const uint8_t* w, int64_t n, float* out) {
  const int64_t blocks = x.k / 32;
  const int64_t group_bytes = int64_t{8} * blocks * 18;
  const int64_t lead = (prefetch_bytes + group_bytes - 1) / group_bytes * group_bytes;
  const auto grain = static_cast<size_t>(std::max<int64_t>(1, bytes_per_task / group_bytes));
  parallel_for(static_cast<size_t>(n / 8), grain, [&](size_t g0, size_t g1) {
    for (auto g = static_cast<int64_t>(g0); g < static_cast<int64_t>(g1); ++g) {
      auto store = [&]<int R>(int64_t r0, const float(&dots)[R][8]) {
        for (int r = 0; r < R; ++r) {
          std::copy_n(dots[r], 8, out + (r0 + r) * n + 8 * g);
        }
      };
      int64_t r = 0;
      for (; r + 2 <= rows; r += 2) {
        float dots[2][8];
        rows_q4_0x8<2, L>(w + g * group_bytes, lead, blocks, x, r, dots);
        store(r, dots);
      }
      for (; r < rows; ++r) {
        float dots[1][8];
        rows_q4_0x8<1, L>(w + g * group_bytes, lead, blocks, x, r, dots);
        store(r, dots);
      }
    }
  });
}

/// Every group of sixteen q4_0x16, q8_0x16, q4_kx16 or q6_kx16 rows against the rows of x, two rows of x at a time,
/// then one: threads split the groups.
template <QuantizationMode M, int L>
void stream_groups_x16(const BlockDigits& x, int64_t rows, const uint8_t* w, int64_t n, float* out) {
  const BlockLayout layout = block_layout(M);
  const int64_t blocks = x.k / layout.values;
  const int64_t block_bytes = int64_t{16} * layout.bytes;  // a block of sixteen rows
  const int64_t group_bytes = blocks * block_bytes;
  const int64_t lead = (prefetch_bytes + block_bytes - 1) / block_bytes * block_bytes;
  const auto grain = static_cast<size_t>(std::max<int64_t>(1, bytes_per_task / group_bytes));
  parallel_for(static_cast<size_t>(n / 16), grain, [&](size_t g0, size_t g1) {
    for (auto g = static_cast<int64_t>(g0); g < static_cast<int64_t>(g1); ++g) {
      auto pass = [&]<int R>(int64_t r0) {
        __m512 dots[R];
        if constexpr (M == QuantizationMode::q4_0x16) {
          rows_q4_0x16<R, L>(w + g * group_bytes, lead, blocks, x, r0, dots);
        } else if constexpr (M == QuantizationMode::q8_0x16) {
          rows_q8_0x16<R, L>(w + g * group_bytes, lead, blocks, x, r0, dots);
        } else if constexpr (M == QuantizationMode::q4_kx16) {
          rows_q4_kx16<R, L>(w + g * group_bytes, lead, blocks, x, r0, dots);
        } else {
          static_assert(M == QuantizationMode::q6_kx16);
          rows_q6_kx16<R, L>(w + g * group_bytes, blocks, x, r0, dots);
        }
        for (int r = 0; r < R; ++r) {
          _mm512_storeu_ps(out + (r0 + r) * n + 16 * g, dots[r]);
        }
      };
      int64_t r = 0;
      for (; r + 2 <= rows; r += 2) {
        pass.template operator()<2>(r);
      }
      for (; r < rows; ++r) {
        pass.template operator()<1>(r);
      }
    }
  });
}

/// C rows of w (row_bytes apart) against R rows of x on L levels: out[r][c]. Each block read asks for the bytes
/// `lead` past it to be brought into L2, one line per line read: a burst of prefetches per row left the rows of
/// several passes in flight at once and slowed the stream.
template <QuantizationMode M, int R, int C, int L, class X>
void rows_of(const uint8_t* w, int64_t row_bytes, int64_t lead, int64_t blocks, const X& x, int64_t r0,
             float (&out)[R][C]) {
  if constexpr (M == QuantizationMode::q4_0) {
    rows_q4_0<R, C, L>(w, row_bytes, lead, blocks, x, r0, out);
  } else if constexpr (M == QuantizationMode::q8_0) {
    rows_q8_0<R, C, L>(w, row_bytes, lead, blocks, x, r0, out);
  } else if constexpr (M == QuantizationMode::q4_k) {
    rows_q4_k<R, C, L>(w, row_bytes, lead, blocks, x, r0, out);
  } else {
    static_assert(M == QuantizationMode::q6_k);
    rows_q6_k<R, C, L>(w, row_bytes, lead, blocks, x, r0, out);
  }
}

/// C rows of w, from row j, against every row of x: two rows of x at a time, then one.
template <QuantizationMode M, int C, int L, class X>
void rows_pass(const uint8_t* w, int64_t row_bytes, int64_t lead, int64_t blocks, const X& x, int64_t rows, int64_t j,
               int64_t n, float* out) {
  auto store = [&]<int R>(int64_t r0, const float(&dots)[R][C]) {
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C; ++c) {
        out[(r0 + r) * n + j + c] = dots[r][c];
      }
    }
  };
  int64_t r = 0;
  for (; r + 2 <= rows; r += 2) {
    float dots[2][C] = {};
    rows_of<M, 2, C, L>(w + j * row_bytes, row_bytes, lead, blocks, x, r, dots);
    store(r, dots);
  }
  for (; r < rows; ++r) {
    float dots[1][C] = {};
    rows_of<M, 1, C, L>(w + j * row_bytes, row_bytes, lead, blocks, x, r, dots);
    store(r, dots);
  }
}

/// Every row of w against the rows of x, C rows of w a pass: threads split the rows of w.
template <QuantizationMode M, int C, int L, class X>
void stream_rows(const X& x, int64_t rows, const uint8_t* w, int64_t n, float* out) {
  const BlockLayout layout = block_layout(M);
  const int64_t blocks = x.k / layout.values;
  const int64_t row_bytes = blocks * layout.bytes;
  // Whole passes ahead, at least prefetch_bytes.
  const int64_t pass_bytes = C * row_bytes;
  const int64_t lead = (prefetch_bytes + pass_bytes - 1) / pass_bytes * pass_bytes;
  // A grain of whole passes, so that each thread's share of the rows ends on a whole pass (rows past it would go one
  // row a pass).
  const auto grain =
      static_cast<size_t>(std::max<int64_t>(1, bytes_per_task / std::max<int64_t>(1, row_bytes) / C) * C);
  parallel_for(static_cast<size_t>(n), grain, [&](size_t n0, size_t n1) {
    const auto end = static_cast<int64_t>(n1);
    auto j = static_cast<int64_t>(n0);
    for (; j + C <= end; j += C) {
      rows_pass<M, C, L>(w, row_bytes, lead, blocks, x, rows, j, n, out);
    }
    if constexpr (C > 4) {
      for (; j + 4 <= end; j += 4) {
        rows_pass<M, 4, L>(w, row_bytes, lead, blocks, x, rows, j, n, out);
      }
    }
    for (; j < end; ++j) {
      rows_pass<M, 1, L>(w, row_bytes, lead, blocks, x, rows, j, n, out);
    }
  });
}

/// x as the format's kernel takes it, then every row of w against it; false, computing nothing, where x has values
/// too small for the levels' units.
template <QuantizationMode M, int L>
bool int8_product_of(const float* xf, int64_t rows, int64_t k, const uint8_t* w, int64_t n, float* out) {
  // Formats whose kernels take four rows of w a vector: x as block records, eight rows of w a pass.
  constexpr bool sixteen_rows = M == QuantizationMode::q4_0x16 || M == QuantizationMode::q4_kx16 ||
                                M == QuantizationMode::q6_kx16 || M == QuantizationMode::q8_0x16;
  constexpr bool row_groups =
      M == QuantizationMode::q4_0 || M == QuantizationMode::q4_k || M == QuantizationMode::q4_0x8 || sixteen_rows;
  using X =
      std::conditional_t<row_groups, BlockDigits, std::conditional_t<M == QuantizationMode::q6_k, SpanDigits, Levels>>;
  // q6_kx16's and q8_0x16's records on three levels carry -1 times the sums of Q (rows_q6_kx16, rows_q8_0x16).
  const bool negated_sums = (M == QuantizationMode::q6_kx16 || M == QuantizationMode::q8_0x16) && L == 3;
  const X x(xf, rows, k, L, negated_sums ? -1 : code_offset(M));
  if (!x.units_normal) {
    return false;
  }
  if constexpr (M == QuantizationMode::q4_0x8) {
    stream_groups_q4_0x8<L>(x, rows, w, n, out);
  } else if constexpr (sixteen_rows) {
    stream_groups_x16<M, L>(x, rows, w, n, out);
  } else {
    stream_rows<M, row_groups ? 8 : 4, L>(x, rows, w, n, out);
  }
  return true;
}

template <int L>
bool int8_product(QuantizationMode mode, const float* x, int64_t rows, int64_t k, const uint8_t* w, int64_t n,
                  float* out) {
  switch (mode) {
    case QuantizationMode::affine:
    case QuantizationMode::mxfp4:
    case QuantizationMode::mxfp8:
    case QuantizationMode::nvfp4:
      return false;  // not block formats: the ops never send them here
    case QuantizationMode::q4_0:
      return int8_product_of<QuantizationMode::q4_0, L>(x, rows, k, w, n, out);
    case QuantizationMode::q8_0:
      return int8_product_of<QuantizationMode::q8_0, L>(x, rows, k, w, n, out);
    case QuantizationMode::q4_k:
      return int8_product_of<QuantizationMode::q4_k, L>(x, rows, k, w, n, out);
    case QuantizationMode::q6_k:
      return int8_product_of<QuantizationMode::q6_k, L>(x, rows, k, w, n, out);
    case QuantizationMode::q4_0x8:
      return int8_product_of<QuantizationMode::q4_0x8, L>(x, rows, k, w, n, out);
    case QuantizationMode::q4_kx16:
      return int8_product_of<QuantizationMode::q4_kx16, L>(x, rows, k, w, n, out);
    case QuantizationMode::q4_0x16:
      return int8_product_of<QuantizationMode::q4_0x16, L>(x, rows, k, w, n, out);
    case QuantizationMode::q6_kx16:
      return int8_product_of<QuantizationMode::q6_kx16, L>(x, rows, k, w, n, out);
    case QuantizationMode::q8_0x16:
      return int8_product_of<QuantizationMode::q8_0x16, L>(x, rows, k, w, n, out);
  }
  return false;
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
  // On x's levels: the prefill kernel, else the decode one (which reads 64 values at a time). Their sums of code * x
  // would turn an infinite x into NaN where the product with the decoded weight gives an infinity.
  const bool panels = rows >= panel_from_rows && levels <= prefill_levels;
  const bool decode = rows < gemm_rows && k % 64 == 0;
  if ((panels || decode) && all_finite(x, rows * k)) {
    if (panels &&
        (levels == 1 ? int8_prefill<1>(mode, x, rows, k, w, n, out) : int8_prefill<2>(mode, x, rows, k, w, n, out))) {
      return;
    }
    if (decode && (levels == 1   ? int8_product<1>(mode, x, rows, k, w, n, out)
                   : levels == 2 ? int8_product<2>(mode, x, rows, k, w, n, out)
                                 : int8_product<3>(mode, x, rows, k, w, n, out))) {
      return;
    }
  }
#endif
  prefill(mode, x, rows, k, w, n, out);
}

bool affine_prefill(const float* x, int64_t rows, const quant::Matrix& m, [[maybe_unused]] int levels,
                    [[maybe_unused]] float* out) {
  if (rows == 0 || m.rows == 0 || m.cols == 0 || (m.bits != 4 && m.bits != 8) || m.group_size % 32 != 0) {
    return false;
  }
#if NUVEC_BLOCKS_VNNI
  if (levels > prefill_levels || !all_finite(x, rows * m.cols)) {
    return false;
  }
  auto on_levels = [&]<int L, int Bits>() {
    const BlockDigits digits(x, rows, m.cols, L, 0, Bits == 4);
    if (digits.units_normal) {
      const PanelScales group_scales(m);
      prefill_panels<L>(digits, rows, AffinePanels<Bits>{m, group_scales}, m.rows, out);
    }
    return digits.units_normal;
  };
  if (m.bits == 4) {
    return levels == 1 ? on_levels.template operator()<1, 4>() : on_levels.template operator()<2, 4>();
  }
  return levels == 1 ? on_levels.template operator()<1, 8>() : on_levels.template operator()<2, 8>();
#else
  return false;
#endif
}

}  // namespace nuvec::cpu::blocks
