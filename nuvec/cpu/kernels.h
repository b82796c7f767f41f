#pragma once

// The CPU kernel of every primitive. Element-wise families share one entry
// point each (their per-op functors live beside it); every other primitive has
// its own `run` overload, so a primitive without a CPU kernel fails to compile
// in eval_cpu.cpp.

#include <vector>

#include "nuvec/core/array.h"

namespace nuvec::cpu {

using Inputs = std::vector<array>;
using Outputs = std::vector<array>;

/// `p` holds a UnaryPrimitive.
void unary(const Primitive& p, const array& in, array& out);
/// `p` holds a BinaryPrimitive; a and b have out's shape or are scalar operands.
void binary(const Primitive& p, const array& a, const array& b, array& out);

void run(const Select& p, const Inputs& in, Outputs& out);
void run(const AsType& p, const Inputs& in, Outputs& out);
void run(const Arange& p, const Inputs& in, Outputs& out);
void run(const RandomBits& p, const Inputs& in, Outputs& out);

void run(const Broadcast& p, const Inputs& in, Outputs& out);
void run(const Reshape& p, const Inputs& in, Outputs& out);
void run(const Transpose& p, const Inputs& in, Outputs& out);
void run(const Slice& p, const Inputs& in, Outputs& out);
void run(const AsStrided& p, const Inputs& in, Outputs& out);
void run(const Diagonal& p, const Inputs& in, Outputs& out);
void run(const View& p, const Inputs& in, Outputs& out);
void run(const StopGradient& p, const Inputs& in, Outputs& out);
void run(const Depends& p, const Inputs& in, Outputs& out);
void run(const Custom& p, const Inputs& in, Outputs& out);

void run(const Copy& p, const Inputs& in, Outputs& out);
void run(const Concatenate& p, const Inputs& in, Outputs& out);
void run(const Pad& p, const Inputs& in, Outputs& out);

void run(const Reduce& p, const Inputs& in, Outputs& out);
void run(const ArgReduce& p, const Inputs& in, Outputs& out);
void run(const Softmax& p, const Inputs& in, Outputs& out);
void run(const LogSumExp& p, const Inputs& in, Outputs& out);

void run(const Sort& p, const Inputs& in, Outputs& out);
void run(const ArgSort& p, const Inputs& in, Outputs& out);
void run(const Partition& p, const Inputs& in, Outputs& out);
void run(const ArgPartition& p, const Inputs& in, Outputs& out);
void run(const SearchSorted& p, const Inputs& in, Outputs& out);
void run(const Scan& p, const Inputs& in, Outputs& out);

void run(const Matmul& p, const Inputs& in, Outputs& out);
void run(const AddMM& p, const Inputs& in, Outputs& out);

void run(const Quantize& p, const Inputs& in, Outputs& out);
void run(const Dequantize& p, const Inputs& in, Outputs& out);
void run(const QuantizedMatmul& p, const Inputs& in, Outputs& out);
void run(const GatherQMM& p, const Inputs& in, Outputs& out);
void run(const Fp8Cast& p, const Inputs& in, Outputs& out);
void run(const FFT& p, const Inputs& in, Outputs& out);
void run(const Convolution& p, const Inputs& in, Outputs& out);
void run(const RMSNorm& p, const Inputs& in, Outputs& out);
void run(const LayerNorm& p, const Inputs& in, Outputs& out);
void run(const RoPE& p, const Inputs& in, Outputs& out);
void run(const ScaledDotProductAttention& p, const Inputs& in, Outputs& out);
void run(const RMSNormVJP& p, const Inputs& in, Outputs& out);
void run(const LayerNormVJP& p, const Inputs& in, Outputs& out);
void run(const ScaledDotProductAttentionVJP& p, const Inputs& in, Outputs& out);
void run(const Gather& p, const Inputs& in, Outputs& out);
void run(const GatherAxis& p, const Inputs& in, Outputs& out);
void run(const Scatter& p, const Inputs& in, Outputs& out);
void run(const ScatterAxis& p, const Inputs& in, Outputs& out);
void run(const MaskedScatter& p, const Inputs& in, Outputs& out);
void run(const SliceUpdate& p, const Inputs& in, Outputs& out);
void run(const DynamicSlice& p, const Inputs& in, Outputs& out);
void run(const DynamicSliceUpdate& p, const Inputs& in, Outputs& out);
void run(const QRF& p, const Inputs& in, Outputs& out);
void run(const SVD& p, const Inputs& in, Outputs& out);
void run(const Inverse& p, const Inputs& in, Outputs& out);
void run(const Cholesky& p, const Inputs& in, Outputs& out);
void run(const LUF& p, const Inputs& in, Outputs& out);
void run(const Solve& p, const Inputs& in, Outputs& out);
void run(const Eig& p, const Inputs& in, Outputs& out);
void run(const Eigh& p, const Inputs& in, Outputs& out);
void run(const BlockMaskedMM& p, const Inputs& in, Outputs& out);
void run(const GatherMM& p, const Inputs& in, Outputs& out);
void run(const SegmentedMM& p, const Inputs& in, Outputs& out);
void run(const Hadamard& p, const Inputs& in, Outputs& out);
/// Calls the group's backend (collective.cpp); the ranks first compare their arrays' dtypes and shapes.
void run(const Collective& p, const Inputs& in, Outputs& out);

/// A fused chain of compile: its generated kernel over the iteration space (compiled.cpp).
void run(const Compiled& p, const Inputs& in, Outputs& out);

}  // namespace nuvec::cpu
