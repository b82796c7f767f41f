// The transforms of the collectives. all_sum passes its cotangent through (as MLX: where the loss after it is
// replicated, each rank already holds the full cotangent), all_gather's vjp takes this rank's rows, sum_scatter's
// vjp gathers the cotangent (its transpose), all_max and all_min send the cotangent to the elements that won on
// this rank. The tangents of the linear collectives are the collective of the tangents. send and recv exchange
// messages the other side does not differentiate, so they have no derivatives, and no batched form (the peer's
// shapes would differ).

#include <string>

#include "nuvec/core/communicator.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/transforms/rules.h"

namespace nuvec::detail {

namespace {

// The kernel takes dense inputs, as the ops layer gives it: cotangents, tangents and moved axes may be views.
array collective(const Collective& p, CollectiveKind kind, const array& x, Shape shape) {
  return reapply(Collective{kind, p.group, -1}, {contiguous(x)}, std::move(shape), x.dtype());
}

bool is_extremum(CollectiveKind kind) { return kind == CollectiveKind::all_max || kind == CollectiveKind::all_min; }

[[noreturn]] void point_to_point(std::string_view transform) {
  throw_no_rule(transform, "Collective", "send and recv exchange messages that the peer does not differentiate.");
}

}  // namespace

std::vector<array> vjp_of(const Collective& p, const VjpArgs& args) {
  const array& cotangent = args.cotangents[0];
  const array& x = args.primals[0];
  switch (p.kind) {
    case CollectiveKind::all_sum:
      return {cotangent};
    case CollectiveKind::all_max:
    case CollectiveKind::all_min:
      return {where(equal(x, args.outputs[0]), cotangent, zeros_like(cotangent))};
    case CollectiveKind::all_gather: {
      const int rows = x.shape(0);
      Shape start(x.shape().size(), 0);
      Shape stop = cotangent.shape();
      start[0] = p.group->rank() * rows;
      stop[0] = start[0] + rows;
      return {slice(cotangent, start, stop)};
    }
    case CollectiveKind::sum_scatter:
      return {collective(p, CollectiveKind::all_gather, cotangent, x.shape())};
    case CollectiveKind::send:
    case CollectiveKind::recv:
      point_to_point("vjp");
  }
  point_to_point("vjp");
}

std::vector<array> jvp_of(const Collective& p, const JvpArgs& args) {
  const array& tangent = args.tangents[0];
  const array& x = args.primals[0];
  const array& out = args.outputs[0];
  switch (p.kind) {
    case CollectiveKind::all_sum:
    case CollectiveKind::all_gather:
    case CollectiveKind::sum_scatter:
      return {collective(p, p.kind, tangent, out.shape())};
    case CollectiveKind::all_max:
    case CollectiveKind::all_min: {
      // The winners' tangents, averaged where several ranks hold the extremum.
      const array won = equal(x, out);
      const array sum = collective(p, CollectiveKind::all_sum, where(won, tangent, zeros_like(tangent)), out.shape());
      const array count = collective(p, CollectiveKind::all_sum, astype(won, tangent.dtype()), out.shape());
      return {sum / count};
    }
    case CollectiveKind::send:
    case CollectiveKind::recv:
      point_to_point("jvp");
  }
  point_to_point("jvp");
}

Batched vmap_of(const Collective& p, const VmapArgs& args) {
  if (p.kind == CollectiveKind::send || p.kind == CollectiveKind::recv) {
    point_to_point("vmap");
  }
  if (p.kind == CollectiveKind::all_sum || is_extremum(p.kind)) {
    return reapply_front(p, {contiguous(moved_front(args, 0))}, args);
  }
  // all_gather and sum_scatter work on axis 0 of the unbatched array: the mapped axis goes just after it.
  const array moved = contiguous(moveaxis(args.inputs[0], args.axes[0], 1));
  Shape shape = args.outputs[0].shape();
  shape.insert(shape.begin() + 1, args.size);
  return {{reapply(p, {moved}, shape, moved.dtype())}, {1}};
}

}  // namespace nuvec::detail
