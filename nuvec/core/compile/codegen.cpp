// The source generator. Each value of the chain lives in its compute type
// (float for the 16-bit floats, the element type otherwise) and is rounded to
// its dtype after every step, so results match the unfused kernels, which round
// after every primitive.

#include "nuvec/core/compile/codegen.h"

#include <algorithm>
#include <string_view>

#include "nuvec/core/error.h"

namespace nuvec::detail {

namespace {

/// Its arguments (strings and string literals) joined in one allocation, for the code built up in loops.
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::string out;
  out.reserve((std::string_view(parts).size() + ...));
  (out += ... += parts);
  return out;
}

bool is_float(Dtype d) { return d == float32 || d == float64 || d == float16 || d == bfloat16; }

/// The C++ type values of `d` are computed in.
std::string compute_type(Dtype d) {
  switch (d.val) {
    case Dtype::Val::bool_:
      return "bool";
    case Dtype::Val::float16:
    case Dtype::Val::float32:
    case Dtype::Val::bfloat16:
      return "float";
    case Dtype::Val::float64:
      return "double";
    case Dtype::Val::uint8:
      return "uint8_t";
    case Dtype::Val::uint16:
      return "uint16_t";
    case Dtype::Val::uint32:
      return "uint32_t";
    case Dtype::Val::uint64:
      return "uint64_t";
    case Dtype::Val::int8:
      return "int8_t";
    case Dtype::Val::int16:
      return "int16_t";
    case Dtype::Val::int32:
      return "int32_t";
    case Dtype::Val::int64:
      return "int64_t";
    case Dtype::Val::complex64:
      break;
  }
  throw_internal("[compile] no generated type for " + std::string(dtype_name(d)) + ".");
}

/// The C++ type elements of `d` are stored as.
std::string storage_type(Dtype d) {
  if (d == float16) {
    return "_Float16";
  }
  if (d == bfloat16) {
    return "uint16_t";
  }
  return compute_type(d);
}

std::string load(Dtype d, const std::string& expr) {
  if (d == float16) {
    return "(float)(" + expr + ")";
  }
  if (d == bfloat16) {
    return "nv_bf16_load(" + expr + ")";
  }
  return expr;
}

std::string store(Dtype d, const std::string& expr) {
  if (d == float16) {
    return "(_Float16)(" + expr + ")";
  }
  if (d == bfloat16) {
    return "nv_bf16_store(" + expr + ")";
  }
  return expr;
}

/// A compute value rounded to its 16-bit dtype (identity for other dtypes).
std::string rounded(Dtype d, const std::string& expr) {
  if (d == float16 || d == bfloat16) {
    return load(d, store(d, expr));
  }
  return expr;
}

/// The libm function name of a float or double math call.
std::string fn(std::string_view name, Dtype d) { return std::string(name) + (d == float64 ? "" : "f"); }

/// Unary primitives: the expression of x, or empty when the dtype has none.
std::string unary_expr(std::string_view op, Dtype d, const std::string& x) {
  const bool flt = is_float(d);
  const bool integer = is_integer(d);
  const std::string c = compute_type(d);
  if (op == "Abs") {
    return flt ? fn("__builtin_fabs", d) + "(" + x + ")" : integer ? "nv_abs(" + x + ")" : "";
  }
  if (op == "Negative") {
    return flt ? "(-" + x + ")" : integer ? "nv_neg(" + x + ")" : "";
  }
  if (op == "Sign") {
    if (flt) {
      return "(" + x + " > 0 ? " + c + "(1) : (" + x + " < 0 ? " + c + "(-1) : " + x + "))";
    }
    return integer ? "(" + c + ")((" + x + " > 0) - (" + x + " < 0))" : "";
  }
  if (op == "Square") {
    return d == bool_ ? x : integer ? "nv_mul(" + x + ", " + x + ")" : "(" + x + " * " + x + ")";
  }
  if (op == "BitwiseInvert") {
    return integer ? "(" + c + ")(~" + x + ")" : "";
  }
  if (op == "LogicalNot") {
    return d == bool_ ? "(!" + x + ")" : "";
  }
  if (!flt) {
    return "";
  }
  if (op == "Floor") {
    return fn("__builtin_floor", d) + "(" + x + ")";
  }
  if (op == "Ceil") {
    return fn("__builtin_ceil", d) + "(" + x + ")";
  }
  if (op == "Round") {
    return fn("__builtin_rint", d) + "(" + x + ")";
  }
  if (op == "Sqrt") {
    return fn("__builtin_sqrt", d) + "(" + x + ")";
  }
  if (op == "Rsqrt") {
    return "(" + c + "(1) / " + fn("__builtin_sqrt", d) + "(" + x + "))";
  }
  if (op == "Reciprocal") {
    return "(" + c + "(1) / " + x + ")";
  }
  if (op == "IsNaN") {
    return "(" + x + " != " + x + ")";
  }
  if (op == "IsInf") {
    return "(bool)__builtin_isinf(" + x + ")";
  }
  if (op == "Sigmoid") {
    return "nv_sigmoid(" + x + ")";
  }
  if (op == "Tanh" && d != float64) {
    return "nv_tanhf(" + x + ")";
  }
  if (op == "ErfInv") {
    return "nv_erfinv(" + x + ")";
  }
  static constexpr std::pair<std::string_view, std::string_view> math[] = {
      {"Exp", "exp"},     {"Expm1", "expm1"}, {"Log", "log"},       {"Log2", "log2"},   {"Log10", "log10"},
      {"Log1p", "log1p"}, {"Sin", "sin"},     {"Cos", "cos"},       {"Tan", "tan"},     {"ArcSin", "asin"},
      {"ArcCos", "acos"}, {"ArcTan", "atan"}, {"Sinh", "sinh"},     {"Cosh", "cosh"},   {"Tanh", "tanh"},
      {"ArcSinh", "asinh"}, {"ArcCosh", "acosh"}, {"ArcTanh", "atanh"}, {"Erf", "erf"}};
  for (const auto& [name, call] : math) {
    if (op == name) {
      return fn(call, d) + "(" + x + ")";
    }
  }
  return "";
}

/// Binary primitives: the expression of a and b (of dtype d), or empty when the dtype has none.
std::string binary_expr(const Primitive& p, Dtype d, const std::string& a, const std::string& b) {
  const std::string_view op = name(p);
  const bool flt = is_float(d);
  const bool integer = is_integer(d);
  const bool boolean = d == bool_;
  const std::string c = compute_type(d);
  auto infix = [&](std::string_view sym) { return "(" + a + " " + std::string(sym) + " " + b + ")"; };
  auto call = [&](std::string_view f) { return std::string(f) + "(" + a + ", " + b + ")"; };
  if (op == "Add") {
    return boolean ? infix("||") : integer ? call("nv_add") : infix("+");
  }
  if (op == "Subtract") {
    return boolean ? infix("!=") : integer ? call("nv_sub") : infix("-");
  }
  if (op == "Multiply") {
    return boolean ? infix("&&") : integer ? call("nv_mul") : infix("*");
  }
  if (op == "Divide") {
    return boolean ? infix("&&") : integer ? call("nv_floor_divide") : infix("/");
  }
  if (op == "Remainder") {
    return boolean ? "false" : call("nv_remainder");
  }
  if (op == "Power") {
    if (boolean) {
      return "(" + a + " || !" + b + ")";
    }
    return integer ? call("nv_power") : call(fn("pow", d));
  }
  if (op == "Maximum") {
    if (boolean) {
      return infix("||");
    }
    if (integer) {
      return "(" + a + " > " + b + " ? " + a + " : " + b + ")";
    }
    return "((" + a + " > " + b + " || " + a + " != " + a + ") ? " + a + " : " + b + ")";
  }
  if (op == "Minimum") {
    if (boolean) {
      return infix("&&");
    }
    if (integer) {
      return "(" + a + " < " + b + " ? " + a + " : " + b + ")";
    }
    return "((" + a + " < " + b + " || " + a + " != " + a + ") ? " + a + " : " + b + ")";
  }
  if (op == "LogAddExp") {
    return flt ? call("nv_logaddexp") : "";
  }
  if (op == "ArcTan2") {
    return flt ? call(fn("atan2", d)) : "";
  }
  if (op == "Equal") {
    if (flt && std::get<Equal>(p).equal_nan) {
      return "(" + a + " == " + b + " || (" + a + " != " + a + " && " + b + " != " + b + "))";
    }
    return infix("==");
  }
  if (op == "NotEqual") {
    return infix("!=");
  }
  if (op == "Greater") {
    return infix(">");
  }
  if (op == "GreaterEqual") {
    return infix(">=");
  }
  if (op == "Less") {
    return infix("<");
  }
  if (op == "LessEqual") {
    return infix("<=");
  }
  if (op == "LogicalAnd") {
    return boolean ? infix("&&") : "";
  }
  if (op == "LogicalOr") {
    return boolean ? infix("||") : "";
  }
  if (op == "BitwiseAnd") {
    return boolean || integer ? "(" + c + ")" + infix("&") : "";
  }
  if (op == "BitwiseOr") {
    return boolean || integer ? "(" + c + ")" + infix("|") : "";
  }
  if (op == "BitwiseXor") {
    return boolean || integer ? "(" + c + ")" + infix("^") : "";
  }
  if (op == "LeftShift") {
    return integer ? call("nv_shift_left") : "";
  }
  if (op == "RightShift") {
    return integer ? call("nv_shift_right") : "";
  }
  return "";
}

/// numpy's conversion of a compute value of `from` to `to` (as the AsType kernel does), as a compute value.
std::string convert_expr(Dtype from, Dtype to, const std::string& x) {
  if (from == to) {
    return x;
  }
  const std::string t = compute_type(to);
  if (to == bool_) {
    return "(" + x + " != 0)";
  }
  if (to == float16) {
    return from == float64 || !is_float(from) ? "(float)(_Float16)(double)(" + x + ")" : "(float)(_Float16)(" + x + ")";
  }
  if (to == bfloat16) {
    return "nv_bf16_load(nv_bf16_store((float)(" + x + ")))";
  }
  if (is_integer(to) && is_float(from)) {
    return "nv_float_to_int<" + t + ">((double)(" + x + "))";
  }
  return "(" + t + ")(" + x + ")";
}

/// The expression of one step over its argument names, or empty when there is none.
std::string step_expr(const FusedStep& s, const std::vector<Dtype>& arg_dtypes, const std::vector<std::string>& args) {
  return std::visit(
      [&]<class P>(const P& prim) -> std::string {
        if constexpr (UnaryPrimitive<P>) {
          if (arg_dtypes[0] != s.dtype && !(P::name == "IsNaN" || P::name == "IsInf")) {
            return "";
          }
          return unary_expr(P::name, arg_dtypes[0], args[0]);
        } else if constexpr (BinaryPrimitive<P>) {
          if (arg_dtypes[0] != arg_dtypes[1]) {
            return "";
          }
          return binary_expr(s.primitive, arg_dtypes[0], args[0], args[1]);
        } else if constexpr (std::is_same_v<P, Select>) {
          if (arg_dtypes[0] != bool_ || arg_dtypes[1] != s.dtype || arg_dtypes[2] != s.dtype) {
            return "";
          }
          return "(" + args[0] + " ? " + args[1] + " : " + args[2] + ")";
        } else if constexpr (std::is_same_v<P, AsType>) {
          return convert_expr(arg_dtypes[0], prim.dtype, args[0]);
        } else if constexpr (std::is_same_v<P, Broadcast>) {
          return args[0];
        } else {
          return "";
        }
      },
      s.primitive);
}

/// A generated variable's name: a letter and a number.
std::string name_of(char prefix, size_t index) {
  std::string text(1, prefix);
  text += std::to_string(index);
  return text;
}
std::string name_of(char prefix, int index) { return name_of(prefix, static_cast<size_t>(index)); }

bool generable_dtype(Dtype d) { return d != complex64; }

constexpr std::string_view prelude = R"(#include <cstdint>
#include <cstring>
#include <type_traits>
extern "C" {
#define NV_SIMD _Pragma("omp declare simd notinbranch")
#define NV_MATH1(name) NV_SIMD float name##f(float); NV_SIMD double name(double);
#define NV_MATH2(name) NV_SIMD float name##f(float, float); NV_SIMD double name(double, double);
NV_MATH1(exp) NV_MATH1(expm1) NV_MATH1(log) NV_MATH1(log2) NV_MATH1(log10) NV_MATH1(log1p)
NV_MATH1(sin) NV_MATH1(cos) NV_MATH1(tan) NV_MATH1(asin) NV_MATH1(acos) NV_MATH1(atan)
NV_MATH1(sinh) NV_MATH1(cosh) NV_MATH1(tanh) NV_MATH1(asinh) NV_MATH1(acosh) NV_MATH1(atanh) NV_MATH1(erf)
NV_MATH1(erfc)
NV_MATH2(pow) NV_MATH2(atan2)
float fmodf(float, float); double fmod(double, double);
}
static inline float nv_bf16_load(uint16_t b) { uint32_t u = (uint32_t)b << 16; float f; std::memcpy(&f, &u, 4); return f; }
static inline uint16_t nv_bf16_store(float f) {
  uint32_t u; std::memcpy(&u, &f, 4);
  uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? ((u >> 16) | 0x40u) : r);
}
template <class T> struct nv_wrap { using type = unsigned; };
template <> struct nv_wrap<int64_t> { using type = uint64_t; };
template <> struct nv_wrap<uint64_t> { using type = uint64_t; };
template <> struct nv_wrap<int32_t> { using type = uint32_t; };
template <> struct nv_wrap<uint32_t> { using type = uint32_t; };
template <class T> static inline T nv_add(T a, T b) { using W = typename nv_wrap<T>::type; return (T)((W)a + (W)b); }
template <class T> static inline T nv_sub(T a, T b) { using W = typename nv_wrap<T>::type; return (T)((W)a - (W)b); }
template <class T> static inline T nv_mul(T a, T b) { using W = typename nv_wrap<T>::type; return (T)((W)a * (W)b); }
template <class T> static inline T nv_neg(T a) { return nv_sub((T)0, a); }
template <class T> static inline T nv_abs(T a) { return (T)-1 < (T)0 && a < (T)0 ? nv_neg(a) : a; }
template <class T> static inline T nv_floor_divide(T a, T b) {
  if (b == 0) return 0;
  if constexpr ((T)-1 < (T)0) {
    if (b == (T)-1) return nv_neg(a);
    T q = (T)(a / b);
    return (a % b != 0 && (a < 0) != (b < 0)) ? (T)(q - 1) : q;
  } else {
    return (T)(a / b);
  }
}
template <class T> static inline T nv_remainder(T a, T b) {
  if (b == 0) return 0;
  if constexpr ((T)-1 < (T)0) {
    if (b == (T)-1) return 0;
    T r = (T)(a % b);
    return (r != 0 && (r < 0) != (b < 0)) ? (T)(r + b) : r;
  } else {
    return (T)(a % b);
  }
}
static inline float nv_remainder(float a, float b) {
  float m = fmodf(a, b);
  if (b == 0) return m;
  if (m != 0) { if ((b < 0) != (m < 0)) m += b; } else { m = __builtin_copysignf(0.0f, b); }
  return m;
}
static inline double nv_remainder(double a, double b) {
  double m = fmod(a, b);
  if (b == 0) return m;
  if (m != 0) { if ((b < 0) != (m < 0)) m += b; } else { m = __builtin_copysign(0.0, b); }
  return m;
}
template <class T> static inline T nv_power(T base, T e) {
  if constexpr ((T)-1 < (T)0) { if (e < 0) return 0; }
  T r = 1;
  for (; e != 0; e = (T)(e >> 1), base = nv_mul(base, base)) { if ((e & 1) != 0) r = nv_mul(r, base); }
  return r;
}
template <class T> static inline T nv_shift_left(T a, T b) {
  using U = typename nv_wrap<T>::type;
  if ((uint64_t)(std::make_unsigned_t<T>)b >= sizeof(T) * 8) return 0;
  return (T)((U)a << b);
}
template <class T> static inline T nv_shift_right(T a, T b) {
  if ((uint64_t)(std::make_unsigned_t<T>)b >= sizeof(T) * 8) return a < 0 ? (T)-1 : (T)0;
  return (T)(a >> b);
}
template <class To> static inline To nv_float_to_int(double x) {
  if constexpr (sizeof(To) == 8 && (To)-1 > (To)0) {
    if (x >= 9223372036854775808.0 && x < 18446744073709551616.0) return (To)x;
  }
  if (x >= -9223372036854775808.0 && x < 9223372036854775808.0) return (To)(int64_t)x;
  return (To)INT64_MIN;
}
// Outputs of kernels that write at least this many elements are streamed past the caches, far larger than them.
constexpr int64_t nv_stream_min = int64_t(1) << 20;
// A row reduction's partial results: 64 floats are 4 AVX-512 accumulators, whose additions overlap where one
// accumulator waits for each sum before the next (a layer norm's row passes 22% faster in L2).
constexpr int64_t nv_lanes = 64;
#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif
// Whole 64-byte lines from an aligned buffer to 64-byte aligned memory, past the caches.
static inline void nv_stream_lines(void* dst, const void* src, int64_t bytes) {
#if defined(__AVX512F__)
  for (int64_t c = 0; c < bytes; c += 64) _mm512_stream_si512((__m512i*)((char*)dst + c), _mm512_load_si512((const char*)src + c));
#elif defined(__AVX__)
  for (int64_t c = 0; c < bytes; c += 32) _mm256_stream_si256((__m256i*)((char*)dst + c), _mm256_load_si256((const __m256i*)((const char*)src + c)));
#else
  std::memcpy(dst, src, (size_t)bytes);
#endif
}
static inline void nv_stream_fence() {
#if defined(__AVX__)
  _mm_sfence();
#endif
}
// e^a for a <= 0 (NaN passes through) within 1 ulp, written out so that no call breaks the loop: 2^n e^r with a degree
// 6 polynomial (fitted like tanh's), the scale applied as 2^(n+64) and then 2^-64 so that results down to the
// denormals round once; the exponent from the rounding constant's bits (no float-to-int conversion).
// nv_exp_mantissa: e^r for c in [-104, 0], n = round(c log2(e)) and r = c - n ln(2), as 1 + r (1 + r q(r)).
static inline float nv_exp_mantissa(float c, float n) {
  float r = __builtin_fmaf(n, -0.693145751953125f, c);
  r = __builtin_fmaf(n, -1.42860677e-06f, r);
  float q = __builtin_fmaf(0.00139336439f, r, 0.00836317521f);
  q = __builtin_fmaf(q, r, 0.0416664667f);
  q = __builtin_fmaf(q, r, 0.166665763f);
  q = __builtin_fmaf(q, r, 0.5f);
  return __builtin_fmaf(r, __builtin_fmaf(r, q, 1.0f), 1.0f);
}
static inline float nv_exp_nonpositive(float a) {
  const float c = a < -104.0f ? -104.0f : a;
  const float t = __builtin_fmaf(c, 1.44269502f, 12582912.0f);
  const float p = nv_exp_mantissa(c, t - 12582912.0f);
  const float s = __builtin_bit_cast(float, (__builtin_bit_cast(uint32_t, t) + 191u) << 23);
  return p * s * 5.421010862427522e-20f;
}
// sigmoid as the eager kernel composes it, on that exp: 10-15% faster than through libmvec's expf.
static inline float nv_sigmoid(float x) {
  const float e = nv_exp_nonpositive(-__builtin_fabsf(x));
  const float r = 1.0f / (1.0f + e);
  return x >= 0 ? r : e * r;
}
static inline double nv_sigmoid(double x) { double e = exp(-__builtin_fabs(x)); double r = 1.0 / (1.0 + e); return x >= 0 ? r : e * r; }
// x * sigmoid(x) as (x >= 0 ? x : x e) / (1 + e), e = e^-|x|: one division and no select of the sigmoid's two forms
// (8% less time a lane than the product of nv_sigmoid and x, which rounds twice more). Integer steps where the exp
// takes float ones (9% less time again, same results): -|x| clamped to -104 as the unsigned minimum of the bits
// of x with the sign set and those of -104, and e's exponent added to its mantissa's bits (4% more with the 64 in
// the rounding constant). Both turn a NaN x into a finite e, which the product x e carries through as NaN.
static inline float nv_silu(float x) {
  const uint32_t a = __builtin_bit_cast(uint32_t, x) | 0x80000000u;
  const float c = __builtin_bit_cast(float, a < 0xc2d00000u ? a : 0xc2d00000u);  // -104.0f
  // The rounding constant 1.5 2^23 + 64 leaves n + 64 in t's low bits. p 2^(n+64) is normal for every n >= -150;
  // the product by 2^-64 rounds a denormal e once.
  const float t = __builtin_fmaf(c, 1.44269502f, 12582976.0f);
  const uint32_t p = __builtin_bit_cast(uint32_t, nv_exp_mantissa(c, t - 12582976.0f));
  const uint32_t scaled = p + (__builtin_bit_cast(uint32_t, t) << 23);
  const float e = __builtin_bit_cast(float, scaled) * 5.421010862427522e-20f;
  return (x >= 0 ? x : x * e) / (1.0f + e);
}
static inline double nv_silu(double x) { double e = exp(-__builtin_fabs(x)); return (x >= 0 ? x : x * e) / (1.0 + e); }
// tanh of a float as x P(x^2) / Q(x^2), degrees 4 and 4 (fitted to tanh(x) / x on [0, 9.02] for relative error
// by reweighted least squares; 0.35 ulp as a function, within 5 ulp of the correctly rounded result as evaluated in
// float, checked over every 7th float), 1 beyond 9.02 where tanh rounds to 1. No calls: GCC vectorizes it, at 0.26
// ns an element where glibc's vector tanhf takes 0.40 and the eager kernel's exp-based form written out 0.64.
static inline float nv_tanhf(float x) {
  const float s = x * x;
  float p = 1.3320224923063506e-08f;
  p = __builtin_fmaf(p, s, 2.0584333469741978e-05f);
  p = __builtin_fmaf(p, s, 0.003494087141007185f);
  p = __builtin_fmaf(p, s, 0.13379763066768646f);
  p = __builtin_fmaf(p, s, 1.0f);
  float q = 7.762496920804551e-07f;
  q = __builtin_fmaf(q, s, 0.0003283178375568241f);
  q = __builtin_fmaf(q, s, 0.0258712749928236f);
  q = __builtin_fmaf(q, s, 0.46713078022003174f);
  q = __builtin_fmaf(q, s, 1.0f);
  const float r = x * p / q;
  return !(__builtin_fabsf(x) >= 9.02f) ? r : __builtin_copysignf(1.0f, x);
}
// The inverse error function as the eager kernel computes it (cpu/math.h): Giles' start, Halley steps on
// erf(y) - |x| (the residual from erfc above |x| = 0.5), in double; one step for float, two for double, one more in
// the far tail. Fixed-count loops and selects, no branches, so that the loop around it vectorizes (checked with
// -fopt-info-vec: a select between two calls, or one between x and a computed value, kept it scalar).
static inline double nv_erfinv_step(double y, double ax) {
  const double near = erf(y) - ax;  // both computed: GCC does not if-convert a select between calls
  const double far = (1.0 - ax) - erfc(y);
  const double residual = ax <= 0.5 ? near : far;
  const double u = residual / (1.1283791670955126 * exp(-y * y));
  return y - u / (1.0 + y * u);
}
static inline double nv_erfinv_double(double x, int steps) {
  const double ax = __builtin_fabs(x);
  const double w = -log((1.0 - ax) * (1.0 + ax));
  constexpr double central[] = {2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                                -0.00125372503, -0.00417768164, 0.246640727, 1.50140941};
  constexpr double tail[] = {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                             -0.0076224613, 0.00943887047, 1.00167406, 2.83297682};
  const double c = w - 2.5;
  const double t = __builtin_sqrt(w) - 3.0;
  double a = 0.0;
  double b = 0.0;
  for (int i = 0; i < 9; ++i) {
    a = central[i] + a * c;
    b = tail[i] + b * t;
  }
  double y = (w < 5.0 ? a : b) * ax;
  for (int i = 0; i < steps; ++i) y = nv_erfinv_step(y, ax);
  const double tail_step = nv_erfinv_step(y, ax);
  y = 1.0 - ax < 5e-8 ? tail_step : y;
  // y is 0 for x = +-0, so the sign carries it; selects between constants, which GCC if-converts.
  const double edge = ax == 1.0 ? __builtin_inf() : __builtin_nan("");
  return __builtin_copysign(ax < 1.0 ? y : edge, x);
}
static inline float nv_erfinv(float x) { return (float)nv_erfinv_double(x, 1); }
static inline double nv_erfinv(double x) { return nv_erfinv_double(x, 2); }
static inline float nv_logaddexp(float a, float b) {
  float d = a - b; float r = (d > 0 ? a : b) + log1pf(expf(-__builtin_fabsf(d)));
  return a == b ? a + 0.693147180559945309f : r;
}
static inline double nv_logaddexp(double a, double b) {
  double d = a - b; double r = (d > 0 ? a : b) + log1p(exp(-__builtin_fabs(d)));
  return a == b ? a + 0.693147180559945309 : r;
}
)";

}  // namespace

