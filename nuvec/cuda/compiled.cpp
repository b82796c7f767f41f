// compile's fused element-wise chains on the GPU: the same tape, generated as CUDA source (elementwise.h). Row
// kernels (a chain with reductions over the last axis) run on the host for now.

#include "nuvec/core/fused.h"
#include "nuvec/cuda/elementwise.h"
#include "nuvec/cuda/kernels.h"

namespace nuvec::cuda {

void run(const Compiled& p, const Inputs& in, Outputs& out, const Stream& s) {
  const auto& k = *p.kernel;
  if (!k.rows && can_run_elementwise(k, in, out)) {
    elementwise(k, in, out, s);
    return;
  }
  on_host(p, in, out);
}

}  // namespace nuvec::cuda
