#include "nuvec/io/gguf_quants.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "nuvec/core/half.h"
#include "nuvec/core/ops.h"
#include "nuvec/io/blob.h"

namespace nuvec::io::detail {

namespace {

constexpr GGMLTypeInfo kTypes[] = {
    {GGMLType::F32, "F32", 1, 4, 0, 1, float32},        {GGMLType::F16, "F16", 1, 2, 0, 1, float16},
    {GGMLType::Q4_0, "Q4_0", 32, 18, 4, 32, float32},   {GGMLType::Q4_1, "Q4_1", 32, 20, 4, 32, float32},
    {GGMLType::Q5_0, "Q5_0", 32, 22, 5, 32, float32},   {GGMLType::Q5_1, "Q5_1", 32, 24, 5, 32, float32},
    {GGMLType::Q8_0, "Q8_0", 32, 34, 8, 32, float32},   {GGMLType::Q2_K, "Q2_K", 256, 84, 2, 16, float32},
    {GGMLType::Q3_K, "Q3_K", 256, 110, 3, 16, float32}, {GGMLType::Q4_K, "Q4_K", 256, 144, 4, 32, float32},
    {GGMLType::Q5_K, "Q5_K", 256, 176, 5, 32, float32}, {GGMLType::Q6_K, "Q6_K", 256, 210, 6, 16, float32},
    {GGMLType::Q8_K, "Q8_K", 256, 292, 8, 16, float32}, {GGMLType::I8, "I8", 1, 1, 0, 1, int8},
    {GGMLType::I16, "I16", 1, 2, 0, 1, int16},          {GGMLType::I32, "I32", 1, 4, 0, 1, int32},
    {GGMLType::I64, "I64", 1, 8, 0, 1, int64},          {GGMLType::F64, "F64", 1, 8, 0, 1, float64},
    {GGMLType::BF16, "BF16", 1, 2, 0, 1, bfloat16},
};

float half_at(const unsigned char* p) {
  float16_t h;
  h.bits = static_cast<uint16_t>(p[0] | (p[1] << 8));
  return static_cast<float>(h);
}

float float_at(const unsigned char* p) {
  uint32_t bits = static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                  (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// The 6-bit scale and min of sub-block j in the 12 packed bytes of Q4_K and Q5_K.
void scale_min_k4(int j, const unsigned char* q, int& scale, int& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Legacy 32-element blocks: nibbles j and j + 16 share byte j (low nibble first); Q5 adds a fifth bit from qh.
void decode_legacy(GGMLType type, const unsigned char* b, uint8_t* codes, float* scales, float* biases) {
  float d = half_at(b);
  switch (type) {
    case GGMLType::Q4_0:
    case GGMLType::Q4_1: {
      const unsigned char* qs = b + (type == GGMLType::Q4_0 ? 2 : 4);
      for (int j = 0; j < 16; ++j) {
        codes[j] = qs[j] & 0xF;
        codes[j + 16] = qs[j] >> 4;
      }
      scales[0] = d;
      biases[0] = type == GGMLType::Q4_0 ? -8.0f * d : half_at(b + 2);
      return;
    }
    case GGMLType::Q5_0:
    case GGMLType::Q5_1: {
      const unsigned char* qh_bytes = b + (type == GGMLType::Q5_0 ? 2 : 4);
      uint32_t qh = static_cast<uint32_t>(qh_bytes[0]) | (static_cast<uint32_t>(qh_bytes[1]) << 8) |
                    (static_cast<uint32_t>(qh_bytes[2]) << 16) | (static_cast<uint32_t>(qh_bytes[3]) << 24);
      const unsigned char* qs = qh_bytes + 4;
      for (int j = 0; j < 16; ++j) {
        codes[j] = static_cast<uint8_t>((qs[j] & 0xF) | (((qh >> j) & 1) << 4));
        codes[j + 16] = static_cast<uint8_t>((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
      }
      scales[0] = d;
      biases[0] = type == GGMLType::Q5_0 ? -16.0f * d : half_at(b + 2);
      return;
    }
    case GGMLType::Q8_0: {
      for (int j = 0; j < 32; ++j) {
        codes[j] = static_cast<uint8_t>(static_cast<int8_t>(b[2 + j]) + 128);
      }
      scales[0] = d;
      biases[0] = -128.0f * d;
      return;
    }
    default:
      return;
  }
}

void decode_q2_k(const unsigned char* b, uint8_t* codes, float* scales, float* biases) {
  const unsigned char* sc = b;
  const unsigned char* q = b + 16;
  float d = half_at(b + 80);
  float dmin = half_at(b + 82);
  int is = 0;
  int out = 0;
  for (int n = 0; n < 256; n += 128, q += 32) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int half = 0; half < 2; ++half, ++is) {
        scales[is] = d * static_cast<float>(sc[is] & 0xF);
        biases[is] = -dmin * static_cast<float>(sc[is] >> 4);
        for (int l = 0; l < 16; ++l) {
          codes[out++] = (q[l + 16 * half] >> shift) & 3;
        }
      }
    }
  }
}

void decode_q3_k(const unsigned char* b, uint8_t* codes, float* scales, float* biases) {
  const unsigned char* hmask = b;
  const unsigned char* q = b + 32;
  const unsigned char* packed = b + 96;
  float d = half_at(b + 108);
  // Sixteen 6-bit scales: low 4 bits in bytes 0-7 (two per byte), high 2 bits in bytes 8-11.
  int sc[16];
  for (int i = 0; i < 16; ++i) {
    int low = i < 8 ? packed[i] & 0xF : packed[i - 8] >> 4;
    int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
    sc[i] = (low | (high << 4)) - 32;
  }
  int is = 0;
  int out = 0;
  int m = 1;
  for (int n = 0; n < 256; n += 128, q += 32) {
    for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
      for (int half = 0; half < 2; ++half, ++is) {
        float dl = d * static_cast<float>(sc[is]);
        scales[is] = dl;
        biases[is] = -4.0f * dl;
        for (int l = 0; l < 16; ++l) {
          int low = (q[l + 16 * half] >> shift) & 3;
          int high = (hmask[l + 16 * half] & m) != 0 ? 1 : 0;
          codes[out++] = static_cast<uint8_t>(low + 4 * high);
        }
      }
    }
  }
}

void decode_q45_k(bool five, const unsigned char* b, uint8_t* codes, float* scales, float* biases) {
  float d = half_at(b);
  float dmin = half_at(b + 2);
  const unsigned char* packed = b + 4;
  const unsigned char* qh = b + 16;
  const unsigned char* ql = five ? b + 48 : b + 16;
  int out = 0;
  for (int j = 0; j < 4; ++j, ql += 32) {
    for (int half = 0; half < 2; ++half) {
      int s = 0;
      int m = 0;
      scale_min_k4(2 * j + half, packed, s, m);
      scales[2 * j + half] = d * static_cast<float>(s);
      biases[2 * j + half] = -dmin * static_cast<float>(m);
      int bit = 2 * j + half;
      for (int l = 0; l < 32; ++l) {
        int code = half == 0 ? ql[l] & 0xF : ql[l] >> 4;
        if (five && (qh[l] >> bit & 1) != 0) {
          code += 16;
        }
        codes[out++] = static_cast<uint8_t>(code);
      }
    }
  }
}

void decode_q6_k(const unsigned char* b, uint8_t* codes, float* scales, float* biases) {
  const unsigned char* ql = b;
  const unsigned char* qh = b + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  float d = half_at(b + 208);
  for (int i = 0; i < 16; ++i) {
    scales[i] = d * static_cast<float>(sc[i]);
    biases[i] = -32.0f * scales[i];
  }
  for (int n = 0; n < 2; ++n, ql += 64, qh += 32) {
    uint8_t* y = codes + 128 * n;
    for (int l = 0; l < 32; ++l) {
      y[l] = static_cast<uint8_t>((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4));
      y[l + 32] = static_cast<uint8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4));
      y[l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
      y[l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
    }
  }
}

void decode_q8_k(const unsigned char* b, uint8_t* codes, float* scales, float* biases) {
  float d = float_at(b);
  for (int j = 0; j < 256; ++j) {
    codes[j] = static_cast<uint8_t>(static_cast<int8_t>(b[4 + j]) + 128);
  }
  for (int i = 0; i < 16; ++i) {
    scales[i] = d;
    biases[i] = -128.0f * d;
  }
}

}  // namespace

const GGMLTypeInfo* ggml_type_info(uint32_t code) {
  for (const auto& t : kTypes) {
    if (static_cast<uint32_t>(t.type) == code) {
      return &t;
    }
  }
  return nullptr;
}

const GGMLTypeInfo* ggml_type_for(Dtype dtype) {
  for (const auto& t : kTypes) {
    if (t.bits == 0 && t.dtype == dtype) {
      return &t;
    }
  }
  return nullptr;
}

void decode_block(GGMLType type, const unsigned char* block, uint8_t* codes, float* scales, float* biases) {
  switch (type) {
    case GGMLType::Q4_0:
    case GGMLType::Q4_1:
    case GGMLType::Q5_0:
    case GGMLType::Q5_1:
    case GGMLType::Q8_0:
      decode_legacy(type, block, codes, scales, biases);
      return;
    case GGMLType::Q2_K:
      decode_q2_k(block, codes, scales, biases);
      return;
    case GGMLType::Q3_K:
      decode_q3_k(block, codes, scales, biases);
      return;
    case GGMLType::Q4_K:
      decode_q45_k(false, block, codes, scales, biases);
      return;
    case GGMLType::Q5_K:
      decode_q45_k(true, block, codes, scales, biases);
      return;
    case GGMLType::Q6_K:
      decode_q6_k(block, codes, scales, biases);
      return;
    case GGMLType::Q8_K:
      decode_q8_k(block, codes, scales, biases);
      return;
    case GGMLType::F32:
    case GGMLType::F16:
    case GGMLType::I8:
    case GGMLType::I16:
    case GGMLType::I32:
    case GGMLType::I64:
    case GGMLType::F64:
    case GGMLType::BF16:
      return;  // plain types have no blocks
  }
}

array dequantize_blocks(const GGMLTypeInfo& info, const unsigned char* blocks, const Shape& shape) {
  array out = allocate(shape, float32);
  auto* y = static_cast<float*>(out.raw_data());
  size_t n_blocks = shape_size(shape) / info.block_elems;
  uint8_t codes[256];
  float scales[16];
  float biases[16];
  for (size_t i = 0; i < n_blocks; ++i) {
    decode_block(info.type, blocks + i * info.block_bytes, codes, scales, biases);
    for (size_t j = 0; j < info.block_elems; ++j) {
      y[i * info.block_elems + j] = scales[j / info.group] * static_cast<float>(codes[j]) + biases[j / info.group];
    }
  }
  return out;
}

std::vector<array> pack_blocks(const GGMLTypeInfo& info, const unsigned char* blocks, const Shape& shape) {
  Shape w_shape = shape;
  Shape s_shape = shape;
  w_shape.back() = static_cast<int32_t>(int64_t{shape.back()} * info.bits / 32);
  s_shape.back() = static_cast<int32_t>(shape.back() / static_cast<int32_t>(info.group));
  array w = allocate(w_shape, uint32);
  array scales = allocate(s_shape, float32);
  array biases = allocate(s_shape, float32);
  auto* words = static_cast<uint32_t*>(w.raw_data());
  if (w.nbytes() == 0) {
    return {w, scales, biases};
  }
  std::memset(words, 0, w.nbytes());
  auto* s = static_cast<float*>(scales.raw_data());
  auto* b = static_cast<float*>(biases.raw_data());
  size_t n_blocks = shape_size(shape) / info.block_elems;
  size_t groups_per_block = info.block_elems / info.group;
  uint8_t codes[256] = {};
  // Each row's bit stream starts on a word boundary: K * bits is a multiple of 32 because K is a multiple of 32.
  uint64_t bit = 0;
  for (size_t i = 0; i < n_blocks; ++i) {
    decode_block(info.type, blocks + i * info.block_bytes, codes, s + i * groups_per_block, b + i * groups_per_block);
    for (size_t j = 0; j < info.block_elems; ++j, bit += static_cast<uint64_t>(info.bits)) {
      uint64_t word = bit / 32;
      unsigned offset = bit % 32;
      words[word] |= static_cast<uint32_t>(codes[j]) << offset;
      if (offset + static_cast<unsigned>(info.bits) > 32) {
        words[word + 1] |= static_cast<uint32_t>(codes[j]) >> (32 - offset);
      }
    }
  }
  return {w, scales, biases};
}

namespace {

void put_half(unsigned char* p, float v) {
  float16_t h(v);
  p[0] = static_cast<unsigned char>(h.bits & 0xFF);
  p[1] = static_cast<unsigned char>(h.bits >> 8);
}

// floor(v) clamped to [lo, hi]; NaN gives 0 (a non-finite input must not reach an int conversion).
int clamp_code(float v, int lo, int hi) {
  if (!(v == v)) {
    return 0;
  }
  return static_cast<int>(std::clamp(std::floor(v), static_cast<float>(lo), static_cast<float>(hi)));
}

// The scales of `groups` groups of `size` elements of x for codes in [0, levels] above each group's minimum (min
// holds minus the minimum, at most 0), with their largest scale and largest min: the first step of the k-quant
// formats with mins.
void group_ranges(const float* x, int groups, int size, int levels, float* scale, float* min, float& max_scale,
                  float& max_min) {
  max_scale = 0;
  max_min = 0;
  for (int g = 0; g < groups; ++g) {
    float lo = 0;
    float hi = x[size * g];
    for (int l = 0; l < size; ++l) {
      lo = std::min(lo, x[size * g + l]);
      hi = std::max(hi, x[size * g + l]);
    }
    scale[g] = std::max(hi - lo, 0.0f) / static_cast<float>(levels);
    min[g] = -lo;
    max_scale = std::max(max_scale, scale[g]);
    max_min = std::max(max_min, min[g]);
  }
}

// The scales of sixteen 16-element groups of x (each group's largest magnitude / divisor) and the largest of them:
// the first step of the symmetric k-quant formats.
float group_magnitudes(const float* x, float divisor, float* scale) {
  float max_scale = 0;
  for (int g = 0; g < 16; ++g) {
    float amax = 0;
    for (int l = 0; l < 16; ++l) {
      amax = std::max(amax, std::fabs(x[16 * g + l]));
    }
    scale[g] = amax / divisor;
    max_scale = std::max(max_scale, scale[g]);
  }
  return max_scale;
}

// One 32-element block of a legacy type. Symmetric types take d from the value of largest magnitude (mapped to the
// most negative code), asymmetric ones from the range.
void encode_legacy(GGMLType type, const float* x, unsigned char* b) {
  bool five = type == GGMLType::Q5_0 || type == GGMLType::Q5_1;
  int max_code = five ? 31 : 15;
  uint8_t codes[32];
  if (type == GGMLType::Q8_0) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) {
      amax = std::max(amax, std::fabs(x[j]));
    }
    float d = amax / 127.0f;
    float id = d != 0 ? 1.0f / d : 0.0f;
    put_half(b, d);
    for (int j = 0; j < 32; ++j) {
      b[2 + j] = static_cast<unsigned char>(static_cast<int8_t>(clamp_code(x[j] * id + 0.5f, -127, 127)));
    }
    return;
  }
  if (type == GGMLType::Q4_0 || type == GGMLType::Q5_0) {
    float extreme = 0;
    for (int j = 0; j < 32; ++j) {
      if (std::fabs(x[j]) > std::fabs(extreme)) {
        extreme = x[j];
      }
    }
    float half_range = five ? 16.0f : 8.0f;
    float d = extreme / -half_range;
    float id = d != 0 ? 1.0f / d : 0.0f;
    put_half(b, d);
    for (int j = 0; j < 32; ++j) {
      codes[j] = static_cast<uint8_t>(clamp_code(x[j] * id + half_range + 0.5f, 0, max_code));
    }
  } else {
    float lo = x[0];
    float hi = x[0];
    for (int j = 1; j < 32; ++j) {
      lo = std::min(lo, x[j]);
      hi = std::max(hi, x[j]);
    }
    float d = (hi - lo) / static_cast<float>(max_code);
    float id = d != 0 ? 1.0f / d : 0.0f;
    put_half(b, d);
    put_half(b + 2, lo);
    for (int j = 0; j < 32; ++j) {
      codes[j] = static_cast<uint8_t>(clamp_code((x[j] - lo) * id + 0.5f, 0, max_code));
    }
  }
  size_t qh_at = type == GGMLType::Q4_0 || type == GGMLType::Q5_0 ? 2 : 4;
  unsigned char* qs = b + qh_at + (five ? 4 : 0);
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<unsigned char>((codes[j] & 0xF) | ((codes[j + 16] & 0xF) << 4));
    qh |= static_cast<uint32_t>(codes[j] >> 4) << j;
    qh |= static_cast<uint32_t>(codes[j + 16] >> 4) << (j + 16);
  }
  if (five) {
    for (int k = 0; k < 4; ++k) {
      b[qh_at + k] = static_cast<unsigned char>((qh >> (8 * k)) & 0xFF);
    }
  }
}

