// Pad on the GPU: the output is filled with the pad value (a one-element copy read everywhere), then the input is
// copied into the interior, a view of the output. An input past max_dims merged axes runs on the host.

#include "nuvec/cuda/buffers.h"
#include "nuvec/cuda/indexing.h"
#include "nuvec/cuda/kernels.h"

namespace nuvec::cuda {

void run(const Pad& p, const Inputs& in, Outputs& out, const Stream& s) {
  const array& a = in[0];
  array& o = out[0];
  const Strides o_strides = row_major_strides(o.shape());
  if (!can_copy(a.shape(), a.strides(), o_strides)) {
    on_host(p, in, out);
    return;
  }
  allocate_output(o, s);
  if (o.size() == 0) {
    return;
  }
  copy(in[1], o, s);
  if (a.size() == 0) {
    return;
  }
  int64_t offset = 0;
  for (size_t i = 0; i < p.axes.size(); ++i) {
    offset += static_cast<int64_t>(p.low[i]) * o_strides[p.axes[i]];
  }
  array interior = view_into(o, a.shape(), o_strides, offset, s);
  copy(a, interior, s);
}

}  // namespace nuvec::cuda
