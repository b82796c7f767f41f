#pragma once

// How a quantized weight stores its values.
//
// `affine` is MLX's format: codes, scales and biases in three arrays (CONFORMANCE.md). The others are GGML's block
// formats exactly as GGUF files hold them: a weight is a uint8 array whose rows are self-contained blocks (codes with
// their own scales), so a model file is computed from its mapped pages without repacking. Block layouts (the value
// of code q):
//   q4_0  32 values in 18 bytes: f16 d, 16 bytes of 4-bit codes (value i in the low nibble of byte i, value 16 + i
//         in the high one); d * (q - 8).
//   q8_0  32 values in 34 bytes: f16 d, 32 int8 codes; d * q.
//   q4_k  256 values in 144 bytes: f16 d, f16 dmin, 12 bytes of eight 6-bit scales and mins, 128 bytes of 4-bit
//         codes (each 32 bytes hold 64 values: low nibbles first, then high ones); d * sc * q - dmin * m per 32.
//   q6_k  256 values in 210 bytes: 128 bytes of low 4 bits, 64 of high 2 bits, 16 int8 scales (one per 16 values),
//         f16 d; d * sc * (q - 32).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nuvec {

enum class QuantizationMode : uint8_t { affine, q4_0, q8_0, q4_k, q6_k };

/// The mode's name as the ops take it ("affine", "q4_0", ...).
std::string_view mode_name(QuantizationMode mode);
/// The mode a name stands for, or none.
std::optional<QuantizationMode> parse_quantization_mode(std::string_view name);

/// Values and bytes of one block of a GGML block format (affine has no blocks: {0, 0}).
struct BlockLayout {
  int values;
  int bytes;
};
BlockLayout block_layout(QuantizationMode mode);

/// Whether the mode is one of GGML's block formats.
inline bool is_block_format(QuantizationMode mode) { return mode != QuantizationMode::affine; }

}  // namespace nuvec
