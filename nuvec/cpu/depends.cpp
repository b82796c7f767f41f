// The Depends and Custom kernels: each output is its input; the trailing inputs
// only had to be evaluated first (Depends' dependencies, Custom's primals).

#include "nuvec/cpu/kernels.h"

namespace nuvec::cpu {

namespace {
void forward_inputs(const Inputs& in, Outputs& out) {
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].copy_shared_buffer(in[i]);
  }
}
}  // namespace

void run(const Depends&, const Inputs& in, Outputs& out) { forward_inputs(in, out); }
void run(const Custom&, const Inputs& in, Outputs& out) { forward_inputs(in, out); }

}  // namespace nuvec::cpu
