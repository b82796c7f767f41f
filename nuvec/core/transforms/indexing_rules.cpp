// Rules of gathers, scatters and dynamic slices. A gather's cotangent is a
// scatter-add of it and a scatter's update cotangent is a gather; vmap turns
// the mapped axis into one more indexed axis.

#include <functional>

#include "nuvec/core/op_prefix.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/transforms/rules.h"

namespace nuvec::detail {

namespace {

/// As MLX: indices (inputs first to last - 1) have no derivative, and asking for one is an error.
void check_no_index_derivative(const std::vector<int>& argnums, size_t first, size_t last, const char* op,
                               const char* transform) {
  for (int a : argnums) {
    if (static_cast<size_t>(a) >= first && static_cast<size_t>(a) < last) {
      throw_invalid(nuvec::detail::op_prefix(op)
                        .append("Cannot calculate ")
                        .append(transform)
                        .append(" with respect to the indices (input " + std::to_string(a) + ")."));
    }
  }
}

const array& or_zeros(const array* t, const array& like, std::optional<array>& holder) {
  if (t) {
    return *t;
  }
  holder = zeros_like(like);
  return *holder;
}

/// Index arrays made mapped, led by an index for the mapped axis itself (of the indices' dtype).
std::vector<array> mapped_indices(const VmapArgs& args, size_t first, size_t count) {
  std::vector<array> indices;
  for (size_t i = first; i < first + count; ++i) {
    indices.push_back(batched_front(args, i));
  }
  Shape shape = indices.empty() ? Shape{args.size} : indices[0].shape();
  Dtype dtype = indices.empty() ? int32 : indices[0].dtype();
  Shape column(shape.size(), 1);
  column[0] = args.size;
  indices.insert(indices.begin(), broadcast_to(reshape(astype(arange(args.size), dtype), column), shape));
  return indices;
}

/// A scatter primitive seen through two maps: `combine` applies the same primitive with another combination to
/// other inputs (base of x's shape, updates of the updates' shape), `read` gathers from an array of x's shape the
/// value at each update's target (updates' shape).
struct ScatterForms {
  std::function<array(ScatterType, const array&, const array&)> combine;
  std::function<array(const array&)> read;
};

/// The vjp of a scatter that multiplies, or keeps the maximum or minimum, with respect to x (argnum 0) and the
/// updates (any other argnum), as PyTorch's scatter_reduce (include_self).
/// - prod: x's cotangent times the product of the updates it received; an update's is the cotangent times x times
///   the product of the other updates to its target, computed as a product of the nonzero updates (divided by the
///   update itself when it is nonzero) so that zero updates need no division by zero.
/// - max, min: the cotangent goes to every element (x or update) equal to the result, split evenly among ties.
std::vector<array> vjp_reducing_scatter(ScatterType type, const VjpArgs& args, const ScatterForms& forms) {
  const auto& x = args.primals[0];
  const auto& updates = args.primals.back();
  const auto& ct = args.cotangents[0];
  const auto& out = args.outputs[0];
  auto zero = zeros_like(x);
  auto one = ones_like(x);
  std::vector<array> grads;
  if (type == ScatterType::prod) {
    auto none = zeros_like(updates);
    auto is_zero = equal(updates, none);
    auto nonzero = where(is_zero, ones_like(updates), updates);
    // Per update: how many updates to its target are zero, and the product of the nonzero ones.
    auto zero_count = forms.read(forms.combine(ScatterType::sum, zero, astype(is_zero, x.dtype())));
    auto nonzero_product = forms.read(forms.combine(ScatterType::prod, one, nonzero));
    auto others = where(is_zero, where(equal(zero_count, ones_like(updates)), nonzero_product, none),
                        where(equal(zero_count, none), nonzero_product / nonzero, none));
    for (int a : args.argnums) {
      grads.push_back(a == 0 ? ct * forms.combine(ScatterType::prod, one, updates) : forms.read(ct * x) * others);
    }
    return grads;
  }
  auto x_hit = equal(x, out);
  auto update_hit = equal(updates, forms.read(out));
  auto count = astype(x_hit, x.dtype()) + forms.combine(ScatterType::sum, zero, astype(update_hit, x.dtype()));
  auto share = ct / maximum(count, one);
  for (int a : args.argnums) {
    grads.push_back(a == 0 ? where(x_hit, share, zero) : where(update_hit, forms.read(share), zeros_like(updates)));
  }
  return grads;
}

bool reduces(ScatterType type) {
  return type == ScatterType::prod || type == ScatterType::max || type == ScatterType::min;
}

ScatterForms scatter_forms(const Scatter& p, const VjpArgs& args) {
  std::vector<array> indices(args.primals.begin() + 1, args.primals.end() - 1);
  const auto& updates = args.primals.back();
  size_t index_rank = indices.empty() ? 0 : static_cast<size_t>(indices[0].ndim());
  Shape sizes(updates.shape().begin() + static_cast<std::ptrdiff_t>(index_rank), updates.shape().end());
  return {[axes = p.axes, indices](ScatterType type, const array& base, const array& u) {
            std::vector<array> inputs{base};
            inputs.insert(inputs.end(), indices.begin(), indices.end());
            inputs.push_back(u);
            return reapply(Scatter{type, axes}, std::move(inputs), base.shape(), base.dtype());
          },
          [axes = p.axes, indices, sizes, shape = updates.shape()](const array& a) {
            std::vector<array> inputs{a};
            inputs.insert(inputs.end(), indices.begin(), indices.end());
            return reapply(Gather{axes, sizes}, std::move(inputs), shape, a.dtype());
          }};
}

ScatterForms scatter_axis_forms(const ScatterAxis& p, const VjpArgs& args) {
  const auto& indices = args.primals[1];
  return {[axis = p.axis, indices](ScatterType type, const array& base, const array& u) {
            return reapply(ScatterAxis{type, axis}, {base, indices, u}, base.shape(), base.dtype());
          },
          [axis = p.axis, indices](const array& a) {
            return reapply(GatherAxis{axis}, {a, indices}, indices.shape(), a.dtype());
          }};
}

ScatterForms slice_update_forms(const SliceUpdate& p, const VjpArgs& args) {
  return {[p](ScatterType type, const array& base, const array& u) {
            return reapply(SliceUpdate{p.start, p.strides, type}, {base, u}, base.shape(), base.dtype());
          },
          [p, shape = args.primals[1].shape()](const array& a) {
            return reapply(Slice{p.start, p.strides, shape}, {a}, shape, a.dtype());
          }};
}

}  // namespace

// ---- Gather (inputs x, one index array per axis; output I + slice_sizes)

std::vector<array> vjp_of(const Gather& p, const VjpArgs& args) {
  check_no_index_derivative(args.argnums, 1, args.primals.size(), "gather", "VJP");
  const auto& x = args.primals[0];
  std::vector<array> inputs{zeros_like(x)};
  inputs.insert(inputs.end(), args.primals.begin() + 1, args.primals.end());
  inputs.push_back(args.cotangents[0]);
  return {reapply(Scatter{ScatterType::sum, p.axes}, std::move(inputs), x.shape(), x.dtype())};
}
std::vector<array> jvp_of(const Gather& p, const JvpArgs& args) {
  check_no_index_derivative(args.argnums, 1, args.primals.size(), "gather", "JVP");
  auto inputs = args.primals;
  inputs[0] = args.tangents[0];
  return reapply(p, std::move(inputs), args.outputs);
}
Batched vmap_of(const Gather& p, const VmapArgs& args) {
  size_t count = args.inputs.size() - 1;
  std::vector<array> inputs{batched_front(args, 0)};
  auto indices = mapped_indices(args, 1, count);
  inputs.insert(inputs.end(), indices.begin(), indices.end());
  std::vector<int> axes = shifted(p.axes);
  axes.insert(axes.begin(), 0);
  Shape sizes = p.slice_sizes;
  sizes.insert(sizes.begin(), 1);
  Shape gathered = indices[0].shape();
  gathered.insert(gathered.end(), sizes.begin(), sizes.end());
  auto out = reapply(Gather{axes, sizes}, std::move(inputs), gathered, args.outputs[0].dtype());
  Shape shape = args.outputs[0].shape();
  shape.insert(shape.begin(), args.size);
  return {{reshape(out, shape)}, {0}};
}

// ---- GatherAxis (x, indices)

std::vector<array> vjp_of(const GatherAxis& p, const VjpArgs& args) {
  check_no_index_derivative(args.argnums, 1, 2, "gather_axis", "VJP");
  const auto& x = args.primals[0];
  return {reapply(ScatterAxis{ScatterType::sum, p.axis}, {zeros_like(x), args.primals[1], args.cotangents[0]},
                  x.shape(), x.dtype())};
}
std::vector<array> jvp_of(const GatherAxis& p, const JvpArgs& args) {
  check_no_index_derivative(args.argnums, 1, 2, "gather_axis", "JVP");
  return reapply(p, {args.tangents[0], args.primals[1]}, args.outputs);
}
Batched vmap_of(const GatherAxis& p, const VmapArgs& args) {
  return reapply_front(GatherAxis{p.axis + 1}, {batched_front(args, 0), batched_front(args, 1)}, args);
}

// ---- Scatter (x, one index array per axis, updates)

std::vector<array> vjp_of(const Scatter& p, const VjpArgs& args) {
  check_no_index_derivative(args.argnums, 1, args.primals.size() - 1, "scatter", "VJP");
  if (reduces(p.type)) {
    return vjp_reducing_scatter(p.type, args, scatter_forms(p, args));
  }
  const auto& ct = args.cotangents[0];
  const auto& updates = args.primals.back();
  std::vector<array> indices(args.primals.begin() + 1, args.primals.end() - 1);
  std::vector<array> grads;
  for (int a : args.argnums) {
    if (a == 0) {
      if (p.type == ScatterType::sum) {
        grads.push_back(ct);
      } else {
        std::vector<array> inputs{ct};
        inputs.insert(inputs.end(), indices.begin(), indices.end());
        inputs.push_back(zeros_like(updates));
        grads.push_back(reapply(Scatter{ScatterType::none, p.axes}, std::move(inputs), ct.shape(), ct.dtype()));
      }
    } else {
      size_t index_rank = indices.empty() ? 0 : static_cast<size_t>(indices[0].ndim());
      Shape sizes(updates.shape().begin() + static_cast<std::ptrdiff_t>(index_rank), updates.shape().end());
      std::vector<array> inputs{ct};
      inputs.insert(inputs.end(), indices.begin(), indices.end());
      grads.push_back(reapply(Gather{p.axes, sizes}, std::move(inputs), updates.shape(), updates.dtype()));
    }
  }
  return grads;
}
std::vector<array> jvp_of(const Scatter& p, const JvpArgs& args) {
  check_no_index_derivative(args.argnums, 1, args.primals.size() - 1, "scatter", "JVP");
  if (reduces(p.type)) {
    return jvp_by_transposing_vjp(p, args);
  }
  auto inputs = args.primals;
  std::optional<array> zx;
  std::optional<array> zu;
  inputs[0] = or_zeros(tangent_of(args, 0), args.primals[0], zx);
  inputs.back() = or_zeros(tangent_of(args, args.primals.size() - 1), args.primals.back(), zu);
  return reapply(p, std::move(inputs), args.outputs);
}
Batched vmap_of(const Scatter& p, const VmapArgs& args) {
  size_t count = args.inputs.size() - 2;
  std::vector<array> inputs{batched_front(args, 0)};
  auto indices = mapped_indices(args, 1, count);
  inputs.insert(inputs.end(), indices.begin(), indices.end());
  auto updates = batched_front(args, args.inputs.size() - 1);
  Shape shape = updates.shape();
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(indices[0].ndim()), 1);
  inputs.push_back(reshape(updates, shape));
  std::vector<int> axes = shifted(p.axes);
  axes.insert(axes.begin(), 0);
  return reapply_front(Scatter{p.type, axes}, std::move(inputs), args);
}

