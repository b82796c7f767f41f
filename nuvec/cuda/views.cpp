// Views on the GPU: the CPU's rules, which only point the output at the input's buffer (wherever it lives) with new
// strides; Reshape copies on the GPU where no strides express it.

#include "nuvec/cpu/kernels.h"
#include "nuvec/cuda/buffers.h"
#include "nuvec/cuda/elementwise.h"
#include "nuvec/cuda/kernels.h"

namespace nuvec::cuda {

void run(const Broadcast& p, const Inputs& in, Outputs& out, const Stream&) { cpu::run(p, in, out); }
void run(const Transpose& p, const Inputs& in, Outputs& out, const Stream&) { cpu::run(p, in, out); }
void run(const Slice& p, const Inputs& in, Outputs& out, const Stream&) { cpu::run(p, in, out); }
void run(const AsStrided& p, const Inputs& in, Outputs& out, const Stream&) { cpu::run(p, in, out); }
void run(const Diagonal& p, const Inputs& in, Outputs& out, const Stream&) { cpu::run(p, in, out); }
void run(const View& p, const Inputs& in, Outputs& out, const Stream&) { cpu::run(p, in, out); }
void run(const StopGradient& p, const Inputs& in, Outputs& out, const Stream&) { cpu::run(p, in, out); }
void run(const Depends& p, const Inputs& in, Outputs& out, const Stream&) { cpu::run(p, in, out); }
void run(const Custom& p, const Inputs& in, Outputs& out, const Stream&) { cpu::run(p, in, out); }

void run(const Reshape& p, const Inputs& in, Outputs& out, const Stream& s) {
  if (in[0].flags().row_contiguous) {
    cpu::run(p, in, out);
    return;
  }
  // The input's elements in row-major order are the output's: a row-contiguous copy of the input, read with the
  // output's shape. (The CPU rule finds more layouts that need no copy; this one copies them too.)
  array dense = gpu_array(in[0].shape(), in[0].dtype(), s);
  copy(in[0], dense, s);
  out[0].copy_shared_buffer(dense, row_major_strides(out[0].shape()), Flags{}, out[0].size());
}

void run(const Copy&, const Inputs& in, Outputs& out, const Stream& s) { copy(in[0], out[0], s); }

void run(const Concatenate& p, const Inputs& in, Outputs& out, const Stream& s) {
  allocate_output(out[0], s);
  const int axis = p.axis;
  int64_t offset = 0;
  for (const auto& part : in) {
    if (part.size() == 0) {
      continue;
    }
    // The part's place in the output: a view with the output's strides, starting at the offset along the axis.
    array place = gpu_array(part.shape(), out[0].dtype(), s);
    place.copy_shared_buffer(out[0], out[0].strides(), Flags{false, false, false}, out[0].size(),
                             offset * out[0].strides(axis));
    copy(part, place, s);
    offset += part.shape(axis);
  }
}

}  // namespace nuvec::cuda
