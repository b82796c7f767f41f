// Softmax and LogSumExp over the last axis on the GPU (kernels/softmax.cu): a warp per row up to warp_row_max
// elements, a block per row above, always computed in float32 at least (so Softmax's `precise` holds either way, as
// on the CPU). Rows that are not row-contiguous are copied first (the op already hands over row-contiguous rows for
// softmax over other axes). The softmax output may take over its input's buffer.

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

/// Launches `entry`_warp or `entry`_block of `source` over `rows` rows of n elements from x into y.
void launch_rows(const std::string& source, const std::string& entry, void* x, void* y, int64_t rows, int64_t n,
                 const Stream& s) {
  const int device = s.device.index;
  cudaStream_t stream = stream_handle(s);
  if (n <= warp_row_max) {
    const unsigned rows_per_block = block_threads / 32;
    launch(kernel(source, (entry + "_warp").c_str(), device),
           dim3(static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block)), dim3(block_threads), 0, stream, x,
           y, rows, n);
    return;
  }
  launch(kernel(source, (entry + "_block").c_str(), device), dim3(static_cast<unsigned>(rows)),
         dim3(n > long_row ? 1024 : block_threads), 0, stream, x, y, n);
}

}  // namespace

void run(const Softmax& p, const Inputs& in, Outputs& out, const Stream& s) {
  array& o = out[0];
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
  const int64_t n = x->ndim() == 0 ? 1 : x->shape(-1);
  const auto rows = static_cast<int64_t>(x->size()) / n;
  void* input = device_pointer(*x, s);  // before a donation leaves x without its buffer
  if (!donate(*x, o, s)) {
    allocate_output(o, s);
  }
  launch_rows(softmax_source(o.dtype()), "nv_softmax", input, device_pointer(o, s), rows, n, s);
}

void run(const LogSumExp& p, const Inputs& in, Outputs& out, const Stream& s) {
  array& o = out[0];
  const int64_t n = in[0].ndim() == 0 ? 1 : in[0].shape(-1);
  std::optional<array> copied;
  const array* x = o.size() > 0 && n > 0 ? dense_rows(in[0], copied, s) : &in[0];
  if (x == nullptr) {
    on_host(p, in, out);
    return;
  }
  allocate_output(o, s);
  if (o.size() == 0) {
    return;
  }
  // Rows of length 0 give -inf without reading x.
  launch_rows(softmax_source(o.dtype()), "nv_logsumexp", n == 0 ? nullptr : device_pointer(*x, s), device_pointer(o, s),
              static_cast<int64_t>(o.size()), n, s);
}

}  // namespace nuvec::cuda