// ---- ScatterAxis (x, indices, updates)

std::vector<array> vjp_of(const ScatterAxis& p, const VjpArgs& args) {
  check_no_index_derivative(args.argnums, 1, 2, "scatter_axis", "VJP");
  if (reduces(p.type)) {
    return vjp_reducing_scatter(p.type, args, scatter_axis_forms(p, args));
  }
  const auto& ct = args.cotangents[0];
  const auto& indices = args.primals[1];
  const auto& updates = args.primals[2];
  std::vector<array> grads;
  for (int a : args.argnums) {
    if (a == 0) {
      grads.push_back(p.type == ScatterType::sum
                          ? ct
                          : reapply(ScatterAxis{ScatterType::none, p.axis}, {ct, indices, zeros_like(updates)},
                                    ct.shape(), ct.dtype()));
    } else {
      grads.push_back(reapply(GatherAxis{p.axis}, {ct, indices}, updates.shape(), updates.dtype()));
    }
  }
  return grads;
}
std::vector<array> jvp_of(const ScatterAxis& p, const JvpArgs& args) {
  check_no_index_derivative(args.argnums, 1, 2, "scatter_axis", "JVP");
  if (reduces(p.type)) {
    return jvp_by_transposing_vjp(p, args);
  }
  std::optional<array> zx;
  std::optional<array> zu;
  return reapply(p,
                 {or_zeros(tangent_of(args, 0), args.primals[0], zx), args.primals[1],
                  or_zeros(tangent_of(args, 2), args.primals[2], zu)},
                 args.outputs);
}
Batched vmap_of(const ScatterAxis& p, const VmapArgs& args) {
  return reapply_front(ScatterAxis{p.type, p.axis + 1},
                       {batched_front(args, 0), batched_front(args, 1), batched_front(args, 2)}, args);
}

