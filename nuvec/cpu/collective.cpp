// The collectives' kernel: every rank first shares a short description of its array (op, dtype, shape), so a
// mismatch fails on every rank with the ranks and shapes named, instead of exchanging bytes of different meanings.
// Inputs are dense: the ops layer makes them contiguous.

#include <array>
#include <cstring>
#include <string>

#include "nuvec/core/allocator.h"
#include "nuvec/core/communicator.h"
#include "nuvec/core/error.h"
#include "nuvec/core/op_prefix.h"
#include "nuvec/cpu/kernels.h"

namespace nuvec::cpu {

namespace {

constexpr size_t description_bytes = 128;
using Description = std::array<char, description_bytes>;

Description describe(CollectiveKind kind, const array& x) {
  std::string text = std::string(detail::collective_name(kind)).append(" ").append(dtype_name(x.dtype())).append(" (");
  for (size_t i = 0; i < x.shape().size(); ++i) {
    text.append(i == 0 ? "" : ", ").append(std::to_string(x.shape()[i]));
  }
  text.append(")");
  Description d{};
  std::memcpy(d.data(), text.data(), std::min(text.size(), description_bytes - 1));
  return d;
}

std::string prefix(const Collective& p) {
  return nuvec::detail::op_prefix(detail::collective_name(p.kind))
      .append("rank ")
      .append(std::to_string(p.group->rank()));
}

/// Every rank's description, compared with rank 0's.
void check_same(const Collective& p, const array& x) {
  auto& group = *p.group;
  const Description mine = describe(p.kind, x);
  std::vector<Description> all(static_cast<size_t>(group.size()));
  group.all_gather(mine.data(), all.data(), description_bytes);
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] != all[0]) {
      throw_invalid(prefix(p) + ": the ranks' arrays differ: rank 0 has " + all[0].data() + " but rank " +
                    std::to_string(r) + " has " + all[r].data() + ".");
    }
  }
}

void require_dense(const Collective& p, const array& x) {
  if (!x.flags().row_contiguous || x.data_size() != x.size()) {
    throw_internal(prefix(p) + ": the input is not dense.");
  }
}

void allocate(array& o) { o.set_data(allocator::malloc(o.nbytes())); }

detail::ReduceOp reduce_op(CollectiveKind kind) {
  return kind == CollectiveKind::all_max   ? detail::ReduceOp::max
         : kind == CollectiveKind::all_min ? detail::ReduceOp::min
                                           : detail::ReduceOp::sum;
}

void exchange(const Collective& p, const Inputs& in, array& o) {
  auto& group = *p.group;
  switch (p.kind) {
    case CollectiveKind::all_sum:
    case CollectiveKind::all_max:
    case CollectiveKind::all_min:
      check_same(p, in[0]);
      require_dense(p, in[0]);
      allocate(o);
      group.all_reduce(in[0].raw_data(), o.raw_data(), o.size(), o.dtype(), reduce_op(p.kind));
      return;
    case CollectiveKind::all_gather:
      check_same(p, in[0]);
      require_dense(p, in[0]);
      allocate(o);
      group.all_gather(in[0].raw_data(), o.raw_data(), in[0].nbytes());
      return;
    case CollectiveKind::sum_scatter:
      check_same(p, in[0]);
      require_dense(p, in[0]);
      allocate(o);
      group.sum_scatter(in[0].raw_data(), o.raw_data(), o.size(), o.dtype());
      return;
    case CollectiveKind::send: {
      require_dense(p, in[0]);
      const Description d = describe(CollectiveKind::recv, in[0]);
      group.send(d.data(), description_bytes, p.peer);
      group.send(in[0].raw_data(), in[0].nbytes(), p.peer);
      o.copy_shared_buffer(in[0]);
      return;
    }
    case CollectiveKind::recv: {
      allocate(o);
      Description sent{};
      group.recv(sent.data(), description_bytes, p.peer);
      if (sent != describe(CollectiveKind::recv, o)) {
        throw_invalid(prefix(p) + ": expected " + describe(CollectiveKind::recv, o).data() + " from rank " +
                      std::to_string(p.peer) + ", which sent " + sent.data() + ".");
      }
      group.recv(o.raw_data(), o.nbytes(), p.peer);
      return;
    }
  }
}

}  // namespace

void run(const Collective& p, const Inputs& in, Outputs& out) {
  try {
    exchange(p, in, out[0]);
  } catch (const nuvec::error& e) {
    const std::string message = e.what();
    // The backends name the rank and the peer; the op's name comes from here.
    throw_error(e.kind(), message.starts_with("[")
                              ? message
                              : nuvec::detail::op_prefix(detail::collective_name(p.kind)) + message);
  }
}

}  // namespace nuvec::cpu
