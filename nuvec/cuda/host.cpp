// Primitives without a GPU kernel yet run their CPU kernel (kernels.h's on_host): correct everywhere, with the
// transfers that costs. Each moves to its own file once it has a kernel.

#include "nuvec/core/backend.h"
#include "nuvec/cuda/kernels.h"

namespace nuvec::cuda {

void on_host(const Primitive& p, const Inputs& in, Outputs& out) { detail::eval_cpu(p, in, out); }

#define NUVEC_CUDA_ON_HOST(P) \
  void run(const P& p, const Inputs& in, Outputs& out, const Stream&) { on_host(p, in, out); }
NUVEC_CUDA_ON_HOST(Sort)
NUVEC_CUDA_ON_HOST(ArgSort)
NUVEC_CUDA_ON_HOST(Partition)
NUVEC_CUDA_ON_HOST(ArgPartition)
NUVEC_CUDA_ON_HOST(SearchSorted)
NUVEC_CUDA_ON_HOST(Scan)
NUVEC_CUDA_ON_HOST(Quantize)
NUVEC_CUDA_ON_HOST(Dequantize)
NUVEC_CUDA_ON_HOST(QuantizedMatmul)
NUVEC_CUDA_ON_HOST(GatherQMM)
NUVEC_CUDA_ON_HOST(Fp8Cast)
NUVEC_CUDA_ON_HOST(FFT)
NUVEC_CUDA_ON_HOST(Convolution)
NUVEC_CUDA_ON_HOST(RMSNormVJP)
NUVEC_CUDA_ON_HOST(LayerNormVJP)
NUVEC_CUDA_ON_HOST(ScaledDotProductAttentionVJP)
NUVEC_CUDA_ON_HOST(MaskedScatter)
NUVEC_CUDA_ON_HOST(QRF)
NUVEC_CUDA_ON_HOST(SVD)
NUVEC_CUDA_ON_HOST(Inverse)
NUVEC_CUDA_ON_HOST(Cholesky)
NUVEC_CUDA_ON_HOST(LUF)
NUVEC_CUDA_ON_HOST(Solve)
NUVEC_CUDA_ON_HOST(Eig)
NUVEC_CUDA_ON_HOST(Eigh)
NUVEC_CUDA_ON_HOST(BlockMaskedMM)
NUVEC_CUDA_ON_HOST(GatherMM)
NUVEC_CUDA_ON_HOST(SegmentedMM)
NUVEC_CUDA_ON_HOST(Hadamard)
NUVEC_CUDA_ON_HOST(Collective)
#undef NUVEC_CUDA_ON_HOST

}  // namespace nuvec::cuda