// ---- MaskedScatter (x, bool mask of x's shape, flat source)

std::vector<array> vjp_of(const MaskedScatter&, const VjpArgs& args) {
  check_no_index_derivative(args.argnums, 1, 2, "masked_scatter", "VJP");
  const auto& mask = args.primals[1];
  const auto& source = args.primals[2];
  const auto& ct = args.cotangents[0];
  // The k-th true position (row-major) took source[k] when k < source.size().
  auto flat_mask = flatten(mask);
  auto position = cumsum(astype(flat_mask, int32)) - 1;
  auto n = static_cast<int>(source.size());
  auto written = reshape(logical_and(flat_mask, less(position, array(n))), mask.shape());
  std::vector<array> grads;
  for (int a : args.argnums) {
    if (a == 0) {
      grads.push_back(where(written, zeros_like(ct), ct));
    } else {
      auto target = where(flat_mask, position, full(position.shape(), n, int32));
      grads.push_back(reshape(scatter_add_axis(zeros({n}, ct.dtype()), target, flatten(ct), 0), source.shape()));
    }
  }
  return grads;
}
std::vector<array> jvp_of(const MaskedScatter& p, const JvpArgs& args) {
  std::optional<array> zx;
  std::optional<array> zs;
  return reapply(p,
                 {or_zeros(tangent_of(args, 0), args.primals[0], zx), args.primals[1],
                  or_zeros(tangent_of(args, 2), args.primals[2], zs)},
                 args.outputs);
}
Batched vmap_of(const MaskedScatter&, const VmapArgs& args) {
  // Per slice: the k-th true position (row-major) takes the slice's source[k] while k < the source's size.
  auto x = batched_front(args, 0);
  auto source = batched_front(args, 2);
  if (x.size() == 0 || source.size() == 0) {
    return {{x}, {0}};
  }
  auto flat_mask = reshape(batched_front(args, 1), {args.size, -1});
  source = reshape(source, {args.size, -1});
  int n = source.shape(1);
  auto position = cumsum(astype(flat_mask, int32), 1) - array(1, int32);
  auto written = logical_and(flat_mask, less(position, array(n, int32)));
  auto picked = take_along_axis(source, clip(position, array(0, int32), array(n - 1, int32)), 1);
  return {{where(reshape(written, x.shape()), reshape(astype(picked, x.dtype()), x.shape()), x)}, {0}};
}