// A Q8_K block: float32 d from the value of largest magnitude, 256 int8 codes, and the sums of each 16 codes.
void encode_q8_k(const float* x, unsigned char* b) {
  float amax = 0;
  for (int j = 0; j < 256; ++j) {
    amax = std::max(amax, std::fabs(x[j]));
  }
  float d = amax / 127.0f;
  float id = d != 0 ? 1.0f / d : 0.0f;
  std::memcpy(b, &d, 4);
  for (int g = 0; g < 16; ++g) {
    int sum = 0;
    for (int l = 0; l < 16; ++l) {
      int q = clamp_code(x[16 * g + l] * id + 0.5f, -127, 127);
      b[4 + 16 * g + l] = static_cast<unsigned char>(static_cast<int8_t>(q));
      sum += q;
    }
    auto s = static_cast<int16_t>(sum);
    std::memcpy(b + 260 + 2 * g, &s, 2);
  }
}

float half_round(float v) { return static_cast<float>(float16_t(v)); }

int nearest(float v, int lo, int hi) { return clamp_code(v + 0.5f, lo, hi); }

// Q4_K and Q5_K: eight 32-element sub-blocks, each with a range from min(0, min) to its max; the sub-blocks' scales
// and mins are quantized to 6 bits against the super-block's d and dmin.
void encode_q45_k(bool five, const float* x, unsigned char* b) {
  int levels = five ? 31 : 15;
  float scale[8];
  float min[8];
  float max_scale = 0;
  float max_min = 0;
  group_ranges(x, 8, 32, levels, scale, min, max_scale, max_min);
  float d = half_round(max_scale / 63);
  float dmin = half_round(max_min / 63);
  put_half(b, d);
  put_half(b + 2, dmin);
  unsigned char* packed = b + 4;
  std::memset(packed, 0, 12);
  uint8_t codes[256];
  for (int k = 0; k < 8; ++k) {
    int sc = d > 0 ? nearest(scale[k] / d, 0, 63) : 0;
    int m = dmin > 0 ? nearest(min[k] / dmin, 0, 63) : 0;
    if (k < 4) {
      packed[k] |= static_cast<unsigned char>(sc);
      packed[k + 4] |= static_cast<unsigned char>(m);
    } else {
      packed[k + 4] = static_cast<unsigned char>((sc & 0xF) | ((m & 0xF) << 4));
      packed[k - 4] |= static_cast<unsigned char>((sc >> 4) << 6);
      packed[k] |= static_cast<unsigned char>((m >> 4) << 6);
    }
    float step = d * static_cast<float>(sc);
    float offset = dmin * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) {
      codes[32 * k + l] = static_cast<uint8_t>(step > 0 ? nearest((x[32 * k + l] + offset) / step, 0, levels) : 0);
    }
  }
  unsigned char* qh = b + 16;
  unsigned char* qs = five ? b + 48 : b + 16;
  if (five) {
    std::memset(qh, 0, 32);
  }
  for (int j = 0; j < 4; ++j) {
    for (int l = 0; l < 32; ++l) {
      uint8_t low = codes[64 * j + l];
      uint8_t high = codes[64 * j + 32 + l];
      qs[32 * j + l] = static_cast<unsigned char>((low & 0xF) | ((high & 0xF) << 4));
      if (five) {
        qh[l] |= static_cast<unsigned char>(((low >> 4) << (2 * j)) | ((high >> 4) << (2 * j + 1)));
      }
    }
  }
}

