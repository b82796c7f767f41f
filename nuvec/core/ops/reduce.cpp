// Reductions: dtype rules, axis checks and the composition of the derived ones (mean, var, std, logsumexp and
// softmax over any axes, count_nonzero). Reduce and ArgReduce nodes keep the reduced axes with size 1; keepdims=false
// squeezes them with a view.
//
// Choices where MLX and NumPy differ or say nothing:
// - an empty `axes` list (or only size-1 axes) is a no-op that still applies the op's dtype rule (sum of int8 gives
//   int32, mean of int32 gives float32, ...);
// - max/min/argmax/argmin reject an empty reduction that has outputs (NumPy's rule), so reducing the size-3 axis of a
//   (0, 3) array gives an empty array instead of MLX's error;
// - count_nonzero gives int32, as sum of bool does;
// - var/std of complex64 give float32 (NumPy's), computed as mean(|x - mean(x)|^2);
// - logsumexp of an empty axis gives -inf (the log of an empty sum).

#include <numeric>

#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/output_shapes.h"

namespace nuvec {

using nuvec::detail::all_axes;
using nuvec::detail::make_node;
using nuvec::detail::op_prefix;

namespace {

Dtype at_least_float(Dtype t) { return is_inexact(t) ? t : float32; }

/// MLX's rule for sum and prod: small integers widen to 32 bits, 64-bit integers and floats keep their type.
Dtype sum_dtype(Dtype t) {
  if (t == bool_ || t == int8 || t == int16 || t == int32) {
    return int32;
  }
  if (t == uint8 || t == uint16 || t == uint32) {
    return uint32;
  }
  return t;
}

/// The checked axes of a reduction and the shapes it produces.
struct ReducePlan {
  std::vector<int> axes;  // normalized, sorted
  Shape kept_shape;       // reduced axes as size 1
  Shape dropped_shape;    // reduced axes left out
  size_t reduced_size;    // elements folded into each output
  bool noop;              // every reduced axis has size 1
};

ReducePlan plan_reduce(const array& a, const std::vector<int>& axes, const char* op) {
  ReducePlan p{normalize_axes(axes, a.ndim(), op, ErrorKind::out_of_range), a.shape(), {}, 1, true};
  for (int axis : p.axes) {
    p.reduced_size *= static_cast<size_t>(a.shape(axis));
    p.noop = p.noop && a.shape(axis) == 1;
    p.kept_shape[axis] = 1;
  }
  size_t next = 0;
  for (int axis = 0; axis < a.ndim(); ++axis) {
    if (next < p.axes.size() && p.axes[next] == axis) {
      ++next;
    } else {
      p.dropped_shape.push_back(a.shape(axis));
    }
  }
  return p;
}

/// The reduction's result (of the kept shape) reshaped once to the shape the caller asked for.
array finish(const array& out, const ReducePlan& p, bool keepdims, StreamOrDevice s) {
  return reshape(out, keepdims ? p.kept_shape : p.dropped_shape, s);
}

void reject_complex(const array& a, const char* op) {
  if (is_complex(a.dtype())) {
    throw_invalid(op_prefix(op) + "Not supported for complex64 inputs.");
  }
}

/// A Reduce node (or the dtype conversion alone when no axis needs reducing).
array reduce(const array& a, ReduceType type, Dtype out_dtype, const std::vector<int>& axes, bool keepdims,
             const char* op, StreamOrDevice s) {
  auto p = plan_reduce(a, axes, op);
  if (p.noop) {
    return finish(astype(a, out_dtype, s), p, keepdims, s);
  }
  if ((type == ReduceType::max || type == ReduceType::min) && p.reduced_size == 0 && shape_size(p.kept_shape) > 0) {
    throw_invalid(op_prefix(op) + "Cannot " + op + " reduce zero size array (shape " + shape_string(a.shape()) + ").");
  }
  return finish(make_node(Reduce{type, p.axes, out_dtype}, {a}, to_stream(s)), p, keepdims, s);
}

/// sum(x) / n in at least float; half floats are summed into float32 and rounded once at the end.
array mean_impl(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  auto p = plan_reduce(a, axes, "mean");
  const Dtype out_dtype = at_least_float(a.dtype());
  if (p.noop) {
    return finish(astype(a, out_dtype, s), p, keepdims, s);
  }
  const Dtype acc = (out_dtype == float16 || out_dtype == bfloat16) ? float32 : out_dtype;
  const array total = make_node(Reduce{ReduceType::sum, p.axes, acc}, {a}, to_stream(s));
  auto m = divide(total, array(static_cast<double>(p.reduced_size), acc), s);
  return finish(astype(m, out_dtype, s), p, keepdims, s);
}

/// Variance in the compute dtype (float32 for integers, halves and complex64; float64 stays), two-pass:
/// mean first, then the mean of squared deviations, which stays accurate for data with a large mean.
array var_compute(const array& a, const std::vector<int>& axes, bool keepdims, int ddof, const char* op,
                  StreamOrDevice s) {
  auto p = plan_reduce(a, axes, op);
  const Dtype compute = a.dtype() == float64 || a.dtype() == complex64 ? a.dtype() : float32;
  auto x = astype(a, compute, s);
  auto deviation = subtract(x, mean_impl(x, p.axes, true, s), s);
  auto squared = is_complex(compute) ? square(abs(deviation, s), s) : square(deviation, s);
  auto total = sum(squared, p.axes, keepdims, s);
  const auto dof = std::max<double>(static_cast<double>(p.reduced_size) - ddof, 0.0);
  return divide(total, array(dof, total.dtype()), s);
}

Dtype var_dtype(Dtype t) { return is_complex(t) ? float32 : at_least_float(t); }

/// Moves `axes` (sorted) to the end and flattens them into one: the layout of the last-axis primitives.
struct LastAxisPlan {
  std::vector<int> perm;     // kept axes in order, then the reduced ones
  std::vector<int> inverse;  // undoes perm
  Shape flat_shape;          // kept sizes, then the product of the reduced sizes
};

LastAxisPlan plan_last_axis(const array& a, const std::vector<int>& sorted_axes) {
  LastAxisPlan p;
  int32_t reduced = 1;
  for (int i = 0; i < a.ndim(); ++i) {
    if (!std::binary_search(sorted_axes.begin(), sorted_axes.end(), i)) {
      p.perm.push_back(i);
      p.flat_shape.push_back(a.shape(i));
    }
  }
  for (int axis : sorted_axes) {
    p.perm.push_back(axis);
    reduced *= a.shape(axis);
  }
  p.flat_shape.push_back(reduced);
  p.inverse.resize(p.perm.size());
  for (size_t i = 0; i < p.perm.size(); ++i) {
    p.inverse[p.perm[i]] = static_cast<int>(i);
  }
  return p;
}

array arg_reduce(const array& a, ArgReduceType type, int axis, bool keepdims, const char* op, StreamOrDevice s) {
  int ax = normalize_axis(axis, a.ndim(), op);
  Shape others = a.shape();
  others[ax] = 1;
  if (a.shape(ax) == 0 && shape_size(others) > 0) {
    throw_invalid(op_prefix(op) + "Cannot " + op + " reduce zero size array (shape " + shape_string(a.shape()) + ").");
  }
  auto out = make_node(ArgReduce{type, ax}, {a}, to_stream(s));
  return keepdims ? out : squeeze(out, ax, s);
}

array arg_reduce_all(const array& a, ArgReduceType type, bool keepdims, const char* op, StreamOrDevice s) {
  if (a.size() == 0) {
    throw_invalid(op_prefix(op) + "Cannot " + op + " reduce zero size array (shape " + shape_string(a.shape()) + ").");
  }
  auto out = arg_reduce(flatten(a, s), type, 0, true, op, s);
  return keepdims ? reshape(out, Shape(a.ndim(), 1), s) : reshape(out, {}, s);
}

}  // namespace

// ---------------------------------------------------------------- Reduce-based

#define NUVEC_DEFINE_REDUCTION(name, body)                                                                   \
  array name(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) body array name( \
      const array& a, bool keepdims, StreamOrDevice s) {                                                     \
    return name(a, all_axes(a.ndim()), keepdims, s);                                                         \
  }                                                                                                          \
  array name(const array& a, int axis, bool keepdims, StreamOrDevice s) {                                    \
    return name(a, std::vector<int>{axis}, keepdims, s);                                                     \
  }

NUVEC_DEFINE_REDUCTION(all, { return reduce(a, ReduceType::all, bool_, axes, keepdims, "all", s); })
NUVEC_DEFINE_REDUCTION(any, { return reduce(a, ReduceType::any, bool_, axes, keepdims, "any", s); })
NUVEC_DEFINE_REDUCTION(sum, { return reduce(a, ReduceType::sum, sum_dtype(a.dtype()), axes, keepdims, "sum", s); })
NUVEC_DEFINE_REDUCTION(prod, { return reduce(a, ReduceType::prod, sum_dtype(a.dtype()), axes, keepdims, "prod", s); })
NUVEC_DEFINE_REDUCTION(max, { return reduce(a, ReduceType::max, a.dtype(), axes, keepdims, "max", s); })
NUVEC_DEFINE_REDUCTION(min, { return reduce(a, ReduceType::min, a.dtype(), axes, keepdims, "min", s); })
NUVEC_DEFINE_REDUCTION(mean, { return mean_impl(a, axes, keepdims, s); })

NUVEC_DEFINE_REDUCTION(count_nonzero, {
  plan_reduce(a, axes, "count_nonzero");  // checks the axes under this op's name
  // A complex number is nonzero when either part is (a cast to bool looks at the real part only).
  auto nonzero = is_complex(a.dtype()) ? not_equal(a, array(complex64_t(0.0F, 0.0F)), s) : astype(a, bool_, s);
  return sum(nonzero, axes, keepdims, s);
})

NUVEC_DEFINE_REDUCTION(logsumexp, {
  reject_complex(a, "logsumexp");
  auto p = plan_reduce(a, axes, "logsumexp");
  auto x = astype(a, at_least_float(a.dtype()), s);
  if (p.noop) {
    return finish(x, p, keepdims, s);
  }
  auto last = plan_last_axis(x, p.axes);
  auto rows = reshape(transpose(x, last.perm, s), last.flat_shape, s);
  auto out = make_node(LogSumExp{}, {rows}, to_stream(s));
  return finish(out, p, keepdims, s);
})

#undef NUVEC_DEFINE_REDUCTION

// ---------------------------------------------------------------- var and std

array var(const array& a, const std::vector<int>& axes, bool keepdims, int ddof, StreamOrDevice s) {
  return astype(var_compute(a, axes, keepdims, ddof, "var", s), var_dtype(a.dtype()), s);
}
array var(const array& a, bool keepdims, int ddof, StreamOrDevice s) {
  return var(a, all_axes(a.ndim()), keepdims, ddof, s);
}
array var(const array& a, int axis, bool keepdims, int ddof, StreamOrDevice s) {
  return var(a, std::vector<int>{axis}, keepdims, ddof, s);
}

array std(const array& a, const std::vector<int>& axes, bool keepdims, int ddof, StreamOrDevice s) {
  return astype(sqrt(var_compute(a, axes, keepdims, ddof, "std", s), s), var_dtype(a.dtype()), s);
}
array std(const array& a, bool keepdims, int ddof, StreamOrDevice s) {
  return nuvec::std(a, all_axes(a.ndim()), keepdims, ddof, s);
}
array std(const array& a, int axis, bool keepdims, int ddof, StreamOrDevice s) {
  return nuvec::std(a, std::vector<int>{axis}, keepdims, ddof, s);
}

// ---------------------------------------------------------------- argmax and argmin

array argmax(const array& a, bool keepdims, StreamOrDevice s) {
  return arg_reduce_all(a, ArgReduceType::argmax, keepdims, "argmax", s);
}
array argmax(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return arg_reduce(a, ArgReduceType::argmax, axis, keepdims, "argmax", s);
}
array argmin(const array& a, bool keepdims, StreamOrDevice s) {
  return arg_reduce_all(a, ArgReduceType::argmin, keepdims, "argmin", s);
}
array argmin(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return arg_reduce(a, ArgReduceType::argmin, axis, keepdims, "argmin", s);
}

// ---------------------------------------------------------------- softmax

array softmax(const array& a, const std::vector<int>& axes, bool precise, StreamOrDevice s) {
  reject_complex(a, "softmax");
  auto sorted = normalize_axes(axes, a.ndim(), "softmax");
  auto x = astype(a, at_least_float(a.dtype()), s);
  if (sorted.size() == 1 && sorted[0] == x.ndim() - 1) {
    return make_node(Softmax{precise}, {x}, to_stream(s));
  }
  // Other axes: move them last and flatten them, run the row kernel, and undo the moves (views).
  auto last = plan_last_axis(x, sorted);
  auto moved = transpose(x, last.perm, s);
  auto rows = reshape(moved, last.flat_shape, s);
  auto y = make_node(Softmax{precise}, {rows}, to_stream(s));
  return transpose(reshape(y, moved.shape(), s), last.inverse, s);
}

array softmax(const array& a, bool precise, StreamOrDevice s) { return softmax(a, all_axes(a.ndim()), precise, s); }

array softmax(const array& a, int axis, bool precise, StreamOrDevice s) {
  return softmax(a, std::vector<int>{axis}, precise, s);
}

}  // namespace nuvec
