// Rules of reductions, softmax, sorting, selection and scans.

#include "nuvec/core/ops.h"
#include "nuvec/core/transforms/rules.h"

namespace nuvec::detail {

namespace {

std::vector<array> integer_output_vjp(std::string_view name) {
  throw_no_rule("vjp", name, "has an integer output, which carries no cotangent.");
}

/// Where x holds the value selected into y (max or min), with ties sharing the cotangent equally.
array selected_share(const array& x, const array& y, const std::vector<int>& axes) {
  auto hits = astype(equal(x, y), x.dtype());
  return hits / sum(hits, axes, true);
}

}  // namespace

// ---- Reduce (reduced axes kept with size 1)

std::vector<array> vjp_of(const Reduce& p, const VjpArgs& args) {
  const auto& x = args.primals[0];
  const auto& y = args.outputs[0];
  const auto& ct = args.cotangents[0];
  switch (p.type) {
    case ReduceType::sum:
      return {broadcast_to(ct, x.shape())};
    case ReduceType::prod:
      // d prod / d x_i = prod / x_i; exact where no element is zero.
      return {ct * y / x};
    case ReduceType::max:
    case ReduceType::min:
      return {ct * selected_share(x, y, p.axes)};
    case ReduceType::all:
    case ReduceType::any:
      throw_no_rule("vjp", p.name, "of all/any is not differentiable.");
  }
  return {};
}
std::vector<array> jvp_of(const Reduce& p, const JvpArgs& args) {
  const auto& x = args.primals[0];
  const auto& y = args.outputs[0];
  const auto& t = args.tangents[0];
  switch (p.type) {
    case ReduceType::sum:
      return {reapply(p, {t}, y.shape(), y.dtype())};
    case ReduceType::prod:
      return {y * sum(t / x, p.axes, true)};
    case ReduceType::max:
    case ReduceType::min:
      return {sum(t * selected_share(x, y, p.axes), p.axes, true)};
    case ReduceType::all:
    case ReduceType::any:
      throw_no_rule("jvp", p.name, "of all/any is not differentiable.");
  }
  return {};
}
Batched vmap_of(const Reduce& p, const VmapArgs& args) {
  return front_vmap(Reduce{p.type, shifted(p.axes), p.dtype}, args);
}

std::vector<array> vjp_of(const ArgReduce& p, const VjpArgs&) { return integer_output_vjp(p.name); }
std::vector<array> jvp_of(const ArgReduce&, const JvpArgs& args) { return {zeros_like(args.outputs[0])}; }
Batched vmap_of(const ArgReduce& p, const VmapArgs& args) { return front_vmap(ArgReduce{p.type, p.axis + 1}, args); }

// ---- Softmax and LogSumExp over the last axis

std::vector<array> vjp_of(const Softmax&, const VjpArgs& args) {
  const auto& y = args.outputs[0];
  const auto& ct = args.cotangents[0];
  return {y * (ct - sum(ct * y, -1, true))};
}
std::vector<array> jvp_of(const Softmax&, const JvpArgs& args) {
  const auto& y = args.outputs[0];
  const auto& t = args.tangents[0];
  return {y * (t - sum(t * y, -1, true))};
}
Batched vmap_of(const Softmax& p, const VmapArgs& args) { return front_vmap(p, args); }

std::vector<array> vjp_of(const LogSumExp&, const VjpArgs& args) {
  return {args.cotangents[0] * exp(args.primals[0] - args.outputs[0])};
}
std::vector<array> jvp_of(const LogSumExp&, const JvpArgs& args) {
  return {sum(args.tangents[0] * exp(args.primals[0] - args.outputs[0]), -1, true)};
}
Batched vmap_of(const LogSumExp& p, const VmapArgs& args) { return front_vmap(p, args); }

// ---- Sort and Partition: the cotangent goes back to where each value came from.

std::vector<array> vjp_of(const Sort& p, const VjpArgs& args) {
  const auto& x = args.primals[0];
  return {scatter_add_axis(zeros_like(x), argsort(x, p.axis), args.cotangents[0], p.axis)};
}
std::vector<array> jvp_of(const Sort& p, const JvpArgs& args) {
  return {take_along_axis(args.tangents[0], argsort(args.primals[0], p.axis), p.axis)};
}
Batched vmap_of(const Sort& p, const VmapArgs& args) { return front_vmap(Sort{p.axis + 1}, args); }

std::vector<array> vjp_of(const ArgSort& p, const VjpArgs&) { return integer_output_vjp(p.name); }
std::vector<array> jvp_of(const ArgSort&, const JvpArgs& args) { return {zeros_like(args.outputs[0])}; }
Batched vmap_of(const ArgSort& p, const VmapArgs& args) { return front_vmap(ArgSort{p.axis + 1}, args); }

std::vector<array> vjp_of(const Partition& p, const VjpArgs& args) {
  const auto& x = args.primals[0];
  return {scatter_add_axis(zeros_like(x), argpartition(x, p.kth, p.axis), args.cotangents[0], p.axis)};
}
std::vector<array> jvp_of(const Partition& p, const JvpArgs& args) {
  return {take_along_axis(args.tangents[0], argpartition(args.primals[0], p.kth, p.axis), p.axis)};
}
Batched vmap_of(const Partition& p, const VmapArgs& args) { return front_vmap(Partition{p.kth, p.axis + 1}, args); }

std::vector<array> vjp_of(const ArgPartition& p, const VjpArgs&) { return integer_output_vjp(p.name); }
std::vector<array> jvp_of(const ArgPartition&, const JvpArgs& args) { return {zeros_like(args.outputs[0])}; }
Batched vmap_of(const ArgPartition& p, const VmapArgs& args) {
  return front_vmap(ArgPartition{p.kth, p.axis + 1}, args);
}

std::vector<array> vjp_of(const SearchSorted& p, const VjpArgs&) { return integer_output_vjp(p.name); }
std::vector<array> jvp_of(const SearchSorted&, const JvpArgs& args) { return {zeros_like(args.outputs[0])}; }
Batched vmap_of(const SearchSorted& p, const VmapArgs& args) {
  const auto& out = args.outputs[0];
  if (args.axes[0] < 0) {
    auto v = moveaxis(args.inputs[1], args.axes[1], 0);
    return {{reapply(p, {args.inputs[0], v}, front_shape(args.size, out.shape()), out.dtype())}, {0}};
  }
  // One sorted row per slice: a binary search of all values at once, ceil(log2(N + 1)) halvings of [lo, hi), each a
  // gather of the rows' middle elements. Ordered before the value (left) or not after it (right) in the kernel's
  // order, where NaN follows every number.
  auto sorted = moveaxis(args.inputs[0], args.axes[0], 0);  // (B, N)
  auto v = reshape(batched_front(args, 1), {args.size, -1});  // (B, M)
  int n = sorted.shape(1);
  auto before = [&](const array& a) {
    auto order = p.right ? less_equal(a, v) : less(a, v);
    if (!is_floating(a.dtype())) {
      return order;
    }
    auto v_nan = isnan(v);
    return p.right ? logical_or(order, v_nan) : logical_or(order, logical_and(v_nan, logical_not(isnan(a))));
  };
  auto lo = zeros(v.shape(), int64);
  auto hi = full(v.shape(), n, int64);
  auto one = array(1, int64);
  for (int64_t span = n; span > 0; span /= 2) {
    auto mid = floor_divide(lo + hi, array(2, int64));
    auto active = less(lo, hi);
    auto middle = take_along_axis(sorted, minimum(mid, array(std::max(n - 1, 0), int64)), 1);
    auto right = logical_and(active, before(middle));
    lo = where(right, mid + one, lo);
    hi = where(logical_and(active, logical_not(right)), mid, hi);
  }
  return {{reshape(astype(lo, out.dtype()), front_shape(args.size, out.shape()))}, {0}};
}

// ---- Scan. An exclusive scan is the inclusive one shifted by one place, so its rules shift and reuse those.

namespace {

/// Index (along the axis) of the element the running max/min of an inclusive scan took at each place.
array running_source(const Scan& p, const array& x, const array& y) {
  int n = x.shape(p.axis);
  Shape shape(static_cast<size_t>(x.ndim()), 1);
  shape[static_cast<size_t>(p.axis)] = n;
  auto positions = broadcast_to(reshape(arange(n), shape), x.shape());
  auto source = where(equal(x, y), positions, full(x.shape(), p.reverse ? n : -1, int32));
  return p.reverse ? cummin(source, p.axis, true) : cummax(source, p.axis);
}

/// `a` moved one place along `axis` toward its end (or its start), a zero entering at the vacated place.
array shift_one(const array& a, int axis, bool toward_end) {
  int n = a.shape(axis);
  Shape start(static_cast<size_t>(a.ndim()), 0);
  Shape stop = a.shape();
  Shape zero_shape = a.shape();
  zero_shape[static_cast<size_t>(axis)] = std::min(n, 1);
  auto zero = zeros(zero_shape, a.dtype());
  if (toward_end) {
    stop[static_cast<size_t>(axis)] = std::max(n - 1, 0);
    return concatenate({zero, slice(a, start, stop)}, axis);
  }
  start[static_cast<size_t>(axis)] = std::min(n, 1);
  return concatenate({slice(a, start, stop), zero}, axis);
}

array inclusive_vjp(const Scan& p, const array& x, const array& y, const array& ct) {
  switch (p.type) {
    case ScanType::sum:
      return cumsum(ct, p.axis, !p.reverse, true);
    case ScanType::prod:
      return cumsum(ct * y, p.axis, !p.reverse, true) / x;
    case ScanType::max:
    case ScanType::min:
      return scatter_add_axis(zeros_like(x), running_source(p, x, y), ct, p.axis);
    case ScanType::logaddexp:
      return exp(x) * cumsum(ct * exp(negative(y)), p.axis, !p.reverse, true);
  }
  return ct;
}

array inclusive_jvp(const Scan& p, const array& x, const array& y, const array& t) {
  switch (p.type) {
    case ScanType::sum:
      return cumsum(t, p.axis, p.reverse, true);
    case ScanType::prod:
      return y * cumsum(t / x, p.axis, p.reverse, true);
    case ScanType::max:
    case ScanType::min:
      return take_along_axis(t, running_source(p, x, y), p.axis);
    case ScanType::logaddexp:
      return cumsum(t * exp(x), p.axis, p.reverse, true) * exp(negative(y));
  }
  return t;
}

}  // namespace

std::vector<array> vjp_of(const Scan& p, const VjpArgs& args) {
  const auto& x = args.primals[0];
  Scan inclusive = p;
  inclusive.inclusive = true;
  if (p.inclusive) {
    return {inclusive_vjp(p, x, args.outputs[0], args.cotangents[0])};
  }
  auto y = reapply(inclusive, {x}, x.shape(), args.outputs[0].dtype());
  return {inclusive_vjp(inclusive, x, y, shift_one(args.cotangents[0], p.axis, p.reverse))};
}
std::vector<array> jvp_of(const Scan& p, const JvpArgs& args) {
  const auto& x = args.primals[0];
  if (p.type == ScanType::sum) {
    return reapply(p, {args.tangents[0]}, args.outputs);
  }
  Scan inclusive = p;
  inclusive.inclusive = true;
  auto y = p.inclusive ? args.outputs[0] : reapply(inclusive, {x}, x.shape(), args.outputs[0].dtype());
  auto t = inclusive_jvp(inclusive, x, y, args.tangents[0]);
  if (p.inclusive) {
    return {t};
  }
  // The exclusive scan is the inclusive one moved one place, the identity (tangent zero) entering first.
  return {shift_one(t, p.axis, !p.reverse)};
}
Batched vmap_of(const Scan& p, const VmapArgs& args) {
  Scan q = p;
  q.axis += 1;
  return front_vmap(q, args);
}

}  // namespace nuvec::detail
