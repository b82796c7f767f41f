// Transforms of a fused chain go through the unfused tape it replaced.

#include "nuvec/core/fused.h"
#include "nuvec/core/ops.h"
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
  return vjp_through(tape(p, iteration_shape(*p.kernel, args.primals, args.outputs)), args);
}

std::vector<array> jvp_of(const Compiled& p, const JvpArgs& args) {
  return jvp_through(tape(p, iteration_shape(*p.kernel, args.primals, args.outputs)), args);
}

Batched vmap_of(const Compiled& p, const VmapArgs& args) {
  // The tape runs on unmapped inputs (vmap traces one slice), whose iteration shape the unmapped outputs give.
  std::vector<array> slices;
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    slices.push_back(args.axes[i] < 0 ? args.inputs[i] : take(args.inputs[i], 0, args.axes[i]));
  }
  return vmap_through(tape(p, iteration_shape(*p.kernel, slices, args.outputs)), args);
}

}  // namespace nuvec::detail