// Q2_K: sixteen 16-element groups with 4-bit scales and mins against the super-block's d and dmin; 2-bit codes.
void encode_q2_k(const float* x, unsigned char* b) {
  float scale[16];
  float min[16];
  float max_scale = 0;
  float max_min = 0;
  group_ranges(x, 16, 16, 3, scale, min, max_scale, max_min);
  float d = half_round(max_scale / 15);
  float dmin = half_round(max_min / 15);
  put_half(b + 80, d);
  put_half(b + 82, dmin);
  unsigned char* q = b + 16;
  std::memset(q, 0, 64);
  for (int g = 0; g < 16; ++g) {
    int sc = d > 0 ? nearest(scale[g] / d, 0, 15) : 0;
    int m = dmin > 0 ? nearest(min[g] / dmin, 0, 15) : 0;
    b[g] = static_cast<unsigned char>(sc | (m << 4));
    float step = d * static_cast<float>(sc);
    float offset = dmin * static_cast<float>(m);
    // Group g holds elements 16 g ...: chunk n = g / 8, shift 2 j with j = (g % 8) / 2, byte half (g % 2).
    int n = g / 8;
    int j = (g % 8) / 2;
    int half = g % 2;
    for (int l = 0; l < 16; ++l) {
      int code = step > 0 ? nearest((x[16 * g + l] + offset) / step, 0, 3) : 0;
      q[32 * n + 16 * half + l] |= static_cast<unsigned char>(code << (2 * j));
    }
  }
}