// ---- SliceUpdate (x, update)

std::vector<array> vjp_of(const SliceUpdate& p, const VjpArgs& args) {
  if (reduces(p.type)) {
    return vjp_reducing_scatter(p.type, args, slice_update_forms(p, args));
  }
  const auto& ct = args.cotangents[0];
  const auto& update = args.primals[1];
  std::vector<array> grads;
  for (int a : args.argnums) {
    if (a == 0) {
      grads.push_back(p.type == ScatterType::sum ? ct
                                                 : reapply(SliceUpdate{p.start, p.strides, ScatterType::none},
                                                           {ct, zeros_like(update)}, ct.shape(), ct.dtype()));
    } else {
      grads.push_back(reapply(Slice{p.start, p.strides, update.shape()}, {ct}, update.shape(), update.dtype()));
    }
  }
  return grads;
}
std::vector<array> jvp_of(const SliceUpdate& p, const JvpArgs& args) {
  if (reduces(p.type)) {
    return jvp_by_transposing_vjp(p, args);
  }
  std::optional<array> zx;
  std::optional<array> zu;
  return reapply(p,
                 {or_zeros(tangent_of(args, 0), args.primals[0], zx),
                  or_zeros(tangent_of(args, 1), args.primals[1], zu)},
                 args.outputs);
}
Batched vmap_of(const SliceUpdate& p, const VmapArgs& args) {
  SliceUpdate q = p;
  q.start.insert(q.start.begin(), 0);
  q.strides.insert(q.strides.begin(), 1);
  return reapply_front(q, {batched_front(args, 0), batched_front(args, 1)}, args);
}

// ---- DynamicSlice (x, start) and DynamicSliceUpdate (x, update, start)

