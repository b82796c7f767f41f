#include "nuvec/distributed/ops.h"

#include <string>

#include "nuvec/core/error.h"
#include "nuvec/core/op_prefix.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/output_shapes.h"

namespace nuvec::distributed {

namespace {

using nuvec::detail::collective_name;

/// Collectives run where their buffers are: on the CPU, as MLX's CPU backends do.
Stream collective_stream(StreamOrDevice s) { return to_stream(s, Device::cpu); }

array collective(CollectiveKind kind, const array& x, const Group& group, StreamOrDevice s, int peer = -1) {
  const Stream stream = collective_stream(s);
  return nuvec::detail::make_node(Collective{kind, group.raw_group(), peer}, {contiguous(x, false, stream)}, stream);
}

array reduction(CollectiveKind kind, const array& x, std::optional<Group> group, StreamOrDevice s) {
  const Group g = group ? *group : detail::default_group();
  if (kind != CollectiveKind::all_sum && x.dtype() == complex64) {
    throw_invalid(nuvec::detail::op_prefix(collective_name(kind)).append("complex64 values have no order."));
  }
  if (g.size() == 1) {
    return x;
  }
  return collective(kind, x, g, s);
}

void check_peer(CollectiveKind kind, int peer, const Group& g) {
  if (peer < 0 || peer >= g.size() || peer == g.rank()) {
    throw_invalid(
        nuvec::detail::op_prefix(collective_name(kind)).append("The peer must be another rank of the group, in [0, ") +
        std::to_string(g.size()) + ") and not " + std::to_string(g.rank()) + "; got " + std::to_string(peer) + ".");
  }
}

}  // namespace

array all_sum(const array& x, std::optional<Group> group, StreamOrDevice s) {
  return reduction(CollectiveKind::all_sum, x, std::move(group), s);
}
array all_max(const array& x, std::optional<Group> group, StreamOrDevice s) {
  return reduction(CollectiveKind::all_max, x, std::move(group), s);
}
array all_min(const array& x, std::optional<Group> group, StreamOrDevice s) {
  return reduction(CollectiveKind::all_min, x, std::move(group), s);
}

array all_gather(const array& x, std::optional<Group> group, StreamOrDevice s) {
  const Group g = group ? *group : detail::default_group();
  const array rows = x.ndim() == 0 ? reshape(x, {1}, s) : x;
  if (g.size() == 1) {
    return rows;
  }
  return collective(CollectiveKind::all_gather, rows, g, s);
}

array sum_scatter(const array& x, std::optional<Group> group, StreamOrDevice s) {
  const Group g = group ? *group : detail::default_group();
  if (x.ndim() == 0 || x.shape(0) % g.size() != 0) {
    throw_invalid("[sum_scatter] The group's " + std::to_string(g.size()) +
                  " processes must divide axis 0 of the array; got shape " + shape_string(x.shape()) + ".");
  }
  if (g.size() == 1) {
    return x;
  }
  return collective(CollectiveKind::sum_scatter, x, g, s);
}

array send(const array& x, int dst, std::optional<Group> group, StreamOrDevice s) {
  const Group g = group ? *group : detail::default_group();
  check_peer(CollectiveKind::send, dst, g);
  return collective(CollectiveKind::send, x, g, s, dst);
}

array recv(Shape shape, Dtype dtype, int src, std::optional<Group> group, StreamOrDevice s) {
  const Group g = group ? *group : detail::default_group();
  check_peer(CollectiveKind::recv, src, g);
  const Stream stream = collective_stream(s);
  return nuvec::detail::make_node(Collective{CollectiveKind::recv, g.raw_group(), src, std::move(shape), dtype}, {},
                                  stream);
}

array recv_like(const array& x, int src, std::optional<Group> group, StreamOrDevice s) {
  return recv(x.shape(), x.dtype(), src, std::move(group), s);
}

}  // namespace nuvec::distributed
