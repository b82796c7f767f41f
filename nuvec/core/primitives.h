#pragma once

// The closed set of primitives. Every rule (CPU kernel, name, and later vjp, jvp,
// vmap, fusion class) is an exhaustive std::visit over `Primitive`, so adding an
// alternative without its rules fails to compile. Each struct carries only its
// parameters; defaulted equality makes two nodes comparable for CSE.

#include <string_view>
#include <variant>
#include <vector>

#include "nuvec/core/dtype.h"
#include "nuvec/core/shape.h"

namespace nuvec {

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

/// [start, stop) in steps; output dtype decides the arithmetic.
struct Arange {
  static constexpr std::string_view name = "Arange";
  static constexpr Family family = Family::other;
  double start;
  double stop;
  double step;
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
/// Strided slice; negative strides walk backwards (flip).
struct Slice {
  static constexpr std::string_view name = "Slice";
  static constexpr Family family = Family::view;
  Shape start;
  Shape strides;
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

/// A dense row-major copy.
struct Copy {
  static constexpr std::string_view name = "Copy";
  static constexpr Family family = Family::other;
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
/// Reduction over sorted axes; the reduced axes are kept with size 1.
struct Reduce {
  static constexpr std::string_view name = "Reduce";
  static constexpr Family family = Family::other;
  ReduceType type;
  std::vector<int> axes;
  friend bool operator==(const Reduce&, const Reduce&) = default;
};
enum class ArgReduceType { argmax, argmin };
/// Index (uint32) of the first max/min along one axis, kept with size 1.
struct ArgReduce {
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
/// scale * (Sylvester-ordered Walsh-Hadamard transform) along the last axis, whose size is a power of two.
struct Hadamard {
  static constexpr std::string_view name = "Hadamard";
  static constexpr Family family = Family::other;
  float scale;
  friend bool operator==(const Hadamard&, const Hadamard&) = default;
};

using Primitive = std::variant<
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
    Broadcast, Reshape, Transpose, Slice, AsStrided, Diagonal, View, StopGradient, Depends,
    // layout
    Copy, Concatenate, Pad,
    // reductions
    Reduce, ArgReduce, Softmax, LogSumExp,
    // products
    Matmul, AddMM,
    // masked, gathered and segmented products, Hadamard
    BlockMaskedMM, GatherMM, SegmentedMM, Hadamard>;

template <class P>
concept UnaryPrimitive = P::family == Family::unary;
template <class P>
concept BinaryPrimitive = P::family == Family::binary;
template <class P>
concept ViewPrimitive = P::family == Family::view;

/// The family of a primitive held in the variant.
inline Family family(const Primitive& p) {
  return std::visit([](const auto& alt) { return alt.family; }, p);
}

/// The primitive's name, for errors, printing and graph export.
inline std::string_view name(const Primitive& p) {
  return std::visit([](const auto& alt) { return alt.name; }, p);
}

}  // namespace nuvec
