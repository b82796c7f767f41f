#pragma once

// GGML's tensor types and the block layouts of its quantized types. Every quantized block decodes into groups of
// 16 or 32 elements, each an unsigned code with a float scale and bias (value = scale * code + bias): the form of
// nuvec's affine quantization, so groups of 32 can be kept packed for quantized products.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "nuvec/core/array.h"
#include "nuvec/core/quantization_mode.h"

namespace nuvec::io {

/// The tensor types of GGUF files (ggml_type values) that nuvec reads and writes.
enum class GGMLType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};

namespace detail {

struct GGMLTypeInfo {
  GGMLType type;
  std::string_view name;
  size_t block_elems;  // elements per block (1 for plain types)
  size_t block_bytes;  // bytes per block
  int bits;            // bits per code (0 for plain types)
  size_t group;        // elements sharing one scale and bias
  Dtype dtype;         // the plain type's dtype (float32 for quantized types: what they dequantize to)
};

/// The layout of a type, or null when nuvec does not know the type code.
const GGMLTypeInfo* ggml_type_info(uint32_t code);
/// The type that stores a dtype as plain elements, or null.
const GGMLTypeInfo* ggml_type_for(Dtype dtype);

/// Decodes one block: `codes` gets block_elems codes, `scales` and `biases` block_elems / group values.
void decode_block(GGMLType type, const unsigned char* block, uint8_t* codes, float* scales, float* biases);

/// Dequantizes `blocks` (rows of whole blocks) of a quantized type to a float32 array of `shape`.
array dequantize_blocks(const GGMLTypeInfo& info, const unsigned char* blocks, const Shape& shape);
/// Repacks `blocks` of a quantized type as nuvec's affine quantization: {w (uint32, bit stream of codes, last axis
/// K * bits / 32), scales, biases (float32, last axis K / group)}.
std::vector<array> pack_blocks(const GGMLTypeInfo& info, const unsigned char* blocks, const Shape& shape);

}  // namespace detail

/// The block format (quantization_mode.h) in which nuvec's products read a type's blocks as stored, if any: Q4_0,
/// Q8_0, Q4_K and Q6_K (the types of llama-quantize's Q4_0, Q8_0 and Q4_K_M files).
std::optional<QuantizationMode> block_format(GGMLType type);

/// Encodes float values (the last axis a multiple of 32, or 256 for the K-quants) as raw GGUF blocks of any
/// quantized type above, for writing with io::save_gguf. Each value rounds to the nearest code against scales taken
/// from its block's extremes (llama.cpp's quantizers also search for better scales).
array quantize_blocks(const array& w, GGMLType type);

}  // namespace nuvec::io
