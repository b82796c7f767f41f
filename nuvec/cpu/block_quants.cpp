// Decoding GGML's blocks to floats as quantization_mode.h lays them out: the tiles of the prefill path (every weight
// of a prompt's products goes through here once per chunk) and the dequantize op. With AVX-512 each block decodes
// 16 values a vector; without it, value by value.

#include "nuvec/cpu/block_quants.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "nuvec/core/half.h"

#if defined(__AVX512F__) && defined(__F16C__)
#include <immintrin.h>
#define NUVEC_BLOCK_DECODE_AVX512 1
#endif

namespace nuvec::cpu::blocks {

void q4_k_scale_min(const uint8_t* s, int j, int& scale, int& min) {
  if (j < 4) {
    scale = s[j] & 63;
    min = s[j + 4] & 63;
  } else {
    scale = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

namespace {

#if NUVEC_BLOCK_DECODE_AVX512

// The zero-masking forms of the intrinsics, where GCC 12's plain forms start from an undefined vector and warn.
constexpr __mmask16 all16 = 0xFFFF;

float half_at(const uint8_t* p) {
  uint16_t bits = 0;
  std::memcpy(&bits, p, 2);
  return _cvtsh_ss(bits);
}

__m512 floats_of_bytes(__m128i bytes) {
  return _mm512_maskz_cvtepi32_ps(all16, _mm512_maskz_cvtepu8_epi32(all16, bytes));
}

void q4_0(const uint8_t* b, float* out) {
  const __m512 d = _mm512_set1_ps(half_at(b));
  const __m128i codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2));
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m512 offset = _mm512_set1_ps(8.F);
  _mm512_storeu_ps(out, _mm512_mul_ps(d, _mm512_sub_ps(floats_of_bytes(_mm_and_si128(codes, nibble)), offset)));
  _mm512_storeu_ps(
      out + 16,
      _mm512_mul_ps(d, _mm512_sub_ps(floats_of_bytes(_mm_and_si128(_mm_srli_epi16(codes, 4), nibble)), offset)));
}

void q8_0(const uint8_t* b, float* out) {
  const __m512 d = _mm512_set1_ps(half_at(b));
  for (int64_t h = 0; h < 2; ++h) {
    const __m128i codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 + 16 * h));
    _mm512_storeu_ps(out + 16 * h,
                     _mm512_mul_ps(d, _mm512_maskz_cvtepi32_ps(all16, _mm512_maskz_cvtepi8_epi32(all16, codes))));
  }
}

void q4_k(const uint8_t* b, float* out) {
  const float d = half_at(b);
  const float dmin = half_at(b + 2);
  const uint8_t* codes = b + 16;
  const __m128i nibble = _mm_set1_epi8(0x0F);
  for (int64_t c = 0; c < 4; ++c) {
    for (int64_t half = 0; half < 2; ++half) {
      int scale = 0;
      int min = 0;
      q4_k_scale_min(b + 4, static_cast<int>(2 * c + half), scale, min);
      const __m512 s = _mm512_set1_ps(d * static_cast<float>(scale));
      const __m512 m = _mm512_set1_ps(dmin * static_cast<float>(min));
      for (int64_t h = 0; h < 2; ++h) {
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 32 * c + 16 * h));
        const __m128i q = _mm_and_si128(half == 0 ? bytes : _mm_srli_epi16(bytes, 4), nibble);
        _mm512_storeu_ps(out + 64 * c + 32 * half + 16 * h, _mm512_fmsub_ps(s, floats_of_bytes(q), m));
      }
    }
  }
}

void q6_k(const uint8_t* b, float* out) {
  const uint8_t* low = b;
  const uint8_t* high = b + 128;
  const auto* scales = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half_at(b + 208);
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m128i pair = _mm_set1_epi8(0x30);
  const __m512 offset = _mm512_set1_ps(32.F);
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t l = 0; l < 32; l += 16) {
      const __m128i first = _mm_loadu_si128(reinterpret_cast<const __m128i*>(low + 64 * n + l));
      const __m128i second = _mm_loadu_si128(reinterpret_cast<const __m128i*>(low + 64 * n + 32 + l));
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(high + 32 * n + l));
      // Bits 0-1 of the high plane go with the first plane's low nibbles, 2-3 the second's, 4-5 and 6-7 their high
      // nibbles: each pair shifted to bits 4-5 of its code.
      const __m128i q[4] = {
          _mm_or_si128(_mm_and_si128(first, nibble), _mm_and_si128(_mm_slli_epi16(h, 4), pair)),
          _mm_or_si128(_mm_and_si128(second, nibble), _mm_and_si128(_mm_slli_epi16(h, 2), pair)),
          _mm_or_si128(_mm_and_si128(_mm_srli_epi16(first, 4), nibble), _mm_and_si128(h, pair)),
          _mm_or_si128(_mm_and_si128(_mm_srli_epi16(second, 4), nibble), _mm_and_si128(_mm_srli_epi16(h, 2), pair))};
      for (int64_t part = 0; part < 4; ++part) {
        const int64_t value = 128 * n + 32 * part + l;
        const int64_t group = value / 16;  // one scale per 16 values
        const __m512 scale = _mm512_set1_ps(d * static_cast<float>(scales[group]));
        _mm512_storeu_ps(out + value, _mm512_mul_ps(scale, _mm512_sub_ps(floats_of_bytes(q[part]), offset)));
      }
    }
  }
}

