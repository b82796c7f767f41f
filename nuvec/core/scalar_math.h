#pragma once

// Scalar math with numpy's semantics, shared by the CPU kernels and by compile's generated kernels: the generated
// source includes this very file (the library carries its text, see compile/jit.cpp), so a fused chain computes
// what the unfused kernels compute. Self-contained on purpose: standard headers only, and libm reached through
// GCC's builtins, which the generated source declares `omp declare simd` so that loops calling them vectorize.

#include <bit>
#include <cstdint>
#include <type_traits>

namespace nuvec::scalar {

template <class T>
concept Integer = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class T>
concept Float = std::is_same_v<T, float> || std::is_same_v<T, double>;

// ---------------------------------------------------------------- integers: numpy's results, no undefined behaviour

/// The unsigned type integer arithmetic wraps in: at least unsigned int, so that narrow types are not promoted to
/// (overflowing) int.
template <Integer T>
using wrap_t = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <Integer T>
inline T wrap_add(T a, T b) {
  return static_cast<T>(static_cast<wrap_t<T>>(a) + static_cast<wrap_t<T>>(b));
}
template <Integer T>
inline T wrap_sub(T a, T b) {
  return static_cast<T>(static_cast<wrap_t<T>>(a) - static_cast<wrap_t<T>>(b));
}
template <Integer T>
inline T wrap_mul(T a, T b) {
  return static_cast<T>(static_cast<wrap_t<T>>(a) * static_cast<wrap_t<T>>(b));
}
template <Integer T>
inline T wrap_neg(T a) {
  return wrap_sub(T(0), a);
}
/// |a|; the most negative value stays itself, as in numpy.
template <Integer T>
inline T wrap_abs(T a) {
  if constexpr (std::is_signed_v<T>) {
    return a < 0 ? wrap_neg(a) : a;
  } else {
    return a;
  }
}

/// numpy's //: the quotient rounded toward negative infinity; a // 0 is 0 and MIN // -1 wraps to MIN.
template <Integer T>
inline T floor_divide(T a, T b) {
  if (b == 0) {
    return 0;
  }
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) {
      return wrap_neg(a);
    }
    const auto q = static_cast<T>(a / b);
    return (a % b != 0 && (a < 0) != (b < 0)) ? static_cast<T>(q - 1) : q;
  } else {
    return static_cast<T>(a / b);
  }
}

/// numpy's %: the sign of the divisor; a % 0 is 0.
template <Integer T>
inline T remainder(T a, T b) {
  if (b == 0) {
    return 0;
  }
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) {
      return 0;
    }
    const auto r = static_cast<T>(a % b);
    return (r != 0 && (r < 0) != (b < 0)) ? static_cast<T>(r + b) : r;
  } else {
    return static_cast<T>(a % b);
  }
}

/// base ** exponent by repeated squaring, wrapping on overflow. A negative exponent gives 0 (numpy raises instead;
/// MLX, whose semantics nuvec follows, gives 0).
template <Integer T>
inline T power(T base, T exponent) {
  if constexpr (std::is_signed_v<T>) {
    if (exponent < 0) {
      return 0;
    }
  }
  T result = 1;
  for (; exponent != 0; exponent = static_cast<T>(exponent >> 1), base = wrap_mul(base, base)) {
    if ((exponent & 1) != 0) {
      result = wrap_mul(result, base);
    }
  }
  return result;
}

/// a << b; counts outside [0, bits) give 0, as numpy.
template <Integer T>
inline T shift_left(T a, T b) {
  if (static_cast<std::make_unsigned_t<T>>(b) >= sizeof(T) * 8) {
    return 0;
  }
  return static_cast<T>(static_cast<wrap_t<T>>(a) << b);
}

/// a >> b (arithmetic for signed types); counts outside [0, bits) give 0, or -1 for negative a, as numpy.
template <Integer T>
inline T shift_right(T a, T b) {
  if (static_cast<std::make_unsigned_t<T>>(b) >= sizeof(T) * 8) {
    return a < 0 ? T(-1) : T(0);
  }
  return static_cast<T>(a >> b);
}

// ---------------------------------------------------------------- conversions

/// A double converted to an integer as numpy's C casts do on x86: truncation toward zero, wrapping into narrower
/// types, and x86's "integer indefinite" (int64's minimum) for NaN and values out of int64's range.
template <class To>
  requires std::is_integral_v<To>