// Q3_K: sixteen 16-element groups with signed 6-bit scales against the super-block's d; codes q - 4, the low two
// bits in qs and the third in hmask.
void encode_q3_k(const float* x, unsigned char* b) {
  float scale[16];
  float d = half_round(group_magnitudes(x, 4, scale) / 31);
  put_half(b + 108, d);
  unsigned char* hmask = b;
  unsigned char* q = b + 32;
  unsigned char* packed = b + 96;
  std::memset(b, 0, 108);
  for (int g = 0; g < 16; ++g) {
    int sc = d > 0 ? nearest(scale[g] / d, 0, 31) : 0;
    int stored = sc + 32;  // 6 bits: low 4 in bytes 0-7, high 2 in bytes 8-11
    packed[g < 8 ? g : g - 8] |= static_cast<unsigned char>((stored & 0xF) << (g < 8 ? 0 : 4));
    packed[8 + g % 4] |= static_cast<unsigned char>((stored >> 4) << (2 * (g / 4)));
    float step = d * static_cast<float>(sc);
    int n = g / 8;
    int j = (g % 8) / 2;
    int half = g % 2;
    for (int l = 0; l < 16; ++l) {
      int code = (step > 0 ? nearest(x[16 * g + l] / step, -4, 3) : 0) + 4;
      q[32 * n + 16 * half + l] |= static_cast<unsigned char>((code & 3) << (2 * j));
      hmask[16 * half + l] |= static_cast<unsigned char>((code >> 2) << (4 * n + j));
    }
  }
}