#else

float half_at(const uint8_t* p) {
  float16_t h;
  h.bits = static_cast<uint16_t>(p[0] | (p[1] << 8));
  return static_cast<float>(h);
}

void q4_0(const uint8_t* b, float* out) {
  const float d = half_at(b);
  for (int i = 0; i < 16; ++i) {
    out[i] = d * static_cast<float>((b[2 + i] & 15) - 8);
    out[16 + i] = d * static_cast<float>((b[2 + i] >> 4) - 8);
  }
}

void q8_0(const uint8_t* b, float* out) {
  const float d = half_at(b);
  for (int i = 0; i < 32; ++i) {
    out[i] = d * static_cast<float>(static_cast<int8_t>(b[2 + i]));
  }
}

void q4_k(const uint8_t* b, float* out) {
  const float d = half_at(b);
  const float dmin = half_at(b + 2);
  const uint8_t* codes = b + 16;
  for (int c = 0; c < 4; ++c) {
    for (int half = 0; half < 2; ++half) {
      int scale = 0;
      int min = 0;
      q4_k_scale_min(b + 4, 2 * c + half, scale, min);
      const float s = d * static_cast<float>(scale);
      const float m = dmin * static_cast<float>(min);
      for (int l = 0; l < 32; ++l) {
        const int q = half == 0 ? codes[32 * c + l] & 15 : codes[32 * c + l] >> 4;
        out[64 * c + 32 * half + l] = s * static_cast<float>(q) - m;
      }
    }
  }
}

void q6_k(const uint8_t* b, float* out) {
  const uint8_t* low = b;
  const uint8_t* high = b + 128;
  const auto* scales = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half_at(b + 208);
  for (int n = 0; n < 2; ++n) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t h = high[32 * n + l];
      const int q[4] = {(low[64 * n + l] & 15) | ((h & 3) << 4), (low[64 * n + 32 + l] & 15) | (((h >> 2) & 3) << 4),
                        (low[64 * n + l] >> 4) | (((h >> 4) & 3) << 4), (low[64 * n + 32 + l] >> 4) | ((h >> 6) << 4)};
      for (int part = 0; part < 4; ++part) {
        const int value = 128 * n + 32 * part + l;
        const int group = value / 16;  // one scale per 16 values
        out[value] = d * static_cast<float>(scales[group]) * static_cast<float>(q[part] - 32);
      }
    }
  }
}

#endif

/// grouped_positions, kept per thread for the weight last asked about: the decoded tiles read every row of a weight,
/// one at a time, and computing the positions per row cost more than decoding it.
const std::vector<int32_t>& group_positions(QuantizationMode mode, int blocks) {
  thread_local QuantizationMode cached_mode = QuantizationMode::affine;
  thread_local int cached_blocks = -1;
  thread_local std::vector<int32_t> positions;
  if (mode != cached_mode || blocks != cached_blocks) {
    positions = grouped_positions(mode, blocks);
    cached_mode = mode;
    cached_blocks = blocks;
  }
  return positions;
}

}  // namespace

void dequantize_row(QuantizationMode mode, const uint8_t* w, int64_t r, int64_t k, float* out) {
  const BlockLayout layout = block_layout(mode);
  const int64_t count = k / layout.values;
  const uint8_t* row = w + r * count * layout.bytes;
  std::vector<uint8_t> gathered;
  if (const int rows = block_rows(mode); rows > 1) {
    // The row's bytes gathered back into the plain format's order from its group (quantization_mode.h).
    const uint8_t* group = w + r / rows * rows * count * layout.bytes;
    const size_t row_bytes = static_cast<size_t>(count * layout.bytes);
    const auto positions = std::span(group_positions(mode, static_cast<int>(count)))
                               .subspan(static_cast<size_t>(r % rows) * row_bytes, row_bytes);
    gathered.resize(row_bytes);
    std::ranges::transform(positions, gathered.begin(), [&](int32_t at) { return group[at]; });
    row = gathered.data();
  }
  for (int64_t i = 0; i < count; ++i) {
    const uint8_t* b = row + i * layout.bytes;
    float* o = out + i * layout.values;
    switch (mode) {
      case QuantizationMode::affine:
      case QuantizationMode::mxfp4:
      case QuantizationMode::mxfp8:
      case QuantizationMode::nvfp4:
        break;  // not block formats: the ops never send them here
      case QuantizationMode::q4_0:
      case QuantizationMode::q4_0x8:
      case QuantizationMode::q4_0x16:
        q4_0(b, o);
        break;
      case QuantizationMode::q8_0:
      case QuantizationMode::q8_0x16:
        q8_0(b, o);
        break;
      case QuantizationMode::q4_k:
      case QuantizationMode::q4_kx16:
        q4_k(b, o);
        break;
      case QuantizationMode::q6_k:
      case QuantizationMode::q6_kx16:
        q6_k(b, o);
        break;
    }
  }
}

}  // namespace nuvec::cpu::blocks
