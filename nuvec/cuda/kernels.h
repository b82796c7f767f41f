#pragma once

// The GPU rule of every primitive that is not element-wise (those go through elementwise.h): a kernel, a view of
// the input's buffer, or the CPU kernel on the host (host.cpp) for primitives without a GPU kernel yet. One
// overload each, so a primitive without a rule fails to compile in eval_gpu.cpp.

#include <vector>

#include "nuvec/core/array.h"

namespace nuvec::cuda {

using Inputs = std::vector<array>;
using Outputs = std::vector<array>;

#define NUVEC_CUDA_RULE(P) void run(const P& p, const Inputs& in, Outputs& out, const Stream& s);
NUVEC_CUDA_RULE(Arange)
NUVEC_CUDA_RULE(RandomBits)
NUVEC_CUDA_RULE(Broadcast)
NUVEC_CUDA_RULE(Reshape)
NUVEC_CUDA_RULE(Transpose)
NUVEC_CUDA_RULE(Slice)
NUVEC_CUDA_RULE(AsStrided)
NUVEC_CUDA_RULE(Diagonal)
NUVEC_CUDA_RULE(View)
NUVEC_CUDA_RULE(StopGradient)
NUVEC_CUDA_RULE(Depends)
NUVEC_CUDA_RULE(Custom)
NUVEC_CUDA_RULE(Copy)
NUVEC_CUDA_RULE(Concatenate)
NUVEC_CUDA_RULE(Pad)
NUVEC_CUDA_RULE(Reduce)
NUVEC_CUDA_RULE(ArgReduce)
NUVEC_CUDA_RULE(Softmax)
NUVEC_CUDA_RULE(LogSumExp)
NUVEC_CUDA_RULE(Sort)
NUVEC_CUDA_RULE(ArgSort)
NUVEC_CUDA_RULE(Partition)
NUVEC_CUDA_RULE(ArgPartition)
NUVEC_CUDA_RULE(SearchSorted)
NUVEC_CUDA_RULE(Scan)
NUVEC_CUDA_RULE(Matmul)
NUVEC_CUDA_RULE(AddMM)
NUVEC_CUDA_RULE(Quantize)
NUVEC_CUDA_RULE(Dequantize)
NUVEC_CUDA_RULE(QuantizedMatmul)
NUVEC_CUDA_RULE(GatherQMM)
NUVEC_CUDA_RULE(Fp8Cast)
NUVEC_CUDA_RULE(FFT)
NUVEC_CUDA_RULE(Convolution)
NUVEC_CUDA_RULE(RMSNorm)
NUVEC_CUDA_RULE(LayerNorm)
NUVEC_CUDA_RULE(RoPE)
NUVEC_CUDA_RULE(ScaledDotProductAttention)
NUVEC_CUDA_RULE(RMSNormVJP)
NUVEC_CUDA_RULE(LayerNormVJP)
NUVEC_CUDA_RULE(ScaledDotProductAttentionVJP)
NUVEC_CUDA_RULE(Gather)
NUVEC_CUDA_RULE(GatherAxis)
NUVEC_CUDA_RULE(Scatter)
NUVEC_CUDA_RULE(ScatterAxis)
NUVEC_CUDA_RULE(MaskedScatter)
NUVEC_CUDA_RULE(SliceUpdate)
NUVEC_CUDA_RULE(DynamicSlice)
NUVEC_CUDA_RULE(DynamicSliceUpdate)
NUVEC_CUDA_RULE(QRF)
NUVEC_CUDA_RULE(SVD)
NUVEC_CUDA_RULE(Inverse)
NUVEC_CUDA_RULE(Cholesky)
NUVEC_CUDA_RULE(LUF)
NUVEC_CUDA_RULE(Solve)
NUVEC_CUDA_RULE(Eig)
NUVEC_CUDA_RULE(Eigh)
NUVEC_CUDA_RULE(BlockMaskedMM)
NUVEC_CUDA_RULE(GatherMM)
NUVEC_CUDA_RULE(SegmentedMM)
NUVEC_CUDA_RULE(Hadamard)
NUVEC_CUDA_RULE(Collective)
NUVEC_CUDA_RULE(Compiled)
#undef NUVEC_CUDA_RULE

/// Computes the node with the CPU kernel: inputs on the GPU are read through their host copies, and the outputs
/// live on the host until a GPU kernel reads them (uploaded once).
void on_host(const Primitive& p, const Inputs& in, Outputs& out);

}  // namespace nuvec::cuda
