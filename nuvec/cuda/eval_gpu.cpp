// Routes each node on a GPU stream to its rule: element-wise primitives to a generated kernel (the CPU where the
// generator has no form for their dtypes), every other primitive to its overload in kernels.h.

#include "nuvec/core/backend.h"
#include "nuvec/core/compile/expressions.h"
#include "nuvec/core/error.h"
#include "nuvec/cuda/elementwise.h"
#include "nuvec/cuda/kernels.h"

namespace nuvec::detail {

void eval_gpu(const Primitive& primitive, const std::vector<array>& inputs, std::vector<array>& outputs,
              const Stream& stream) {
  // Only a hand-made Stream names a GPU this process cannot use (new_stream refuses): fail the node as a kernel error.
  if (stream.device.index < 0 || stream.device.index >= gpu_count()) {
    throw_error(ErrorKind::unsupported,
                "[eval] " + std::string(name(primitive)) + " is on GPU stream " + std::to_string(stream.index) +
                    ": no usable GPU (" +
                    (gpu_count() == 0 ? std::string("no CUDA driver or device")
                                      : "no GPU of index " + std::to_string(stream.device.index)) +
                    ").");
  }
  std::visit(
      [&]<class P>(const P& p) {
        if constexpr (Elementwise<P> && !std::same_as<P, Broadcast>) {
          auto k = cuda::single_step(primitive, inputs, outputs[0].dtype());
          if (cuda::can_run_elementwise(k, inputs, outputs)) {
            cuda::elementwise(k, inputs, outputs, stream);
          } else {
            cuda::on_host(primitive, inputs, outputs);
          }
        } else {
          cuda::run(p, inputs, outputs, stream);
        }
      },
      primitive);
}

}  // namespace nuvec::detail
