#pragma once

// GGUF (version 3, and version 2 for reading): metadata key-value pairs, tensor infos, aligned tensor data.
//
// Tensors of plain types (F32, F16, BF16, F64, I8, I16, I32, I64) load as arrays that adopt the mapped file's
// bytes. GGUF lists axes innermost first; nuvec's shapes are the reverse, as in MLX. Quantized tensors load in one
// of two forms (GGUFQuantized):
// - packed (the default of load_gguf, as MLX does for Q4_0, Q4_1 and Q8_0): types whose blocks share a scale and a
//   bias over 32 elements (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K) become nuvec's affine quantization, exactly:
//   "<name>" holds the uint32 codes, "<base>.scales" and "<base>.biases" float32 per 32 elements ("<base>" is the
//   name without a ".weight" suffix), ready for quantized_matmul(x, w, scales, biases, true, 32, bits); the types
//   with 16-element groups (Q2_K, Q3_K, Q6_K, Q8_K) are dequantized to float32.
// - packed_all: as packed, and the types with 16-element groups too (scales and biases per 16 elements, for
//   quantized_matmul with group_size 16).
// - dequantize: every quantized tensor becomes float32.
// - skip: quantized tensors are left out (for readers of the metadata, who need not decode the weights).
// Metadata scalars load as 0-d arrays of their type, numeric arrays as 1-d arrays, strings as std::string, string
// arrays as std::vector<std::string>; arrays of arrays (which MLX's type cannot hold) load as std::monostate.

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "nuvec/core/array.h"
#include "nuvec/io/blob.h"
#include "nuvec/io/gguf_quants.h"
#include "nuvec/io/stream.h"

namespace nuvec {

using GGUFMetaData = std::variant<std::monostate, array, std::string, std::vector<std::string>>;
using GGUFLoad = std::pair<std::unordered_map<std::string, array>, std::unordered_map<std::string, GGUFMetaData>>;

/// Loads a GGUF file (quantized tensors packed where nuvec's affine form holds them exactly).
GGUFLoad load_gguf(const std::string& file, StreamOrDevice s = {});
/// Saves arrays (float32, float16, int8, int16, int32: MLX's dtypes; io::save_gguf writes the others) and metadata as
/// GGUF version 3.
void save_gguf(std::string file, std::unordered_map<std::string, array> array_map,
               std::unordered_map<std::string, GGUFMetaData> meta_data = {});
/// The same through a writer (a file-like object's bytes in memory, say).
void save_gguf(std::shared_ptr<io::Writer> out_stream, std::unordered_map<std::string, array> array_map,
               std::unordered_map<std::string, GGUFMetaData> meta_data = {});

namespace io {

enum class GGUFQuantized { packed, packed_all, dequantize, skip };

GGUFLoad load_gguf(const std::string& file, GGUFQuantized mode);
/// Parses GGUF bytes held by a blob.
GGUFLoad load_gguf(const std::shared_ptr<const Blob>& blob, GGUFQuantized mode = GGUFQuantized::packed);

/// One tensor as GGUF stores it: for a plain type, `data` holds its elements (when writing, any dtype, converted);
/// for a quantized type, `data` holds the raw blocks as uint8, rows of whole blocks, and `shape` the tensor's logical
/// shape.
struct GGUFTensor {
  std::string name;
  GGMLType type;
  Shape shape;
  array data;
};

/// A GGUF file's tensors as stored, in file order (plain types as arrays of their dtype, quantized types as their raw
/// blocks: uint8 rows of whole blocks, the last axis in bytes; both adopt the mapped file's bytes), and its metadata.
struct GGUFTensors {
  std::vector<GGUFTensor> tensors;
  std::unordered_map<std::string, GGUFMetaData> metadata;
  /// The mapped file the tensors view.
  std::shared_ptr<const Blob> blob;
};
GGUFTensors load_gguf_tensors(const std::string& file);

/// Writes GGUF version 3 through a writer; `alignment` (a multiple of 8) is stored as general.alignment when it
/// is not the default 32.
void save_gguf(Writer& out, const std::vector<GGUFTensor>& tensors,
               const std::unordered_map<std::string, GGUFMetaData>& metadata, uint32_t alignment = 32);

}  // namespace io

}  // namespace nuvec
