#pragma once

// The GEMM layer: batched matrix products on raw strided memory, for every dtype.
// It decides how each dtype is computed (see gemm.cpp) and when an operand must be
// copied because no library can read its layout; the Matmul and AddMM kernels
// (matmul.cpp) only map arrays onto it.

#include <cstdint>

#include "nuvec/core/dtype.h"

namespace nuvec::cpu {

/// A batch of matrices: element (p, i, j) sits at data + p * batch_stride + i * row_stride + j * col_stride
/// (strides in elements; any sign, 0 broadcasts).
struct MatrixBatch {
  const void* data;
  int64_t batch_stride;
  int64_t row_stride;
  int64_t col_stride;
};

/// c[p] = alpha * a[p] @ b[p] + beta * c[p] for p in [0, batch): a[p] is m x k, b[p] is k x n, and c is dense
/// row-major, m x n per matrix with batch stride m * n. beta == 0 ignores c's contents (as BLAS does). Integer and
/// bool dtypes accumulate in their own type with wrap-around (numpy's rule) and take only alpha == 1, beta == 0.
void gemm(Dtype dtype, int64_t batch, int64_t m, int64_t n, int64_t k, float alpha, const MatrixBatch& a,
          const MatrixBatch& b, float beta, void* c);

/// c[p] = a[p] @ b[p] with operands of their own floating dtypes (float32, float16, bfloat16) and c dense row-major in
/// c_dtype: float32 activations times half-precision weights without a widened copy of the weights. Few rows of a
/// against a half-precision b whose columns are contiguous (the transposed (n, k) weight of a linear layer) take
/// half_gemv; other shapes widen what is not float32 (or, with one dtype throughout, take gemm).
void mixed_gemm(Dtype a_dtype, Dtype b_dtype, Dtype c_dtype, int64_t batch, int64_t m, int64_t n, int64_t k,
                const MatrixBatch& a, const MatrixBatch& b, void* c);

/// c (m x n, dense float32) = a (m x k, dense float32) @ w.T, w being n rows of k float16 or bfloat16 values, `ld`
/// elements apart (gemv_half.cpp).
void half_gemv(Dtype w_dtype, int64_t m, int64_t n, int64_t k, const float* a, const void* w, int64_t ld, float* c);

/// The integer and bool kernel behind `gemm`: c = a @ b for one matrix, c dense row-major.
void gemm_integer(Dtype dtype, int64_t m, int64_t n, int64_t k, const MatrixBatch& a, const MatrixBatch& b, void* c);

/// Which library computes float32 products (see gemm.cpp for the measurements behind the default).
enum class Sgemm { onednn, openblas };
void set_sgemm_backend(Sgemm backend);
Sgemm get_sgemm_backend();

}  // namespace nuvec::cpu
