// RMSNorm and LayerNorm over the last axis on the GPU (kernels/norm.cu): a warp per row up to warp_row_max
// elements, a block per row above, in float32 at least. Rows that are not row-contiguous are copied first; the
// weight and bias are read through their stride (0 for a broadcast). The output may take over x's buffer. Their
// VJPs stay on the host (host.cpp).

#include <optional>

#include "nuvec/cuda/buffers.h"
#include "nuvec/cuda/device.h"
#include "nuvec/cuda/jit.h"
#include "nuvec/cuda/kernels.h"
#include "nuvec/cuda/rows.h"

namespace nuvec::cuda {

namespace {

constexpr unsigned block_threads = 256;
constexpr int64_t warp_row_max = 1024;
constexpr int64_t long_row = 8192;  // rows longer than this get blocks of 1024 threads

/// A 1-d parameter's first element and stride, or null for a missing one.
struct Parameter {
  void* data = nullptr;
  int64_t stride = 0;
};

Parameter parameter(const Inputs& in, bool present, size_t index, const Stream& s) {
  return present ? Parameter{device_pointer(in[index], s), in[index].strides(0)} : Parameter{};
}

/// in: x[, weight][, bias].
void norm(const Primitive& p, const Inputs& in, Outputs& out, float eps, bool has_weight, bool has_bias, bool centered,
          const Stream& s) {
  array& o = out[0];
  int64_t n = in[0].shape(-1);
  if (o.size() == 0) {
    allocate_output(o, s);
    return;
  }
  std::optional<array> copied;
  const array* x = dense_rows(in[0], copied, s);
  if (x == nullptr) {
    on_host(p, in, out);
    return;
  }
  auto [w, ws] = parameter(in, has_weight, 1, s);
  auto [b, bs] = parameter(in, has_bias, has_weight ? 2 : 1, s);
  void* input = device_pointer(*x, s);  // before a donation leaves x without its buffer
  if (!donate(*x, o, s)) {
    allocate_output(o, s);
  }
  void* y = device_pointer(o, s);
  auto rows = static_cast<int64_t>(o.size()) / n;
  int centre = centered ? 1 : 0;
  const std::string source = norm_source(o.dtype());
  const int device = s.device.index;
  cudaStream_t stream = stream_handle(s);
  if (n <= warp_row_max) {
    const unsigned rows_per_block = block_threads / 32;
    launch(kernel(source, "nv_norm_warp", device),
           dim3(static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block)), dim3(block_threads), 0, stream,
           input, y, rows, n, w, ws, b, bs, eps, centre);
    return;
  }
  launch(kernel(source, "nv_norm_block", device), dim3(static_cast<unsigned>(rows)),
         dim3(n > long_row ? 1024 : block_threads), 0, stream, input, y, n, w, ws, b, bs, eps, centre);
}

}  // namespace

void run(const RMSNorm& p, const Inputs& in, Outputs& out, const Stream& s) {
  norm(p, in, out, p.eps, p.has_weight, false, false, s);
}

void run(const LayerNorm& p, const Inputs& in, Outputs& out, const Stream& s) {
  norm(p, in, out, p.eps, p.has_weight, p.has_bias, true, s);
}

}  // namespace nuvec::cuda
