#pragma once

// How a quantized weight stores its values.
//
// `affine` is MLX's format: codes, scales and biases in three arrays (CONFORMANCE.md). `mxfp4`, `mxfp8` and `nvfp4`
// are MLX's microscaled floating formats: codes packed into uint32 words as affine's (value i of a word in bits
// [i * bits, (i + 1) * bits)), one uint8 scale per group and no biases:
//   mxfp4  groups of 32, FP4 E2M1 codes, E8M0 scales (2^(s - 127));
//   mxfp8  groups of 32, FP8 E4M3 codes, E8M0 scales;
//   nvfp4  groups of 16, FP4 E2M1 codes, FP8 E4M3 scales, optionally with a float32 global scale.
// The rest are GGML's block formats exactly as GGUF files hold them: a weight is a uint8 array whose rows are
// self-contained blocks (codes with their own scales), so a model file is computed from its mapped pages without
// repacking. Block layouts (the value of code q):
//   q4_0  32 values in 18 bytes: f16 d, 16 bytes of 4-bit codes (value i in the low nibble of byte i, value 16 + i
//         in the high one); d * (q - 8).
//   q8_0  32 values in 34 bytes: f16 d, 32 int8 codes; d * q.
//   q4_k  256 values in 144 bytes: f16 d, f16 dmin, 12 bytes of eight 6-bit scales and mins, 128 bytes of 4-bit
//         codes (each 32 bytes hold 64 values: low nibbles first, then high ones); d * sc * q - dmin * m per 32.
//   q6_k  256 values in 210 bytes: 128 bytes of low 4 bits, 64 of high 2 bits, 16 int8 scales (one per 16 values),
//         f16 d; d * sc * (q - 32).
// The grouped layouts are nuvec's own orders of those bytes, for the CPU's kernels: each group of rows (8 or 16) is
// stored together, so that a pass over the group streams one run of memory and a vector loads one unit of every row
// (grouped_positions says where each byte goes). Their shape is the plain format's (n rows of B blocks' bytes) and
// their rows go in whole groups: slice them only at multiples of the group and never along their blocks. repack_blocks
// converts between the layouts of one format.
//   q4_0x8   q4_0's rows in eights: first the B x 8 scales (block b's eight d at 16 b), then the B x 128 code bytes
//            (block b's eight rows' 16 bytes at 128 b), so that each 64 code bytes load as one vector.
//   q4_0x16  q4_0's rows in sixteens, 288 bytes a block: the sixteen d, then the rows' 16 code bytes as four runs of
//            sixteen dwords (code dword j of every row at 32 + 64 j), so that a vector's lane i is row i's.
//   q4_kx16  q4_k's rows in sixteens, 2304 bytes a block: its 144 bytes read as 36 dwords, dword t of the sixteen
//            rows at 64 t (dword 0: d and dmin, 1 to 3: the scales and mins, 4 to 35: the codes).
//   q6_kx16  q6_k's rows in sixteens, by dwords in the order its kernels read them: first each block's 3328 bytes,
//            for each 128 values h (q6_k's halves) its two dwords of scales, then for m = 0 to 7 the low-bit dwords m
//            and 8 + m of the half and its high-bit dword m (each dword of the sixteen rows together, 64 bytes), then
//            the B x 16 d (block b's at 32 b), so that a pass over the group reads one run of memory in order.
//   q8_0x16  q8_0's rows in sixteens: first each block's 32 code bytes as eight runs of sixteen dwords (512 bytes a
//            block, code dword j of every row at 64 j), then the B x 16 d (block b's at 32 b), so that every code
//            vector is one aligned line and a vector's lane i is row i's.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nuvec {

// New modes go last: exported files store the mode by its value.
enum class QuantizationMode : uint8_t {
  affine,
  q4_0,
  q8_0,
  q4_k,
  q6_k,
  mxfp4,
  mxfp8,
  nvfp4,
  q4_0x8,
  q4_kx16,
  q4_0x16,
  q6_kx16,
  q8_0x16
};

/// The mode's name as the ops take it ("affine", "q4_0", ...).
std::string_view mode_name(QuantizationMode mode);
/// The mode a name stands for, or none.
std::optional<QuantizationMode> parse_quantization_mode(std::string_view name);

/// Values and bytes of one block of a GGML block format (the other modes have no blocks: {0, 0}).
struct BlockLayout {
  int values;
  int bytes;
};
BlockLayout block_layout(QuantizationMode mode);

/// The rows a block format's layout keeps together (q4_0x8: 8, the x16 layouts: 16; the other block
/// formats: 1; the rest: 0).
int block_rows(QuantizationMode mode);

/// The block format whose bytes a layout holds in another order (q4_0x8 and q4_0x16: q4_0, q4_kx16: q4_k, q6_kx16:
/// q6_k, q8_0x16: q8_0); any other mode itself.
QuantizationMode plain_layout(QuantizationMode mode);

/// Where a grouped layout (block_rows > 1) keeps the bytes of a group of rows of `blocks` blocks: element
/// r * R + j (R the bytes of a row) is the position, among the bytes of the group's rows, of byte j of row r in the
/// plain format (a plain format's: r * R + j). repack_blocks, the CPU's reads of single rows and the embeddings'
/// lookups all go by it.
std::vector<int32_t> grouped_positions(QuantizationMode mode, int blocks);

/// Whether the mode is one of GGML's block formats (or a layout of one).
bool is_block_format(QuantizationMode mode);

/// Whether the mode is one of MLX's microscaled floating formats (mxfp4, mxfp8, nvfp4).
bool is_microscaled(QuantizationMode mode);

/// A microscaled mode's fixed group size and code width.
struct MicroscaledLayout {
  int group_size;
  int bits;
};
MicroscaledLayout microscaled_layout(QuantizationMode mode);

}  // namespace nuvec