std::vector<array> vjp_of(const DynamicSlice& p, const VjpArgs& args) {
  const auto& x = args.primals[0];
  return {reapply(DynamicSliceUpdate{p.axes}, {zeros_like(x), args.cotangents[0], args.primals[1]}, x.shape(),
                  x.dtype())};
}
std::vector<array> jvp_of(const DynamicSlice& p, const JvpArgs& args) {
  return reapply(p, {args.tangents[0], args.primals[1]}, args.outputs);
}
namespace {

/// For mapped starts (B, axes): a front index arange(B) then one index array (B,) per sliced axis (shifted past the
/// front axis), of the starts' dtype.
std::pair<std::vector<array>, std::vector<int>> per_slice_starts(const VmapArgs& args, size_t start,
                                                                 const std::vector<int>& axes) {
  auto starts = moveaxis(args.inputs[start], args.axes[start], 0);
  std::vector<array> indices{astype(arange(args.size), starts.dtype())};
  for (size_t k = 0; k < axes.size(); ++k) {
    indices.push_back(take(starts, static_cast<int>(k), 1));
  }
  std::vector<int> gather_axes = shifted(axes);
  gather_axes.insert(gather_axes.begin(), 0);
  return {std::move(indices), std::move(gather_axes)};
}

}  // namespace

Batched vmap_of(const DynamicSlice& p, const VmapArgs& args) {
  if (args.axes[1] >= 0) {
    // Mapped starts: a gather of one slice per mapped slice (gathers clamp starts as DynamicSlice does).
    auto [indices, axes] = per_slice_starts(args, 1, p.axes);
    std::vector<array> inputs{batched_front(args, 0)};
    inputs.insert(inputs.end(), indices.begin(), indices.end());
    Shape sizes = p.slice_size;
    sizes.insert(sizes.begin(), 1);
    Shape gathered = sizes;
    gathered.insert(gathered.begin(), args.size);
    auto out = reapply(Gather{axes, sizes}, std::move(inputs), gathered, args.outputs[0].dtype());
    return {{reshape(out, front_shape(args.size, args.outputs[0].shape()))}, {0}};
  }
  Shape size = p.slice_size;
  size.insert(size.begin(), args.size);
  return reapply_front(DynamicSlice{shifted(p.axes), size}, {moved_front(args, 0), args.inputs[1]}, args);
}

std::vector<array> vjp_of(const DynamicSliceUpdate& p, const VjpArgs& args) {
  const auto& ct = args.cotangents[0];
  const auto& update = args.primals[1];
  const auto& start = args.primals[2];
  std::vector<array> grads;
  for (int a : args.argnums) {
    if (a == 0) {
      grads.push_back(reapply(p, {ct, zeros_like(update), start}, ct.shape(), ct.dtype()));
    } else {
      grads.push_back(reapply(DynamicSlice{p.axes, update.shape()}, {ct, start}, update.shape(), update.dtype()));
    }
  }
  return grads;
}
std::vector<array> jvp_of(const DynamicSliceUpdate& p, const JvpArgs& args) {
  std::optional<array> zx;
  std::optional<array> zu;
  return reapply(p,
                 {or_zeros(tangent_of(args, 0), args.primals[0], zx),
                  or_zeros(tangent_of(args, 1), args.primals[1], zu), args.primals[2]},
                 args.outputs);
}
Batched vmap_of(const DynamicSliceUpdate& p, const VmapArgs& args) {
  if (args.axes[2] >= 0) {
    // Mapped starts: a scatter of one update per mapped slice, at starts clamped as DynamicSliceUpdate clamps them
    // (a scatter would drop an update that does not fit).
    auto x = batched_front(args, 0);
    auto update = batched_front(args, 1);
    auto [indices, axes] = per_slice_starts(args, 2, p.axes);
    for (size_t k = 0; k < p.axes.size(); ++k) {
      int axis = p.axes[k] + 1;
      auto& start = indices[k + 1];
      auto dim = array(x.shape(axis), start.dtype());
      start = where(less(start, zeros_like(start)), start + dim, start);
      start = clip(start, array(0, start.dtype()), array(x.shape(axis) - update.shape(axis), start.dtype()));
    }
    std::vector<array> inputs{x};
    inputs.insert(inputs.end(), indices.begin(), indices.end());
    inputs.push_back(expand_dims(update, 1));
    return reapply_front(Scatter{ScatterType::none, axes}, std::move(inputs), args);
  }
  return reapply_front(DynamicSliceUpdate{shifted(p.axes)}, {batched_front(args, 0), batched_front(args, 1),
                                                             args.inputs[2]},
                       args);
}

}  // namespace nuvec::detail