bool can_generate(const Primitive& p, Dtype in, Dtype out) {
  if (!generable_dtype(in) || !generable_dtype(out)) {
    return false;
  }
  FusedStep step{p, {}, out};
  const std::vector<Dtype> dtypes = std::holds_alternative<Select>(p) ? std::vector<Dtype>{bool_, out, out}
                                                                       : std::vector<Dtype>{in, in};
  return !step_expr(step, dtypes, {"a", "b", "c"}).empty();
}

namespace {

/// The declaration of step s's value: its expression over the values before it, rounded to its dtype. A product of a
/// float32 or float64 value and its sigmoid (SiLU) is one call, nv_silu, which shares the sigmoid's exp and divides
/// once (the sigmoid step stays, for other uses; the compiler drops it when it has none).
std::string step_code(const FusedKernel& k, const std::vector<Dtype>& dtypes, size_t s) {
  const auto n_in = static_cast<size_t>(k.num_inputs);
  const auto& step = k.steps[s];
  auto value = [](int v) { return name_of('v', static_cast<size_t>(v)); };
  auto sigmoid_of = [&](int v, int x) {
    if (v < static_cast<int>(n_in)) {
      return false;
    }
    const auto& arg = k.steps[static_cast<size_t>(v) - n_in];
    return std::holds_alternative<Sigmoid>(arg.primitive) && arg.args[0] == x;
  };
  std::string expr;
  auto dtype_of = [&](int v) { return dtypes[static_cast<size_t>(v)]; };
  if (std::holds_alternative<Multiply>(step.primitive) && (step.dtype == float32 || step.dtype == float64) &&
      dtype_of(step.args[0]) == step.dtype && dtype_of(step.args[1]) == step.dtype) {
    const int a = step.args[0];
    const int b = step.args[1];
    if (sigmoid_of(b, a)) {
      expr = "nv_silu(" + value(a) + ")";
    }
    if (sigmoid_of(a, b)) {
      expr = "nv_silu(" + value(b) + ")";
    }
  }
  if (expr.empty()) {
    std::vector<Dtype> arg_dtypes;
    std::vector<std::string> args;
    for (int a : step.args) {
      arg_dtypes.push_back(dtypes[static_cast<size_t>(a)]);
      args.push_back(value(a));
    }
    expr = step_expr(step, arg_dtypes, args);
  }
  if (expr.empty()) {
    throw_internal("[compile] no generated code for " + std::string(name(step.primitive)) + ".");
  }
  return "const " + compute_type(step.dtype) + " " + value(static_cast<int>(n_in + s)) + " = " +
         rounded(step.dtype, expr) + ";\n";
}

/// Elements per streamed line: 64 bytes of the narrowest element output (a row kernel's per-row values are written
/// in place).
size_t line_length(const FusedKernel& k, const std::vector<Dtype>& dtypes) {
  size_t narrowest = 8;
  for (int v : k.outputs) {
    const auto u = static_cast<size_t>(v);
    if (!k.rows || !k.row_values[u]) {
      narrowest = std::min<size_t>(narrowest, size_of(dtypes[u]));
    }
  }
  return 64 / narrowest;
}

/// A row kernel: for each row, one pass over the row per reduction depth (each pass recomputes the element values
/// it needs from the inputs, which the row keeps in cache), the row values between passes, then a last pass that
/// writes the element outputs. Memory sees each input read once and each output written once.
std::string generate_rows_source(const FusedKernel& k) {
  std::string src(prelude);
  const auto n_in = static_cast<size_t>(k.num_inputs);
  std::vector<Dtype> dtypes(k.input_dtypes);
  for (const auto& s : k.steps) {
    dtypes.push_back(s.dtype);
  }
  auto value = [&](size_t v) { return name_of('v', v); };
  // A value's stage: how many reductions lie between it and the inputs.
  std::vector<int> stage(dtypes.size(), 0);
  int passes = 0;
  for (size_t s = 0; s < k.steps.size(); ++s) {
    int st = 0;
    for (int a : k.steps[s].args) {
      st = std::max(st, stage[static_cast<size_t>(a)]);
    }
    if (std::holds_alternative<Reduce>(k.steps[s].primitive)) {
      ++st;
    }
    stage[n_in + s] = st;
    passes = std::max(passes, st);
  }
  auto expr_of = [&](size_t s) { return step_code(k, dtypes, s); };
  // Element values up to a stage, computed inside a loop over the row (unused ones the compiler drops); unit
  // reads where every element input is contiguous along the row, so that the loop needs no gathers.
  bool unit = true;
  auto element_body = [&](int up_to) {
    std::string body;
    for (size_t i = 0; i < n_in; ++i) {
      if (!k.row_values[i]) {
        const auto index = unit ? std::string("j") : "j * " + name_of('t', i);
        body += "      const " + compute_type(dtypes[i]) + " " + value(i) + " = " +
                load(dtypes[i], name_of('q', i) + "[" + index + "]") + ";\n";
      }
    }
    for (size_t s = 0; s < k.steps.size(); ++s) {
      if (!k.row_values[n_in + s] && stage[n_in + s] <= up_to) {
        body += "      " + expr_of(s);
      }
    }
    return body;
  };
  auto row_steps = [&](int at) {
    std::string body;
    for (size_t s = 0; s < k.steps.size(); ++s) {
      if (k.row_values[n_in + s] && stage[n_in + s] == at && !std::holds_alternative<Reduce>(k.steps[s].primitive)) {
        body += "    " + expr_of(s);
      }
    }
    return body;
  };

  src += "extern \"C\" void nuvec_fused_strided(const void* const* in, void* const* out, const int64_t* shape, "
         "const int64_t* strides, int ndim, int64_t begin, int64_t end) {\n";
  for (size_t i = 0; i < n_in; ++i) {
    src += "  const " + storage_type(dtypes[i]) + "* " + name_of('p', i) + " = (const " + storage_type(dtypes[i]) +
           "*)in[" + std::to_string(i) + "];\n";
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const auto t = storage_type(dtypes[static_cast<size_t>(k.outputs[o])]);
    src += cat("  ", t, "* __restrict ", name_of('o', o), " = (", t, "*)out[", std::to_string(o), "];\n");
  }
  src += "  const int64_t inner = shape[ndim - 1];\n  int64_t index[64] = {0};\n";
  src += "  const bool stream_rows = (end - begin) * inner >= nv_stream_min;\n";
  // Streamed rows go out in blocks of 16 lines: a line at a time, as the flat loop, made a layer norm 10% slower.
  const auto block = std::to_string(16 * line_length(k, dtypes));
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const auto v = static_cast<size_t>(k.outputs[o]);
    if (!k.row_values[v]) {
      src += "  alignas(64) " + storage_type(dtypes[v]) + " " + name_of('w', o) + "[" + block + "];\n";
    }
  }
  src += "  int64_t rest = begin;\n  for (int d = ndim - 2; d >= 0; --d) { index[d] = rest % shape[d]; rest /= shape[d]; }\n";
  src += "  for (int64_t r = begin; r < end; ++r) {\n";
  for (size_t i = 0; i < n_in; ++i) {
    const auto q = name_of('q', i);
    src += "    const " + storage_type(dtypes[i]) + "* __restrict " + q + " = " + name_of('p', i) + ";\n";
    src += "    for (int d = 0; d + 1 < ndim; ++d) " + q + " += index[d] * strides[" + std::to_string(i) + " * ndim + d];\n";
    src += "    const int64_t " + name_of('t', i) + " = strides[" + std::to_string(i) + " * ndim + ndim - 1];\n";
    if (!k.row_values[i]) {
      src += "    const int64_t " + name_of('u', i) + " = ndim >= 2 ? strides[" + std::to_string(i) +
             " * ndim + ndim - 2] : 0;\n";
    }
    if (k.row_values[i]) {
      src += "    const " + compute_type(dtypes[i]) + " " + value(i) + " = " + load(dtypes[i], q + "[0]") + ";\n";
    }
  }
  auto row_passes = [&](bool unit_reads) {
    unit = unit_reads;
    std::string body;
    for (int pass = 1; pass <= passes; ++pass) {
      // Sums and products vectorize as simd reductions over nv_lanes partial results (lane l takes the elements
      // j = l mod nv_lanes), so that several vector accumulators are in flight; maxima and minima (which propagate
      // NaN) stay in order.
      bool simd = true;
      for (size_t s = 0; s < k.steps.size(); ++s) {
        const auto* reduce = std::get_if<Reduce>(&k.steps[s].primitive);
        if (reduce != nullptr && stage[n_in + s] == pass && reduce->type != ReduceType::sum &&
            reduce->type != ReduceType::prod) {
          simd = false;
        }
      }
      std::string accumulators;
      std::string updates;
      std::string finish;
      for (size_t s = 0; s < k.steps.size(); ++s) {
        const auto* reduce = std::get_if<Reduce>(&k.steps[s].primitive);
        if (reduce == nullptr || stage[n_in + s] != pass) {
          continue;
        }
        const auto acc = name_of('a', n_in + s);
        const auto arg = value(static_cast<size_t>(k.steps[s].args[0]));
        const auto c = compute_type(k.steps[s].dtype);
        const auto result = "    const " + c + " " + value(n_in + s) + " = ";
        if (reduce->type == ReduceType::sum || reduce->type == ReduceType::prod) {
          const bool sum = reduce->type == ReduceType::sum;
          const std::string op = sum ? " += " : " *= ";
          const std::string identity = sum ? "0" : "1";
          if (simd) {
            const auto total = name_of('z', n_in + s);
            accumulators += cat("    ", c, " ", acc, "[nv_lanes];\n    for (int64_t l = 0; l < nv_lanes; ++l) ", acc,
                                "[l] = ", identity, ";\n");
            updates += cat("      ", acc, "[l]", op, arg, ";\n");
            finish += cat("    ", c, " ", total, " = ", identity, ";\n    _Pragma(\"omp simd reduction(",
                          sum ? "+" : "*", ":", total, ")\")\n    for (int64_t l = 0; l < nv_lanes; ++l) ", total, op,
                          acc, "[l];\n", result, total, ";\n");
          } else {
            accumulators += cat("    ", c, " ", acc, " = ", identity, ";\n");
            updates += cat("      ", acc, op, arg, ";\n");
            finish += result + acc + ";\n";
          }
        } else {
          const bool max = reduce->type == ReduceType::max;
          const std::string beats = max ? " > " : " < ";
          accumulators += cat("    ", c, " ", acc, " = ", max ? "-" : "", "__builtin_inf();\n");
          updates += cat("      ", acc, " = (", arg, beats, acc, " || ", arg, " != ", arg, " || ", acc, " != ", acc,
                         ") ? (", acc, " != ", acc, " ? ", acc, " : ", arg, ") : ", acc, ";\n");
          finish += result + acc + ";\n";
        }
      }
      body += accumulators;
      if (simd) {
        body +=
            cat("    {\n    int64_t j0 = 0;\n    for (; j0 + nv_lanes <= inner; j0 += nv_lanes) {\n"
                "    _Pragma(\"omp simd\")\n    for (int64_t l = 0; l < nv_lanes; ++l) {\n"
                "      const int64_t j = j0 + l;\n",
                element_body(pass - 1), updates, "    }\n    }\n    for (int64_t j = j0; j < inner; ++j) {\n",
                "      const int64_t l = j - j0;\n", element_body(pass - 1), updates, "    }\n    }\n");
      } else {
        body += "    for (int64_t j = 0; j < inner; ++j) {\n" + element_body(pass - 1) + updates + "    }\n";
      }
      body += finish + row_steps(pass);
    }
    // Element outputs: written in place, or (large outputs) through block buffers streamed out past the caches from
    // the first line boundary the outputs share.
    std::string stores;
    std::string buffered;
    std::string streams;
    std::string row_stores;
    std::string first;
    std::string line_starts = "true";
    for (size_t o = 0; o < k.outputs.size(); ++o) {
      const auto v = static_cast<size_t>(k.outputs[o]);
      const auto out = name_of('o', o);
      if (k.row_values[v]) {
        row_stores += "    " + out + "[r] = " + store(dtypes[v], value(v)) + ";\n";
      } else {
        const auto w = name_of('w', o);
        if (first.empty()) {
          first = out;
        }
        line_starts += " && ((uintptr_t)(" + out + " + r * inner + j0) & 63) == 0";
        stores += "      " + out + "[r * inner + j] = " + store(dtypes[v], value(v)) + ";\n";
        buffered += "      " + w + "[j - j0] = " + store(dtypes[v], value(v)) + ";\n";
        streams += cat("      nv_stream_lines(", out, " + r * inner + j0, ", w, ", sizeof(", w, "));\n");
      }
    }
    // While a streamed row is written, the next row of each element input (rows one stride further) is fetched
    // into L2: the first pass over a row otherwise waits on memory with nothing else to do, and the row's other
    // passes leave the memory idle (a layer norm 33% faster on one thread). A prefetch past the input never faults.
    std::string prefetches;
    for (size_t i = 0; unit_reads && i < n_in; ++i) {
      if (k.row_values[i]) {
        continue;
      }
      // Inputs broadcast over the rows (a weight) are in cache already: their row stride is 0.
      const auto q = name_of('q', i);
      const auto u = name_of('u', i);
      prefetches += cat("      if (", u, " != 0) {\n        for (int64_t c = 0; c < ", block, " * (int64_t)sizeof(*", q,
                        "); c += 64) __builtin_prefetch((const char*)(", q, " + ", u, " + j0) + c, 0, 2);\n      }\n");
    }
    if (!stores.empty()) {
      const auto element_stores = element_body(passes) + stores;
      body += "    int64_t j0 = 0;\n    if (stream_rows) {\n"
              "      for (; j0 < inner && ((uintptr_t)(" + first + " + r * inner + j0) & 63) != 0; ++j0) {}\n"
              "      for (int64_t j = 0; j < j0; ++j) {\n" + element_stores + "      }\n"
              "      if (" + line_starts + ") {\n        for (; j0 + " + block + " <= inner; j0 += " + block + ") {\n" +
              prefetches + "      for (int64_t j = j0; j < j0 + " + block + "; ++j) {\n" + element_body(passes) +
              buffered + "      }\n" + streams + "        }\n      }\n    }\n" +
              "    for (int64_t j = j0; j < inner; ++j) {\n" + element_stores + "    }\n";
    }
    body += row_stores;
    return body;
  };
  std::string unit_test = "true";
  for (size_t i = 0; i < n_in; ++i) {
    if (!k.row_values[i]) {
      unit_test += " && " + name_of('t', i) + " == 1";
    }
  }
  src += row_steps(0);
  src += "    if (" + unit_test + ") {\n" + row_passes(true) + "    } else {\n" + row_passes(false) + "    }\n";
  src += "    for (int d = ndim - 2; d >= 0; --d) { if (++index[d] < shape[d]) break; index[d] = 0; }\n";
  src += "  }\n  if (stream_rows) nv_stream_fence();\n}\n";
  return src;
}

}  // namespace

