// Transforms of a fused chain go through the unfused tape it replaced.

#include "nuvec/core/compile/fused.h"
#include "nuvec/core/transforms/rules.h"

namespace nuvec::detail {

namespace {

Function tape(const Compiled& p, const Shape& shape) {
  return [kernel = p.kernel, shape](const std::vector<array>& inputs) {
    return replay_fused(*kernel, inputs, shape);
  };
}

}  // namespace

std::vector<array> vjp_of(const Compiled& p, const VjpArgs& args) {
  return vjp_through(tape(p, args.outputs[0].shape()), args);
}

std::vector<array> jvp_of(const Compiled& p, const JvpArgs& args) {
  return jvp_through(tape(p, args.outputs[0].shape()), args);
}

Batched vmap_of(const Compiled& p, const VmapArgs& args) { return vmap_through(tape(p, args.outputs[0].shape()), args); }

}  // namespace nuvec::detail
