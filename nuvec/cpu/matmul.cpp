// The Matmul and AddMM kernels: map (..., M, K) @ (..., K, N) arrays onto the GEMM layer.
// The ops layer has broadcast both operands to one batch shape, so the batch axes of a, b
// and the (row-contiguous) output are walked together; batch axes that merge (a contiguous
// or broadcast batch) become one batched GEMM call.

#include <array>

#include "nuvec/cpu/copy.h"
#include "nuvec/cpu/gemm.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/strided.h"

namespace nuvec::cpu {

namespace {

bool is_half(Dtype d) { return d == float16 || d == bfloat16; }

/// out (already holding beta's operand when beta != 0) = alpha * a @ b + beta * out. Matmul's operands may have their
/// own floating dtypes (float32 activations with half-precision weights); AddMM's share out's.
void batched_product(const array& a, const array& b, array& out, float alpha, float beta) {
  const int64_t m = out.shape(-2);
  const int64_t n = out.shape(-1);
  const int64_t k = a.shape(-1);
  if (out.size() == 0) {
    return;
  }
  Shape batch_shape(out.shape().begin(), out.shape().end() - 2);
  Strides a_batch(a.strides().begin(), a.strides().end() - 2);
  Strides b_batch(b.strides().begin(), b.strides().end() - 2);
  Strides out_batch(out.strides().begin(), out.strides().end() - 2);
  StridedLayout<3> layout(batch_shape, {a_batch, b_batch, out_batch});
  const int64_t inner = layout.inner_size();
  auto* a_base = static_cast<const char*>(a.raw_data());
  auto* b_base = static_cast<const char*>(b.raw_data());
  auto* out_base = static_cast<char*>(out.raw_data());
  const bool mixed = a.dtype() != b.dtype() || is_half(b.dtype());
  layout.for_each_row(0, layout.rows(), [&](const std::array<int64_t, 3>& offsets) {
    MatrixBatch ma{a_base + offsets[0] * static_cast<int64_t>(a.itemsize()), layout.inner_stride(0), a.strides(-2),
                   a.strides(-1)};
    MatrixBatch mb{b_base + offsets[1] * static_cast<int64_t>(b.itemsize()), layout.inner_stride(1), b.strides(-2),
                   b.strides(-1)};
    void* c = out_base + offsets[2] * static_cast<int64_t>(out.itemsize());
    if (mixed && alpha == 1.F && beta == 0.F) {
      mixed_gemm(a.dtype(), b.dtype(), out.dtype(), inner, m, n, k, ma, mb, c);
    } else {
      gemm(out.dtype(), inner, m, n, k, alpha, ma, mb, beta, c);
    }
  });
}

}  // namespace

void run(const Matmul&, const Inputs& in, Outputs& out) {
  auto& o = out[0];
  o.set_data(allocator::malloc(o.nbytes()));
  batched_product(in[0], in[1], o, 1.F, 0.F);
}

void run(const AddMM& p, const Inputs& in, Outputs& out) {
  const auto& c = in[2];
  auto& o = out[0];
  // c (broadcast to the output's shape by the op) becomes the GEMM's accumulator: in place when
  // nothing else holds it, else copied (and expanded) into the output first.
  if (p.beta != 0.F && c.is_donatable() && c.flags().row_contiguous && c.data_size() == o.size()) {
    o.move_shared_buffer(c);
  } else {
    o.set_data(allocator::malloc(o.nbytes()));
    if (p.beta != 0.F) {
      copy_strided(c, o.raw_data(), o.strides(), o.dtype());
    }
  }
  batched_product(in[0], in[1], o, p.alpha, p.beta);
}

}  // namespace nuvec::cpu
