#pragma once

// Matmul and AddMM on the GPU through cuBLASLt: float32 (exact, no TF32), float16 and bfloat16 (float32
// accumulation) and float64, so that the GPU computes what the CPU does. Other dtypes run on the host.

#include <vector>

#include "nuvec/core/array.h"

namespace nuvec::cuda {

/// Whether cuBLASLt computes products with output dtype `dtype` here: float32, float16, bfloat16 and float64.
bool gemm_supported(Dtype dtype);

/// Whether `x` can be a GEMM operand as it lies: its last two axes row-major or column-major (a transposed view),
/// rows or columns any distance apart, and no negative stride on a batch axis (0 broadcasts). Otherwise the caller
/// passes a row-contiguous copy.
bool gemm_operand_ok(const array& x);

/// out = a @ b for the inputs the matmul op builds: (..., M, K) and (..., K, N) with the output's batch shape (or
/// both 2-D), each gemm_operand_ok. Operands share the output's dtype, except float16 and bfloat16 operands of a
/// float32 product (half-precision weights), which are widened on the GPU first. Throws unsupported unless
/// gemm_supported(output dtype).
void matmul(const Matmul&, const std::vector<array>& inputs, std::vector<array>& outputs, const Stream& s);

/// out = alpha * a @ b + beta * c, with a and b as for matmul in the output's dtype and c of the output's shape and
/// dtype in any layout (a broadcast bias included).
void addmm(const AddMM& p, const std::vector<array>& inputs, std::vector<array>& outputs, const Stream& s);

}  // namespace nuvec::cuda
