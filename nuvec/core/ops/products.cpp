// Matrix products: matmul and addmm build the Matmul / AddMM primitives (after numpy's 1-d
// promotion, dtype promotion and batch broadcasting); inner, outer and tensordot are
// compositions of reshape, transpose and matmul.

#include <limits>
#include <numeric>

#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/output_shapes.h"

namespace nuvec {

using nuvec::detail::op_prefix;

namespace {

/// The operands of a matrix product: (..., M, K) and (..., K, N) with one batch shape.
struct Operands {
  array a;
  array b;
  Shape out_shape;    // (batch..., M, N)
  Shape final_shape;  // out_shape without the axes added for 1-d operands
};

/// A float16 or bfloat16 operand of a float32 product, which matmul's kernel reads as it is (a half-precision weight
/// times float32 activations, without a widened copy of the weight each call).
bool kept_half(const array& x, Dtype dtype) {
  return dtype == float32 && (x.dtype() == float16 || x.dtype() == bfloat16);
}

/// The operands of a matrix product, promoted to (..., M, K) and (..., K, N) with one batch shape; with `keep_half`
/// (matmul), half-precision operands of a float32 product keep their dtype.
Operands prepare(const array& in_a, const array& in_b, Dtype dtype, const char* op, StreamOrDevice s,
                 bool keep_half = false) {
  auto cast = [&](const array& x) { return keep_half && kept_half(x, dtype) ? x : astype(x, dtype, s); };
  if (in_a.ndim() == 0 || in_b.ndim() == 0) {
    throw_invalid(op_prefix(op) + "Got 0 dimension input. Inputs must have at least one dimension.");
  }
  // numpy's 1-d rules: a vector on the left is a row, on the right a column; those axes go again at the end.
  auto a = in_a.ndim() == 1 ? reshape(in_a, {1, in_a.shape(0)}, s) : in_a;
  auto b = in_b.ndim() == 1 ? reshape(in_b, {in_b.shape(0), 1}, s) : in_b;
  if (a.shape(-1) != b.shape(-2)) {
    throw_invalid(op_prefix(op) + "Last dimension of first input with shape " + shape_string(a.shape()) +
                  " must match second to last dimension of second input with shape " + shape_string(b.shape()) + ".");
  }
  Shape a_batch(a.shape().begin(), a.shape().end() - 2);
  Shape b_batch(b.shape().begin(), b.shape().end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes(a_batch, b_batch);
  } catch (const error&) {
    throw_invalid(op_prefix(op) + "The batch dimensions of the inputs with shapes " + shape_string(in_a.shape()) +
                  " and " + shape_string(in_b.shape()) + " cannot be broadcast.");
  }
  const int32_t m = a.shape(-2);
  const int32_t k = a.shape(-1);
  const int32_t n = b.shape(-1);
  auto with = [&](std::initializer_list<int32_t> last) {
    Shape shape = batch;
    shape.insert(shape.end(), last);
    return shape;
  };
  Shape final_shape = batch;
  if (in_a.ndim() > 1) {
    final_shape.push_back(m);
  }
  if (in_b.ndim() > 1) {
    final_shape.push_back(n);
  }
  const auto rows = static_cast<int64_t>(shape_size(batch)) * m;
  if (b.ndim() == 2 && !batch.empty() && rows <= std::numeric_limits<int32_t>::max()) {
    // (..., M, K) @ (K, N), a linear layer over a batch: one (... * M, K) @ (K, N) product. Its vjp is then one
    // GEMM for b's gradient too, instead of a product per batch element summed afterwards.
    const auto folded = static_cast<int32_t>(rows);
    return {reshape(cast(a), {folded, k}, s), cast(b), {folded, n}, std::move(final_shape)};
  }
  a = broadcast_to(cast(a), with({m, k}), s);
  b = broadcast_to(cast(b), with({k, n}), s);
  return {std::move(a), std::move(b), with({m, n}), std::move(final_shape)};
}

}  // namespace

array matmul(const array& a, const array& b, StreamOrDevice s) {
  auto dtype = promote_types(a.dtype(), b.dtype());
  auto p = prepare(a, b, dtype, "matmul", s, true);
  auto out = detail::make_node(Matmul{}, {p.a, p.b}, to_stream(s));
  return reshape(out, p.final_shape, s);
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): MLX's signature
array addmm(array c, array a, array b, const float& alpha, const float& beta, StreamOrDevice s) {
  auto dtype = promote_types(promote_types(a.dtype(), b.dtype()), c.dtype());
  if (!is_inexact(dtype)) {
    throw_invalid("[addmm] Only floating point and complex types are supported but " +
                  std::string(dtype_name(c.dtype())) + ", " + std::string(dtype_name(a.dtype())) + " and " +
                  std::string(dtype_name(b.dtype())) + " were provided which results in " +
                  std::string(dtype_name(dtype)) + ".");
  }
  auto p = prepare(a, b, dtype, "addmm", s);
  // c broadcasts against the result as the user sees it (1-d axes removed), then takes the
  // primitive's full shape.
  Shape final_shape;
  try {
    final_shape = broadcast_shapes(c.shape(), p.final_shape);
  } catch (const error&) {
    final_shape.clear();
  }
  if (final_shape != p.final_shape) {
    throw_invalid("[addmm] The input c with shape " + shape_string(c.shape()) +
                  " cannot be broadcast to the shape of the product " + shape_string(p.final_shape) + ".");
  }
  auto acc = reshape(broadcast_to(astype(c, dtype, s), p.final_shape, s), p.out_shape, s);
  auto out = detail::make_node(AddMM{alpha, beta}, {p.a, p.b, acc}, to_stream(s));
  return reshape(out, p.final_shape, s);
}

array inner(const array& a, const array& b, StreamOrDevice s) {
  if (a.ndim() == 0 || b.ndim() == 0) {
    // A scalar scales the other operand: a product with K = 1.
    const auto& scalar = a.ndim() == 0 ? a : b;
    const auto& other = a.ndim() == 0 ? b : a;
    auto flat = reshape(other, {1, static_cast<int32_t>(other.size())}, s);
    auto one = reshape(scalar, {1, 1}, s);
    auto out = a.ndim() == 0 ? matmul(one, flat, s) : matmul(transpose(flat, s), one, s);
    return reshape(out, other.shape(), s);
  }
  if (a.shape(-1) != b.shape(-1)) {
    throw_invalid("[inner] Last dimension of first input with shape " + shape_string(a.shape()) +
                  " must match last dimension of second input with shape " + shape_string(b.shape()) + ".");
  }
  return tensordot(a, b, {-1}, {-1}, s);
}

array outer(const array& a, const array& b, StreamOrDevice s) {
  auto column = reshape(a, {static_cast<int32_t>(a.size()), 1}, s);
  auto row = reshape(b, {1, static_cast<int32_t>(b.size())}, s);
  return matmul(column, row, s);
}

array tensordot(const array& a, const array& b, int axis, StreamOrDevice s) {
  if (axis < 0) {
    throw_invalid("[tensordot] axis must be greater or equal to 0; got " + std::to_string(axis) + ".");
  }
  if (axis > std::min(a.ndim(), b.ndim())) {
    throw_invalid("[tensordot] axis must be less than the number of dimensions of a and b; got " +
                  std::to_string(axis) + " for shapes " + shape_string(a.shape()) + " and " + shape_string(b.shape()) +
                  ".");
  }
  // The last `axis` axes of a against the first `axis` axes of b.
  std::vector<int> axes_a(axis);
  std::vector<int> axes_b(axis);
  std::iota(axes_a.begin(), axes_a.end(), a.ndim() - axis);
  std::iota(axes_b.begin(), axes_b.end(), 0);
  return tensordot(a, b, axes_a, axes_b, s);
}

array tensordot(const array& a, const array& b, const std::vector<int>& axes_a, const std::vector<int>& axes_b,
                StreamOrDevice s) {
  if (axes_a.size() != axes_b.size()) {
    throw_invalid("[tensordot] axes must have the same size; got " + std::to_string(axes_a.size()) + " and " +
                  std::to_string(axes_b.size()) + ".");
  }
  // Normalized, in the caller's pairing order; normalize_axes rejects repeats.
  std::vector<int> ca;
  std::vector<int> cb;
  for (size_t i = 0; i < axes_a.size(); ++i) {
    ca.push_back(normalize_axis(axes_a[i], a.ndim(), "tensordot"));
    cb.push_back(normalize_axis(axes_b[i], b.ndim(), "tensordot"));
  }
  normalize_axes(ca, a.ndim(), "tensordot");
  normalize_axes(cb, b.ndim(), "tensordot");
  int64_t contracted = 1;
  for (size_t i = 0; i < ca.size(); ++i) {
    if (a.shape(ca[i]) != b.shape(cb[i])) {
      throw_invalid("[tensordot] a and b must have the same shape on the contracted axes; got axis " +
                    std::to_string(axes_a[i]) + " of " + shape_string(a.shape()) + " and axis " +
                    std::to_string(axes_b[i]) + " of " + shape_string(b.shape()) + ".");
    }
    contracted *= a.shape(ca[i]);
  }
  auto free_axes = [](const array& x, const std::vector<int>& contracted_axes, Shape& out_shape) {
    std::vector<bool> is_contracted(x.ndim(), false);
    for (int axis : contracted_axes) {
      is_contracted[axis] = true;
    }
    std::vector<int> free;
    int64_t size = 1;
    for (int i = 0; i < x.ndim(); ++i) {
      if (!is_contracted[i]) {
        free.push_back(i);
        size *= x.shape(i);
        out_shape.push_back(x.shape(i));
      }
    }
    return std::pair{free, size};
  };
  Shape out_shape;
  auto [free_a, size_a] = free_axes(a, ca, out_shape);
  auto [free_b, size_b] = free_axes(b, cb, out_shape);
  auto concat = [](std::vector<int> x, const std::vector<int>& y) {
    x.insert(x.end(), y.begin(), y.end());
    return x;
  };
  auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  // Each operand becomes a matrix by a transpose and a reshape. When its contracted axes already
  // sit on the other side (a's first, b's last), the reshape is taken in memory order and the
  // matrix transposed afterwards: a view the GEMM reads through its transpose flag, not a copy.
  auto identity = [](const std::vector<int>& order) {
    for (size_t i = 0; i < order.size(); ++i) {
      if (order[i] != static_cast<int>(i)) {
        return false;
      }
    }
    return true;
  };
  array x = identity(concat(ca, free_a))
                ? transpose(reshape(a, {i32(contracted), i32(size_a)}, s), s)
                : reshape(transpose(a, concat(free_a, ca), s), {i32(size_a), i32(contracted)}, s);
  array y = identity(concat(free_b, cb))
                ? transpose(reshape(b, {i32(size_b), i32(contracted)}, s), s)
                : reshape(transpose(b, concat(cb, free_b), s), {i32(contracted), i32(size_b)}, s);
  return reshape(matmul(x, y, s), out_shape, s);
}

}  // namespace nuvec
