// Products beyond matmul: kron and vecdot (compositions of element-wise ops and reductions), and the ops behind the
// BlockMaskedMM, GatherMM, SegmentedMM and Hadamard primitives, which check their arguments, promote and broadcast
// the operands, and leave the kernels valid input only.
//
// Choices where MLX and NumPy differ or say nothing:
// - kron rejects empty operands (MLX's rule; NumPy gives an empty product);
// - vecdot follows NumPy's np.vecdot (MLX's C++ API has none): the first operand is conjugated, the core axes must
//   have equal sizes and the other axes broadcast; integers wrap in their own dtype as NumPy's do;
// - hadamard_transform takes the sizes MLX takes, m * 2^k with m 1, 12, 20 or 28, and for m > 1 is H_m (x) H_2^k
//   with MLX's H_m (core/hadamard_matrix.h).

#include <algorithm>
#include <cmath>

#include "nuvec/core/hadamard_matrix.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/output_shapes.h"

namespace nuvec {

using nuvec::detail::dtype_string;
using nuvec::detail::make_node;
using nuvec::detail::op_prefix;

namespace {

Shape leading(const array& a, int drop) { return {a.shape().begin(), a.shape().end() - drop}; }

Shape with_tail(Shape shape, std::initializer_list<int32_t> tail) {
  shape.insert(shape.end(), tail);
  return shape;
}

int32_t blocks(int32_t size, int block_size) { return (size + block_size - 1) / block_size; }

/// The matrix operands of a product op after numpy's 1-d promotion, in the promoted floating dtype.
struct MatrixOperands {
  array a;
  array b;
  Dtype dtype;
  std::vector<int> squeeze_axes;  // from the end of the result: -2 for a 1-d a, -1 for a 1-d b
};

MatrixOperands matrix_operands(const array& in_a, const array& in_b, const char* op, StreamOrDevice s) {
  if (in_a.ndim() == 0 || in_b.ndim() == 0) {
    throw_invalid(op_prefix(op) + "Got 0 dimension input. Inputs must have at least one dimension.");
  }
  auto a = in_a.ndim() == 1 ? expand_dims(in_a, 0, s) : in_a;
  auto b = in_b.ndim() == 1 ? expand_dims(in_b, 1, s) : in_b;
  if (a.shape(-1) != b.shape(-2)) {
    throw_invalid(op_prefix(op) + "Last dimension of first input with shape " + shape_string(a.shape()) +
                  " must match second to last dimension of second input with shape " + shape_string(b.shape()) + ".");
  }
  const Dtype dtype = promote_types(a.dtype(), b.dtype());
  if (!is_floating(dtype)) {
    throw_invalid(op_prefix(op) + "Only real floating point types are supported but " + dtype_string(in_a.dtype()) +
                  " and " + dtype_string(in_b.dtype()) + " were provided which results in " + dtype_string(dtype) +
                  ", which is not a real floating point type.");
  }
  std::vector<int> squeeze_axes;
  if (in_a.ndim() == 1) {
    squeeze_axes.push_back(-2);
  }
  if (in_b.ndim() == 1) {
    squeeze_axes.push_back(-1);
  }
  return {astype(a, dtype, s), astype(b, dtype, s), dtype, std::move(squeeze_axes)};
}

array squeeze_promoted(const array& out, const std::vector<int>& axes, StreamOrDevice s) {
  return axes.empty() ? out : squeeze(out, axes, s);
}

Shape checked_broadcast(const Shape& x, const Shape& y, const std::string& message) {
  try {
    return broadcast_shapes(x, y);
  } catch (const error&) {
    throw_invalid(message);
  }
}

}  // namespace

array kron(const array& a, const array& b, StreamOrDevice s) {
  if (a.size() == 0 || b.size() == 0) {
    throw_invalid("[kron] Input arrays cannot be empty; got shapes " + shape_string(a.shape()) + " and " +
                  shape_string(b.shape()) + ".");
  }
  // Interleave the axes: a's sizes on even positions, b's on odd ones, so one broadcast product laid out row-major
  // is the Kronecker product once adjacent pairs are merged.
  const int ndim = std::max(a.ndim(), b.ndim());
  Shape a_shape(2 * ndim, 1);
  Shape b_shape(2 * ndim, 1);
  Shape out_shape(ndim, 1);
  for (int i = 0; i < a.ndim(); ++i) {
    const int axis = ndim - a.ndim() + i;
    a_shape[2 * axis] = a.shape(i);
    out_shape[axis] = checked_dim(int64_t{out_shape[axis]} * a.shape(i), "kron");
  }
  for (int i = 0; i < b.ndim(); ++i) {
    const int axis = ndim - b.ndim() + i;
    b_shape[2 * axis + 1] = b.shape(i);
    out_shape[axis] = checked_dim(int64_t{out_shape[axis]} * b.shape(i), "kron");
  }
  return reshape(multiply(reshape(a, a_shape, s), reshape(b, b_shape, s), s), out_shape, s);
}

array vecdot(const array& a, const array& b, int axis, StreamOrDevice s) {
  if (a.ndim() == 0 || b.ndim() == 0) {
    throw_invalid("[vecdot] Inputs must have at least one dimension; got shapes " + shape_string(a.shape()) + " and " +
                  shape_string(b.shape()) + ".");
  }
  const int axis_a = normalize_axis(axis, a.ndim(), "vecdot");
  const int axis_b = normalize_axis(axis, b.ndim(), "vecdot");
  if (a.shape(axis_a) != b.shape(axis_b)) {
    throw_invalid("[vecdot] The inputs must have the same size along axis " + std::to_string(axis) + "; got shapes " +
                  shape_string(a.shape()) + " and " + shape_string(b.shape()) + ".");
  }
  auto x = moveaxis(a, axis_a, -1, s);
  auto y = moveaxis(b, axis_b, -1, s);
  checked_broadcast(leading(x, 1), leading(y, 1),
                    "[vecdot] The non-contracted axes of the inputs with shapes " + shape_string(a.shape()) + " and " +
                        shape_string(b.shape()) + " cannot be broadcast.");
  const Dtype dtype = promote_types(a.dtype(), b.dtype());
  x = astype(x, dtype, s);
  if (is_complex(dtype)) {
    x = conjugate(x, s);
  }
  // sum widens small integers and bool; converting back wraps as NumPy's own-dtype accumulation does (bool: any).
  return astype(sum(multiply(x, y, s), -1, false, s), dtype, s);
}

// NOLINTBEGIN(performance-unnecessary-value-param): MLX's signatures take arrays by value
array block_masked_mm(array a, array b, int block_size, std::optional<array> mask_out, std::optional<array> mask_lhs,
                      std::optional<array> mask_rhs, StreamOrDevice s) {
  if (!mask_out && !mask_lhs && !mask_rhs) {
    return matmul(a, b, s);
  }
  if (block_size != 32 && block_size != 64) {
    throw_invalid("[block_masked_mm] Only block sizes 32 and 64 are supported; got block size " +
                  std::to_string(block_size) + ".");
  }
  auto p = matrix_operands(a, b, "block_masked_mm", s);
  const Shape batch =
      checked_broadcast(leading(p.a, 2), leading(p.b, 2),
                        "[block_masked_mm] The batch dimensions of the inputs with shapes " + shape_string(a.shape()) +
                            " and " + shape_string(b.shape()) + " cannot be broadcast.");
  const int32_t m = p.a.shape(-2);
  const int32_t k = p.a.shape(-1);
  const int32_t n = p.b.shape(-1);
  std::vector<array> inputs{broadcast_to(p.a, with_tail(batch, {m, k}), s),
                            broadcast_to(p.b, with_tail(batch, {k, n}), s)};
  // Each mask takes the product's batch shape over its grid of tiles; non-bool masks take the product's dtype.
  auto add_mask = [&](const array& mask, int32_t rows, int32_t cols, const char* which) {
    const Shape target = with_tail(batch, {blocks(rows, block_size), blocks(cols, block_size)});
    const std::string message = "[block_masked_mm] " + std::string(which) + " with shape " +
                                shape_string(mask.shape()) + " cannot be broadcast to the tile grid " +
                                shape_string(target) + " of block size " + std::to_string(block_size) + ".";
    if (mask.ndim() < 2 || mask.shape(-2) != target[target.size() - 2] || mask.shape(-1) != target.back()) {
      throw_invalid(message);
    }
    if (checked_broadcast(leading(mask, 2), batch, message) != batch) {
      throw_invalid(message);
    }
    inputs.push_back(broadcast_to(astype(mask, mask.dtype() == bool_ ? bool_ : p.dtype, s), target, s));
  };
  if (mask_out) {
    add_mask(*mask_out, m, n, "mask_out");
  }
  if (mask_lhs || mask_rhs) {
    // The kernel takes both operand masks or neither: a missing one keeps every tile.
    add_mask(mask_lhs.value_or(ones({blocks(m, block_size), blocks(k, block_size)}, bool_, s)), m, k, "mask_lhs");
    add_mask(mask_rhs.value_or(ones({blocks(k, block_size), blocks(n, block_size)}, bool_, s)), k, n, "mask_rhs");
  }
  auto out = make_node(BlockMaskedMM{block_size}, std::move(inputs), to_stream(s));
  return squeeze_promoted(out, p.squeeze_axes, s);
}

array gather_mm(array a, array b, std::optional<array> lhs_indices, std::optional<array> rhs_indices,
                bool sorted_indices, StreamOrDevice s) {
  if (!lhs_indices && !rhs_indices) {
    return matmul(a, b, s);
  }
  auto p = matrix_operands(a, b, "gather_mm", s);
  // Absent indices count the operand's own matrices in order.
  auto indices = [&](const std::optional<array>& given, const array& x, const char* which) {
    if (!given) {
      const Shape batch = leading(x, 2);
      return reshape(arange(0.0, static_cast<double>(shape_size(batch)), 1.0, uint32, s), batch, s);
    }
    if (!is_integer(given->dtype())) {
      throw_invalid("[gather_mm] Got " + std::string(which) + " with invalid dtype " + dtype_string(given->dtype()) +
                    ". Indices must be integral.");
    }
    return astype(*given, uint32, s);
  };
  auto lhs = indices(lhs_indices, p.a, "lhs_indices");
  auto rhs = indices(rhs_indices, p.b, "rhs_indices");
  const Shape batch = checked_broadcast(lhs.shape(), rhs.shape(),
                                        "[gather_mm] The index arrays with shapes " + shape_string(lhs.shape()) +
                                            " and " + shape_string(rhs.shape()) + " cannot be broadcast.");
  auto out = make_node(GatherMM{sorted_indices}, {p.a, p.b, broadcast_to(lhs, batch, s), broadcast_to(rhs, batch, s)},
                       to_stream(s));
  return squeeze_promoted(out, p.squeeze_axes, s);
}

array segmented_mm(array a, array b, array segments, StreamOrDevice s) {
  if (a.ndim() != 2 || b.ndim() != 2) {
    throw_invalid("[segmented_mm] Batched matmul not supported; the inputs must be matrices but have shapes " +
                  shape_string(a.shape()) + " and " + shape_string(b.shape()) + ".");
  }
  if (segments.ndim() < 1 || segments.shape(-1) != 2) {
    throw_invalid("[segmented_mm] The segments should have shape (..., 2); got shape " +
                  shape_string(segments.shape()) + ".");
  }
  if (!is_integer(segments.dtype())) {
    throw_invalid("[segmented_mm] The segments must be integers; got " + dtype_string(segments.dtype()) + ".");
  }
  auto p = matrix_operands(a, b, "segmented_mm", s);
  return make_node(SegmentedMM{}, {p.a, p.b, astype(segments, uint32, s)}, to_stream(s));
}
// NOLINTEND(performance-unnecessary-value-param)

array hadamard_transform(const array& a, std::optional<float> scale, StreamOrDevice s) {
  if (a.size() == 0) {
    throw_invalid("[hadamard_transform] Does not support empty arrays; got shape " + shape_string(a.shape()) + ".");
  }
  const int n = a.ndim() > 0 ? a.shape(-1) : 1;
  const float factor = scale.value_or(1.0F / std::sqrt(static_cast<float>(n)));
  const Dtype dtype = is_floating(a.dtype()) ? a.dtype() : float32;
  if (hadamard_order(n) == 0) {
    throw_invalid("[hadamard_transform] The last dimension must be m * 2^k with m 1, 12, 20 or 28; got shape " +
                  shape_string(a.shape()) + ".");
  }
  auto x = astype(a, dtype, s);
  if (n == 1) {
    return factor == 1.0F ? x : multiply(x, array(factor, dtype), s);
  }
  return make_node(Hadamard{factor}, {x}, to_stream(s));
}

}  // namespace nuvec
