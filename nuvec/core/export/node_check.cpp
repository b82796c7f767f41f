// check_imported_node: one check per primitive (an exhaustive visit), then the node's recorded outputs against the
// shape and dtype rules. Each check covers what the primitive's shape rule and kernel index: the input count, axes,
// the sizes and bounds of its parameters, and the operand shapes and dtypes its kernel assumes equal.

#include "nuvec/core/export/node_check.h"

#include <algorithm>
#include <string>
#include <vector>

#include "nuvec/core/error.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/output_shapes.h"

namespace nuvec::detail {

namespace {

using Inputs = std::vector<array>;

[[noreturn]] void bad(const std::string& what) { throw_invalid(what); }

std::string str(int64_t v) { return std::to_string(v); }

void arity(const Inputs& in, size_t lo, size_t hi) {
  if (in.size() < lo || in.size() > hi) {
    bad("it takes " +
        (lo == hi ? str(static_cast<int64_t>(lo))
                  : str(static_cast<int64_t>(lo)) + " to " + str(static_cast<int64_t>(hi))) +
        " inputs; the file gives " + str(static_cast<int64_t>(in.size())) + ".");
  }
}
void arity(const Inputs& in, size_t n) { arity(in, n, n); }

void axis_in(const array& a, int axis) {
  if (axis < 0 || axis >= a.ndim()) {
    bad("axis " + str(axis) + " is out of range for an input of shape " + shape_string(a.shape()) + ".");
  }
}
void axes_in(const array& a, const std::vector<int>& axes) {
  std::vector<bool> seen(static_cast<size_t>(a.ndim()), false);
  for (int axis : axes) {
    axis_in(a, axis);
    if (seen[static_cast<size_t>(axis)]) {
      bad("axis " + str(axis) + " is repeated in " + list_string(axes) + ".");
    }
    seen[static_cast<size_t>(axis)] = true;
  }
}
void sizes_of(const Shape& shape, const char* what) {
  for (int d : shape) {
    if (d < 0) {
      bad(std::string("its ") + what + " " + shape_string(shape) + " has a negative size.");
    }
  }
}
void count_is(size_t count, size_t expected, const char* what) {
  if (count != expected) {
    bad(std::string("its ") + what + " has " + str(static_cast<int64_t>(count)) + " entries for " +
        str(static_cast<int64_t>(expected)) + " axes.");
  }
}
void rank_at_least(const array& a, int rank) {
  if (a.ndim() < rank) {
    bad("it needs an input of at least " + str(rank) + " dimensions; got shape " + shape_string(a.shape()) + ".");
  }
}
void dtype_is(const array& a, Dtype dtype) {
  if (a.dtype() != dtype) {
    bad("it needs an input of " + dtype_string(dtype) + "; got " + dtype_string(a.dtype()) + ".");
  }
}
void same_dtype(const array& a, const array& b) { dtype_is(b, a.dtype()); }
void integer_input(const array& a) {
  if (!is_integer(a.dtype())) {
    bad("its indices must be integers; got " + dtype_string(a.dtype()) + ".");
  }
}
void same_shape(const array& a, const array& b) {
  if (a.shape() != b.shape()) {
    bad("its inputs of shapes " + shape_string(a.shape()) + " and " + shape_string(b.shape()) + " must be equal.");
  }
}
/// Element-wise operands: each of the output's shape, or a single element of no more axes.
void operands(const Inputs& in) {
  Shape out = in.front().shape();
  for (const auto& a : in) {
    if (a.size() != 1 || a.ndim() > static_cast<int>(out.size())) {
      out = a.shape();
    }
  }
  for (const auto& a : in) {
    if (a.shape() != out && (a.size() != 1 || a.ndim() > static_cast<int>(out.size()))) {
      bad("its operands of shapes " + shape_string(in.front().shape()) + " and " + shape_string(a.shape()) +
          " differ.");
    }
  }
}
/// The batch axes and (M, K) x (K, N) of a matrix product with equal batch shapes.
void product_operands(const array& a, const array& b) {
  rank_at_least(a, 2);
  rank_at_least(b, 2);
  if (a.ndim() != b.ndim() || !std::equal(a.shape().begin(), a.shape().end() - 2, b.shape().begin()) ||
      a.shape(-1) != b.shape(-2)) {
    bad("its operands of shapes " + shape_string(a.shape()) + " and " + shape_string(b.shape()) +
        " do not make a matrix product.");
  }
}
/// A strided window of `extent` elements per axis from `start` with `strides` lies inside `shape`.
void window_in(const Shape& shape, const Shape& start, const Shape& strides, const Shape& extent) {
  count_is(start.size(), shape.size(), "start");
  count_is(strides.size(), shape.size(), "strides");
  count_is(extent.size(), shape.size(), "extent");
  for (size_t i = 0; i < shape.size(); ++i) {
    if (extent[i] == 0) {
      continue;
    }
    const int64_t last = int64_t{start[i]} + int64_t{extent[i] - 1} * strides[i];
    if (strides[i] == 0 || start[i] < 0 || start[i] >= shape[i] || last < 0 || last >= shape[i]) {
      bad("its window on axis " + str(static_cast<int64_t>(i)) + " (start " + str(start[i]) + ", stride " +
          str(strides[i]) + ", " + str(extent[i]) + " elements) leaves the input of shape " + shape_string(shape) +
          ".");
    }
  }
}

// ---- element-wise and creation

template <class P>
  requires UnaryPrimitive<P>
void check(const P&, const Inputs& in) {
  arity(in, 1);
}
template <class P>
  requires BinaryPrimitive<P>
void check(const P&, const Inputs& in) {
  arity(in, 2);
  same_dtype(in[0], in[1]);
  operands(in);
}
void check(const Select&, const Inputs& in) {
  arity(in, 3);
  dtype_is(in[0], bool_);
  same_dtype(in[1], in[2]);
  operands(in);
}
void check(const AsType&, const Inputs& in) { arity(in, 1); }
void check(const Arange& p, const Inputs& in) {
  arity(in, 0);
  sizes_of({p.length}, "length");
}
void check(const RandomBits& p, const Inputs& in) {
  arity(in, 1);
  dtype_is(in[0], uint32);
  rank_at_least(in[0], 1);
  if (in[0].shape(-1) != 2) {
    bad("its keys must have shape (..., 2); got " + shape_string(in[0].shape()) + ".");
  }
  sizes_of(p.shape, "shape");
  if (p.width != 1 && p.width != 2 && p.width != 4 && p.width != 8) {
    bad("its width " + str(p.width) + " is not 1, 2, 4 or 8.");
  }
}

// ---- views

void check(const Broadcast& p, const Inputs& in) {
  arity(in, 1);
  sizes_of(p.shape, "shape");
  if (broadcast_shapes(in[0].shape(), p.shape) != p.shape) {
    bad("its input of shape " + shape_string(in[0].shape()) + " does not broadcast to " + shape_string(p.shape) + ".");
  }
}
void check(const Reshape& p, const Inputs& in) {
  arity(in, 1);
  sizes_of(p.shape, "shape");
  if (shape_size(p.shape) != in[0].size()) {
    bad("its shape " + shape_string(p.shape) + " does not hold the input of shape " + shape_string(in[0].shape()) +
        ".");
  }
}
void check(const Transpose& p, const Inputs& in) {
  arity(in, 1);
  count_is(p.axes.size(), static_cast<size_t>(in[0].ndim()), "axes");
  axes_in(in[0], p.axes);
}
void check(const Slice& p, const Inputs& in) {
  arity(in, 1);
  sizes_of(p.shape, "shape");
  window_in(in[0].shape(), p.start, p.strides, p.shape);
}
void check(const AsStrided& p, const Inputs& in) {
  arity(in, 1);
  sizes_of(p.shape, "shape");
  if (p.strides.size() != p.shape.size()) {
    bad("its strides " + str(static_cast<int64_t>(p.strides.size())) + " do not match its shape " +
        shape_string(p.shape) + ".");
  }
  if (shape_size(p.shape) == 0) {
    return;
  }
  // The lowest and highest elements read, from the offset.
  auto lo = static_cast<int64_t>(p.offset);
  auto hi = lo;
  for (size_t i = 0; i < p.shape.size(); ++i) {
    const int64_t reach = int64_t{p.shape[i] - 1} * p.strides[i];
    (reach < 0 ? lo : hi) += reach;
  }
  if (p.offset > in[0].size() || lo < 0 || hi >= static_cast<int64_t>(in[0].size())) {
    bad("its elements reach outside the " + str(static_cast<int64_t>(in[0].size())) + " of its input.");
  }
}
void check(const Diagonal& p, const Inputs& in) {
  arity(in, 1);
  axes_in(in[0], {p.axis1, p.axis2});
}
void check(const View& p, const Inputs& in) {
  arity(in, 1);
  const auto from = static_cast<int64_t>(size_of(in[0].dtype()));
  const auto to = static_cast<int64_t>(size_of(p.dtype));
  const int64_t bytes = in[0].ndim() == 0 ? from : int64_t{in[0].shape(-1)} * from;
  if ((in[0].ndim() == 0 && from != to) || bytes % to != 0) {
    bad("its input of shape " + shape_string(in[0].shape()) + " and " + dtype_string(in[0].dtype()) +
        " cannot be read as " + dtype_string(p.dtype) + ".");
  }
}
void check(const StopGradient&, const Inputs& in) { arity(in, 1); }
void check(const Depends&, const Inputs& in) { arity(in, 1, in.size() + 1); }
void check(const Custom&, const Inputs&) { bad("a custom function is exported as its forward pass."); }

// ---- layout, reductions, sorting and scans

void check(const Copy&, const Inputs& in) { arity(in, 1); }
void check(const Concatenate& p, const Inputs& in) {
  arity(in, 1, in.size() + 1);
  axis_in(in[0], p.axis);
  for (const auto& a : in) {
    same_dtype(in[0], a);
    Shape s = a.shape();
    Shape first = in[0].shape();
    if (s.size() != first.size()) {
      bad("its inputs of shapes " + shape_string(first) + " and " + shape_string(s) + " have different ranks.");
    }
    s[static_cast<size_t>(p.axis)] = first[static_cast<size_t>(p.axis)];
    if (s != first) {
      bad("its inputs of shapes " + shape_string(first) + " and " + shape_string(a.shape()) + " differ off the axis " +
          str(p.axis) + ".");
    }
  }
}
void check(const Pad& p, const Inputs& in) {
  arity(in, 2);
  same_dtype(in[0], in[1]);
  count_is(in[1].size(), 1, "pad value");
  axes_in(in[0], p.axes);
  count_is(p.low.size(), p.axes.size(), "low padding");
  count_is(p.high.size(), p.axes.size(), "high padding");
  sizes_of(p.low, "low padding");
  sizes_of(p.high, "high padding");
}
void check(const Reduce& p, const Inputs& in) {
  arity(in, 1);
  axes_in(in[0], p.axes);
}
void check(const ArgReduce& p, const Inputs& in) {
  arity(in, 1);
  axis_in(in[0], p.axis);
}
void check(const Softmax&, const Inputs& in) {
  arity(in, 1);
  rank_at_least(in[0], 1);
}
void check(const LogSumExp&, const Inputs& in) {
  arity(in, 1);
  rank_at_least(in[0], 1);
}
void check(const Sort& p, const Inputs& in) {
  arity(in, 1);
  axis_in(in[0], p.axis);
}
void check(const ArgSort& p, const Inputs& in) {
  arity(in, 1);
  axis_in(in[0], p.axis);
}
template <class P>
void check_partition(const P& p, const Inputs& in) {
  arity(in, 1);
  axis_in(in[0], p.axis);
  const int n = in[0].shape(p.axis);
  if (n > 0 && (p.kth < 0 || p.kth >= n)) {
    bad("its kth " + str(p.kth) + " is out of range for " + str(n) + " elements.");
  }
}
void check(const Partition& p, const Inputs& in) { check_partition(p, in); }
void check(const ArgPartition& p, const Inputs& in) { check_partition(p, in); }
void check(const SearchSorted&, const Inputs& in) {
  arity(in, 2);
  if (in[0].ndim() != 1) {
    bad("its sorted input must be 1-d; got shape " + shape_string(in[0].shape()) + ".");
  }
  same_dtype(in[0], in[1]);
}
void check(const Scan& p, const Inputs& in) {
  arity(in, 1);
  axis_in(in[0], p.axis);
}

// ---- products and quantization

void check(const Matmul&, const Inputs& in) {
  arity(in, 2);  // the operands may differ in dtype: the output is their promotion
  product_operands(in[0], in[1]);
}
void check(const AddMM&, const Inputs& in) {
  arity(in, 3);
  same_dtype(in[0], in[1]);
  same_dtype(in[0], in[2]);
  product_operands(in[0], in[1]);
}

/// The packed weight w (..., rows, words) with its scales (and biases) of one quantized product or dequantize;
/// returns w's values per row.
int64_t packed_weight(int group_size, int bits, QuantizationMode mode, const Inputs& in, bool with_biases) {
  const array& w = in[1];
  const array& scales = in[2];
  dtype_is(w, uint32);
  rank_at_least(w, 2);
  if (is_microscaled(mode)) {
    const MicroscaledLayout layout = microscaled_layout(mode);
    if (group_size != layout.group_size || bits != layout.bits) {
      bad("mode " + std::string(mode_name(mode)) + " has groups of " + str(layout.group_size) + " and " +
          str(layout.bits) + " bits; the node says " + str(group_size) + " and " + str(bits) + ".");
    }
    dtype_is(scales, uint8);
  } else if (group_size <= 0 || (bits != 2 && bits != 3 && bits != 4 && bits != 5 && bits != 6 && bits != 8)) {
    bad("its group size " + str(group_size) + " or bits " + str(bits) + " are not supported.");
  }
  if (with_biases) {
    same_shape(scales, in[3]);
  }
  const int64_t values = int64_t{w.shape(-1)} * 32 / bits;
  Shape expected = w.shape();
  expected.back() = static_cast<int>(values / group_size);
  if (values % group_size != 0 || scales.shape() != expected) {
    bad("its weight of shape " + shape_string(w.shape()) + " and scales of shape " + shape_string(scales.shape()) +
        " do not agree with groups of " + str(group_size) + " and " + str(bits) + " bits.");
  }
  return values;
}
/// x (..., K) against a packed weight (rows, words) read transposed or not.
void quantized_product(int group_size, int bits, QuantizationMode mode, bool transpose, const Inputs& in) {
  const bool biases = !is_microscaled(mode);
  const int64_t values = packed_weight(group_size, bits, mode, in, biases);
  rank_at_least(in[0], 1);
  if (!is_floating(in[0].dtype())) {
    bad("its x must be floating; got " + dtype_string(in[0].dtype()) + ".");
  }
  if (biases) {
    same_dtype(in[0], in[2]);
    same_dtype(in[0], in[3]);
  }
  const int64_t k = transpose ? values : in[1].shape(-2);
  if (in[0].shape(-1) != k) {
    bad("its x of shape " + shape_string(in[0].shape()) + " does not meet the weight of shape " +
        shape_string(in[1].shape()) + ".");
  }
}
void check(const Quantize& p, const Inputs& in) {
  const bool global = p.mode == QuantizationMode::nvfp4;
  arity(in, 1, global ? 2 : 1);
  rank_at_least(in[0], 2);
  if (!is_floating(in[0].dtype())) {
    bad("it quantizes floating values; got " + dtype_string(in[0].dtype()) + ".");
  }
  if (in.size() == 2) {
    dtype_is(in[1], float32);
    count_is(in[1].size(), 1, "global scale");
  }
  const bool valid =
      is_microscaled(p.mode)
          ? p.group_size == microscaled_layout(p.mode).group_size && p.bits == microscaled_layout(p.mode).bits
          : p.mode == QuantizationMode::affine && p.group_size > 0 && p.bits >= 2 && p.bits <= 8 && p.bits != 7;
  if (!valid || in[0].shape(-1) % p.group_size != 0 || int64_t{in[0].shape(-1)} * p.bits % 32 != 0) {
    bad("its groups of " + str(p.group_size) + " and " + str(p.bits) + " bits in mode " +
        std::string(mode_name(p.mode)) + " do not fit rows of " + str(in[0].shape(-1)) + " values.");
  }
}
void check(const Dequantize& p, const Inputs& in) {
  if (!is_floating(p.dtype)) {
    bad("its output dtype " + dtype_string(p.dtype) + " is not floating.");
  }
  if (is_block_format(p.mode)) {
    arity(in, 1);
    dtype_is(in[0], uint8);
    const BlockLayout b = block_layout(p.mode);
    if (in[0].ndim() != 2 || in[0].shape(-1) % b.bytes != 0) {
      bad("its blocks of shape " + shape_string(in[0].shape()) + " are not rows of whole blocks.");
    }
    return;
  }
  const bool microscaled = is_microscaled(p.mode);
  arity(in, microscaled ? 2 : 3, p.mode == QuantizationMode::nvfp4 ? 3 : (microscaled ? 2 : 3));
  // The product check's layout, with the weight first.
  Inputs shifted{in[0]};
  shifted.insert(shifted.end(), in.begin(), in.end());
  packed_weight(p.group_size, p.bits, p.mode, shifted, !microscaled);
  if (microscaled && in.size() == 3) {
    dtype_is(in[2], float32);
  }
}
void check(const QuantizedMatmul& p, const Inputs& in) {
  if (is_block_format(p.mode)) {
    arity(in, 2);
    dtype_is(in[1], uint8);
    const BlockLayout b = block_layout(p.mode);
    if (in[1].ndim() != 2 || in[1].shape(-1) % b.bytes != 0 || !p.transpose) {
      bad("its weight of shape " + shape_string(in[1].shape()) + " is not a matrix of whole blocks.");
    }
    rank_at_least(in[0], 1);
    if (int64_t{in[0].shape(-1)} != int64_t{in[1].shape(-1)} / b.bytes * b.values) {
      bad("its x of shape " + shape_string(in[0].shape()) + " does not meet the weight of shape " +
          shape_string(in[1].shape()) + ".");
    }
    return;
  }
  arity(in, is_microscaled(p.mode) ? 3 : 4);
  if (in[1].ndim() != 2) {
    bad("its weight must be one matrix; got shape " + shape_string(in[1].shape()) + ".");
  }
  quantized_product(p.group_size, p.bits, p.mode, p.transpose, in);
}
void check(const GatherQMM& p, const Inputs& in) {
  if (is_block_format(p.mode)) {
    bad("block formats have no gathered product.");
  }
  arity(in, is_microscaled(p.mode) ? 5 : 6);
  quantized_product(p.group_size, p.bits, p.mode, p.transpose, in);
  rank_at_least(in[0], 2);
  const array& lhs = in[in.size() - 2];
  const array& rhs = in.back();
  dtype_is(lhs, uint32);
  dtype_is(rhs, uint32);
  same_shape(lhs, rhs);
}
void check(const Fp8Cast& p, const Inputs& in) {
  arity(in, 1);
  if (p.encode ? !is_floating(in[0].dtype()) : in[0].dtype() != uint8 || !is_floating(p.dtype)) {
    bad("it converts between floating values and uint8 codes; got " + dtype_string(in[0].dtype()) + " to " +
        dtype_string(p.dtype) + ".");
  }
}

// ---- fft and convolution

void check(const FFT& p, const Inputs& in) {
  arity(in, 1);
  if (p.axes.empty()) {
    bad("it transforms no axis.");
  }
  axes_in(in[0], p.axes);
  sizes_of({p.real_length}, "real length");
}
void check(const Convolution& p, const Inputs& in) {
  arity(in, 2);
  same_dtype(in[0], in[1]);
  rank_at_least(in[0], 3);
  const auto spatial = static_cast<size_t>(in[0].ndim() - 2);
  if (in[1].ndim() != in[0].ndim()) {
    bad("its input of shape " + shape_string(in[0].shape()) + " and weight of shape " + shape_string(in[1].shape()) +
        " have different ranks.");
  }
  for (const auto* v : {&p.stride, &p.padding_lo, &p.padding_hi, &p.kernel_dilation, &p.input_dilation}) {
    count_is(v->size(), spatial, "per-axis parameters");
    sizes_of(Shape(v->begin(), v->end()), "per-axis parameters");
  }
  for (size_t i = 0; i < spatial; ++i) {
    if (p.stride[i] < 1 || p.kernel_dilation[i] < 1 || p.input_dilation[i] < 1) {
      bad("its strides and dilations must be positive.");
    }
  }
  if (p.groups < 1 || in[0].shape(-1) != in[1].shape(-1) * p.groups || in[1].shape(0) % p.groups != 0) {
    bad("its " + str(p.groups) + " groups do not split the input of shape " + shape_string(in[0].shape()) +
        " and weight of shape " + shape_string(in[1].shape()) + ".");
  }
}

// ---- fast

/// x (..., D) and optional 1-d parameters of D values.
void row_norm(const Inputs& in, size_t params) {
  rank_at_least(in[0], 1);
  for (size_t i = 1; i <= params; ++i) {
    same_dtype(in[0], in[i]);
    if (in[i].shape() != Shape{in[0].shape(-1)}) {
      bad("its parameter of shape " + shape_string(in[i].shape()) + " does not match rows of " + str(in[0].shape(-1)) +
          ".");
    }
  }
}
void check(const RMSNorm& p, const Inputs& in) {
  arity(in, p.has_weight ? 2 : 1);
  row_norm(in, in.size() - 1);
}
void check(const LayerNorm& p, const Inputs& in) {
  arity(in, 1 + static_cast<size_t>(p.has_weight) + static_cast<size_t>(p.has_bias));
  row_norm(in, in.size() - 1);
}
void check(const RoPE& p, const Inputs& in) {
  arity(in, p.has_freqs ? 3 : 2);
  rank_at_least(in[0], 2);
  if (p.dims <= 0 || p.dims % 2 != 0 || p.dims > in[0].shape(-1)) {
    bad("its " + str(p.dims) + " rotated features do not fit rows of " + str(in[0].shape(-1)) + ".");
  }
  dtype_is(in[1], int32);
  if (in[1].size() != 1 && in[1].size() != static_cast<size_t>(in[0].shape(0))) {
    bad("its offset of shape " + shape_string(in[1].shape()) + " has neither one nor a batch of elements.");
  }
  if (p.has_freqs && (in[2].dtype() != float32 || in[2].size() != static_cast<size_t>(p.dims / 2))) {
    bad("its frequencies must be " + str(p.dims / 2) + " float32 values.");
  }
}
/// q, k, v of (B, N, L, D), grouped heads; the optional mask and sinks after them.
void attention(AttentionMask mask, bool has_sinks, const Inputs& in, size_t extra) {
  arity(in, 3 + static_cast<size_t>(mask != AttentionMask::none) + static_cast<size_t>(has_sinks) + extra);
  const Shape& q = in[0].shape();
  const Shape& k = in[1].shape();
  const Shape& v = in[2].shape();
  if (q.size() != 4 || k.size() != 4 || v.size() != 4 || k[0] != q[0] || v[0] != q[0] || k[1] != v[1] || k[1] == 0 ||
      q[1] % k[1] != 0 || k[2] != v[2] || k[3] != q[3]) {
    bad("its queries, keys and values of shapes " + shape_string(q) + ", " + shape_string(k) + " and " +
        shape_string(v) + " do not make an attention.");
  }
  same_dtype(in[0], in[1]);
  same_dtype(in[0], in[2]);
  size_t next = 3;
  if (mask != AttentionMask::none) {
    const Shape expected{q[0], q[1], q[2], k[2]};
    if (in[next].shape() != expected || (mask == AttentionMask::boolean) != (in[next].dtype() == bool_)) {
      bad("its mask of shape " + shape_string(in[next].shape()) + " is not " + shape_string(expected) + ".");
    }
    ++next;
  }
  if (has_sinks && in[next].shape() != Shape{q[1]}) {
    bad("its sinks of shape " + shape_string(in[next].shape()) + " are not one per query head.");
  }
}
void check(const ScaledDotProductAttention& p, const Inputs& in) { attention(p.mask, p.has_sinks, in, 0); }
void check(const RMSNormVJP& p, const Inputs& in) {
  arity(in, p.has_weight ? 3 : 2);
  row_norm(Inputs(in.begin(), in.end() - 1), in.size() - 2);
  same_shape(in[0], in.back());
}
void check(const LayerNormVJP& p, const Inputs& in) {
  arity(in, 2 + static_cast<size_t>(p.has_weight) + static_cast<size_t>(p.has_bias));
  row_norm(Inputs(in.begin(), in.end() - 1), in.size() - 2);
  same_shape(in[0], in.back());
}
void check(const ScaledDotProductAttentionVJP& p, const Inputs& in) {
  attention(p.mask, p.has_sinks, in, 1);
  const Shape& q = in[0].shape();
  if (in.back().shape() != Shape{q[0], q[1], q[2], in[2].shape(3)}) {
    bad("its cotangent of shape " + shape_string(in.back().shape()) + " is not the attention's output's.");
  }
}
void check(const Compiled&, const Inputs&) { bad("compiled chains are exported inlined."); }

// ---- indexing

void check(const Gather& p, const Inputs& in) {
  arity(in, 1 + p.axes.size());
  axes_in(in[0], p.axes);
  count_is(p.slice_sizes.size(), static_cast<size_t>(in[0].ndim()), "slice sizes");
  for (size_t i = 0; i < p.slice_sizes.size(); ++i) {
    if (p.slice_sizes[i] < 0 || p.slice_sizes[i] > in[0].shape(static_cast<int>(i))) {
      bad("its slice sizes " + shape_string(p.slice_sizes) + " do not fit the input of shape " +
          shape_string(in[0].shape()) + ".");
    }
  }
  for (size_t i = 1; i < in.size(); ++i) {
    integer_input(in[i]);
    same_shape(in[1], in[i]);
  }
}
/// Indices along one axis, of the input's shape on the other axes (at most, for `at_most`).
void along_axis(const array& a, const array& indices, int axis, bool at_most) {
  axis_in(a, axis);
  integer_input(indices);
  bool fits = indices.ndim() == a.ndim();
  for (int d = 0; fits && d < a.ndim(); ++d) {
    fits = d == axis || indices.shape(d) == a.shape(d) || (at_most && indices.shape(d) < a.shape(d));
  }
  if (!fits) {
    bad("its indices of shape " + shape_string(indices.shape()) + " do not run along axis " + str(axis) +
        " of the input of shape " + shape_string(a.shape()) + ".");
  }
}
void check(const GatherAxis& p, const Inputs& in) {
  arity(in, 2);
  along_axis(in[0], in[1], p.axis, false);
}
void check(const Scatter& p, const Inputs& in) {
  arity(in, 2 + p.axes.size());
  axes_in(in[0], p.axes);
  const array& updates = in.back();
  same_dtype(in[0], updates);
  const Shape& indices = p.axes.empty() ? Shape{} : in[1].shape();
  for (size_t i = 1; i + 1 < in.size(); ++i) {
    integer_input(in[i]);
    same_shape(in[1], in[i]);
  }
  const Shape& u = updates.shape();
  if (u.size() != indices.size() + static_cast<size_t>(in[0].ndim()) ||
      !std::equal(indices.begin(), indices.end(), u.begin())) {
    bad("its updates of shape " + shape_string(u) + " do not follow indices of shape " + shape_string(indices) +
        " into the input of shape " + shape_string(in[0].shape()) + ".");
  }
  for (int d = 0; d < in[0].ndim(); ++d) {
    if (u[indices.size() + static_cast<size_t>(d)] > in[0].shape(d)) {
      bad("its update slices of shape " + shape_string(u) + " exceed the input of shape " +
          shape_string(in[0].shape()) + ".");
    }
  }
}
void check(const ScatterAxis& p, const Inputs& in) {
  arity(in, 3);
  along_axis(in[0], in[1], p.axis, true);
  same_shape(in[1], in[2]);
  same_dtype(in[0], in[2]);
}
void check(const MaskedScatter&, const Inputs& in) {
  arity(in, 3);
  dtype_is(in[1], bool_);
  same_shape(in[0], in[1]);
  same_dtype(in[0], in[2]);
}
void check(const SliceUpdate& p, const Inputs& in) {
  arity(in, 2);
  same_dtype(in[0], in[1]);
  if (in[1].ndim() != in[0].ndim()) {
    bad("its update of shape " + shape_string(in[1].shape()) + " and input of shape " + shape_string(in[0].shape()) +
        " have different ranks.");
  }
  window_in(in[0].shape(), p.start, p.strides, in[1].shape());
}
void check(const DynamicSlice& p, const Inputs& in) {
  arity(in, 2);
  axes_in(in[0], p.axes);
  integer_input(in[1]);
  count_is(in[1].size(), p.axes.size(), "start");
  count_is(p.slice_size.size(), static_cast<size_t>(in[0].ndim()), "slice size");
  for (size_t i = 0; i < p.slice_size.size(); ++i) {
    if (p.slice_size[i] < 0 || p.slice_size[i] > in[0].shape(static_cast<int>(i))) {
      bad("its slice size " + shape_string(p.slice_size) + " does not fit the input of shape " +
          shape_string(in[0].shape()) + ".");
    }
  }
}
void check(const DynamicSliceUpdate& p, const Inputs& in) {
  arity(in, 3);
  axes_in(in[0], p.axes);
  same_dtype(in[0], in[1]);
  integer_input(in[2]);
  count_is(in[2].size(), p.axes.size(), "start");
  if (in[1].ndim() != in[0].ndim()) {
    bad("its update of shape " + shape_string(in[1].shape()) + " and input of shape " + shape_string(in[0].shape()) +
        " have different ranks.");
  }
  for (int d = 0; d < in[0].ndim(); ++d) {
    if (in[1].shape(d) > in[0].shape(d)) {
      bad("its update of shape " + shape_string(in[1].shape()) + " exceeds the input of shape " +
          shape_string(in[0].shape()) + ".");
    }
  }
}

// ---- linear algebra

void matrices(const Inputs& in, bool square) {
  rank_at_least(in[0], 2);
  if (square && in[0].shape(-1) != in[0].shape(-2)) {
    bad("it needs square matrices; got shape " + shape_string(in[0].shape()) + ".");
  }
}
void check(const QRF&, const Inputs& in) {
  arity(in, 1);
  matrices(in, false);
}
void check(const SVD&, const Inputs& in) {
  arity(in, 1);
  matrices(in, false);
}
void check(const Inverse&, const Inputs& in) {
  arity(in, 1);
  matrices(in, true);
}
void check(const Cholesky&, const Inputs& in) {
  arity(in, 1);
  matrices(in, true);
}
void check(const LUF&, const Inputs& in) {
  arity(in, 1);
  matrices(in, false);
}
void check(const Solve&, const Inputs& in) {
  arity(in, 2);
  matrices(in, true);
  same_dtype(in[0], in[1]);
  product_operands(in[0], in[1]);
}
void check(const Eig&, const Inputs& in) {
  arity(in, 1);
  matrices(in, true);
}
void check(const Eigh&, const Inputs& in) {
  arity(in, 1);
  matrices(in, true);
}

// ---- masked, gathered and segmented products, Hadamard, distributed

void check(const BlockMaskedMM& p, const Inputs& in) {
  arity(in, 2, 5);
  if (p.block_size < 1) {
    bad("its block size " + str(p.block_size) + " is not positive.");
  }
  product_operands(in[0], in[1]);
  const auto tiles = [&](int n) { return (n + p.block_size - 1) / p.block_size; };
  const int tm = tiles(in[0].shape(-2));
  const int tk = tiles(in[0].shape(-1));
  const int tn = tiles(in[1].shape(-1));
  // The output mask (three or five inputs), then the operands' masks (four or five).
  std::vector<std::pair<int, int>> expected;
  if (in.size() == 3 || in.size() == 5) {
    expected.emplace_back(tm, tn);
  }
  if (in.size() >= 4) {
    expected.emplace_back(tm, tk);
    expected.emplace_back(tk, tn);
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const array& mask = in[2 + i];
    rank_at_least(mask, 2);
    if (mask.shape(-2) != expected[i].first || mask.shape(-1) != expected[i].second) {
      bad("its mask of shape " + shape_string(mask.shape()) + " does not tile the operands by " + str(p.block_size) +
          ".");
    }
  }
}
void check(const GatherMM&, const Inputs& in) {
  arity(in, 4);
  same_dtype(in[0], in[1]);
  rank_at_least(in[0], 2);
  rank_at_least(in[1], 2);
  if (in[0].shape(-1) != in[1].shape(-2)) {
    bad("its operands of shapes " + shape_string(in[0].shape()) + " and " + shape_string(in[1].shape()) +
        " do not make matrix products.");
  }
  dtype_is(in[2], uint32);
  dtype_is(in[3], uint32);
  same_shape(in[2], in[3]);
}
void check(const SegmentedMM&, const Inputs& in) {
  arity(in, 3);
  same_dtype(in[0], in[1]);
  if (in[0].ndim() != 2 || in[1].ndim() != 2 || in[0].shape(1) != in[1].shape(0)) {
    bad("its operands of shapes " + shape_string(in[0].shape()) + " and " + shape_string(in[1].shape()) +
        " are not (M, K) and (K, N).");
  }
  dtype_is(in[2], uint32);
  rank_at_least(in[2], 1);
  if (in[2].shape(-1) != 2) {
    bad("its segments of shape " + shape_string(in[2].shape()) + " are not (..., 2).");
  }
}
void check(const Hadamard&, const Inputs& in) {
  arity(in, 1);
  rank_at_least(in[0], 1);
  int n = in[0].shape(-1);
  for (int m : {12, 20, 28}) {
    if (n % m == 0) {
      n /= m;
      break;
    }
  }
  if (n < 1 || (n & (n - 1)) != 0) {
    bad("its rows of " + str(in[0].shape(-1)) + " values are not m * 2^k with m 1, 12, 20 or 28.");
  }
}
void check(const Collective&, const Inputs&) { bad("collectives cannot be exported."); }

/// The input arrays a node reads: placeholders of the recorded shapes and dtypes (never evaluated).
Inputs placeholders(const Graph& g, const GraphNode& n) {
  Inputs in;
  for (int v : n.args) {
    const GraphValue& value = g.values[static_cast<size_t>(v)];
    in.push_back(zeros(value.shape, value.dtype));
  }
  return in;
}

}  // namespace

void check_imported_node(const Graph& g, const GraphNode& n, size_t index) {
  const std::string_view name = std::visit([](const auto& p) { return p.name; }, n.primitive);
  try {
    const Inputs in = placeholders(g, n);
    std::visit([&](const auto& p) { check(p, in); }, n.primitive);
    const auto shapes = output_shapes(n.primitive, in);
    const auto dtypes = output_dtypes(n.primitive, in);
    // Depends's outputs are its first inputs; every other node records all of its outputs.
    const bool prefix = std::holds_alternative<Depends>(n.primitive);
    if (n.outs.size() > shapes.size() || (!prefix && n.outs.size() != shapes.size())) {
      bad("it has " + str(static_cast<int64_t>(shapes.size())) + " outputs; the file records " +
          str(static_cast<int64_t>(n.outs.size())) + ".");
    }
    for (size_t i = 0; i < n.outs.size(); ++i) {
      const GraphValue& value = g.values[static_cast<size_t>(n.outs[i])];
      // RandomBits's rule gives one key's run; mapped keys (vmap) put one run per key in front of it.
      const bool shape_ok = std::holds_alternative<RandomBits>(n.primitive)
                                ? shape_size(value.shape) == shape_size(shapes[i]) * (in[0].size() / 2)
                                : value.shape == shapes[i];
      if (!shape_ok || value.dtype != dtypes[i]) {
        bad("its inputs give an output of shape " + shape_string(shapes[i]) + " and " + dtype_string(dtypes[i]) +
            "; the file records " + shape_string(value.shape) + " and " + dtype_string(value.dtype) + ".");
      }
    }
  } catch (const std::exception& e) {
    throw_invalid(std::string("[import_function] Node ")
                      .append(std::to_string(index))
                      .append(" (")
                      .append(name)
                      .append(") does not fit its inputs: ")
                      .append(e.what()));
  }
}

}  // namespace nuvec::detail
