#pragma once

// The closed set of primitives. Every rule (CPU kernel, name, and later vjp, jvp,
// vmap, fusion class) is an exhaustive std::visit over `Primitive`, so adding an
// alternative without its rules fails to compile. Each struct carries only its
// parameters; defaulted equality makes two nodes comparable for CSE.

#include <memory>
#include <string_view>
#include <variant>
#include <vector>

#include "nuvec/core/dtype.h"
#include "nuvec/core/quantization_mode.h"
#include "nuvec/core/shape.h"

namespace nuvec {

namespace detail {
struct CustomRules;  // transforms.h: the user's vjp, jvp and vmap of a custom function
struct FusedKernel;  // fused.h: a fused chain's tape and its generated kernel
class Communicator;  // communicator.h: a group of processes and its backend (nuvec::distributed)
}  // namespace detail

/// A trait on every primitive, read by the backends and by compile (fusion),
/// never a list kept elsewhere. Views share their input's buffer with new strides.
enum class Family { unary, binary, view, other };

/// A string usable as a template argument, so each parameterless op is one alias.
template <size_t N>
struct FixedName {
  constexpr FixedName(const char (&text)[N]) {  // NOLINT(google-explicit-constructor)
    for (size_t i = 0; i < N; ++i) {
      chars[i] = text[i];
    }
  }
  char chars[N]{};
  friend constexpr bool operator==(const FixedName&, const FixedName&) = default;
};

template <FixedName Name>
struct UnaryOp {
  static constexpr std::string_view name{Name.chars};
  static constexpr Family family = Family::unary;
  friend bool operator==(const UnaryOp&, const UnaryOp&) = default;
};
template <FixedName Name>
struct BinaryOp {
  static constexpr std::string_view name{Name.chars};
  static constexpr Family family = Family::binary;
  friend bool operator==(const BinaryOp&, const BinaryOp&) = default;
};

// Element-wise, one input, output dtype equal to the input's unless noted.
using Abs = UnaryOp<"Abs">;
using Negative = UnaryOp<"Negative">;
using Sign = UnaryOp<"Sign">;
using Floor = UnaryOp<"Floor">;
using Ceil = UnaryOp<"Ceil">;
using Round = UnaryOp<"Round">;  // half to even, as numpy
using Square = UnaryOp<"Square">;
using Sqrt = UnaryOp<"Sqrt">;
using Rsqrt = UnaryOp<"Rsqrt">;
using Reciprocal = UnaryOp<"Reciprocal">;
using Exp = UnaryOp<"Exp">;
using Expm1 = UnaryOp<"Expm1">;
using Log = UnaryOp<"Log">;
using Log2 = UnaryOp<"Log2">;
using Log10 = UnaryOp<"Log10">;
using Log1p = UnaryOp<"Log1p">;
using Sin = UnaryOp<"Sin">;
using Cos = UnaryOp<"Cos">;
using Tan = UnaryOp<"Tan">;
using ArcSin = UnaryOp<"ArcSin">;
using ArcCos = UnaryOp<"ArcCos">;
using ArcTan = UnaryOp<"ArcTan">;
using Sinh = UnaryOp<"Sinh">;
using Cosh = UnaryOp<"Cosh">;
using Tanh = UnaryOp<"Tanh">;
using ArcSinh = UnaryOp<"ArcSinh">;
using ArcCosh = UnaryOp<"ArcCosh">;
using ArcTanh = UnaryOp<"ArcTanh">;
using Sigmoid = UnaryOp<"Sigmoid">;
using Erf = UnaryOp<"Erf">;
using ErfInv = UnaryOp<"ErfInv">;
using Conjugate = UnaryOp<"Conjugate">;
using Real = UnaryOp<"Real">;              // complex64 -> float32
using Imag = UnaryOp<"Imag">;              // complex64 -> float32
using IsNaN = UnaryOp<"IsNaN">;            // -> bool
using IsInf = UnaryOp<"IsInf">;            // -> bool
using LogicalNot = UnaryOp<"LogicalNot">;  // bool -> bool
using BitwiseInvert = UnaryOp<"BitwiseInvert">;

// Element-wise, two inputs of equal shape and dtype.
using Add = BinaryOp<"Add">;
using Subtract = BinaryOp<"Subtract">;
using Multiply = BinaryOp<"Multiply">;
using Divide = BinaryOp<"Divide">;        // integers: floor division (numpy's //)
using Remainder = BinaryOp<"Remainder">;  // sign of the divisor, as numpy
using Power = BinaryOp<"Power">;
using Maximum = BinaryOp<"Maximum">;  // propagates NaN
using Minimum = BinaryOp<"Minimum">;  // propagates NaN
using LogAddExp = BinaryOp<"LogAddExp">;
using ArcTan2 = BinaryOp<"ArcTan2">;
using NotEqual = BinaryOp<"NotEqual">;  // -> bool
using Greater = BinaryOp<"Greater">;
using GreaterEqual = BinaryOp<"GreaterEqual">;
using Less = BinaryOp<"Less">;
using LessEqual = BinaryOp<"LessEqual">;
using LogicalAnd = BinaryOp<"LogicalAnd">;
using LogicalOr = BinaryOp<"LogicalOr">;
using BitwiseAnd = BinaryOp<"BitwiseAnd">;
using BitwiseOr = BinaryOp<"BitwiseOr">;
using BitwiseXor = BinaryOp<"BitwiseXor">;
using LeftShift = BinaryOp<"LeftShift">;
using RightShift = BinaryOp<"RightShift">;

/// a == b, with NaN == NaN when equal_nan.
struct Equal {
  static constexpr std::string_view name = "Equal";
  static constexpr Family family = Family::binary;
  bool equal_nan = false;
  friend bool operator==(const Equal&, const Equal&) = default;
};

/// where(condition, x, y): three inputs of equal shape, the first bool.
struct Select {
  static constexpr std::string_view name = "Select";
  static constexpr Family family = Family::other;
  friend bool operator==(const Select&, const Select&) = default;
};

/// Conversion to another dtype (numpy's casting: truncation toward zero for float to int).
struct AsType {
  static constexpr std::string_view name = "AsType";
  static constexpr Family family = Family::other;
  Dtype dtype;
  friend bool operator==(const AsType&, const AsType&) = default;
};

/// [start, stop) in steps: `length` values of `dtype`, which decides the arithmetic (linspace's count of float64
/// values may stop short of `stop`).
struct Arange {
  static constexpr std::string_view name = "Arange";
  static constexpr Family family = Family::other;
  double start;
  double stop;
  double step;
  int length;
  Dtype dtype;
  friend bool operator==(const Arange&, const Arange&) = default;
};

/// Threefry-2x32 bits from keys of shape (..., 2): `width` bytes per element.
struct RandomBits {
  static constexpr std::string_view name = "RandomBits";
  static constexpr Family family = Family::other;
  Shape shape;
  int width;
  friend bool operator==(const RandomBits&, const RandomBits&) = default;
};

// Views: the output shares the input's buffer.
struct Broadcast {
  static constexpr std::string_view name = "Broadcast";
  static constexpr Family family = Family::view;
  Shape shape;
  friend bool operator==(const Broadcast&, const Broadcast&) = default;
};
/// A view when the input's strides allow it, a copy otherwise.
struct Reshape {
  static constexpr std::string_view name = "Reshape";
  static constexpr Family family = Family::view;
  Shape shape;
  friend bool operator==(const Reshape&, const Reshape&) = default;
};
struct Transpose {
  static constexpr std::string_view name = "Transpose";
  static constexpr Family family = Family::view;
  std::vector<int> axes;
  friend bool operator==(const Transpose&, const Transpose&) = default;
};
/// Strided slice of `shape` (the count on each axis) from `start`; negative strides walk backwards (flip).
struct Slice {
  static constexpr std::string_view name = "Slice";
  static constexpr Family family = Family::view;
  Shape start;
  Shape strides;
  Shape shape;
  friend bool operator==(const Slice&, const Slice&) = default;
};
struct AsStrided {
  static constexpr std::string_view name = "AsStrided";
  static constexpr Family family = Family::view;
  Shape shape;
  Strides strides;
  size_t offset;
  friend bool operator==(const AsStrided&, const AsStrided&) = default;
};
/// The diagonal of two axes, moved to the end.
struct Diagonal {
  static constexpr std::string_view name = "Diagonal";
  static constexpr Family family = Family::view;
  int offset;
  int axis1;
  int axis2;
  friend bool operator==(const Diagonal&, const Diagonal&) = default;
};
/// Reinterprets the bytes of the last axis as another dtype.
struct View {
  static constexpr std::string_view name = "View";
  static constexpr Family family = Family::view;
  Dtype dtype;
  friend bool operator==(const View&, const View&) = default;
};
/// Identity forward, zero gradient.
struct StopGradient {
  static constexpr std::string_view name = "StopGradient";
  static constexpr Family family = Family::view;
  friend bool operator==(const StopGradient&, const StopGradient&) = default;
};

/// Multi-output identity: output i shares input i's buffer; the inputs after the
/// outputs are dependencies, evaluated first and otherwise unused (MLX's `depends`).
struct Depends {
  static constexpr std::string_view name = "Depends";
  static constexpr Family family = Family::view;
  friend bool operator==(const Depends&, const Depends&) = default;
};

/// A function with transforms given by the user (custom_function, custom_vjp, checkpoint). Inputs: the
/// function's outputs, computed by plain ops, then its primals; output i is input i. Transforms read `rules`
/// instead of looking through the function's graph.
struct Custom {
  static constexpr std::string_view name = "Custom";
  static constexpr Family family = Family::view;
  int num_outputs;
  std::shared_ptr<const detail::CustomRules> rules;
  friend bool operator==(const Custom&, const Custom&) = default;
};

/// A dense row-major copy (or the input itself, for contiguous(), when its layout already serves).
struct Copy {
  static constexpr std::string_view name = "Copy";
  static constexpr Family family = Family::other;
  // contiguous(): at evaluation, share the input's buffer when it is already row-contiguous (or column-contiguous,
  // with allow_col_major) instead of copying it, as MLX's Contiguous does.
  bool share_contiguous = false;
  bool allow_col_major = false;
  friend bool operator==(const Copy&, const Copy&) = default;
};
struct Concatenate {
  static constexpr std::string_view name = "Concatenate";
  static constexpr Family family = Family::other;
  int axis;
  friend bool operator==(const Concatenate&, const Concatenate&) = default;
};
/// Constant padding; inputs are the array and a scalar pad value of its dtype.
struct Pad {
  static constexpr std::string_view name = "Pad";
  static constexpr Family family = Family::other;
  std::vector<int> axes;
  Shape low;
  Shape high;
  friend bool operator==(const Pad&, const Pad&) = default;
};

enum class ReduceType { sum, prod, max, min, all, any };
/// Reduction over sorted axes into `dtype` (sums widen small integers, mean accumulates half floats in float32);
/// the reduced axes are kept with size 1.
struct Reduce {
  // MLX spells the kinds Reduce::And.
  using ReduceType = nuvec::ReduceType;
  // NOLINTBEGIN(readability-identifier-naming)
  static constexpr ReduceType And = ReduceType::all, Or = ReduceType::any, Sum = ReduceType::sum,
                              Prod = ReduceType::prod, Min = ReduceType::min, Max = ReduceType::max;
  // NOLINTEND(readability-identifier-naming)
  static constexpr std::string_view name = "Reduce";
  static constexpr Family family = Family::other;
  ReduceType type;
  std::vector<int> axes;
  Dtype dtype;
  friend bool operator==(const Reduce&, const Reduce&) = default;
};
enum class ArgReduceType { argmax, argmin };
/// Index (uint32) of the first max/min along one axis, kept with size 1.
struct ArgReduce {
  // MLX spells the kinds ArgReduce::ArgMin.
  using ReduceType = nuvec::ArgReduceType;
  // NOLINTBEGIN(readability-identifier-naming)
  static constexpr ArgReduceType ArgMin = ArgReduceType::argmin, ArgMax = ArgReduceType::argmax;
  // NOLINTEND(readability-identifier-naming)
  static constexpr std::string_view name = "ArgReduce";
  static constexpr Family family = Family::other;
  ArgReduceType type;
  int axis;
  friend bool operator==(const ArgReduce&, const ArgReduce&) = default;
};
/// Softmax over the last axis, computed in float32 at least (precise) or the input dtype.
struct Softmax {
  static constexpr std::string_view name = "Softmax";
  static constexpr Family family = Family::other;
  bool precise;
  friend bool operator==(const Softmax&, const Softmax&) = default;
};
/// log(sum(exp(x))) over the last axis, kept with size 1, overflow-safe.
struct LogSumExp {
  static constexpr std::string_view name = "LogSumExp";
  static constexpr Family family = Family::other;
  friend bool operator==(const LogSumExp&, const LogSumExp&) = default;
};

// Sorting, selection and scans: one axis of the input; outputs are row-contiguous with the input's shape.
/// Values sorted ascending along `axis`, NaNs last (numpy's order).
struct Sort {
  static constexpr std::string_view name = "Sort";
  static constexpr Family family = Family::other;
  int axis;
  friend bool operator==(const Sort&, const Sort&) = default;
};
/// Indices (uint32) that sort `axis` stably, NaNs last.
struct ArgSort {
  static constexpr std::string_view name = "ArgSort";
  static constexpr Family family = Family::other;
  int axis;
  friend bool operator==(const ArgSort&, const ArgSort&) = default;
};
/// Each row along `axis` rearranged so index kth (in [0, n)) holds the value a full sort would put there, with no
/// greater value before it and no smaller one after it.
struct Partition {
  static constexpr std::string_view name = "Partition";
  static constexpr Family family = Family::other;
  int kth;
  int axis;
  friend bool operator==(const Partition&, const Partition&) = default;
};
/// The indices (uint32) of Partition's arrangement.
struct ArgPartition {
  static constexpr std::string_view name = "ArgPartition";
  static constexpr Family family = Family::other;
  int kth;
  int axis;
  friend bool operator==(const ArgPartition&, const ArgPartition&) = default;
};
/// Insertion points (int64) of the second input's values into the first, a sorted 1-d array of the same dtype.
struct SearchSorted {
  static constexpr std::string_view name = "SearchSorted";
  static constexpr Family family = Family::other;
  bool right;
  friend bool operator==(const SearchSorted&, const SearchSorted&) = default;
};
enum class ScanType { sum, prod, max, min, logaddexp };
/// Running reduction along `axis`; exclusive scans start from the identity and leave out the current element.
struct Scan {
  // MLX spells the kinds Scan::Max.
  using ReduceType = nuvec::ScanType;
  // NOLINTBEGIN(readability-identifier-naming)
  static constexpr ScanType Max = ScanType::max, Min = ScanType::min, Sum = ScanType::sum, Prod = ScanType::prod,
                            LogAddExp = ScanType::logaddexp;
  // NOLINTEND(readability-identifier-naming)
  static constexpr std::string_view name = "Scan";
  static constexpr Family family = Family::other;
  ScanType type;
  int axis;
  bool reverse;
  bool inclusive;
  friend bool operator==(const Scan&, const Scan&) = default;
};

/// Batched matrix product of (..., M, K) and (..., K, N) with equal batch shapes.
struct Matmul {
  static constexpr std::string_view name = "Matmul";
  static constexpr Family family = Family::other;
  friend bool operator==(const Matmul&, const Matmul&) = default;
};
/// alpha * (a @ b) + beta * c, c broadcast to the output.
struct AddMM {
  static constexpr std::string_view name = "AddMM";
  static constexpr Family family = Family::other;
  float alpha;
  float beta;
  friend bool operator==(const AddMM&, const AddMM&) = default;
};

// Quantization (MLX's affine format, CONFORMANCE.md): the last axis of a weight in groups of group_size values,
// each stored in `bits` bits of a little-endian bit stream of uint32 words, with a scale and a bias per group. In a
// microscaled mode (quantization_mode.h) the biases are absent, the scales are uint8 codes, and nvfp4 may add a
// float32 global scale as the last input of Quantize and Dequantize.

/// w -> (w_q uint32, scales, biases), the last two in w's dtype; microscaled: (w[, global_scale]) ->
/// (w_q uint32, scales uint8).
struct Quantize {
  static constexpr std::string_view name = "Quantize";
  static constexpr Family family = Family::other;
  int group_size;
  int bits;
  QuantizationMode mode;
  friend bool operator==(const Quantize&, const Quantize&) = default;
};
/// (w_q, scales, biases) -> scale * q + bias, in `dtype` (the scales' unless asked otherwise); microscaled:
/// (w_q, scales[, global_scale]) -> code value * scale; in a block format (quantization_mode.h), (w) -> its values,
/// float32 unless asked otherwise (group_size and bits are then the block's values and code width).
struct Dequantize {
  static constexpr std::string_view name = "Dequantize";
  static constexpr Family family = Family::other;
  int group_size;
  int bits;
  QuantizationMode mode;
  Dtype dtype;
  friend bool operator==(const Dequantize&, const Dequantize&) = default;
};
/// (x, w_q, scales, biases): rows of x (..., K) times one quantized matrix, w (N, K) when transpose, else (K, N);
/// x, scales, biases and the output share one floating dtype. Microscaled: (x, w_q, scales), the output in x's
/// dtype. In a block format, (x, w): w (N, K / values per block * bytes per block) uint8, always transposed.
struct QuantizedMatmul {
  static constexpr std::string_view name = "QuantizedMatmul";
  static constexpr Family family = Family::other;
  int group_size;
  int bits;
  bool transpose;
  QuantizationMode mode;
  friend bool operator==(const QuantizedMatmul&, const QuantizedMatmul&) = default;
};
/// (x, w_q, scales, biases, lhs_indices, rhs_indices): out[i] = x[lhs[i]] @ w[rhs[i]] over flattened batches of
/// x (..., M, K) and w (E, N, K') (as QuantizedMatmul for each pair); the uint32 indices share the output's batch
/// shape. Microscaled modes have no biases: (x, w_q, scales, lhs_indices, rhs_indices).
struct GatherQMM {
  static constexpr std::string_view name = "GatherQMM";
  static constexpr Family family = Family::other;
  int group_size;
  int bits;
  bool transpose;
  bool sorted;  // the caller's hint that rhs_indices are sorted (MoE routing); results do not depend on it
  QuantizationMode mode;
  friend bool operator==(const GatherQMM&, const GatherQMM&) = default;
};
/// Float <-> FP8 E4M3 (stored as uint8): encode rounds to nearest even and saturates at +-448, as MLX; `dtype` is
/// the output's (uint8 when encoding).
struct Fp8Cast {
  static constexpr std::string_view name = "Fp8Cast";
  static constexpr Family family = Family::other;
  bool encode;
  Dtype dtype;
  friend bool operator==(const Fp8Cast&, const Fp8Cast&) = default;
};

/// Discrete Fourier transform over `axes` (in order; for real transforms the last one is the real axis). The input is
/// float32, float64 or complex64; the output complex64, or float32 for the inverse real transform. Inverse
/// transforms scale by 1/n per axis (NumPy's "backward" norm). `real_length` is the inverse real transform's output
/// length on its last axis (n / 2 + 1 frequencies come from an even or an odd length), 0 for the others.
struct FFT {
  static constexpr std::string_view name = "FFT";
  static constexpr Family family = Family::other;
  std::vector<int> axes;
  bool inverse;
  bool real;
  int real_length;
  friend bool operator==(const FFT&, const FFT&) = default;
};

// Convolution.
/// N-d cross-correlation, channels last: input (N, spatial..., C_in), weight (C_out, kernel..., C_in / groups),
/// output (N, spatial..., C_out). Every vector has one entry per spatial axis; padding is non-negative (the op
/// slices for negative padding); `flip` flips the kernel's spatial axes (a true convolution).
struct Convolution {
  static constexpr std::string_view name = "Convolution";
  static constexpr Family family = Family::other;
  std::vector<int> stride;
  std::vector<int> padding_lo;
  std::vector<int> padding_hi;
  std::vector<int> kernel_dilation;
  std::vector<int> input_dilation;
  int groups;
  bool flip;
  friend bool operator==(const Convolution&, const Convolution&) = default;
};

// Fused ops of nuvec::fast. Each op keeps its composition from plain ops
// (nuvec::fast::detail::*_composed), which tests compare against and transforms differentiate.

/// x * rsqrt(mean(x^2) + eps) [* weight] over the last axis; inputs x[, weight] of one dtype.
struct RMSNorm {
  static constexpr std::string_view name = "RMSNorm";
  static constexpr Family family = Family::other;
  float eps;
  bool has_weight;
  friend bool operator==(const RMSNorm&, const RMSNorm&) = default;
};
/// (x - mean) * rsqrt(var + eps) [* weight] [+ bias] over the last axis; inputs x[, weight][, bias].
struct LayerNorm {
  static constexpr std::string_view name = "LayerNorm";
  static constexpr Family family = Family::other;
  float eps;
  bool has_weight;
  bool has_bias;
  friend bool operator==(const LayerNorm&, const LayerNorm&) = default;
};
/// Rotary position embedding of the first `dims` features of (B, ..., L, D): inputs x, an int32 offset of one or
/// B elements, and with has_freqs float32 frequencies (dims / 2) that replace base^(-2i / dims).
struct RoPE {
  static constexpr std::string_view name = "RoPE";
  static constexpr Family family = Family::other;
  int dims;
  bool traditional;  // rotates pairs (2i, 2i + 1) instead of (i, i + dims / 2)
  float base;
  float scale;
  bool has_freqs;
  friend bool operator==(const RoPE&, const RoPE&) = default;
};
enum class AttentionMask { none, boolean, additive };
/// softmax(scale * q k^T [masked]) v over (B, N, L, D) inputs q, k, v[, mask (B, N_q, L_q, L_kv)][, sinks (N_q)],
/// all of one dtype (a boolean mask stays bool). Query heads share key/value heads in groups of N_q / N_kv.
struct ScaledDotProductAttention {
  static constexpr std::string_view name = "ScaledDotProductAttention";
  static constexpr Family family = Family::other;
  float scale;
  bool causal;  // key j is seen by query i when j <= i + L_kv - L_q
  AttentionMask mask;
  bool has_sinks;
  friend bool operator==(const ScaledDotProductAttention&, const ScaledDotProductAttention&) = default;
};

/// The vjp of RMSNorm in one pass per row: inputs x[, weight], the output's cotangent; outputs dx[, dweight].
struct RMSNormVJP {
  static constexpr std::string_view name = "RMSNormVJP";
  static constexpr Family family = Family::other;
  float eps;
  bool has_weight;
  friend bool operator==(const RMSNormVJP&, const RMSNormVJP&) = default;
};
/// The vjp of LayerNorm in one pass per row: inputs x[, weight][, bias], the output's cotangent; outputs dx[,
/// dweight][, dbias].
struct LayerNormVJP {
  static constexpr std::string_view name = "LayerNormVJP";
  static constexpr Family family = Family::other;
  float eps;
  bool has_weight;
  bool has_bias;
  friend bool operator==(const LayerNormVJP&, const LayerNormVJP&) = default;
};
/// The vjp of ScaledDotProductAttention, recomputing the weights block by block instead of storing them: inputs
/// q, k, v[, mask][, sinks], the output's cotangent; outputs dq, dk, dv[, dsinks] (a mask gets no cotangent).
struct ScaledDotProductAttentionVJP {
  static constexpr std::string_view name = "ScaledDotProductAttentionVJP";
  static constexpr Family family = Family::other;
  float scale;
  bool causal;
  AttentionMask mask;
  bool has_sinks;
  friend bool operator==(const ScaledDotProductAttentionVJP&, const ScaledDotProductAttentionVJP&) = default;
};

/// A chain of element-wise primitives that compile fused into one generated kernel. Inputs: the arrays the chain
/// reads; outputs: its values used outside the chain. Transforms go through the unfused tape it replaced.
struct Compiled {
  static constexpr std::string_view name = "Compiled";
  static constexpr Family family = Family::other;
  std::shared_ptr<const detail::FusedKernel> kernel;
  friend bool operator==(const Compiled&, const Compiled&) = default;
};

// Indexing. Indices of any integer dtype; a negative index counts from the end once. An index still out of range
// never reads or writes out of bounds: gathers clamp it (so the slice fits), scatters drop that update.

/// How a scatter combines an update with the value already there (none: the update replaces it).
enum class ScatterType { none, sum, prod, max, min };
/// Slices of `slice_sizes` starting at the given indices on `axes` (0 on the other axes). Inputs: the array, then one
/// index array per axis (all of one shape I); the output has shape I + slice_sizes.
struct Gather {
  static constexpr std::string_view name = "Gather";
  static constexpr Family family = Family::other;
  std::vector<int> axes;
  Shape slice_sizes;
  friend bool operator==(const Gather&, const Gather&) = default;
};
/// out[..., i, ...] = a[..., indices[..., i, ...], ...] on one axis. Inputs: the array and the indices, both already
/// broadcast to the output's shape except on `axis`.
struct GatherAxis {
  static constexpr std::string_view name = "GatherAxis";
  static constexpr Family family = Family::other;
  int axis;
  friend bool operator==(const GatherAxis&, const GatherAxis&) = default;
};
/// Gather's inverse: inputs the array, one index array per axis (shape I), then updates of shape I + slice shape.
/// With ScatterType::none duplicates keep the last update in row-major order of the indices.
struct Scatter {
  // MLX spells the kinds Scatter::Sum.
  using ReduceType = nuvec::ScatterType;
  // NOLINTBEGIN(readability-identifier-naming)
  static constexpr ScatterType Max = ScatterType::max, Min = ScatterType::min, Sum = ScatterType::sum,
                               Prod = ScatterType::prod, None = ScatterType::none;
  // NOLINTEND(readability-identifier-naming)
  static constexpr std::string_view name = "Scatter";
  static constexpr Family family = Family::other;
  ScatterType type;
  std::vector<int> axes;
  friend bool operator==(const Scatter&, const Scatter&) = default;
};
/// GatherAxis's inverse: inputs the array, indices and updates (the last two of one shape).
struct ScatterAxis {
  static constexpr std::string_view name = "ScatterAxis";
  static constexpr Family family = Family::other;
  ScatterType type;
  int axis;
  friend bool operator==(const ScatterAxis&, const ScatterAxis&) = default;
};
/// Writes the elements of a flat source, in order, where a bool mask (of the array's shape) is true.
struct MaskedScatter {
  static constexpr std::string_view name = "MaskedScatter";
  static constexpr Family family = Family::other;
  friend bool operator==(const MaskedScatter&, const MaskedScatter&) = default;
};
/// Combines an update of the slice's shape into a strided slice (normalized start and strides, as Slice's).
struct SliceUpdate {
  static constexpr std::string_view name = "SliceUpdate";
  static constexpr Family family = Family::other;
  Shape start;
  Shape strides;
  ScatterType type;
  friend bool operator==(const SliceUpdate&, const SliceUpdate&) = default;
};
/// A slice of `slice_size` whose start on `axes` is read from an integer array (clamped so the slice fits).
struct DynamicSlice {
  static constexpr std::string_view name = "DynamicSlice";
  static constexpr Family family = Family::other;
  std::vector<int> axes;
  Shape slice_size;
  friend bool operator==(const DynamicSlice&, const DynamicSlice&) = default;
};
/// Writes an update at a start on `axes` read from an integer array (clamped so the update fits).
/// Inputs: the array, the update (same ndim) and the start.
struct DynamicSliceUpdate {
  static constexpr std::string_view name = "DynamicSliceUpdate";
  static constexpr Family family = Family::other;
  std::vector<int> axes;
  friend bool operator==(const DynamicSliceUpdate&, const DynamicSliceUpdate&) = default;
};

// Linear algebra (LAPACK on the CPU): float32 or float64 matrices in the last two axes, batched over the others.
// Results LAPACK can only discover (a singular matrix, no convergence) fail the outputs at evaluation.

/// Reduced QR: outputs Q (..., M, K) and R (..., K, N), K = min(M, N).
struct QRF {
  static constexpr std::string_view name = "QRF";
  static constexpr Family family = Family::other;
  friend bool operator==(const QRF&, const QRF&) = default;
};
/// Singular values S (..., K) in descending order; with compute_uv the outputs are U (..., M, M), S, Vt (..., N, N).
struct SVD {
  static constexpr std::string_view name = "SVD";
  static constexpr Family family = Family::other;
  bool compute_uv;
  friend bool operator==(const SVD&, const SVD&) = default;
};
/// Inverse of a square matrix, or (triangular) of the matrix held in its lower or upper triangle; the other
/// triangle of a triangular inverse is zero.
struct Inverse {
  static constexpr std::string_view name = "Inverse";
  static constexpr Family family = Family::other;
  bool triangular;
  bool upper;
  friend bool operator==(const Inverse&, const Inverse&) = default;
};
/// Cholesky factor of a symmetric positive-definite matrix read from its lower (or upper) triangle.
struct Cholesky {
  static constexpr std::string_view name = "Cholesky";
  static constexpr Family family = Family::other;
  bool upper;
  friend bool operator==(const Cholesky&, const Cholesky&) = default;
};
/// LU with partial pivoting: outputs LU (..., M, N) (unit L below the diagonal, U on and above), the row swaps
/// (..., K) (uint32: row i was swapped with row pivots[i]) and the row permutation (..., M) (uint32:
/// A = L[perm] @ U).
struct LUF {
  static constexpr std::string_view name = "LUF";
  static constexpr Family family = Family::other;
  friend bool operator==(const LUF&, const LUF&) = default;
};
/// X with A X = B, for A (..., N, N) and B (..., N, R) of one batch shape; `triangular` reads only the lower (or
/// upper) triangle of A.
struct Solve {
  static constexpr std::string_view name = "Solve";
  static constexpr Family family = Family::other;
  bool triangular;
  bool upper;
  friend bool operator==(const Solve&, const Solve&) = default;
};
/// Eigenvalues (..., N) of a general matrix, complex64; with compute_vectors also the unit eigenvectors
/// (..., N, N) in columns.
struct Eig {
  static constexpr std::string_view name = "Eig";
  static constexpr Family family = Family::other;
  bool compute_vectors;
  friend bool operator==(const Eig&, const Eig&) = default;
};
/// Ascending eigenvalues (..., N) of a symmetric matrix read from its lower (or upper) triangle; with
/// compute_vectors also the orthonormal eigenvectors (..., N, N) in columns.
struct Eigh {
  static constexpr std::string_view name = "Eigh";
  static constexpr Family family = Family::other;
  bool upper;
  bool compute_vectors;
  friend bool operator==(const Eigh&, const Eigh&) = default;
};

// Masked, gathered and segmented products, and the Walsh-Hadamard transform.
/// (..., M, K) @ (..., K, N) with per-block masks; inputs a, b, then an optional output mask (..., tm, tn), then
/// optional operand masks (..., tm, tk) and (..., tk, tn) given together. A mask is bool (false skips the block) or
/// the product's dtype (scales it); tiles are block_size square.
struct BlockMaskedMM {
  static constexpr std::string_view name = "BlockMaskedMM";
  static constexpr Family family = Family::other;
  int block_size;
  friend bool operator==(const BlockMaskedMM&, const BlockMaskedMM&) = default;
};
/// out[i] = a[lhs[i]] @ b[rhs[i]]: inputs a (..., M, K), b (..., K, N) and uint32 indices into their flattened batch
/// axes, broadcast to the output's batch shape. `sorted` is MLX's hint that rhs is sorted (the kernel finds runs of
/// equal rhs indices either way).
struct GatherMM {
  static constexpr std::string_view name = "GatherMM";
  static constexpr Family family = Family::other;
  bool sorted;
  friend bool operator==(const GatherMM&, const GatherMM&) = default;
};
/// out[s] = a[:, start:end] @ b[start:end, :] for each segment (start, end) of a uint32 (..., 2) input.
struct SegmentedMM {
  static constexpr std::string_view name = "SegmentedMM";
  static constexpr Family family = Family::other;
  friend bool operator==(const SegmentedMM&, const SegmentedMM&) = default;
};
/// scale * (H_m (x) Sylvester's H_2^k) along the last axis, of size m * 2^k (m 1, 12, 20, 28; cpu/hadamard.cpp).
struct Hadamard {
  static constexpr std::string_view name = "Hadamard";
  static constexpr Family family = Family::other;
  float scale;
  friend bool operator==(const Hadamard&, const Hadamard&) = default;
};

/// The collectives of nuvec::distributed, one alternative so every rule treats them together.
enum class CollectiveKind { all_sum, all_max, all_min, all_gather, sum_scatter, send, recv };
/// A message exchange with the other processes of `group`: never fused, and never merged by CSE (two equal calls
/// are two exchanges, which every rank makes). `peer` is send's destination and recv's source; recv receives an
/// array of `recv_shape` and `recv_dtype`.
struct Collective {
  static constexpr std::string_view name = "Collective";
  static constexpr Family family = Family::other;
  CollectiveKind kind;
  std::shared_ptr<detail::Communicator> group;
  int peer = -1;
  Shape recv_shape{};
  Dtype recv_dtype = float32;
  friend bool operator==(const Collective&, const Collective&) { return false; }
};

/// The alternatives of Primitive.
using PrimitiveVariant = std::variant<
    // unary
    Abs, Negative, Sign, Floor, Ceil, Round, Square, Sqrt, Rsqrt, Reciprocal, Exp, Expm1, Log, Log2, Log10, Log1p, Sin,
    Cos, Tan, ArcSin, ArcCos, ArcTan, Sinh, Cosh, Tanh, ArcSinh, ArcCosh, ArcTanh, Sigmoid, Erf, ErfInv, Conjugate,
    Real, Imag, IsNaN, IsInf, LogicalNot, BitwiseInvert,
    // binary
    Add, Subtract, Multiply, Divide, Remainder, Power, Maximum, Minimum, LogAddExp, ArcTan2, Equal, NotEqual, Greater,
    GreaterEqual, Less, LessEqual, LogicalAnd, LogicalOr, BitwiseAnd, BitwiseOr, BitwiseXor, LeftShift, RightShift,
    // other element-wise and creation
    Select, AsType, Arange, RandomBits,
    // views
    Broadcast, Reshape, Transpose, Slice, AsStrided, Diagonal, View, StopGradient, Depends, Custom,
    // layout
    Copy, Concatenate, Pad,
    // reductions
    Reduce, ArgReduce, Softmax, LogSumExp,
    // sorting, selection and scans
    Sort, ArgSort, Partition, ArgPartition, SearchSorted, Scan,
    // products
    Matmul, AddMM,
    // quantization
    Quantize, Dequantize, QuantizedMatmul, GatherQMM, Fp8Cast,
    // fft
    FFT,
    // convolution
    Convolution,
    // fast
    RMSNorm, LayerNorm, RoPE, ScaledDotProductAttention, RMSNormVJP, LayerNormVJP, ScaledDotProductAttentionVJP,
    // indexing
    Gather, GatherAxis, Scatter, ScatterAxis, MaskedScatter, SliceUpdate, DynamicSlice, DynamicSliceUpdate,
    // linear algebra
    QRF, SVD, Inverse, Cholesky, LUF, Solve, Eig, Eigh,
    // masked, gathered and segmented products, Hadamard
    BlockMaskedMM, GatherMM, SegmentedMM, Hadamard,
    // distributed
    Collective,
    // compile
    Compiled>;

/// One primitive of the closed set: the variant, with its copies, moves, destruction and equality compiled once
/// (primitives.cpp). Inline, every file that copied a node instantiated them over all the alternatives again: about
/// 11 s of -O3 each. std::visit, std::get_if and std::holds_alternative take it as the variant.
class Primitive : public PrimitiveVariant {
 public:
  /// For std::variant_size_v and std::variant_alternative_t, which take the variant itself.
  using Variant = PrimitiveVariant;
  using Variant::Variant;
  Primitive();
  Primitive(const Primitive& other);
  Primitive(Primitive&& other) noexcept;
  Primitive& operator=(const Primitive& other);
  Primitive& operator=(Primitive&& other) noexcept;
  ~Primitive();
};

/// Equal alternatives with equal parameters (CSE).
bool operator==(const Primitive& a, const Primitive& b);

template <class P>
concept UnaryPrimitive = P::family == Family::unary;
template <class P>
concept BinaryPrimitive = P::family == Family::binary;
template <class P>
concept ViewPrimitive = P::family == Family::view;

// family and name are defined in primitives.cpp: an inline visit over every alternative cost each file that
// includes this header about 1.8 s of -O3, used or not.

/// The family of a primitive held in the variant.
Family family(const Primitive& p);

/// The primitive's name, for errors, printing and graph export.
std::string_view name(const Primitive& p);

}  // namespace nuvec
