// Quantization: quantize, dequantize, quantized_matmul, gather_qmm and the FP8 conversions. The ops check modes,
// group sizes, bits, shapes and dtypes, cast x, scales and biases to one floating dtype (affine; the microscaled modes
// keep x's dtype and their uint8 scales) and build the Quantize, Dequantize, QuantizedMatmul, GatherQMM and Fp8Cast
// nodes. A quantized_matmul whose weight has batch axes is a gather_qmm over every (x batch, w batch) pair, so
// QuantizedMatmul itself only ever sees one 2-d weight.

#include <cstdint>
#include <vector>

#include "nuvec/core/block_code_bits.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/output_shapes.h"

namespace nuvec {

using nuvec::detail::dtype_string;
using nuvec::detail::make_node;
using nuvec::detail::make_nodes;
using nuvec::detail::op_prefix;

namespace {

/// MLX's modes of the ops taking scales (affine and the microscaled ones); GGML's block formats are pointed to their
/// own overloads.
QuantizationMode scaled_mode(const std::string& mode, const char* op) {
  const auto parsed = parse_quantization_mode(mode);
  if (parsed && !is_block_format(*parsed)) {
    return *parsed;
  }
  if (parsed) {
    throw_invalid(op_prefix(op) + "The block format '" + mode + "' keeps its scales in its blocks; call " + op +
                  " with the weight and the mode only.");
  }
  throw_invalid(op_prefix(op) + "Invalid quantization mode '" + mode +
                "'; expected one of 'affine', 'mxfp4', 'mxfp8', 'nvfp4'.");
}

/// A GGML block format by name, and the values per row of a weight of blocks in it.
struct BlockWeight {
  QuantizationMode mode;
  BlockLayout layout;
  int k;
};

BlockWeight check_blocks(const array& w, const std::string& mode, const char* op) {
  auto parsed = parse_quantization_mode(mode);
  if (!parsed || !is_block_format(*parsed)) {
    throw_invalid(op_prefix(op) + "Invalid block format '" + mode +
                  "'; expected one of 'q4_0', 'q8_0', 'q4_k', 'q6_k', 'q4_0x8', 'q4_kx16', 'q4_0x16', 'q6_kx16', "
                  "'q8_0x16'.");
  }
  const BlockLayout layout = block_layout(*parsed);
  if (w.dtype() != uint8) {
    throw_invalid(op_prefix(op) + "A weight in the block format '" + mode + "' holds its blocks as uint8; got " +
                  dtype_string(w.dtype()) + ".");
  }
  if (w.ndim() != 2 || w.shape(-1) % layout.bytes != 0) {
    throw_invalid(op_prefix(op) + "A weight in the block format '" + mode + "' is a matrix of rows of whole " +
                  std::to_string(layout.bytes) + "-byte blocks; got shape " + shape_string(w.shape()) + ".");
  }
  if (w.shape(0) % block_rows(*parsed) != 0) {
    throw_invalid(op_prefix(op) + "A weight in the layout '" + mode + "' holds its rows in groups of " +
                  std::to_string(block_rows(*parsed)) + "; got shape " + shape_string(w.shape()) + ".");
  }
  return {*parsed, layout, w.shape(-1) / layout.bytes * layout.values};
}

struct Params {
  int group_size;
  int bits;
  QuantizationMode mode;
};

Params params(const std::string& mode, std::optional<int> group_size, std::optional<int> bits, const char* op) {
  const QuantizationMode m = scaled_mode(mode, op);
  if (is_microscaled(m)) {
    // The format fixes both (MLX's messages).
    const MicroscaledLayout layout = microscaled_layout(m);
    Params p{group_size.value_or(layout.group_size), bits.value_or(layout.bits), m};
    if (p.group_size != layout.group_size) {
      throw_invalid(op_prefix(op) + mode + " quantization requires group size " + std::to_string(layout.group_size) +
                    " but got " + std::to_string(p.group_size) + ".");
    }
    if (p.bits != layout.bits) {
      throw_invalid(op_prefix(op) + mode + " quantization requires bits to be " + std::to_string(layout.bits) +
                    " but got " + std::to_string(p.bits) + ".");
    }
    return p;
  }
  Params p{group_size.value_or(64), bits.value_or(4), m};
  // 16 is nuvec's addition to MLX's sizes: GGUF's Q2_K, Q3_K and Q6_K scale groups of 16.
  if (p.group_size != 16 && p.group_size != 32 && p.group_size != 64 && p.group_size != 128) {
    throw_invalid(op_prefix(op) + "The requested group size " + std::to_string(p.group_size) +
                  " is not supported. The supported group sizes are 16, 32, 64 and 128.");
  }
  if (p.bits < 2 || p.bits > 8 || p.bits == 7) {
    throw_invalid(op_prefix(op) + "The requested number of bits " + std::to_string(p.bits) +
                  " is not supported. The supported bits are 2, 3, 4, 5, 6 and 8.");
  }
  return p;
}

/// A global scale is nvfp4's, one float32 value (MLX's checks and messages).
void check_global_scale(const std::optional<array>& global_scale, Params p, const char* op) {
  if (!global_scale) {
    return;
  }
  if (p.mode != QuantizationMode::nvfp4) {
    throw_invalid(op_prefix(op) + "Global scale is only supported for 'nvfp4' quantization mode.");
  }
  if (global_scale->size() != 1) {
    throw_invalid(op_prefix(op) + "Global scale must be a scalar but got shape " +
                  shape_string(global_scale->shape()) + ".");
  }
  if (global_scale->dtype() != float32) {
    throw_invalid(op_prefix(op) + "Global scale must have dtype float32 but got " +
                  dtype_string(global_scale->dtype()) + ".");
  }
}

/// The packed weight, scales and biases agree with each other; returns the unpacked length of w's last axis.
int check_packed(const array& w, const array& scales, const std::optional<array>& biases, Params p, const char* op) {
  if (w.dtype() != uint32) {
    throw_invalid(op_prefix(op) + "The weight matrix should be uint32; got " + dtype_string(w.dtype()) + ".");
  }
  if (w.ndim() < 2) {
    throw_invalid(op_prefix(op) + "The weight matrix must have at least 2 dimensions; got shape " +
                  shape_string(w.shape()) + ".");
  }
  if (is_microscaled(p.mode)) {
    if (scales.dtype() != uint8) {
      throw_invalid(op_prefix(op) + "Scale type must be uint8 but received type " + dtype_string(scales.dtype()) +
                    ".");
    }
    if (biases) {
      throw_invalid(op_prefix(op) + "Biases must be null for quantization mode '" + std::string(mode_name(p.mode)) +
                    "'.");
    }
  } else {
    if (!biases) {
      throw_invalid(op_prefix(op) + "Biases must be provided for affine quantization.");
    }
    if (!is_floating(scales.dtype()) || !is_floating(biases->dtype())) {
      throw_invalid(op_prefix(op) + "Scales and biases must be real floating point; got " +
                    dtype_string(scales.dtype()) + " and " + dtype_string(biases->dtype()) + ".");
    }
    if (scales.shape() != biases->shape()) {
      throw_invalid(op_prefix(op) + "Scales and biases must have the same shape; got " +
                    shape_string(scales.shape()) + " and " + shape_string(biases->shape()) + ".");
    }
  }
  const int64_t unpacked = int64_t{w.shape(-1)} * 32 / p.bits;
  Shape expected = w.shape();
  expected.back() = static_cast<int32_t>(unpacked / p.group_size);
  if (scales.shape() != expected || unpacked % p.group_size != 0) {
    throw_invalid(op_prefix(op) +
                  "The shapes of the weight and scales are incompatible based on bits and group_size; " +
                  "w.shape() == " + shape_string(w.shape()) + " and scales.shape() == " + shape_string(scales.shape()) +
                  " with group_size=" + std::to_string(p.group_size) + " and bits=" + std::to_string(p.bits) + ".");
  }
  return static_cast<int>(unpacked);
}

/// What a quantized product needs from its operands: the contraction length, the output width and the dtype.
struct ProductDims {
  int k;
  int n;
  Dtype dtype;
};

ProductDims check_product(const array& x, const array& w, const array& scales, const std::optional<array>& biases,
                          bool transpose, Params p, const char* op) {
  const int unpacked = check_packed(w, scales, biases, p, op);
  if (x.ndim() < 1) {
    throw_invalid(op_prefix(op) + "The input x must have at least 1 dimension; got a scalar.");
  }
  const int k = transpose ? unpacked : w.shape(-2);
  const int n = transpose ? w.shape(-2) : unpacked;
  if (x.shape(-1) != k) {
    throw_invalid(op_prefix(op) + "Last dimension of x with shape " + shape_string(x.shape()) + " must match the " +
                  (transpose ? "unpacked last" : "second to last") + " dimension " + std::to_string(k) +
                  " of the quantized weight with shape " + shape_string(w.shape()) +
                  " (transpose=" + (transpose ? "true" : "false") + ", bits=" + std::to_string(p.bits) + ").");
  }
  // Microscaled products keep x's dtype (their scales are codes).
  const Dtype dtype = is_microscaled(p.mode) ? x.dtype()
                                             : promote_types(promote_types(x.dtype(), scales.dtype()), biases->dtype());
  if (!is_floating(dtype)) {
    throw_invalid(op_prefix(op) + "Only real floating types are supported; got x of " + dtype_string(x.dtype()) +
                  " and scales of " + dtype_string(scales.dtype()) + ".");
  }
  return {k, n, dtype};
}

/// Indices for the batch axes of `a` (all but the last two): the given ones as uint32, or every batch in order.
array batch_indices(const std::optional<array>& given, const array& a, const char* name, const char* op,
                    StreamOrDevice s) {
  if (given) {
    if (!is_integer(given->dtype())) {
      throw_invalid(op_prefix(op) + "Got " + name + " with invalid dtype " + dtype_string(given->dtype()) +
                    "; indices must be integral.");
    }
    return astype(*given, uint32, s);
  }
  Shape batch(a.shape().begin(), a.shape().end() - 2);
  const auto total = static_cast<int>(shape_size(batch));
  return reshape(arange(0, total, 1, uint32, s), batch, s);
}

/// x, the weight's parts (codes, scales and, for affine, biases in the product's dtype) as the product nodes take them.
std::vector<array> product_inputs(const array& x, const array& w, const array& scales,
                                  const std::optional<array>& biases, Params p, const ProductDims& d,
                                  StreamOrDevice s) {
  if (is_microscaled(p.mode)) {
    return {x, w, scales};
  }
  return {astype(x, d.dtype, s), w, astype(scales, d.dtype, s), astype(*biases, d.dtype, s)};
}

array gather_product(const array& x, const array& w, const array& scales, const std::optional<array>& biases,
                     array lhs, array rhs, bool transpose, Params p, bool sorted, const ProductDims& d,
                     StreamOrDevice s) {
  Shape batch;
  try {
    batch = broadcast_shapes(lhs.shape(), rhs.shape());
  } catch (const error&) {
    throw_invalid("[gather_qmm] The indices with shapes " + shape_string(lhs.shape()) + " and " +
                  shape_string(rhs.shape()) + " cannot be broadcast.");
  }
  lhs = broadcast_to(lhs, batch, s);
  rhs = broadcast_to(rhs, batch, s);
  auto inputs = product_inputs(x, w, scales, biases, p, d, s);
  inputs.push_back(std::move(lhs));
  inputs.push_back(std::move(rhs));
  return make_node(GatherQMM{p.group_size, p.bits, transpose, sorted, p.mode}, std::move(inputs), to_stream(s));
}

}  // namespace

std::vector<array> quantize(const array& w, std::optional<int> group_size, std::optional<int> bits,
                            const std::string& mode, const std::optional<array>& global_scale, StreamOrDevice s) {
  auto p = params(mode, group_size, bits, "quantize");
  check_global_scale(global_scale, p, "quantize");
  if (!is_floating(w.dtype())) {
    throw_invalid("[quantize] Only real floating types can be quantized; got w of " + dtype_string(w.dtype()) + ".");
  }
  if (w.ndim() < 2) {
    throw_invalid("[quantize] The matrix to be quantized must have at least 2 dimensions; got shape " +
                  shape_string(w.shape()) + ".");
  }
  if (w.shape(-1) % p.group_size != 0) {
    throw_invalid("[quantize] The last dimension of the matrix needs to be divisible by the quantization group size " +
                  std::to_string(p.group_size) + "; got shape " + shape_string(w.shape()) + ".");
  }
  if (int64_t{w.shape(-1)} * p.bits % 32 != 0) {
    throw_invalid("[quantize] A row of " + std::to_string(w.shape(-1)) + " values of " + std::to_string(p.bits) +
                  " bits must fill whole 32-bit words; got shape " + shape_string(w.shape()) + ".");
  }
  std::vector<array> inputs{w};
  if (global_scale) {
    inputs.push_back(reshape(*global_scale, {}, s));
  }
  return make_nodes(Quantize{p.group_size, p.bits, p.mode}, std::move(inputs), to_stream(s));
}

array dequantize(const array& w, const array& scales, const std::optional<array>& biases, std::optional<int> group_size,
                 std::optional<int> bits, const std::string& mode, const std::optional<array>& global_scale,
                 std::optional<Dtype> dtype, StreamOrDevice s) {
  auto p = params(mode, group_size, bits, "dequantize");
  check_global_scale(global_scale, p, "dequantize");
  check_packed(w, scales, biases, p, "dequantize");
  // MLX's default: the scales' dtype, or bfloat16 where the scales are codes.
  const Dtype out_dtype = dtype.value_or(is_microscaled(p.mode) ? bfloat16 : scales.dtype());
  if (!is_floating(out_dtype)) {
    throw_invalid("[dequantize] The output dtype must be real floating point; got " + dtype_string(out_dtype) + ".");
  }
  if (is_microscaled(p.mode)) {
    std::vector<array> inputs{w, scales};
    if (global_scale) {
      inputs.push_back(reshape(*global_scale, {}, s));
    }
    return make_node(Dequantize{p.group_size, p.bits, p.mode, out_dtype}, std::move(inputs), to_stream(s));
  }
  // Computed in float32 from the scales' own values and rounded once to the output dtype.
  return make_node(Dequantize{p.group_size, p.bits, QuantizationMode::affine, out_dtype},
                   {w, scales, astype(*biases, scales.dtype(), s)}, to_stream(s));
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): MLX's signature
array quantized_matmul(array x, array w, array scales, std::optional<array> biases, bool transpose,
                       std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
                       StreamOrDevice s) {
  auto p = params(mode, group_size, bits, "quantized_matmul");
  auto d = check_product(x, w, scales, biases, transpose, p, "quantized_matmul");
  if (w.ndim() > 2) {
    // Batched weights: pair the batches by broadcasting, as matmul does.
    auto x2 = x.ndim() == 1 ? reshape(x, {1, x.shape(0)}, s) : x;
    Shape x_batch(x2.shape().begin(), x2.shape().end() - 2);
    Shape w_batch(w.shape().begin(), w.shape().end() - 2);
    Shape batch;
    try {
      batch = broadcast_shapes(x_batch, w_batch);
    } catch (const error&) {
      throw_invalid("[quantized_matmul] The batch dimensions of x with shape " + shape_string(x.shape()) +
                    " and w with shape " + shape_string(w.shape()) + " cannot be broadcast.");
    }
    auto lhs = batch_indices(std::nullopt, x2, "lhs_indices", "quantized_matmul", s);
    auto rhs = batch_indices(std::nullopt, w, "rhs_indices", "quantized_matmul", s);
    auto out = gather_product(x2, w, scales, biases, broadcast_to(lhs, batch, s), broadcast_to(rhs, batch, s),
                              transpose, p, false, d, s);
    if (x.ndim() == 1) {
      Shape shape(out.shape());
      shape.erase(shape.end() - 2);
      out = reshape(out, shape, s);
    }
    return out;
  }
  return make_node(QuantizedMatmul{p.group_size, p.bits, transpose, p.mode},
                   product_inputs(x, w, scales, biases, p, d, s), to_stream(s));
}

array gather_qmm(const array& x, const array& w, const array& scales, const std::optional<array>& biases,
                 std::optional<array> lhs_indices, std::optional<array> rhs_indices, bool transpose,
                 std::optional<int> group_size, std::optional<int> bits, const std::string& mode, bool sorted_indices,
                 StreamOrDevice s) {
  auto p = params(mode, group_size, bits, "gather_qmm");
  auto d = check_product(x, w, scales, biases, transpose, p, "gather_qmm");
  if (x.ndim() < 2) {
    throw_invalid("[gather_qmm] x must have at least 2 dimensions; got shape " + shape_string(x.shape()) + ".");
  }
  if (w.ndim() < 3 && rhs_indices) {
    throw_invalid("[gather_qmm] rhs_indices need a weight with batch axes; got w of shape " + shape_string(w.shape()) +
                  ".");
  }
  auto lhs = batch_indices(lhs_indices, x, "lhs_indices", "gather_qmm", s);
  auto rhs = batch_indices(rhs_indices, w, "rhs_indices", "gather_qmm", s);
  return gather_product(x, w, scales, biases, lhs, rhs, transpose, p, sorted_indices, d, s);
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): MLX's form
array quantized_matmul(array x, array w, const std::string& mode, StreamOrDevice s) {
  const BlockWeight b = check_blocks(w, mode, "quantized_matmul");
  if (x.ndim() < 1 || x.shape(-1) != b.k) {
    throw_invalid("[quantized_matmul] Last dimension of x with shape " + shape_string(x.shape()) + " must match the " +
                  std::to_string(b.k) + " values of a row of the " + mode + " weight with shape " +
                  shape_string(w.shape()) + ".");
  }
  if (!is_floating(x.dtype())) {
    throw_invalid("[quantized_matmul] Only real floating types are supported; got x of " + dtype_string(x.dtype()) +
                  ".");
  }
  return make_node(QuantizedMatmul{b.layout.values, block_code_bits(b.mode), true, b.mode}, {x, w}, to_stream(s));
}

array dequantize(const array& w, const std::string& mode, std::optional<Dtype> dtype, StreamOrDevice s) {
  const BlockWeight b = check_blocks(w, mode, "dequantize");
  const Dtype out_dtype = dtype.value_or(float32);
  if (!is_floating(out_dtype)) {
    throw_invalid("[dequantize] The output dtype must be real floating point; got " + dtype_string(out_dtype) + ".");
  }
  return make_node(Dequantize{b.layout.values, block_code_bits(b.mode), b.mode, out_dtype}, {w}, to_stream(s));
}

array repack_blocks(const array& w, const std::string& from, const std::string& to, StreamOrDevice s) {
  const BlockWeight source = check_blocks(w, from, "repack_blocks");
  const BlockWeight target = check_blocks(w, to, "repack_blocks");
  if (source.mode == target.mode) {
    return w;
  }
  if (plain_layout(source.mode) != plain_layout(target.mode)) {
    throw_invalid("[repack_blocks] No repacking from '" + from + "' to '" + to +
                  "'; the layouts of one format are 'q4_0', 'q4_0x8' and 'q4_0x16', 'q8_0' and 'q8_0x16', 'q4_k' and "
                  "'q4_kx16', and 'q6_k' and 'q6_kx16'.");
  }
  const QuantizationMode plain = plain_layout(source.mode);
  if (source.mode != plain && target.mode != plain) {
    const std::string plain_name(mode_name(plain));
    return repack_blocks(repack_blocks(w, from, plain_name, s), plain_name, to, s);
  }
  // A group of G rows is one gather of its bytes: grouped_positions says where each byte of its plain rows goes in
  // the grouped layout (quantization_mode.h), and the inverse where each grouped byte comes from.
  const QuantizationMode grouped = target.mode != plain ? target.mode : source.mode;
  const int rows = block_rows(grouped);
  const int row_bytes = w.shape(1);
  const std::vector<int32_t> positions = grouped_positions(grouped, row_bytes / source.layout.bytes);
  std::vector<int32_t> sources = positions;
  if (target.mode == grouped) {
    for (size_t q = 0; q < positions.size(); ++q) {
      sources[static_cast<size_t>(positions[q])] = static_cast<int32_t>(q);
    }
  }
  // Gathered in the widest words that move whole (the layouts move dwords and halfwords, never single bytes): a
  // gather of bytes took a model's load twice as long.
  int word = 8;
  const auto moves_whole = [&](size_t bytes) {
    for (size_t q = 0; q < sources.size(); ++q) {
      const size_t first = q - q % bytes;
      if (sources[first] % bytes != 0 || static_cast<size_t>(sources[q]) != sources[first] + q % bytes) {
        return false;
      }
    }
    return sources.size() % bytes == 0;
  };
  while (word > 1 && !moves_whole(static_cast<size_t>(word))) {
    word /= 2;
  }
  std::vector<int32_t> words;
  for (size_t q = 0; q < sources.size(); q += static_cast<size_t>(word)) {
    words.push_back(sources[q] / word);
  }
  const Dtype word_type = word == 8 ? uint64 : word == 4 ? uint32 : word == 2 ? uint16 : uint8;
  const array groups = view(reshape(w, {w.shape(0) / rows, rows * row_bytes}, s), word_type, s);
  const array gathered = take(groups, array(words.begin(), {static_cast<int>(words.size())}, int32), 1, s);
  return reshape(view(gathered, uint8, s), w.shape(), s);
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): MLX's signature
array to_fp8(array x, StreamOrDevice s) {
  if (!is_floating(x.dtype())) {
    throw_invalid("[to_fp8] Only real floating point inputs can be converted to fp8; got " + dtype_string(x.dtype()) +
                  ".");
  }
  return make_node(Fp8Cast{true, uint8}, {x}, to_stream(s));
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): MLX's signature
array from_fp8(array x, Dtype dtype, StreamOrDevice s) {
  if (x.dtype() != uint8) {
    throw_invalid("[from_fp8] Input must be uint8 fp8 codes; got " + dtype_string(x.dtype()) + ".");
  }
  if (!is_floating(dtype)) {
    throw_invalid("[from_fp8] The output dtype must be real floating point; got " + dtype_string(dtype) + ".");
  }
  return make_node(Fp8Cast{false, dtype}, {x}, to_stream(s));
}

}  // namespace nuvec
