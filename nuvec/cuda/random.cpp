// RandomBits on the GPU (kernels/random.cu): one thread per Threefry counter pair, bit-identical to the CPU's
// kernel. Keys that are not row-contiguous (a key is often a slice of split's output) are first copied into a
// dense (keys, 2) array.

#include "nuvec/cuda/buffers.h"
#include "nuvec/cuda/device.h"
#include "nuvec/cuda/indexing.h"
#include "nuvec/cuda/jit.h"
#include "nuvec/cuda/kernel_sources.h"
#include "nuvec/cuda/kernels.h"

namespace nuvec::cuda {

std::string random_source() { return std::string(kernel_source("random.cu")); }

void run(const RandomBits& p, const Inputs& in, Outputs& out, const Stream& s) {
  const array& keys = in[0];
  array& o = out[0];
  const bool dense = keys.flags().row_contiguous && keys.data_size() == keys.size();
  if (!dense && !can_copy(keys.shape(), keys.strides(), row_major_strides(keys.shape()))) {
    on_host(p, in, out);
    return;
  }
  allocate_output(o, s);
  const uint64_t num_keys = keys.size() / 2;
  const uint64_t bytes = static_cast<uint64_t>(shape_size(p.shape)) * static_cast<uint64_t>(p.width);
  uint64_t words = (bytes + 3) / 4;
  uint64_t half = (words + 1) / 2;
  if (num_keys == 0 || bytes == 0) {
    return;
  }
  array key_values = keys;
  if (!dense) {
    key_values = gpu_array(keys.shape(), keys.dtype(), s);
    copy(keys, key_values, s);
  }
  const int device = s.device.index;
  void* dst = device_pointer(o, s);
  const void* key_data = device_pointer(key_values, s);
  uint64_t run_bytes = bytes;
  uint64_t total = num_keys * half;
  launch(kernel(random_source(), "nuvec_random_bits", device),
         dim3(grid_size(static_cast<int64_t>(total), index_block, device)), dim3(index_block), 0, stream_handle(s), dst,
         key_data, run_bytes, words, half, total);
}

}  // namespace nuvec::cuda
