#pragma once

// The per-primitive rules of the transforms (internal). Every primitive outside
// the unary and binary families declares one overload per transform below, and
// every unary and binary primitive one `scaled` overload (its derivative) in
// elementwise_rules.cpp; dispatch.cpp visits the primitive variant exhaustively,
// so a primitive without its rules does not compile. A rule that has no meaning
// throws an error naming the primitive and the transform.

#include <string_view>
#include <utility>
#include <vector>

#include "nuvec/core/array.h"
#include "nuvec/core/transforms.h"

namespace nuvec::detail {

/// A node's inputs and outputs, the cotangents of its outputs (zeros where none arrived) and the inputs that need
/// a cotangent. A rule returns one cotangent per entry of argnums, of that input's shape.
struct VjpArgs {
  const std::vector<array>& primals;
  const std::vector<array>& outputs;
  const std::vector<array>& cotangents;
  const std::vector<int>& argnums;
};

/// A node's inputs and outputs and the tangents of the inputs in argnums (tangents[i] of primals[argnums[i]]). A
/// rule returns one tangent per output.
struct JvpArgs {
  const std::vector<array>& primals;
  const std::vector<array>& outputs;
  const std::vector<array>& tangents;
  const std::vector<int>& argnums;
};

/// A node's inputs with their mapped axis (-1: not mapped; at least one is mapped), the node's unmapped outputs and
/// the mapped size. A rule returns the mapped outputs and their mapped axes.
struct VmapArgs {
  const std::vector<array>& inputs;
  const std::vector<int>& axes;
  const std::vector<array>& outputs;
  int size;
};
using Batched = std::pair<std::vector<array>, std::vector<int>>;

std::vector<array> vjp_rule(const Primitive& p, const VjpArgs& args);
std::vector<array> jvp_rule(const Primitive& p, const JvpArgs& args);
Batched vmap_rule(const Primitive& p, const VmapArgs& args);

/// Whether input `index` of a node with `num_outputs` outputs carries derivatives: not StopGradient's, not the
/// dependencies of Depends, not the function outputs a Custom node wraps.
bool gradient_flows(const Primitive& p, size_t index, size_t num_outputs);

/// The rules of the unary and binary families (elementwise_rules.cpp).
std::vector<array> vjp_elementwise(const Primitive& p, const VjpArgs& args);
std::vector<array> jvp_elementwise(const Primitive& p, const JvpArgs& args);
/// Maps any primitive whose output has the shape of its broadcast inputs (element-wise, Select, AsType).
Batched vmap_elementwise(const Primitive& p, const VmapArgs& args);

// ---- shared helpers (rule_helpers.cpp)

/// Throws "[<transform>] <primitive> ...: <why>" for a rule without meaning.
[[noreturn]] void throw_no_rule(std::string_view transform, std::string_view primitive, std::string_view why);

/// The same primitive applied to other inputs, outputs of the given shapes and dtypes.
array reapply(const Primitive& p, std::vector<array> inputs, Shape shape, Dtype dtype);
std::vector<array> reapply(const Primitive& p, std::vector<array> inputs, const std::vector<array>& like);

/// `x` summed down to `shape` (NumPy broadcasting undone, the scalar operand of element-wise primitives included).
array sum_to_shape(const array& x, const Shape& shape);

/// The cotangent of input `index`, or nullptr when that input needs none.
const array* tangent_of(const JvpArgs& args, size_t index);

/// Rules that transform a composition of plain ops equal to the primitive.
std::vector<array> vjp_through(const Function& f, const VjpArgs& args);
std::vector<array> jvp_through(const Function& f, const JvpArgs& args);
Batched vmap_through(const Function& f, const VmapArgs& args);

/// The jvp of a primitive from its vjp rule: the vjp is linear in the cotangents, and the vjp of that linear map
/// with respect to the cotangents is the jvp.
std::vector<array> jvp_by_transposing_vjp(const Primitive& p, const JvpArgs& args);

/// Axes moved past a new front axis.
std::vector<int> shifted(const std::vector<int>& axes);
/// `shape` with a front axis of `size`.
Shape front_shape(int size, const Shape& shape);
/// The primitive applied to inputs whose mapped axis is in front: its outputs get a front axis of the mapped size.
Batched reapply_front(const Primitive& p, std::vector<array> inputs, const VmapArgs& args);
/// A one-input primitive's vmap: the input's mapped axis moved in front, `q` (the primitive with parameters for
/// the new front axis) applied.
Batched front_vmap(const Primitive& q, const VmapArgs& args);
/// Input i with its mapped axis moved to the front, or broadcast to a new front axis of `size` when unmapped.
array batched_front(const VmapArgs& args, size_t i);
/// Input i with its mapped axis moved to the front, or as it is when unmapped.
array moved_front(const VmapArgs& args, size_t i);
/// `a` with axis 0 of `size` added in front when not mapped.
array with_front_axis(const array& a, int size);

// ---- element-wise beyond the unary and binary families (elementwise_rules.cpp)
std::vector<array> vjp_of(const Select& p, const VjpArgs& args);
std::vector<array> jvp_of(const Select& p, const JvpArgs& args);
Batched vmap_of(const Select& p, const VmapArgs& args);
std::vector<array> vjp_of(const AsType& p, const VjpArgs& args);
std::vector<array> jvp_of(const AsType& p, const JvpArgs& args);
Batched vmap_of(const AsType& p, const VmapArgs& args);
std::vector<array> vjp_of(const Arange& p, const VjpArgs& args);
std::vector<array> jvp_of(const Arange& p, const JvpArgs& args);
Batched vmap_of(const Arange& p, const VmapArgs& args);
std::vector<array> vjp_of(const RandomBits& p, const VjpArgs& args);
std::vector<array> jvp_of(const RandomBits& p, const JvpArgs& args);
Batched vmap_of(const RandomBits& p, const VmapArgs& args);

// ---- views and layout (view_rules.cpp)
std::vector<array> vjp_of(const Broadcast& p, const VjpArgs& args);
std::vector<array> jvp_of(const Broadcast& p, const JvpArgs& args);
Batched vmap_of(const Broadcast& p, const VmapArgs& args);
std::vector<array> vjp_of(const Reshape& p, const VjpArgs& args);
std::vector<array> jvp_of(const Reshape& p, const JvpArgs& args);
Batched vmap_of(const Reshape& p, const VmapArgs& args);
std::vector<array> vjp_of(const Transpose& p, const VjpArgs& args);
std::vector<array> jvp_of(const Transpose& p, const JvpArgs& args);
Batched vmap_of(const Transpose& p, const VmapArgs& args);
std::vector<array> vjp_of(const Slice& p, const VjpArgs& args);
std::vector<array> jvp_of(const Slice& p, const JvpArgs& args);
Batched vmap_of(const Slice& p, const VmapArgs& args);
std::vector<array> vjp_of(const AsStrided& p, const VjpArgs& args);
std::vector<array> jvp_of(const AsStrided& p, const JvpArgs& args);
Batched vmap_of(const AsStrided& p, const VmapArgs& args);
std::vector<array> vjp_of(const Diagonal& p, const VjpArgs& args);
std::vector<array> jvp_of(const Diagonal& p, const JvpArgs& args);
Batched vmap_of(const Diagonal& p, const VmapArgs& args);
std::vector<array> vjp_of(const View& p, const VjpArgs& args);
std::vector<array> jvp_of(const View& p, const JvpArgs& args);
Batched vmap_of(const View& p, const VmapArgs& args);
std::vector<array> vjp_of(const StopGradient& p, const VjpArgs& args);
std::vector<array> jvp_of(const StopGradient& p, const JvpArgs& args);
Batched vmap_of(const StopGradient& p, const VmapArgs& args);
std::vector<array> vjp_of(const Depends& p, const VjpArgs& args);
std::vector<array> jvp_of(const Depends& p, const JvpArgs& args);
Batched vmap_of(const Depends& p, const VmapArgs& args);
std::vector<array> vjp_of(const Custom& p, const VjpArgs& args);
std::vector<array> jvp_of(const Custom& p, const JvpArgs& args);
Batched vmap_of(const Custom& p, const VmapArgs& args);
std::vector<array> vjp_of(const Copy& p, const VjpArgs& args);
std::vector<array> jvp_of(const Copy& p, const JvpArgs& args);
Batched vmap_of(const Copy& p, const VmapArgs& args);
std::vector<array> vjp_of(const Concatenate& p, const VjpArgs& args);
std::vector<array> jvp_of(const Concatenate& p, const JvpArgs& args);
Batched vmap_of(const Concatenate& p, const VmapArgs& args);
std::vector<array> vjp_of(const Pad& p, const VjpArgs& args);
std::vector<array> jvp_of(const Pad& p, const JvpArgs& args);
Batched vmap_of(const Pad& p, const VmapArgs& args);

// ---- reductions, sorting and scans (reduce_rules.cpp)
std::vector<array> vjp_of(const Reduce& p, const VjpArgs& args);
std::vector<array> jvp_of(const Reduce& p, const JvpArgs& args);
Batched vmap_of(const Reduce& p, const VmapArgs& args);
std::vector<array> vjp_of(const ArgReduce& p, const VjpArgs& args);
std::vector<array> jvp_of(const ArgReduce& p, const JvpArgs& args);
Batched vmap_of(const ArgReduce& p, const VmapArgs& args);
std::vector<array> vjp_of(const Softmax& p, const VjpArgs& args);
std::vector<array> jvp_of(const Softmax& p, const JvpArgs& args);
Batched vmap_of(const Softmax& p, const VmapArgs& args);
std::vector<array> vjp_of(const LogSumExp& p, const VjpArgs& args);
std::vector<array> jvp_of(const LogSumExp& p, const JvpArgs& args);
Batched vmap_of(const LogSumExp& p, const VmapArgs& args);
std::vector<array> vjp_of(const Sort& p, const VjpArgs& args);
std::vector<array> jvp_of(const Sort& p, const JvpArgs& args);
Batched vmap_of(const Sort& p, const VmapArgs& args);
std::vector<array> vjp_of(const ArgSort& p, const VjpArgs& args);
std::vector<array> jvp_of(const ArgSort& p, const JvpArgs& args);
Batched vmap_of(const ArgSort& p, const VmapArgs& args);
std::vector<array> vjp_of(const Partition& p, const VjpArgs& args);
std::vector<array> jvp_of(const Partition& p, const JvpArgs& args);
Batched vmap_of(const Partition& p, const VmapArgs& args);
std::vector<array> vjp_of(const ArgPartition& p, const VjpArgs& args);
std::vector<array> jvp_of(const ArgPartition& p, const JvpArgs& args);
Batched vmap_of(const ArgPartition& p, const VmapArgs& args);
std::vector<array> vjp_of(const SearchSorted& p, const VjpArgs& args);
std::vector<array> jvp_of(const SearchSorted& p, const JvpArgs& args);
Batched vmap_of(const SearchSorted& p, const VmapArgs& args);
std::vector<array> vjp_of(const Scan& p, const VjpArgs& args);
std::vector<array> jvp_of(const Scan& p, const JvpArgs& args);
Batched vmap_of(const Scan& p, const VmapArgs& args);

// ---- products, quantization, fft, convolution and fast ops (product_rules.cpp)
std::vector<array> vjp_of(const Matmul& p, const VjpArgs& args);
std::vector<array> jvp_of(const Matmul& p, const JvpArgs& args);
Batched vmap_of(const Matmul& p, const VmapArgs& args);
std::vector<array> vjp_of(const AddMM& p, const VjpArgs& args);
std::vector<array> jvp_of(const AddMM& p, const JvpArgs& args);
Batched vmap_of(const AddMM& p, const VmapArgs& args);
std::vector<array> vjp_of(const Quantize& p, const VjpArgs& args);
std::vector<array> jvp_of(const Quantize& p, const JvpArgs& args);
Batched vmap_of(const Quantize& p, const VmapArgs& args);
std::vector<array> vjp_of(const Dequantize& p, const VjpArgs& args);
std::vector<array> jvp_of(const Dequantize& p, const JvpArgs& args);
Batched vmap_of(const Dequantize& p, const VmapArgs& args);
std::vector<array> vjp_of(const QuantizedMatmul& p, const VjpArgs& args);
std::vector<array> jvp_of(const QuantizedMatmul& p, const JvpArgs& args);
Batched vmap_of(const QuantizedMatmul& p, const VmapArgs& args);
std::vector<array> vjp_of(const GatherQMM& p, const VjpArgs& args);
std::vector<array> jvp_of(const GatherQMM& p, const JvpArgs& args);
Batched vmap_of(const GatherQMM& p, const VmapArgs& args);
std::vector<array> vjp_of(const Fp8Cast& p, const VjpArgs& args);
std::vector<array> jvp_of(const Fp8Cast& p, const JvpArgs& args);
Batched vmap_of(const Fp8Cast& p, const VmapArgs& args);
std::vector<array> vjp_of(const FFT& p, const VjpArgs& args);
std::vector<array> jvp_of(const FFT& p, const JvpArgs& args);
Batched vmap_of(const FFT& p, const VmapArgs& args);
std::vector<array> vjp_of(const Convolution& p, const VjpArgs& args);
std::vector<array> jvp_of(const Convolution& p, const JvpArgs& args);
Batched vmap_of(const Convolution& p, const VmapArgs& args);
std::vector<array> vjp_of(const RMSNorm& p, const VjpArgs& args);
std::vector<array> jvp_of(const RMSNorm& p, const JvpArgs& args);
Batched vmap_of(const RMSNorm& p, const VmapArgs& args);
std::vector<array> vjp_of(const LayerNorm& p, const VjpArgs& args);
std::vector<array> jvp_of(const LayerNorm& p, const JvpArgs& args);
Batched vmap_of(const LayerNorm& p, const VmapArgs& args);
std::vector<array> vjp_of(const RoPE& p, const VjpArgs& args);
std::vector<array> jvp_of(const RoPE& p, const JvpArgs& args);
Batched vmap_of(const RoPE& p, const VmapArgs& args);
std::vector<array> vjp_of(const ScaledDotProductAttention& p, const VjpArgs& args);
std::vector<array> jvp_of(const ScaledDotProductAttention& p, const JvpArgs& args);
Batched vmap_of(const ScaledDotProductAttention& p, const VmapArgs& args);
std::vector<array> vjp_of(const RMSNormVJP& p, const VjpArgs& args);
std::vector<array> jvp_of(const RMSNormVJP& p, const JvpArgs& args);
Batched vmap_of(const RMSNormVJP& p, const VmapArgs& args);
std::vector<array> vjp_of(const LayerNormVJP& p, const VjpArgs& args);
std::vector<array> jvp_of(const LayerNormVJP& p, const JvpArgs& args);
Batched vmap_of(const LayerNormVJP& p, const VmapArgs& args);
std::vector<array> vjp_of(const ScaledDotProductAttentionVJP& p, const VjpArgs& args);
std::vector<array> jvp_of(const ScaledDotProductAttentionVJP& p, const JvpArgs& args);
Batched vmap_of(const ScaledDotProductAttentionVJP& p, const VmapArgs& args);
std::vector<array> vjp_of(const BlockMaskedMM& p, const VjpArgs& args);
std::vector<array> jvp_of(const BlockMaskedMM& p, const JvpArgs& args);
Batched vmap_of(const BlockMaskedMM& p, const VmapArgs& args);
std::vector<array> vjp_of(const GatherMM& p, const VjpArgs& args);
std::vector<array> jvp_of(const GatherMM& p, const JvpArgs& args);
Batched vmap_of(const GatherMM& p, const VmapArgs& args);
std::vector<array> vjp_of(const SegmentedMM& p, const VjpArgs& args);
std::vector<array> jvp_of(const SegmentedMM& p, const JvpArgs& args);
Batched vmap_of(const SegmentedMM& p, const VmapArgs& args);
std::vector<array> vjp_of(const Hadamard& p, const VjpArgs& args);
std::vector<array> jvp_of(const Hadamard& p, const JvpArgs& args);
Batched vmap_of(const Hadamard& p, const VmapArgs& args);

// ---- distributed (collective_rules.cpp)
std::vector<array> vjp_of(const Collective& p, const VjpArgs& args);
std::vector<array> jvp_of(const Collective& p, const JvpArgs& args);
Batched vmap_of(const Collective& p, const VmapArgs& args);

// ---- indexing (indexing_rules.cpp)
std::vector<array> vjp_of(const Gather& p, const VjpArgs& args);
std::vector<array> jvp_of(const Gather& p, const JvpArgs& args);
Batched vmap_of(const Gather& p, const VmapArgs& args);
std::vector<array> vjp_of(const GatherAxis& p, const VjpArgs& args);
std::vector<array> jvp_of(const GatherAxis& p, const JvpArgs& args);
Batched vmap_of(const GatherAxis& p, const VmapArgs& args);
std::vector<array> vjp_of(const Scatter& p, const VjpArgs& args);
std::vector<array> jvp_of(const Scatter& p, const JvpArgs& args);
Batched vmap_of(const Scatter& p, const VmapArgs& args);
std::vector<array> vjp_of(const ScatterAxis& p, const VjpArgs& args);
std::vector<array> jvp_of(const ScatterAxis& p, const JvpArgs& args);
Batched vmap_of(const ScatterAxis& p, const VmapArgs& args);
std::vector<array> vjp_of(const MaskedScatter& p, const VjpArgs& args);
std::vector<array> jvp_of(const MaskedScatter& p, const JvpArgs& args);
Batched vmap_of(const MaskedScatter& p, const VmapArgs& args);
std::vector<array> vjp_of(const SliceUpdate& p, const VjpArgs& args);
std::vector<array> jvp_of(const SliceUpdate& p, const JvpArgs& args);
Batched vmap_of(const SliceUpdate& p, const VmapArgs& args);
std::vector<array> vjp_of(const DynamicSlice& p, const VjpArgs& args);
std::vector<array> jvp_of(const DynamicSlice& p, const JvpArgs& args);
Batched vmap_of(const DynamicSlice& p, const VmapArgs& args);
std::vector<array> vjp_of(const DynamicSliceUpdate& p, const VjpArgs& args);
std::vector<array> jvp_of(const DynamicSliceUpdate& p, const JvpArgs& args);
Batched vmap_of(const DynamicSliceUpdate& p, const VmapArgs& args);

// ---- linear algebra (linalg_rules.cpp)
std::vector<array> vjp_of(const QRF& p, const VjpArgs& args);
std::vector<array> jvp_of(const QRF& p, const JvpArgs& args);
Batched vmap_of(const QRF& p, const VmapArgs& args);
std::vector<array> vjp_of(const SVD& p, const VjpArgs& args);
std::vector<array> jvp_of(const SVD& p, const JvpArgs& args);
Batched vmap_of(const SVD& p, const VmapArgs& args);
std::vector<array> vjp_of(const Inverse& p, const VjpArgs& args);
std::vector<array> jvp_of(const Inverse& p, const JvpArgs& args);
Batched vmap_of(const Inverse& p, const VmapArgs& args);
std::vector<array> vjp_of(const Cholesky& p, const VjpArgs& args);
std::vector<array> jvp_of(const Cholesky& p, const JvpArgs& args);
Batched vmap_of(const Cholesky& p, const VmapArgs& args);
std::vector<array> vjp_of(const LUF& p, const VjpArgs& args);
std::vector<array> jvp_of(const LUF& p, const JvpArgs& args);
Batched vmap_of(const LUF& p, const VmapArgs& args);
std::vector<array> vjp_of(const Solve& p, const VjpArgs& args);
std::vector<array> jvp_of(const Solve& p, const JvpArgs& args);
Batched vmap_of(const Solve& p, const VmapArgs& args);
std::vector<array> vjp_of(const Eig& p, const VjpArgs& args);
std::vector<array> jvp_of(const Eig& p, const JvpArgs& args);
Batched vmap_of(const Eig& p, const VmapArgs& args);
std::vector<array> vjp_of(const Eigh& p, const VjpArgs& args);
std::vector<array> jvp_of(const Eigh& p, const JvpArgs& args);
Batched vmap_of(const Eigh& p, const VmapArgs& args);

// ---- compile (compiled_rules.cpp)
std::vector<array> vjp_of(const Compiled& p, const VjpArgs& args);
std::vector<array> jvp_of(const Compiled& p, const JvpArgs& args);
Batched vmap_of(const Compiled& p, const VmapArgs& args);

}  // namespace nuvec::detail
