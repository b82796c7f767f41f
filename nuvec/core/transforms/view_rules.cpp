// Rules of the views and layout primitives, Depends and Custom.

#include <numeric>

#include "nuvec/core/ops.h"
#include "nuvec/core/transforms/rules.h"

namespace nuvec::detail {

namespace {

/// A linear primitive's jvp: the primitive applied to the tangent.
std::vector<array> linear_jvp(const Primitive& p, const JvpArgs& args) {
  return reapply(p, {args.tangents[0]}, args.outputs);
}

}  // namespace

// ---- Broadcast

std::vector<array> vjp_of(const Broadcast&, const VjpArgs& args) {
  return {sum_to_shape(args.cotangents[0], args.primals[0].shape())};
}
std::vector<array> jvp_of(const Broadcast& p, const JvpArgs& args) { return linear_jvp(p, args); }
Batched vmap_of(const Broadcast&, const VmapArgs& args) {
  auto x = moveaxis(args.inputs[0], args.axes[0], 0);
  Shape aligned = x.shape();
  const auto& shape = args.outputs[0].shape();
  aligned.insert(aligned.begin() + 1, shape.size() - static_cast<size_t>(x.ndim() - 1), 1);
  return {{broadcast_to(reshape(x, aligned), front_shape(args.size, shape))}, {0}};
}

// ---- Reshape

std::vector<array> vjp_of(const Reshape&, const VjpArgs& args) {
  return {reshape(args.cotangents[0], args.primals[0].shape())};
}
std::vector<array> jvp_of(const Reshape& p, const JvpArgs& args) { return linear_jvp(p, args); }
Batched vmap_of(const Reshape&, const VmapArgs& args) {
  auto x = moveaxis(args.inputs[0], args.axes[0], 0);
  return {{reshape(x, front_shape(args.size, args.outputs[0].shape()))}, {0}};
}

// ---- Transpose

std::vector<array> vjp_of(const Transpose& p, const VjpArgs& args) {
  std::vector<int> inverse(p.axes.size());
  for (size_t i = 0; i < p.axes.size(); ++i) {
    inverse[static_cast<size_t>(p.axes[i])] = static_cast<int>(i);
  }
  return {transpose(args.cotangents[0], inverse)};
}
std::vector<array> jvp_of(const Transpose& p, const JvpArgs& args) { return linear_jvp(p, args); }
Batched vmap_of(const Transpose& p, const VmapArgs& args) {
  auto axes = shifted(p.axes);
  axes.insert(axes.begin(), 0);
  return {{transpose(moveaxis(args.inputs[0], args.axes[0], 0), axes)}, {0}};
}

// ---- Slice

std::vector<array> vjp_of(const Slice& p, const VjpArgs& args) {
  const auto& x = args.primals[0];
  return {reapply(SliceUpdate{p.start, p.strides, ScatterType::none}, {zeros_like(x), args.cotangents[0]},
                  x.shape(), x.dtype())};
}
std::vector<array> jvp_of(const Slice& p, const JvpArgs& args) { return linear_jvp(p, args); }
Batched vmap_of(const Slice& p, const VmapArgs& args) {
  Slice q = p;
  q.start.insert(q.start.begin(), 0);
  q.strides.insert(q.strides.begin(), 1);
  q.shape.insert(q.shape.begin(), args.size);
  return front_vmap(q, args);
}

// ---- AsStrided: the input is row-contiguous, so element positions are flat indices into it.

std::vector<array> vjp_of(const AsStrided& p, const VjpArgs& args) {
  const auto& x = args.primals[0];
  auto positions = reapply(p, {arange(static_cast<int>(x.size()))}, p.shape, int32);
  auto flat = scatter_add(zeros({static_cast<int>(x.size())}, x.dtype()), {flatten(positions)},
                          reshape(args.cotangents[0], {static_cast<int>(positions.size()), 1}), std::vector<int>{0});
  return {reshape(flat, x.shape())};
}
std::vector<array> jvp_of(const AsStrided& p, const JvpArgs& args) { return linear_jvp(p, args); }
Batched vmap_of(const AsStrided& p, const VmapArgs& args) {
  auto x = contiguous(moveaxis(args.inputs[0], args.axes[0], 0));
  AsStrided q = p;
  q.shape.insert(q.shape.begin(), args.size);
  q.strides.insert(q.strides.begin(), static_cast<int64_t>(x.size() / static_cast<size_t>(std::max(args.size, 1))));
  return {{reapply(q, {x}, q.shape, x.dtype())}, {0}};
}

// ---- Diagonal: the cotangent goes back onto the diagonal through two one-hot matrices.

std::vector<array> vjp_of(const Diagonal& p, const VjpArgs& args) {
  const auto& x = args.primals[0];
  const auto& ct = args.cotangents[0];
  int rows = x.shape(p.axis1);
  int cols = x.shape(p.axis2);
  int length = ct.shape(-1);
  auto d = arange(length);
  auto row_hot = astype(equal(expand_dims(d + std::max(-p.offset, 0), 1), arange(rows)), ct.dtype());
  auto col_hot = astype(equal(expand_dims(d + std::max(p.offset, 0), 1), arange(cols)), ct.dtype());
  // (..., length) -> (..., rows, length) -> (..., rows, cols)
  auto spread = matmul(expand_dims(ct, -2) * transpose(row_hot), col_hot);
  // spread's axes are the other axes in order, then axis1, axis2: put those two back.
  std::vector<int> perm(static_cast<size_t>(x.ndim()));
  int rest = 0;
  for (int i = 0; i < x.ndim(); ++i) {
    if (i == p.axis1) {
      perm[static_cast<size_t>(i)] = x.ndim() - 2;
    } else if (i == p.axis2) {
      perm[static_cast<size_t>(i)] = x.ndim() - 1;
    } else {
      perm[static_cast<size_t>(i)] = rest++;
    }
  }
  return {transpose(spread, perm)};
}
std::vector<array> jvp_of(const Diagonal& p, const JvpArgs& args) { return linear_jvp(p, args); }
Batched vmap_of(const Diagonal& p, const VmapArgs& args) {
  return front_vmap(Diagonal{p.offset, p.axis1 + 1, p.axis2 + 1}, args);
}

// ---- View

std::vector<array> vjp_of(const View& p, const VjpArgs& args) {
  if (size_of(p.dtype) != args.primals[0].itemsize() || !issubdtype(args.primals[0].dtype(), floating)) {
    throw_no_rule("vjp", p.name, "is only differentiable between floating dtypes of one size.");
  }
  return {view(args.cotangents[0], args.primals[0].dtype())};
}
std::vector<array> jvp_of(const View& p, const JvpArgs& args) {
  if (size_of(p.dtype) != args.primals[0].itemsize() || !issubdtype(p.dtype, floating)) {
    throw_no_rule("jvp", p.name, "is only differentiable between floating dtypes of one size.");
  }
  return linear_jvp(p, args);
}
Batched vmap_of(const View& p, const VmapArgs& args) {
  // The op copies an input whose last axis is not contiguous (as a moved mapped axis leaves it) before the view.
  return {{view(moveaxis(args.inputs[0], args.axes[0], 0), p.dtype)}, {0}};
}

// ---- StopGradient (its input carries no derivative, so its vjp and jvp never run)

std::vector<array> vjp_of(const StopGradient& p, const VjpArgs&) {
  throw_no_rule("vjp", p.name, "carries no derivative.");
}
std::vector<array> jvp_of(const StopGradient& p, const JvpArgs&) {
  throw_no_rule("jvp", p.name, "carries no derivative.");
}
Batched vmap_of(const StopGradient& p, const VmapArgs& args) { return front_vmap(p, args); }

// ---- Depends: outputs are the first inputs; the dependencies carry nothing.

std::vector<array> vjp_of(const Depends&, const VjpArgs& args) {
  std::vector<array> grads;
  for (int a : args.argnums) {
    grads.push_back(args.cotangents[static_cast<size_t>(a)]);
  }
  return grads;
}
std::vector<array> jvp_of(const Depends&, const JvpArgs& args) {
  std::vector<array> tangents;
  for (size_t i = 0; i < args.outputs.size(); ++i) {
    const array* t = tangent_of(args, i);
    tangents.push_back(t ? *t : zeros_like(args.outputs[i]));
  }
  return tangents;
}
Batched vmap_of(const Depends&, const VmapArgs& args) {
  std::vector<array> inputs = args.inputs;
  std::vector<int> axes;
  std::vector<array> like;
  for (size_t i = 0; i < args.outputs.size(); ++i) {
    inputs[i] = batched_front(args, i);
    like.push_back(inputs[i]);
    axes.push_back(0);
  }
  return {reapply(Depends{}, std::move(inputs), like), axes};
}

// ---- Custom: the user's rules, or the wrapped function itself.

namespace {
std::vector<array> custom_primals(const Custom& p, const std::vector<array>& inputs) {
  return {inputs.begin() + p.num_outputs, inputs.end()};
}
}  // namespace

std::vector<array> vjp_of(const Custom& p, const VjpArgs& args) {
  auto primals = custom_primals(p, args.primals);
  std::vector<array> all = p.rules->vjp ? (*p.rules->vjp)(primals, args.cotangents, args.outputs)
                                        : vjp(p.rules->fun, primals, args.cotangents).second;
  if (all.size() != primals.size()) {
    throw_no_rule("vjp", p.name, "function's vjp returned " + std::to_string(all.size()) + " cotangents for " +
                                     std::to_string(primals.size()) + " primals.");
  }
  std::vector<array> grads;
  for (int a : args.argnums) {
    grads.push_back(all[static_cast<size_t>(a - p.num_outputs)]);
  }
  return grads;
}
std::vector<array> jvp_of(const Custom& p, const JvpArgs& args) {
  auto primals = custom_primals(p, args.primals);
  if (p.rules->jvp) {
    std::vector<int> argnums;
    for (int a : args.argnums) {
      argnums.push_back(a - p.num_outputs);
    }
    return (*p.rules->jvp)(primals, args.tangents, argnums);
  }
  std::vector<array> tangents;
  for (size_t i = 0; i < primals.size(); ++i) {
    const array* t = tangent_of(args, i + static_cast<size_t>(p.num_outputs));
    tangents.push_back(t ? *t : zeros_like(primals[i]));
  }
  return jvp(p.rules->fun, primals, tangents).second;
}
Batched vmap_of(const Custom& p, const VmapArgs& args) {
  auto n = static_cast<size_t>(p.num_outputs);
  if (p.rules->vmap) {
    std::vector<int> axes(args.axes.begin() + p.num_outputs, args.axes.end());
    return (*p.rules->vmap)(custom_primals(p, args.inputs), axes);
  }
  // Without a vmap rule the mapped function outputs (already traced through plain ops) are the result.
  std::vector<array> outs;
  std::vector<int> axes;
  for (size_t i = 0; i < n; ++i) {
    outs.push_back(batched_front(args, i));
    axes.push_back(0);
  }
  return {outs, axes};
}

// ---- Copy, Concatenate, Pad

std::vector<array> vjp_of(const Copy&, const VjpArgs& args) { return {args.cotangents[0]}; }
std::vector<array> jvp_of(const Copy&, const JvpArgs& args) { return {args.tangents[0]}; }
Batched vmap_of(const Copy& p, const VmapArgs& args) { return front_vmap(p, args); }

std::vector<array> vjp_of(const Concatenate& p, const VjpArgs& args) {
  const auto& ct = args.cotangents[0];
  std::vector<int> offsets(args.primals.size() + 1, 0);
  for (size_t i = 0; i < args.primals.size(); ++i) {
    offsets[i + 1] = offsets[i] + args.primals[i].shape(p.axis);
  }
  std::vector<array> grads;
  for (int a : args.argnums) {
    Shape start(static_cast<size_t>(ct.ndim()), 0);
    Shape stop = ct.shape();
    start[static_cast<size_t>(p.axis)] = offsets[static_cast<size_t>(a)];
    stop[static_cast<size_t>(p.axis)] = offsets[static_cast<size_t>(a) + 1];
    grads.push_back(slice(ct, start, stop));
  }
  return grads;
}
std::vector<array> jvp_of(const Concatenate& p, const JvpArgs& args) {
  std::vector<array> parts;
  for (size_t i = 0; i < args.primals.size(); ++i) {
    const array* t = tangent_of(args, i);
    parts.push_back(t ? *t : zeros_like(args.primals[i]));
  }
  return {concatenate(parts, p.axis)};
}
Batched vmap_of(const Concatenate& p, const VmapArgs& args) {
  std::vector<array> parts;
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    parts.push_back(batched_front(args, i));
  }
  return {{concatenate(parts, p.axis + 1)}, {0}};
}