// Q6_K: sixteen 16-element groups with symmetric int8 scales against the super-block's d; codes q - 32.
void encode_q6_k(const float* x, unsigned char* b) {
  float scale[16];
  float d = half_round(group_magnitudes(x, 31, scale) / 127);
  uint8_t codes[256];
  for (int g = 0; g < 16; ++g) {
    int sc = d > 0 ? nearest(scale[g] / d, 0, 127) : 0;
    b[192 + g] = static_cast<unsigned char>(static_cast<int8_t>(sc));
    float step = d * static_cast<float>(sc);
    for (int l = 0; l < 16; ++l) {
      codes[16 * g + l] = static_cast<uint8_t>(step > 0 ? nearest(x[16 * g + l] / step, -32, 31) + 32 : 32);
    }
  }
  put_half(b + 208, d);
  for (int n = 0; n < 2; ++n) {
    const uint8_t* y = codes + 128 * n;
    unsigned char* ql = b + 64 * n;
    unsigned char* qh = b + 128 + 32 * n;
    for (int l = 0; l < 32; ++l) {
      ql[l] = static_cast<unsigned char>((y[l] & 0xF) | ((y[l + 64] & 0xF) << 4));
      ql[l + 32] = static_cast<unsigned char>((y[l + 32] & 0xF) | ((y[l + 96] & 0xF) << 4));
      qh[l] = static_cast<unsigned char>((y[l] >> 4) | ((y[l + 32] >> 4) << 2) | ((y[l + 64] >> 4) << 4) |
                                         ((y[l + 96] >> 4) << 6));
    }
  }
}

}  // namespace

}  // namespace nuvec::io::detail

