#pragma once

// One output-dtype rule per primitive, `dtypes_of(p, inputs)`. The ops convert inputs to the dtype a primitive
// computes in before building it, so most rules read their first input; the rest read a parameter or name a fixed
// dtype. Included only by output_shapes.cpp, whose one visit asks a primitive for its shapes and dtypes together.

#include <vector>

#include "nuvec/core/communicator.h"
#include "nuvec/core/fused.h"
#include "nuvec/core/output_list.h"

namespace nuvec::detail::dtype_rules {

using Dtypes = OutputList<Dtype>;
using Inputs = std::vector<array>;

inline Dtypes first(const Inputs& in) { return {in[0].dtype()}; }
/// Complex values give their real parts' dtype.
inline Dtype real_of(Dtype t) { return t == complex64 ? float32 : t; }
inline Dtypes each_input(const Inputs& in, size_t count) {
  Dtypes d;
  for (size_t i = 0; i < count; ++i) {
    d.push_back(in[i].dtype());
  }
  return d;
}

// ---- element-wise: the inputs' (common) dtype, except the ones below

template <class P>
  requires UnaryPrimitive<P> || BinaryPrimitive<P>
inline Dtypes dtypes_of(const P&, const Inputs& in) {
  return first(in);
}
inline Dtypes dtypes_of(const Abs&, const Inputs& in) { return {real_of(in[0].dtype())}; }
inline Dtypes dtypes_of(const Real&, const Inputs&) { return {float32}; }
inline Dtypes dtypes_of(const Imag&, const Inputs&) { return {float32}; }
inline Dtypes dtypes_of(const IsNaN&, const Inputs&) { return {bool_}; }
inline Dtypes dtypes_of(const IsInf&, const Inputs&) { return {bool_}; }
inline Dtypes dtypes_of(const Equal&, const Inputs&) { return {bool_}; }
inline Dtypes dtypes_of(const NotEqual&, const Inputs&) { return {bool_}; }
inline Dtypes dtypes_of(const Greater&, const Inputs&) { return {bool_}; }
inline Dtypes dtypes_of(const GreaterEqual&, const Inputs&) { return {bool_}; }
inline Dtypes dtypes_of(const Less&, const Inputs&) { return {bool_}; }
inline Dtypes dtypes_of(const LessEqual&, const Inputs&) { return {bool_}; }
/// The values' dtype (the first input is the condition).
inline Dtypes dtypes_of(const Select&, const Inputs& in) { return {in[1].dtype()}; }
inline Dtypes dtypes_of(const AsType& p, const Inputs&) { return {p.dtype}; }
inline Dtypes dtypes_of(const Arange& p, const Inputs&) { return {p.dtype}; }
/// Unsigned integers of `width` bytes.
inline Dtypes dtypes_of(const RandomBits& p, const Inputs&) {
  switch (p.width) {
    case 1:
      return {uint8};
    case 2:
      return {uint16};
    case 8:
      return {uint64};
    default:
      return {uint32};
  }
}

// ---- views and layout

inline Dtypes dtypes_of(const Broadcast&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const Reshape&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const Transpose&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const Slice&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const AsStrided&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const Diagonal&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const View& p, const Inputs&) { return {p.dtype}; }
inline Dtypes dtypes_of(const StopGradient&, const Inputs& in) { return first(in); }
/// Output i is input i (Depends' further inputs are only waited for).
inline Dtypes dtypes_of(const Depends&, const Inputs& in) { return each_input(in, in.size()); }
inline Dtypes dtypes_of(const Custom& p, const Inputs& in) {
  return each_input(in, static_cast<size_t>(p.num_outputs));
}
inline Dtypes dtypes_of(const Copy&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const Concatenate&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const Pad&, const Inputs& in) { return first(in); }

// ---- reductions, sorting and scans: indices are uint32 (searchsorted's int64)

inline Dtypes dtypes_of(const Reduce& p, const Inputs&) { return {p.dtype}; }
inline Dtypes dtypes_of(const ArgReduce&, const Inputs&) { return {uint32}; }
inline Dtypes dtypes_of(const Softmax&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const LogSumExp&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const Sort&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const ArgSort&, const Inputs&) { return {uint32}; }
inline Dtypes dtypes_of(const Partition&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const ArgPartition&, const Inputs&) { return {uint32}; }
inline Dtypes dtypes_of(const SearchSorted&, const Inputs&) { return {int64}; }
inline Dtypes dtypes_of(const Scan&, const Inputs& in) { return first(in); }

// ---- products, quantization, fft, convolution

/// The operands' promoted dtype: matmul hands a float32 product its float16 and bfloat16 operands unconverted.
inline Dtypes dtypes_of(const Matmul&, const Inputs& in) { return {promote_types(in[0].dtype(), in[1].dtype())}; }
inline Dtypes dtypes_of(const AddMM&, const Inputs& in) { return first(in); }
/// Packed codes, then scales and biases in the weight's dtype.
inline Dtypes dtypes_of(const Quantize& p, const Inputs& in) {
  if (is_microscaled(p.mode)) {
    return {uint32, uint8};
  }
  return {uint32, in[0].dtype(), in[0].dtype()};
}
inline Dtypes dtypes_of(const Dequantize& p, const Inputs&) { return {p.dtype}; }
/// x's dtype.
inline Dtypes dtypes_of(const QuantizedMatmul&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const GatherQMM&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const Fp8Cast& p, const Inputs&) { return {p.dtype}; }
/// Spectra are complex64; the inverse real transform gives float32.
inline Dtypes dtypes_of(const FFT& p, const Inputs&) { return {p.real && p.inverse ? float32 : complex64}; }
inline Dtypes dtypes_of(const Convolution&, const Inputs& in) { return first(in); }

// ---- fast, and their vjps (one cotangent per differentiated input, in its dtype)

inline Dtypes dtypes_of(const RMSNorm&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const LayerNorm&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const RoPE&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const ScaledDotProductAttention&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const RMSNormVJP& p, const Inputs& in) { return each_input(in, p.has_weight ? 2 : 1); }
inline Dtypes dtypes_of(const LayerNormVJP& p, const Inputs& in) {
  return each_input(in, 1 + static_cast<size_t>(p.has_weight) + static_cast<size_t>(p.has_bias));
}
inline Dtypes dtypes_of(const ScaledDotProductAttentionVJP& p, const Inputs& in) {
  Dtypes d = each_input(in, 3);
  if (p.has_sinks) {
    d.push_back(in[p.mask == AttentionMask::none ? 3 : 4].dtype());
  }
  return d;
}
/// Each output is a value of the fused tape: an input or a step.
inline Dtypes dtypes_of(const Compiled& p, const Inputs&) {
  const FusedKernel& k = *p.kernel;
  Dtypes d;
  for (int o : k.outputs) {
    const auto v = static_cast<size_t>(o);
    d.push_back(o < k.num_inputs ? k.input_dtypes[v] : k.steps[v - static_cast<size_t>(k.num_inputs)].dtype);
  }
  return d;
}

// ---- indexing: the indexed array's dtype

inline Dtypes dtypes_of(const Gather&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const GatherAxis&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const Scatter&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const ScatterAxis&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const MaskedScatter&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const SliceUpdate&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const DynamicSlice&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const DynamicSliceUpdate&, const Inputs& in) { return first(in); }

// ---- linear algebra: singular values and symmetric eigenvalues are real, general eigenpairs complex64, pivots
// and permutations uint32

inline Dtypes dtypes_of(const QRF&, const Inputs& in) { return {in[0].dtype(), in[0].dtype()}; }
inline Dtypes dtypes_of(const SVD& p, const Inputs& in) {
  const Dtype t = in[0].dtype();
  if (!p.compute_uv) {
    return {real_of(t)};
  }
  return {t, real_of(t), t};
}
inline Dtypes dtypes_of(const Inverse&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const Cholesky&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const LUF&, const Inputs& in) { return {in[0].dtype(), uint32, uint32}; }
inline Dtypes dtypes_of(const Solve&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const Eig& p, const Inputs&) {
  return p.compute_vectors ? Dtypes{complex64, complex64} : Dtypes{complex64};
}
inline Dtypes dtypes_of(const Eigh& p, const Inputs& in) {
  const Dtype t = in[0].dtype();
  return p.compute_vectors ? Dtypes{real_of(t), t} : Dtypes{real_of(t)};
}

// ---- masked, gathered and segmented products, Hadamard

inline Dtypes dtypes_of(const BlockMaskedMM&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const GatherMM&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const SegmentedMM&, const Inputs& in) { return first(in); }
inline Dtypes dtypes_of(const Hadamard&, const Inputs& in) { return first(in); }

// ---- distributed

inline Dtypes dtypes_of(const Collective& p, const Inputs& in) {
  return {p.kind == CollectiveKind::recv ? p.recv_dtype : in[0].dtype()};
}

}  // namespace nuvec::detail::dtype_rules