std::string generate_source(const FusedKernel& k) {
  if (k.rows) {
    return generate_rows_source(k);
  }
  std::string src(prelude);
  const auto n_in = static_cast<size_t>(k.num_inputs);
  std::vector<Dtype> dtypes(k.input_dtypes);
  for (const auto& s : k.steps) {
    dtypes.push_back(s.dtype);
  }
  auto value = [&](int v) { return name_of('v', v); };

  // The element body: loaded inputs in, outputs written at index i.
  src += "static inline __attribute__((always_inline)) void nv_body(";
  for (size_t i = 0; i < n_in; ++i) {
    src += compute_type(dtypes[i]) + " " + value(static_cast<int>(i)) + ", ";
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    src += storage_type(dtypes[static_cast<size_t>(k.outputs[o])]) + "* __restrict o" + std::to_string(o) + ", ";
  }
  src += "int64_t i) {\n";
  for (size_t s = 0; s < k.steps.size(); ++s) {
    src += "  " + step_code(k, dtypes, s);
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    src += "  o" + std::to_string(o) + "[i] = " + store(dtypes[static_cast<size_t>(k.outputs[o])], value(k.outputs[o])) +
           ";\n";
  }
  src += "}\n";

  auto pointers = [&](std::string& body) {
    for (size_t i = 0; i < n_in; ++i) {
      body += "  const " + storage_type(dtypes[i]) + "* __restrict p" + std::to_string(i) + " = (const " +
              storage_type(dtypes[i]) + "*)in[" + std::to_string(i) + "];\n";
    }
    for (size_t o = 0; o < k.outputs.size(); ++o) {
      const auto t = storage_type(dtypes[static_cast<size_t>(k.outputs[o])]);
      body += cat("  ", t, "* __restrict o", std::to_string(o), " = (", t, "*)out[", std::to_string(o), "];\n");
    }
  };
  auto call = [&](const std::vector<std::string>& reads) {
    std::string text = "nv_body(";
    for (size_t i = 0; i < n_in; ++i) {
      text += load(dtypes[i], reads[i]) + ", ";
    }
    for (size_t o = 0; o < k.outputs.size(); ++o) {
      text += name_of('o', o) + ", ";
    }
    return text;
  };

  // Flat loop over row-major inputs; a scalar input's value is read once.
  src += "extern \"C\" void nuvec_fused_contiguous(const void* const* in, void* const* out, int64_t begin, "
         "int64_t end) {\n";
  pointers(src);
  std::vector<std::string> reads;
  for (size_t i = 0; i < n_in; ++i) {
    const auto p = name_of('p', i);
    if (k.scalar_inputs[i]) {
      src += "  const " + storage_type(dtypes[i]) + " s" + std::to_string(i) + " = " + p + "[0];\n";
      reads.push_back(name_of('s', i));
    } else {
      reads.push_back(p + "[i]");
    }
  }
  src += "  if (end - begin < nv_stream_min) {\n";
  src += "    for (int64_t i = begin; i < end; ++i) {\n      " + call(reads) + "i);\n    }\n    return;\n  }\n";
  // Large ranges: outputs streamed past the caches, so that an output costs one write of memory instead of a read
  // for ownership plus a write. Elements are computed a line at a time (64 bytes of the narrowest output) into
  // buffers in L1 and each line is streamed out at once: stores spread over the computation, where blocks of 1 KiB
  // streamed in bursts kept the core waiting on them (medians of 8 runs: GELU 1.52x the floor -> 1.2x, SiLU
  // 1.32x -> 1.03x). Plain stores up to the first line boundary of the outputs, and for the rest where they do not
  // share one.
  const auto line = std::to_string(line_length(k, dtypes));
  std::string line_starts = "true";
  std::string buffers;
  std::string streams;
  std::string block_call = "nv_body(";
  for (size_t i = 0; i < n_in; ++i) {
    block_call += load(dtypes[i], k.scalar_inputs[i] ? name_of('s', i) : name_of('p', i) + "[i + l]") + ", ";
  }
  for (size_t o = 0; o < k.outputs.size(); ++o) {
    const auto out = name_of('o', o);
    const auto w = name_of('w', o);
    line_starts += " && ((uintptr_t)(" + out + " + i) & 63) == 0";
    buffers +=
        cat("    alignas(64) ", storage_type(dtypes[static_cast<size_t>(k.outputs[o])]), " ", w, "[", line, "];\n");
    block_call += w + ", ";
    streams += cat("      nv_stream_lines(", out, " + i, ", w, ", sizeof(", w, "));\n");
  }
  src += "  int64_t i = begin;\n  for (; i < end && ((uintptr_t)(o0 + i) & 63) != 0; ++i) {\n    " + call(reads) +
         "i);\n  }\n";
  src += "  if (" + line_starts + ") {\n" + buffers + "    for (; i + " + line + " <= end; i += " + line +
         ") {\n      for (int64_t l = 0; l < " + line + "; ++l) {\n        " + block_call + "l);\n      }\n" +
         streams + "    }\n    nv_stream_fence();\n  }\n";
  src += "  for (; i < end; ++i) {\n    " + call(reads) + "i);\n  }\n}\n";

  // Rows of the iteration space: the inner axis walked with each input's stride.
  src += "extern \"C\" void nuvec_fused_strided(const void* const* in, void* const* out, const int64_t* shape, "
         "const int64_t* strides, int ndim, int64_t begin, int64_t end) {\n";
  pointers(src);
  src += "  const int64_t inner = ndim > 0 ? shape[ndim - 1] : 1;\n";
  src += "  int64_t index[64] = {0};\n  int64_t off[" + std::to_string(n_in + 1) + "] = {0};\n";
  src += "  int64_t rest = begin;\n  for (int d = ndim - 2; d >= 0; --d) { index[d] = rest % shape[d]; rest /= shape[d]; }\n";
  src += "  for (int64_t r = begin; r < end; ++r) {\n";
  src += "    for (int k = 0; k < " + std::to_string(n_in) + "; ++k) { off[k] = 0; for (int d = 0; d + 1 < ndim; ++d) "
         "off[k] += index[d] * strides[k * ndim + d]; }\n";
  reads.clear();
  for (size_t i = 0; i < n_in; ++i) {
    const auto s = std::to_string(i);
    src += cat("    const ", storage_type(dtypes[i]), "* __restrict q", s, " = p", s, " + off[", s, "];\n");
    src += cat("    const int64_t t", s, " = ndim > 0 ? strides[", s, " * ndim + ndim - 1] : 0;\n");
    reads.push_back(cat("q", s, "[j * t", s, "]"));
  }
  src += "    const int64_t base = r * inner;\n";
  src += "    for (int64_t j = 0; j < inner; ++j) {\n      " + call(reads) + "base + j);\n    }\n";
  src += "    for (int d = ndim - 2; d >= 0; --d) { if (++index[d] < shape[d]) break; index[d] = 0; }\n";
  src += "  }\n}\n";
  return src;
}

}  // namespace nuvec::detail