namespace nuvec::io {

array quantize_blocks(const array& w, GGMLType type) {
  const auto* info = detail::ggml_type_info(static_cast<uint32_t>(type));
  // Every quantized type nuvec reads has an encoder; plain types need none.
  if (info == nullptr || info->bits == 0) {
    throw_unsupported(
        "[quantize_blocks] expected a quantized type (Q4_0 ... Q8_K); got " +
        (info == nullptr ? "type " + std::to_string(static_cast<uint32_t>(type)) : std::string(info->name)));
  }
  if (w.ndim() == 0 || w.shape(-1) % static_cast<int>(info->block_elems) != 0) {
    throw_invalid("[quantize_blocks] the last axis must be a multiple of " + std::to_string(info->block_elems) +
                  " for " + std::string(info->name) + "; got shape " + shape_string(w.shape()));
  }
  array x = contiguous(astype(w, float32));
  x.eval();
  size_t n_blocks = x.size() / info->block_elems;
  array out = detail::allocate({static_cast<int32_t>(n_blocks * info->block_bytes)}, uint8);
  auto* dst = static_cast<unsigned char*>(out.raw_data());
  const auto* src = x.data<float>();
  for (size_t i = 0; i < n_blocks; ++i) {
    if (type == GGMLType::Q8_K) {
      detail::encode_q8_k(src + i * 256, dst + i * info->block_bytes);
    } else if (type == GGMLType::Q4_K || type == GGMLType::Q5_K) {
      detail::encode_q45_k(type == GGMLType::Q5_K, src + i * 256, dst + i * info->block_bytes);
    } else if (type == GGMLType::Q2_K) {
      detail::encode_q2_k(src + i * 256, dst + i * info->block_bytes);
    } else if (type == GGMLType::Q3_K) {
      detail::encode_q3_k(src + i * 256, dst + i * info->block_bytes);
    } else if (type == GGMLType::Q6_K) {
      detail::encode_q6_k(src + i * 256, dst + i * info->block_bytes);
    } else {
      detail::encode_legacy(type, src + i * 32, dst + i * info->block_bytes);
    }
  }
  return out;
}

std::optional<QuantizationMode> block_format(GGMLType type) {
  switch (type) {
    case GGMLType::Q4_0:
      return QuantizationMode::q4_0;
    case GGMLType::Q8_0:
      return QuantizationMode::q8_0;
    case GGMLType::Q4_K:
      return QuantizationMode::q4_k;
    case GGMLType::Q6_K:
      return QuantizationMode::q6_k;
    case GGMLType::F32:
    case GGMLType::F16:
    case GGMLType::Q4_1:
    case GGMLType::Q5_0:
    case GGMLType::Q5_1:
    case GGMLType::Q2_K:
    case GGMLType::Q3_K:
    case GGMLType::Q5_K:
    case GGMLType::Q8_K:
    case GGMLType::I8:
    case GGMLType::I16:
    case GGMLType::I32:
    case GGMLType::I64:
    case GGMLType::F64:
    case GGMLType::BF16:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace nuvec::io
