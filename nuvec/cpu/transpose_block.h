#pragma once

// Square blocks of 2-, 4- and 8-byte elements transposed in registers, for the transposing copy (copy.cpp): an 8x8
// block of 2-byte elements in 16-byte vectors, 8x8 of 4-byte ones and 4x4 of 8-byte ones in 32-byte vectors. Each
// reads `side` aligned rows of a buffer and writes `side` rows of the output, with streaming stores when asked (the
// caller then checks the output rows' alignment and orders the stores with hwy::FlushStream).

#include <cstdint>

#ifdef __AVX__
#include <immintrin.h>
#endif

namespace nuvec::cpu {

#ifdef __AVX__

/// The block side for elements of `bytes` bytes, 0 where there is no in-register transpose.
constexpr int64_t transpose_block_side(size_t bytes) { return bytes == 2 || bytes == 4 ? 8 : bytes == 8 ? 4 : 0; }

/// Bytes of one row of a block of elements of `bytes` bytes (the alignment that streaming stores need).
constexpr int64_t transpose_block_row_bytes(size_t bytes) { return transpose_block_side(bytes) * int64_t(bytes); }

template <bool Stream>
inline void store_row(void* p, __m128i v) {
  if constexpr (Stream) {
    _mm_stream_si128(static_cast<__m128i*>(p), v);
  } else {
    _mm_storeu_si128(static_cast<__m128i*>(p), v);
  }
}

template <bool Stream>
inline void store_row(void* p, __m256i v) {
  if constexpr (Stream) {
    _mm256_stream_si256(static_cast<__m256i*>(p), v);
  } else {
    _mm256_storeu_si256(static_cast<__m256i*>(p), v);
  }
}

/// Transposes the block at `in` (rows `in_stride` bytes apart, each aligned to its size) into the rows of `out`
/// (`out_stride` bytes apart), for elements of `Bytes` bytes.
template <size_t Bytes, bool Stream>
inline void transpose_block(const char* in, int64_t in_stride, char* out, int64_t out_stride) {
  if constexpr (Bytes == 2) {
    // Pairs, then pairs of pairs, then halves: after the three unpack rounds vector k holds column k.
    __m128i r[8];
    for (int k = 0; k < 8; ++k) {
      r[k] = _mm_load_si128(reinterpret_cast<const __m128i*>(in + k * in_stride));
    }
    __m128i t[8];
    for (int k = 0; k < 8; k += 2) {
      t[k / 2] = _mm_unpacklo_epi16(r[k], r[k + 1]);
      t[k / 2 + 4] = _mm_unpackhi_epi16(r[k], r[k + 1]);
    }
    // t[0..3]: columns 0-3 of row pairs (0,1), (2,3), (4,5), (6,7); t[4..7]: columns 4-7.
    __m128i u[8];
    for (int h = 0; h < 8; h += 4) {
      u[h] = _mm_unpacklo_epi32(t[h], t[h + 1]);          // columns h, h + 1 of rows 0-3
      u[h + 1] = _mm_unpackhi_epi32(t[h], t[h + 1]);      // columns h + 2, h + 3 of rows 0-3
      u[h + 2] = _mm_unpacklo_epi32(t[h + 2], t[h + 3]);  // columns h, h + 1 of rows 4-7
      u[h + 3] = _mm_unpackhi_epi32(t[h + 2], t[h + 3]);
    }
    for (int h = 0; h < 2; ++h) {
      for (int k = 0; k < 2; ++k) {
        const int c = 4 * h + 2 * k;  // output rows (columns of the block) c and c + 1
        store_row<Stream>(out + c * out_stride, _mm_unpacklo_epi64(u[4 * h + k], u[4 * h + k + 2]));
        store_row<Stream>(out + (c + 1) * out_stride, _mm_unpackhi_epi64(u[4 * h + k], u[4 * h + k + 2]));
      }
    }
  } else if constexpr (Bytes == 4) {
    // Pairs, then pairs of pairs, then the 128-bit halves swapped.
    __m256 r[8];
    for (int k = 0; k < 8; ++k) {
      r[k] = _mm256_load_ps(reinterpret_cast<const float*>(in + k * in_stride));
    }
    __m256 t[8];
    for (int k = 0; k < 8; k += 2) {
      t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
      t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
    }
    __m256 q[8];
    for (int k = 0; k < 8; k += 4) {
      q[k] = _mm256_shuffle_ps(t[k], t[k + 2], 0x44);
      q[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], 0xEE);
      q[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0x44);
      q[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0xEE);
    }
    for (int k = 0; k < 4; ++k) {
      store_row<Stream>(out + k * out_stride, _mm256_castps_si256(_mm256_permute2f128_ps(q[k], q[k + 4], 0x20)));
      store_row<Stream>(out + (k + 4) * out_stride, _mm256_castps_si256(_mm256_permute2f128_ps(q[k], q[k + 4], 0x31)));
    }
  } else {
    static_assert(Bytes == 8, "transpose_block: 2-, 4- or 8-byte elements");
    // Pairs of rows interleaved, then the 128-bit halves of rows (0,1) and (2,3) combined.
    __m256d r[4];
    for (int k = 0; k < 4; ++k) {
      r[k] = _mm256_load_pd(reinterpret_cast<const double*>(in + k * in_stride));
    }
    const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]);  // columns 0 and 2 of rows 0, 1
    const __m256d t1 = _mm256_unpackhi_pd(r[0], r[1]);  // columns 1 and 3
    const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]);
    const __m256d t3 = _mm256_unpackhi_pd(r[2], r[3]);
    store_row<Stream>(out, _mm256_castpd_si256(_mm256_permute2f128_pd(t0, t2, 0x20)));
    store_row<Stream>(out + out_stride, _mm256_castpd_si256(_mm256_permute2f128_pd(t1, t3, 0x20)));
    store_row<Stream>(out + 2 * out_stride, _mm256_castpd_si256(_mm256_permute2f128_pd(t0, t2, 0x31)));
    store_row<Stream>(out + 3 * out_stride, _mm256_castpd_si256(_mm256_permute2f128_pd(t1, t3, 0x31)));
  }
}

#else

constexpr int64_t transpose_block_side(size_t /*bytes*/) { return 0; }

#endif

}  // namespace nuvec::cpu