inline To float_to_int(double x) {
  if constexpr (std::is_same_v<To, uint64_t>) {
    if (x >= 9223372036854775808.0 && x < 18446744073709551616.0) {
      return static_cast<To>(x);
    }
  }
  if (x >= -9223372036854775808.0 && x < 9223372036854775808.0) {
    return static_cast<To>(static_cast<int64_t>(x));
  }
  return static_cast<To>(INT64_MIN);
}

/// float -> bfloat16 bits, to nearest even, branch-free so that loops vectorize; NaNs stay quiet NaNs with their
/// sign.
inline uint16_t bfloat16_bits(float x) {
  const auto bits = std::bit_cast<uint32_t>(x);
  const uint32_t rounded = (bits + 0x7FFFU + ((bits >> 16) & 1U)) >> 16;
  const uint32_t nan = (bits >> 16) | 0x40U;
  return static_cast<uint16_t>((bits & 0x7FFFFFFFU) > 0x7F800000U ? nan : rounded);
}
/// bfloat16 bits -> float: exact (bfloat16 is a float's top half).
inline float bfloat16_value(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

// ---------------------------------------------------------------- floating point

/// numpy's float %: fmod moved to the sign of the divisor; a zero result takes the divisor's sign.
template <Float T>
inline T remainder(T a, T b) {
  T mod;
  if constexpr (std::is_same_v<T, float>) {
    mod = __builtin_fmodf(a, b);
  } else {
    mod = __builtin_fmod(a, b);
  }
  if (b == 0) {
    return mod;
  }
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) {
      mod += b;
    }
  } else {
    if constexpr (std::is_same_v<T, float>) {
      mod = __builtin_copysignf(0.0f, b);
    } else {
      mod = __builtin_copysign(0.0, b);
    }
  }
  return mod;
}

/// log(e^a + e^b) without overflow; equal arguments (infinities included) give a + log 2.
template <Float T>
inline T logaddexp(T a, T b) {
  const T d = a - b;
  T r;
  if constexpr (std::is_same_v<T, float>) {
    r = (d > 0 ? a : b) + __builtin_log1pf(__builtin_expf(-__builtin_fabsf(d)));
  } else {
    r = (d > 0 ? a : b) + __builtin_log1p(__builtin_exp(-__builtin_fabs(d)));
  }
  return a == b ? a + T(0.693147180559945309) : r;
}

/// e^r for c in [-104, 0], n = round(c log2(e)) and r = c - n ln(2), as 1 + r (1 + r q(r)) with a degree 4 q (a
/// degree 6 polynomial in all, fitted like tanh's below): within 1 ulp.
inline float exp_mantissa(float c, float n) {
  float r = __builtin_fmaf(n, -0.693145751953125f, c);
  r = __builtin_fmaf(n, -1.42860677e-06f, r);
  float q = __builtin_fmaf(0.00139336439f, r, 0.00836317521f);
  q = __builtin_fmaf(q, r, 0.0416664667f);
  q = __builtin_fmaf(q, r, 0.166665763f);
  q = __builtin_fmaf(q, r, 0.5f);
  return __builtin_fmaf(r, __builtin_fmaf(r, q, 1.0f), 1.0f);
}

/// e^a for a <= 0 (NaN passes through) within 1 ulp, written out so that no call breaks a loop: 2^n e^r, the scale
/// applied as 2^(n+64) and then 2^-64 so that results down to the denormals round once; the exponent comes from the
/// rounding constant's bits (no float-to-int conversion).
inline float exp_nonpositive(float a) {
  const float c = a < -104.0f ? -104.0f : a;
  const float t = __builtin_fmaf(c, 1.44269502f, 12582912.0f);
  const float p = exp_mantissa(c, t - 12582912.0f);
  const float s = std::bit_cast<float>((std::bit_cast<uint32_t>(t) + 191U) << 23);
  return p * s * 5.421010862427522e-20f;
}

/// 1 / (1 + e^-x) from e = e^-|x|, so that neither side overflows or loses the tail.
inline float sigmoid(float x) {
  const float e = exp_nonpositive(-__builtin_fabsf(x));
  const float r = 1.0f / (1.0f + e);
  return x >= 0 ? r : e * r;
}
inline double sigmoid(double x) {
  const double e = __builtin_exp(-__builtin_fabs(x));
  const double r = 1.0 / (1.0 + e);
  return x >= 0 ? r : e * r;
}

