#include "nuvec/core/backend.h"
#include "nuvec/cpu/kernels.h"

namespace nuvec::detail {

void eval_cpu(const Primitive& primitive, const std::vector<array>& inputs, std::vector<array>& outputs) {
  std::visit(
      [&]<class P>(const P& p) {
        if constexpr (UnaryPrimitive<P>) {
          cpu::unary(primitive, inputs[0], outputs[0]);
        } else if constexpr (BinaryPrimitive<P>) {
          cpu::binary(primitive, inputs[0], inputs[1], outputs[0]);
        } else {
          cpu::run(p, inputs, outputs);
        }
      },
      primitive);
}

}  // namespace nuvec::detail
