// Helpers shared by the rule files.

#include <string>

#include "nuvec/core/error.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/transforms/rules.h"

namespace nuvec::detail {

void throw_no_rule(std::string_view transform, std::string_view primitive, std::string_view why) {
  std::string message("[");
  message.append(transform).append("] ").append(primitive).append(" ").append(why);
  throw_invalid(message);
}

array reapply(const Primitive& p, std::vector<array> inputs, Shape shape, Dtype dtype) {
  auto stream = inputs.front().stream();
  return array(std::move(shape), dtype, p, std::move(inputs), stream);
}

std::vector<array> reapply(const Primitive& p, std::vector<array> inputs, const std::vector<array>& like) {
  if (like.size() == 1) {
    return {reapply(p, std::move(inputs), like[0].shape(), like[0].dtype())};
  }
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (const auto& l : like) {
    shapes.push_back(l.shape());
    dtypes.push_back(l.dtype());
  }
  auto stream = inputs.front().stream();
  return array::make_arrays(std::move(shapes), dtypes, p, std::move(inputs), stream);
}

array sum_to_shape(const array& x, const Shape& shape) {
  if (x.shape() == shape) {
    return x;
  }
  int extra = x.ndim() - static_cast<int>(shape.size());
  std::vector<int> axes;
  for (int i = 0; i < x.ndim(); ++i) {
    if (i < extra || (shape[static_cast<size_t>(i - extra)] == 1 && x.shape(i) != 1)) {
      axes.push_back(i);
    }
  }
  return reshape(sum(x, axes, true), shape);
}

const array* tangent_of(const JvpArgs& args, size_t index) {
  for (size_t k = 0; k < args.argnums.size(); ++k) {
    if (static_cast<size_t>(args.argnums[k]) == index) {
      return &args.tangents[k];
    }
  }
  return nullptr;
}

std::vector<array> vjp_through(const Function& f, const VjpArgs& args) {
  auto grads = vjp(f, args.primals, args.cotangents).second;
  std::vector<array> picked;
  for (int a : args.argnums) {
    picked.push_back(grads[static_cast<size_t>(a)]);
  }
  return picked;
}

std::vector<array> jvp_through(const Function& f, const JvpArgs& args) {
  std::vector<array> tangents;
  for (size_t i = 0; i < args.primals.size(); ++i) {
    const array* t = tangent_of(args, i);
    tangents.push_back(t ? *t : zeros_like(args.primals[i]));
  }
  return jvp(f, args.primals, tangents).second;
}

Batched vmap_through(const Function& f, const VmapArgs& args) {
  std::vector<int> out_axes(args.outputs.size(), 0);
  return {vmap(f, args.axes, out_axes)(args.inputs), out_axes};
}

std::vector<array> jvp_by_transposing_vjp(const Primitive& p, const JvpArgs& args) {
  Function pullback = [&](const std::vector<array>& cotangents) {
    return vjp_rule(p, {args.primals, args.outputs, cotangents, args.argnums});
  };
  std::vector<array> zero_cotangents;
  for (const auto& o : args.outputs) {
    zero_cotangents.push_back(zeros_like(o));
  }
  return vjp(pullback, zero_cotangents, args.tangents).second;
}

std::vector<int> shifted(const std::vector<int>& axes) {
  std::vector<int> out;
  for (int a : axes) {
    out.push_back(a + 1);
  }
  return out;
}

Shape front_shape(int size, const Shape& shape) {
  Shape out = shape;
  out.insert(out.begin(), size);
  return out;
}

Batched reapply_front(const Primitive& p, std::vector<array> inputs, const VmapArgs& args) {
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (const auto& o : args.outputs) {
    Shape shape = o.shape();
    shape.insert(shape.begin(), args.size);
    shapes.push_back(std::move(shape));
    dtypes.push_back(o.dtype());
  }
  auto stream = inputs.front().stream();
  std::vector<array> outs = shapes.size() == 1
                                ? std::vector<array>{array(shapes[0], dtypes[0], p, std::move(inputs), stream)}
                                : array::make_arrays(std::move(shapes), dtypes, p, std::move(inputs), stream);
  return {std::move(outs), std::vector<int>(args.outputs.size(), 0)};
}

Batched front_vmap(const Primitive& q, const VmapArgs& args) {
  return reapply_front(q, {moveaxis(args.inputs[0], args.axes[0], 0)}, args);
}

array with_front_axis(const array& a, int size) {
  Shape shape = a.shape();
  shape.insert(shape.begin(), size);
  return broadcast_to(expand_dims(a, 0), shape);
}

array batched_front(const VmapArgs& args, size_t i) {
  return args.axes[i] < 0 ? with_front_axis(args.inputs[i], args.size) : moveaxis(args.inputs[i], args.axes[i], 0);
}

array moved_front(const VmapArgs& args, size_t i) {
  return args.axes[i] < 0 ? args.inputs[i] : moveaxis(args.inputs[i], args.axes[i], 0);
}

}  // namespace nuvec::detail