/// x * sigmoid(x) as (x >= 0 ? x : x e) / (1 + e), e = e^-|x|: one division and no select of the sigmoid's two forms
/// (8% less time a lane than the product of sigmoid and x, which rounds twice more). Integer steps where the exp
/// takes float ones (9% less time again, same results): -|x| clamped to -104 as the unsigned minimum of the bits of
/// x with the sign set and those of -104, and e's exponent added to its mantissa's bits. Both turn a NaN x into a
/// finite e, which the product x e carries through as NaN.
inline float silu(float x) {
  const uint32_t a = std::bit_cast<uint32_t>(x) | 0x80000000U;
  const float c = std::bit_cast<float>(a < 0xc2d00000U ? a : 0xc2d00000U);  // -104.0f
  // The rounding constant 1.5 2^23 + 64 leaves n + 64 in t's low bits: p 2^(n+64) is normal for every n >= -150 and
  // the product by 2^-64 rounds a denormal e once.
  const float t = __builtin_fmaf(c, 1.44269502f, 12582976.0f);
  const uint32_t p = std::bit_cast<uint32_t>(exp_mantissa(c, t - 12582976.0f));
  const float e = std::bit_cast<float>(p + (std::bit_cast<uint32_t>(t) << 23)) * 5.421010862427522e-20f;
  return (x >= 0 ? x : x * e) / (1.0f + e);
}
inline double silu(double x) {
  const double e = __builtin_exp(-__builtin_fabs(x));
  return (x >= 0 ? x : x * e) / (1.0 + e);
}

/// tanh of a float as x P(x^2) / Q(x^2), degrees 4 and 4 (fitted to tanh(x) / x on [0, 9.02] for relative error by
/// reweighted least squares; within 5 ulp of the correctly rounded result as evaluated in float, checked over every
/// 7th float), 1 beyond 9.02 where tanh rounds to 1. No calls, so GCC vectorizes it: 0.26 ns an element where glibc's
/// vector tanhf takes 0.40.
inline float tanh_rational(float x) {
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

/// One Halley step on erf(y) - |x|: f' = 2/sqrt(pi) e^-y^2, f'' = -2 y f'; the residual from erfc above |x| = 0.5,
/// where it keeps its relative accuracy. Both residuals are computed: GCC does not if-convert a select between calls.
inline double erfinv_step(double y, double ax) {
  const double near = __builtin_erf(y) - ax;
  const double far = (1.0 - ax) - __builtin_erfc(y);
  const double residual = ax <= 0.5 ? near : far;
  const double u = residual / (1.1283791670955126 * __builtin_exp(-y * y));
  return y - u / (1.0 + y * u);
}

/// The inverse error function in double: Giles' start ("Approximating the erfinv function", GPU Computing Gems,
/// 2010; relative error about 1e-7 for |x| < 1 - 6e-8) polished by `steps` Halley steps (cubic: 1e-7 -> 1e-21), one
/// more in the far tail (the 1e-1 start of doubles beyond float's range -> 1e-3 -> 1e-9 -> exact). Fixed-count
/// loops and selects, no branches, so that loops around it vectorize.
inline double erfinv(double x, int steps) {
  const double ax = __builtin_fabs(x);
  const double w = -__builtin_log((1.0 - ax) * (1.0 + ax));
  constexpr double central[] = {2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                                -0.00125372503, -0.00417768164, 0.246640727,    1.50140941};
  constexpr double tail[] = {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                             -0.0076224613,   0.00943887047,  1.00167406,    2.83297682};
  const double c = w - 2.5;
  const double t = __builtin_sqrt(w) - 3.0;
  double a = 0.0;
  double b = 0.0;
  for (int i = 0; i < 9; ++i) {
    a = central[i] + a * c;
    b = tail[i] + b * t;
  }
  double y = (w < 5.0 ? a : b) * ax;
  for (int i = 0; i < steps; ++i) {
    y = erfinv_step(y, ax);
  }
  const double tail_step = erfinv_step(y, ax);
  y = 1.0 - ax < 5e-8 ? tail_step : y;
  // y is 0 for x = +-0, so the sign carries it; selects between constants, which GCC if-converts.
  const double edge = ax == 1.0 ? __builtin_inf() : __builtin_nan("");
  return __builtin_copysign(ax < 1.0 ? y : edge, x);
}
/// erfinv rounded to float (one Halley step is exact to float's precision) or double (two).
inline float erfinv(float x) { return static_cast<float>(erfinv(static_cast<double>(x), 1)); }
inline double erfinv(double x) { return erfinv(x, 2); }

}  // namespace nuvec::scalar
