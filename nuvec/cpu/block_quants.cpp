// Decoding GGML's blocks to floats, value by value as quantization_mode.h lays them out: the reference the integer
// kernels of qmm_blocks.cpp are tested against, and the tiles of the prefill path.

#include "nuvec/cpu/block_quants.h"

#include "nuvec/core/half.h"

namespace nuvec::cpu::blocks {

namespace {

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

/// Sub-block j's 6-bit scale and min in a q4_k block's 12 bytes of them (the low 6 bits of bytes 0-7 hold sub-blocks
/// 0-3, bytes 8-11 the low 4 bits of 4-7, whose top 2 bits sit in the spare bits of bytes 0-7).
void q4_k_scale_min(const uint8_t* s, int j, int& scale, int& min) {
  if (j < 4) {
    scale = s[j] & 63;
    min = s[j + 4] & 63;
  } else {
    scale = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
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

}  // namespace

void dequantize_row(QuantizationMode mode, const uint8_t* row, int64_t k, float* out) {
  const BlockLayout layout = block_layout(mode);
  const int64_t count = k / layout.values;
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
        q4_0(b, o);
        break;
      case QuantizationMode::q8_0:
        q8_0(b, o);
        break;
      case QuantizationMode::q4_k:
        q4_k(b, o);
        break;
      case QuantizationMode::q6_k:
        q6_k(b, o);
        break;
    }
  }
}

}  // namespace nuvec::cpu::blocks
