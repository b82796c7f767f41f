// One output-shape rule per primitive, and the visits of both rules (the dtype rules are output_dtype_rules.h). A
// shape rule reads its inputs' shapes and the primitive's parameters; a primitive whose output shape is one of its
// parameters has a rule of the parameters alone (shapes_of(p), no inputs), which is how shape_is_parameter tells
// them apart.

#include "nuvec/core/output_shapes.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "nuvec/core/communicator.h"
#include "nuvec/core/fused.h"
#include "nuvec/core/output_dtype_rules.h"
#include "nuvec/core/output_list.h"

namespace nuvec::detail {

namespace {

using Shapes = OutputList<Shape>;
using Inputs = std::vector<array>;

/// The inputs' broadcast shape. Every op call goes through here, so an input that cannot change the shape (the same
/// shape, or one element of no more axes: the scalar operands of elementwise.cpp) is passed over without a new Shape.
Shape broadcast_all(const Inputs& in) {
  if (in.empty()) {
    return {};
  }
  Shape s = in[0].shape();
  for (size_t i = 1; i < in.size(); ++i) {
    const array& a = in[i];
    if (a.shape() != s && (a.size() != 1 || a.ndim() > static_cast<int>(s.size()))) {
      s = broadcast_shapes(s, a.shape());
    }
  }
  return s;
}

/// `shape` without its last `drop` axes, then `tail`.
Shape with_tail(const Shape& shape, size_t drop, std::initializer_list<int> tail) {
  Shape s(shape.begin(), shape.end() - static_cast<std::ptrdiff_t>(drop));
  s.insert(s.end(), tail);
  return s;
}

/// A matrix product's output: the broadcast batch axes of a (..., M, K) and b (..., K, N), then (M, N).
Shape matrix_product(const Shape& a, const Shape& b) {
  const Shape batch =
      broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  return with_tail(batch, 0, {a[a.size() - 2], b.back()});
}

Shape same_as_first(const Inputs& in) { return in[0].shape(); }

Shape with_axis(Shape s, int axis, int size) {
  s[static_cast<size_t>(axis)] = size;
  return s;
}

// ---- element-wise, creation and views

template <class P>
  requires UnaryPrimitive<P> || BinaryPrimitive<P>
Shapes shapes_of(const P&, const Inputs& in) {
  return {broadcast_all(in)};
}
Shapes shapes_of(const Select&, const Inputs& in) { return {broadcast_all(in)}; }
Shapes shapes_of(const AsType&, const Inputs& in) { return {same_as_first(in)}; }
Shapes shapes_of(const Arange& p) { return {Shape{p.length}}; }
Shapes shapes_of(const RandomBits& p) { return {p.shape}; }
Shapes shapes_of(const Broadcast& p) { return {p.shape}; }
Shapes shapes_of(const Reshape& p) { return {p.shape}; }
Shapes shapes_of(const Transpose& p, const Inputs& in) {
  Shape s;
  for (int a : p.axes) {
    s.push_back(in[0].shape(a));
  }
  return {s};
}
Shapes shapes_of(const Slice& p) { return {p.shape}; }
Shapes shapes_of(const AsStrided& p) { return {p.shape}; }
Shapes shapes_of(const Diagonal& p, const Inputs& in) {
  const Shape& x = in[0].shape();
  const int n1 = x[static_cast<size_t>(p.axis1)];
  const int n2 = x[static_cast<size_t>(p.axis2)];
  const int length = std::max(0, p.offset >= 0 ? std::min(n1, n2 - p.offset) : std::min(n1 + p.offset, n2));
  Shape s;
  for (int i = 0; i < static_cast<int>(x.size()); ++i) {
    if (i != p.axis1 && i != p.axis2) {
      s.push_back(x[static_cast<size_t>(i)]);
    }
  }
  s.push_back(length);
  return {s};
}
/// The last axis holds as many bytes as before.
Shapes shapes_of(const View& p, const Inputs& in) {
  Shape s = in[0].shape();
  if (!s.empty()) {
    s.back() = static_cast<int>(static_cast<int64_t>(s.back()) * static_cast<int64_t>(size_of(in[0].dtype())) /
                                static_cast<int64_t>(size_of(p.dtype)));
  }
  return {s};
}
Shapes shapes_of(const StopGradient&, const Inputs& in) { return {same_as_first(in)}; }
Shapes shapes_of(const Depends&, const Inputs& in) {
  Shapes s;
  for (const auto& a : in) {
    s.push_back(a.shape());
  }
  return s;
}
Shapes shapes_of(const Custom& p, const Inputs& in) {
  Shapes s;
  for (int i = 0; i < p.num_outputs; ++i) {
    s.push_back(in[static_cast<size_t>(i)].shape());
  }
  return s;
}

// ---- layout and reductions

Shapes shapes_of(const Copy&, const Inputs& in) { return {same_as_first(in)}; }
Shapes shapes_of(const Concatenate& p, const Inputs& in) {
  Shape s = in[0].shape();
  int total = 0;
  for (const auto& a : in) {
    total += a.shape(p.axis);
  }
  return {with_axis(s, p.axis, total)};
}
Shapes shapes_of(const Pad& p, const Inputs& in) {
  Shape s = in[0].shape();
  for (size_t i = 0; i < p.axes.size(); ++i) {
    s[static_cast<size_t>(p.axes[i])] += p.low[i] + p.high[i];
  }
  return {s};
}
Shapes shapes_of(const Reduce& p, const Inputs& in) {
  Shape s = in[0].shape();
  for (int a : p.axes) {
    s[static_cast<size_t>(a)] = 1;
  }
  return {s};
}
Shapes shapes_of(const ArgReduce& p, const Inputs& in) { return {with_axis(in[0].shape(), p.axis, 1)}; }
Shapes shapes_of(const Softmax&, const Inputs& in) { return {same_as_first(in)}; }
Shapes shapes_of(const LogSumExp&, const Inputs& in) { return {with_axis(in[0].shape(), in[0].ndim() - 1, 1)}; }
Shapes shapes_of(const Sort&, const Inputs& in) { return {same_as_first(in)}; }
Shapes shapes_of(const ArgSort&, const Inputs& in) { return {same_as_first(in)}; }
Shapes shapes_of(const Partition&, const Inputs& in) { return {same_as_first(in)}; }
Shapes shapes_of(const ArgPartition&, const Inputs& in) { return {same_as_first(in)}; }
/// One insertion point per value searched for.
Shapes shapes_of(const SearchSorted&, const Inputs& in) { return {in[1].shape()}; }
Shapes shapes_of(const Scan&, const Inputs& in) { return {same_as_first(in)}; }

// ---- products, quantization, fft, convolution

Shapes shapes_of(const Matmul&, const Inputs& in) { return {matrix_product(in[0].shape(), in[1].shape())}; }
Shapes shapes_of(const AddMM&, const Inputs& in) {
  return {broadcast_shapes(matrix_product(in[0].shape(), in[1].shape()), in[2].shape())};
}
/// Codes packed into 32-bit words, one scale (and bias, for affine) per group.
Shapes shapes_of(const Quantize& p, const Inputs& in) {
  const Shape& w = in[0].shape();
  Shape packed = w;
  packed.back() = static_cast<int>(static_cast<int64_t>(w.back()) * p.bits / 32);
  Shape groups = w;
  groups.back() = w.back() / p.group_size;
  if (is_microscaled(p.mode)) {
    return {packed, groups};
  }
  return {packed, groups, groups};
}
Shapes shapes_of(const Dequantize& p, const Inputs& in) {
  Shape s = in[0].shape();
  if (is_block_format(p.mode)) {
    const BlockLayout b = block_layout(p.mode);
    s.back() = s.back() / b.bytes * b.values;
  } else {
    s.back() = static_cast<int>(static_cast<int64_t>(s.back()) * 32 / p.bits);
  }
  return {s};
}
/// x (..., K) times one matrix: (..., N), N the rows of a transposed weight, else its unpacked columns.
Shapes shapes_of(const QuantizedMatmul& p, const Inputs& in) {
  const Shape& w = in[1].shape();
  const int n = p.transpose ? w[w.size() - 2] : static_cast<int>(static_cast<int64_t>(w.back()) * 32 / p.bits);
  Shape s = in[0].shape();
  s.back() = n;
  return {s};
}
/// The indices' (broadcast) shape (the last two inputs), then x's rows and the weight's outputs.
Shapes shapes_of(const GatherQMM& p, const Inputs& in) {
  const Shape& w = in[1].shape();
  const int n = p.transpose ? w[w.size() - 2] : static_cast<int>(static_cast<int64_t>(w.back()) * 32 / p.bits);
  const Shape& x = in[0].shape();
  return {with_tail(broadcast_shapes(in[in.size() - 2].shape(), in.back().shape()), 0, {x[x.size() - 2], n})};
}
Shapes shapes_of(const Fp8Cast&, const Inputs& in) { return {same_as_first(in)}; }
/// A real forward transform keeps n / 2 + 1 frequencies; the inverse gives back its real_length.
Shapes shapes_of(const FFT& p, const Inputs& in) {
  Shape s = in[0].shape();
  if (p.real) {
    int& last = s[static_cast<size_t>(p.axes.back())];
    last = p.inverse ? p.real_length : last / 2 + 1;
  }
  return {s};
}
/// (N, spatial..., C_out); each spatial size from the dilated, padded input and the dilated kernel.
Shapes shapes_of(const Convolution& p, const Inputs& in) {
  const Shape& x = in[0].shape();
  const Shape& w = in[1].shape();
  Shape s(x.size());
  s.front() = x.front();
  s.back() = w.front();
  for (size_t i = 0; i < p.stride.size(); ++i) {
    const int64_t size = x[i + 1];
    const int64_t dilated = size == 0 ? 0 : (size - 1) * p.input_dilation[i] + 1;
    const int64_t kernel = static_cast<int64_t>(w[i + 1] - 1) * p.kernel_dilation[i] + 1;
    s[i + 1] = static_cast<int>((dilated + p.padding_lo[i] + p.padding_hi[i] - kernel) / p.stride[i] + 1);
  }
  return {s};
}

// ---- fast

Shapes shapes_of(const RMSNorm&, const Inputs& in) { return {same_as_first(in)}; }
Shapes shapes_of(const LayerNorm&, const Inputs& in) { return {same_as_first(in)}; }
Shapes shapes_of(const RoPE&, const Inputs& in) { return {same_as_first(in)}; }
/// (B, N_q, L_q, D_v).
Shapes shapes_of(const ScaledDotProductAttention&, const Inputs& in) {
  const Shape& q = in[0].shape();
  return {Shape{q[0], q[1], q[2], in[2].shape(3)}};
}
/// dx, then dweight for a weight.
Shapes shapes_of(const RMSNormVJP& p, const Inputs& in) {
  Shapes s{in[0].shape()};
  if (p.has_weight) {
    s.push_back(in[1].shape());
  }
  return s;
}
/// dx, then dweight and dbias for those given.
Shapes shapes_of(const LayerNormVJP& p, const Inputs& in) {
  Shapes s{in[0].shape()};
  size_t next = 1;
  if (p.has_weight) {
    s.push_back(in[next++].shape());
  }
  if (p.has_bias) {
    s.push_back(in[next].shape());
  }
  return s;
}
/// dq, dk, dv, then dsinks for sinks (the input after the mask).
Shapes shapes_of(const ScaledDotProductAttentionVJP& p, const Inputs& in) {
  Shapes s{in[0].shape(), in[1].shape(), in[2].shape()};
  if (p.has_sinks) {
    s.push_back(in[p.mask == AttentionMask::none ? 3 : 4].shape());
  }
  return s;
}
/// Row values (reductions over the last axis) keep the row shape.
Shapes shapes_of(const Compiled& p, const Inputs& in) {
  const Shape s = broadcast_all(in);
  Shapes out;
  for (int o : p.kernel->outputs) {
    out.push_back(p.kernel->row_values[static_cast<size_t>(o)] ? row_shape(s) : s);
  }
  return out;
}

// ---- indexing

/// The indices' shape, then the slice.
Shapes shapes_of(const Gather& p, const Inputs& in) {
  Shape s = p.axes.empty() ? Shape{} : in[1].shape();
  s.insert(s.end(), p.slice_sizes.begin(), p.slice_sizes.end());
  return {s};
}
Shapes shapes_of(const GatherAxis&, const Inputs& in) { return {in[1].shape()}; }
Shapes shapes_of(const Scatter&, const Inputs& in) { return {same_as_first(in)}; }
Shapes shapes_of(const ScatterAxis&, const Inputs& in) { return {same_as_first(in)}; }
Shapes shapes_of(const MaskedScatter&, const Inputs& in) { return {same_as_first(in)}; }
Shapes shapes_of(const SliceUpdate&, const Inputs& in) { return {same_as_first(in)}; }
Shapes shapes_of(const DynamicSlice& p) { return {p.slice_size}; }
Shapes shapes_of(const DynamicSliceUpdate&, const Inputs& in) { return {same_as_first(in)}; }

// ---- linear algebra: matrices in the last two axes

Shapes shapes_of(const QRF&, const Inputs& in) {
  const Shape& a = in[0].shape();
  const int m = a[a.size() - 2];
  const int n = a.back();
  const int k = std::min(m, n);
  return {with_tail(a, 2, {m, k}), with_tail(a, 2, {k, n})};
}
Shapes shapes_of(const SVD& p, const Inputs& in) {
  const Shape& a = in[0].shape();
  const int m = a[a.size() - 2];
  const int n = a.back();
  Shape values = with_tail(a, 2, {std::min(m, n)});
  if (!p.compute_uv) {
    return {values};
  }
  return {with_tail(a, 2, {m, m}), values, with_tail(a, 2, {n, n})};
}
Shapes shapes_of(const Inverse&, const Inputs& in) { return {same_as_first(in)}; }
Shapes shapes_of(const Cholesky&, const Inputs& in) { return {same_as_first(in)}; }
/// LU, the row swaps (..., K) and the permutation (..., M).
Shapes shapes_of(const LUF&, const Inputs& in) {
  const Shape& a = in[0].shape();
  const int m = a[a.size() - 2];
  return {a, with_tail(a, 2, {std::min(m, a.back())}), with_tail(a, 2, {m})};
}
Shapes shapes_of(const Solve&, const Inputs& in) { return {in[1].shape()}; }
Shapes shapes_of(const Eig& p, const Inputs& in) {
  const Shape& a = in[0].shape();
  Shapes s{with_tail(a, 1, {})};
  if (p.compute_vectors) {
    s.push_back(a);
  }
  return s;
}
Shapes shapes_of(const Eigh& p, const Inputs& in) {
  const Shape& a = in[0].shape();
  Shapes s{with_tail(a, 1, {})};
  if (p.compute_vectors) {
    s.push_back(a);
  }
  return s;
}

// ---- masked, gathered and segmented products, Hadamard

Shapes shapes_of(const BlockMaskedMM&, const Inputs& in) { return {matrix_product(in[0].shape(), in[1].shape())}; }
/// The indices' shape, then (M, N).
Shapes shapes_of(const GatherMM&, const Inputs& in) {
  const Shape& a = in[0].shape();
  const Shape& b = in[1].shape();
  return {with_tail(broadcast_shapes(in[2].shape(), in[3].shape()), 0, {a[a.size() - 2], b.back()})};
}
/// One (M, N) product per segment.
Shapes shapes_of(const SegmentedMM&, const Inputs& in) {
  return {with_tail(in[2].shape(), 1, {in[0].shape(0), in[1].shape(1)})};
}
Shapes shapes_of(const Hadamard&, const Inputs& in) { return {same_as_first(in)}; }

// ---- distributed
/// all_gather stacks the ranks' arrays along axis 0 and sum_scatter splits axis 0 among them.
Shapes shapes_of(const Collective& p, const Inputs& in) {
  switch (p.kind) {
    case CollectiveKind::all_sum:
    case CollectiveKind::all_max:
    case CollectiveKind::all_min:
    case CollectiveKind::send:
      return {same_as_first(in)};
    case CollectiveKind::all_gather:
      return {with_axis(in[0].shape(), 0, in[0].shape(0) * p.group->size())};
    case CollectiveKind::sum_scatter:
      return {with_axis(in[0].shape(), 0, in[0].shape(0) / p.group->size())};
    case CollectiveKind::recv:
      break;
  }
  return {p.recv_shape};
}

/// A primitive whose shape is a parameter has a rule of the parameters alone.
template <class P>
concept ShapeIsParameter = requires(const P& p) {
  shapes_of(p);
};

template <class P>
Shapes shape_rule_of(const P& p, const Inputs& inputs) {
  if constexpr (ShapeIsParameter<P>) {
    return shapes_of(p);
  } else {
    return shapes_of(p, inputs);
  }
}

}  // namespace

Shapes shape_rule(const Primitive& p, const Inputs& inputs) {
  return std::visit([&](const auto& prim) { return shape_rule_of(prim, inputs); }, p);
}

OutputList<Dtype> dtype_rule(const Primitive& p, const Inputs& inputs) {
  return std::visit([&](const auto& prim) { return dtype_rules::dtypes_of(prim, inputs); }, p);
}

std::vector<Shape> output_shapes(const Primitive& p, const std::vector<array>& inputs) {
  return shape_rule(p, inputs).to_vector();
}

std::vector<Dtype> output_dtypes(const Primitive& p, const std::vector<array>& inputs) {
  return dtype_rule(p, inputs).to_vector();
}

bool shape_is_parameter(const Primitive& p) {
  return std::visit([]<class P>(const P&) { return ShapeIsParameter<P>; }, p);
}

// Every op call builds its node here: one visit gives both rules, and the primitive moves once, into the node.
array make_node(Primitive&& p, std::vector<array> inputs, Stream stream) {
  auto [shape, dtype] = std::visit(
      [&](const auto& prim) {
        return std::pair{std::move(shape_rule_of(prim, inputs).front()), dtype_rules::dtypes_of(prim, inputs).front()};
      },
      p);
  return {std::move(shape), dtype, std::move(p), std::move(inputs), stream};
}

std::vector<array> make_nodes(Primitive&& p, std::vector<array> inputs, Stream stream) {
  auto shapes = shape_rule(p, inputs).to_vector();
  const auto dtypes = dtype_rule(p, inputs).to_vector();
  return array::make_arrays(std::move(shapes), dtypes, std::move(p), std::move(inputs), stream);
}

}  // namespace nuvec::detail
