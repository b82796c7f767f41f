// Arange on the GPU (kernels/arange.cu), with the CPU's arithmetic (nuvec/cpu/arange.cpp): integer dtypes count
// from numpy's first value by its step in wrapping uint64 (both cast on the host, as the CPU casts them), floating
// dtypes compute in double and round once. complex64 runs on the host (the CUDA sources have no complex type).

#include <type_traits>

#include "nuvec/core/dispatch.h"
#include "nuvec/core/scalar_math.h"
#include "nuvec/cuda/buffers.h"
#include "nuvec/cuda/device.h"
#include "nuvec/cuda/jit.h"
#include "nuvec/cuda/kernels.h"
#include "nuvec/cuda/rows.h"

namespace nuvec::cuda {

void run(const Arange& p, const Inputs& in, Outputs& out, const Stream& s) {
  array& o = out[0];
  if (o.dtype() == complex64) {
    on_host(p, in, out);
    return;
  }
  allocate_output(o, s);
  auto n = static_cast<int64_t>(o.size());
  if (n == 0) {
    return;
  }
  const int device = s.device.index;
  const std::string source = arange_source(o.dtype());
  const dim3 grid(grid_size(n, 256, device));
  void* y = device_pointer(o, s);
  cudaStream_t stream = stream_handle(s);
  dispatch(o.dtype(), [&]<class T>(type_tag<T>) {
    if constexpr (std::is_integral_v<T>) {
      auto first = static_cast<uint64_t>(static_cast<int64_t>(scalar::float_to_int<T>(p.start)));
      uint64_t delta = static_cast<uint64_t>(static_cast<int64_t>(scalar::float_to_int<T>(p.start + p.step))) - first;
      launch(kernel(source, "nv_arange_int", device), grid, dim3(256), 0, stream, y, first, delta, n);
    } else {
      double start = p.start;
      double step = p.step;
      launch(kernel(source, "nv_arange_float", device), grid, dim3(256), 0, stream, y, start, step, n);
    }
  });
}

}  // namespace nuvec::cuda