std::vector<array> vjp_of(const Pad& p, const VjpArgs& args) {
  const auto& x = args.primals[0];
  const auto& ct = args.cotangents[0];
  Shape start(static_cast<size_t>(ct.ndim()), 0);
  Shape stop = ct.shape();
  for (size_t k = 0; k < p.axes.size(); ++k) {
    auto axis = static_cast<size_t>(p.axes[k]);
    start[axis] = p.low[k];
    stop[axis] = p.low[k] + x.shape()[axis];
  }
  auto inner = slice(ct, start, stop);
  std::vector<array> grads;
  for (int a : args.argnums) {
    grads.push_back(a == 0 ? inner : reshape(sum(ct) - sum(inner), args.primals[1].shape()));
  }
  return grads;
}
std::vector<array> jvp_of(const Pad& p, const JvpArgs& args) {
  const array* tx = tangent_of(args, 0);
  const array* tv = tangent_of(args, 1);
  return reapply(p, {tx ? *tx : zeros_like(args.primals[0]), tv ? *tv : zeros_like(args.primals[1])}, args.outputs);
}
Batched vmap_of(const Pad& p, const VmapArgs& args) {
  Pad q{shifted(p.axes), p.low, p.high};
  auto x = batched_front(args, 0);
  const auto& out = args.outputs[0];
  Shape shape = front_shape(args.size, out.shape());
  if (args.axes[1] < 0) {
    return {{reapply(q, {x, args.inputs[1]}, shape, out.dtype())}, {0}};
  }
  // A mapped pad value: pad with zeros, then each slice's value where a padded mask is false.
  auto padded = reapply(q, {x, zeros({}, out.dtype())}, shape, out.dtype());
  auto inside = reapply(q, {ones(x.shape(), bool_), array(false)}, shape, bool_);
  Shape column(shape.size(), 1);
  column[0] = args.size;
  auto value = reshape(moveaxis(args.inputs[1], args.axes[1], 0), column);
  return {{where(inside, padded, value)}, {0}};
}

}  // namespace nuvec::detail
