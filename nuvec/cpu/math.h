#pragma once

// The math functions the element-wise functors call, as one overload set per
// function over float, double, complex64 and the SIMD vectors:
//   - scalars use the C++ library (correctly rounded or within an ulp);
//   - vectors use SLEEF's AVX-512 functions of 1.0 ulp (the `_u10` family),
//     measured here against Highway's contrib math: SLEEF is as fast or faster
//     for exp and keeps special values (NaN, inf, huge arguments of sin) right,
//     where Highway 1.0.3 maps log(-1) or exp(NaN) to numbers and needs up to
//     4 ulp (tanh, expm1, sinh).
// float exp and tanh are the exceptions: exp_nonpositive.h's reduction and polynomial with 2^n applied by AVX-512's
// vscalefps, tanh composed from the exp of non-positive arguments (see tanh below).
// A function without a vector overload on the target (SLEEF needs AVX-512 here)
// simply leaves the functors that use it on their scalar path.

#include <cmath>
#include <complex>
#include <concepts>
#include <limits>
#include <numbers>

#include "nuvec/core/half.h"
#include "nuvec/core/scalar_math.h"
#include "nuvec/cpu/exp_nonpositive.h"
#include "nuvec/cpu/simd.h"

#if defined(__AVX512F__) && HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
#include <sleef.h>
#define NUVEC_CPU_SLEEF_AVX512 1
#endif

namespace nuvec::cpu::math {

using simd::Vec;

/// Scalar floating types the library's functions take.
using scalar::Float;
template <class T>
concept Complex = std::same_as<T, complex64_t>;
/// Real values: scalars or vectors of them.
template <class T>
concept Real = Float<T> || simd::is_vec<T>;
template <class T>
concept FloatOrComplex = Float<T> || Complex<T>;

// ---------------------------------------------------------------- scalars and complex64

template <FloatOrComplex T>
T exp(T x) {
  return std::exp(x);
}
template <FloatOrComplex T>
T log(T x) {
  return std::log(x);
}
template <FloatOrComplex T>
T log10(T x) {
  return std::log10(x);
}
template <FloatOrComplex T>
T sqrt(T x) {
  return std::sqrt(x);
}
template <FloatOrComplex T>
T sin(T x) {
  return std::sin(x);
}
template <FloatOrComplex T>
T cos(T x) {
  return std::cos(x);
}
template <FloatOrComplex T>
T tan(T x) {
  return std::tan(x);
}
template <FloatOrComplex T>
T asin(T x) {
  return std::asin(x);
}
template <FloatOrComplex T>
T acos(T x) {
  return std::acos(x);
}
template <FloatOrComplex T>
T atan(T x) {
  return std::atan(x);
}
template <FloatOrComplex T>
T sinh(T x) {
  return std::sinh(x);
}
template <FloatOrComplex T>
T cosh(T x) {
  return std::cosh(x);
}
template <FloatOrComplex T>
T tanh(T x) {
  return std::tanh(x);
}
template <FloatOrComplex T>
T asinh(T x) {
  return std::asinh(x);
}
template <FloatOrComplex T>
T acosh(T x) {
  return std::acosh(x);
}
template <FloatOrComplex T>
T atanh(T x) {
  return std::atanh(x);
}
template <Float T>
T pow(T x, T y) {
  return std::pow(x, y);
}

template <Float T>
T expm1(T x) {
  return std::expm1(x);
}
template <Float T>
T log2(T x) {
  return std::log2(x);
}
template <Float T>
T log1p(T x) {
  return std::log1p(x);
}
template <Float T>
T erf(T x) {
  return std::erf(x);
}
template <Float T>
T atan2(T y, T x) {
  return std::atan2(y, x);
}
template <Float T>
T abs(T x) {
  return std::fabs(x);
}
template <Float T>
T floor(T x) {
  return std::floor(x);
}
template <Float T>
T ceil(T x) {
  return std::ceil(x);
}
/// To nearest, ties to even (the default rounding mode).
template <Float T>
T rint(T x) {
  return std::nearbyint(x);
}
template <Float T>
bool isnan(T x) {
  return std::isnan(x);
}
template <Float T>
bool isinf(T x) {
  return std::isinf(x);
}

// std::complex lacks these; precise enough away from the cancellations the real versions exist for.
// (Templates, so that an integer argument does not convert to complex64 and pick them.)
template <Complex T>
T expm1(T x) {
  return std::exp(x) - 1.0F;
}
template <Complex T>
T log2(T x) {
  return std::log(x) / std::numbers::ln2_v<float>;
}
template <Complex T>
T log1p(T x) {
  return std::log(1.0F + x);
}
template <Complex T>
float abs(T x) {
  return std::abs(x);
}
template <Complex T>
bool isnan(T x) {
  return std::isnan(x.real()) || std::isnan(x.imag());
}
template <Complex T>
bool isinf(T x) {
  return std::isinf(x.real()) || std::isinf(x.imag());
}

/// numpy's complex power: x**0 is 1, 0**y is 0 for real y > 0 (NaN otherwise), and
/// small integer exponents multiply exactly instead of going through exp(y log x).
template <Complex T>
T pow(T x, T y) {
  if (y == T(0)) {
    return T(1);
  }
  if (x == T(0)) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    return y.real() > 0 && y.imag() == 0 ? T(0) : T(nan, nan);
  }
  if (y.imag() == 0 && y.real() == std::trunc(y.real()) && std::fabs(y.real()) < 100) {
    auto n = static_cast<int>(std::fabs(y.real()));
    T result(1);
    for (T base = x; n != 0; n >>= 1, base *= base) {
      if ((n & 1) != 0) {
        result *= base;
      }
    }
    return y.real() < 0 ? T(1) / result : result;
  }
  return std::pow(x, y);
}

// ---------------------------------------------------------------- integers (numpy's semantics, no UB)
// The scalar functions live in core/scalar_math.h, which compile's generated kernels include too.

template <class T>
concept Bool = std::same_as<T, bool>;
using scalar::Integer;

using scalar::floor_divide;
using scalar::power;
using scalar::remainder;
using scalar::shift_left;
using scalar::shift_right;
using scalar::wrap_abs;
using scalar::wrap_add;
using scalar::wrap_mul;
using scalar::wrap_neg;
using scalar::wrap_sub;
using scalar::wrap_t;

// ---------------------------------------------------------------- vectors (every target)

template <simd::Lane T>
Vec<T> abs(Vec<T> x) {
  return Vec<T>(simd::hn::Abs(x.raw));
}
template <simd::Lane T>
Vec<T> sqrt(Vec<T> x) {
  return Vec<T>(simd::hn::Sqrt(x.raw));
}
template <simd::Lane T>
Vec<T> floor(Vec<T> x) {
  return Vec<T>(simd::hn::Floor(x.raw));
}
template <simd::Lane T>
Vec<T> ceil(Vec<T> x) {
  return Vec<T>(simd::hn::Ceil(x.raw));
}
template <simd::Lane T>
Vec<T> rint(Vec<T> x) {
  return Vec<T>(simd::hn::Round(x.raw));
}
template <simd::Lane T>
simd::Mask<T> isnan(Vec<T> x) {
  return {simd::hn::IsNaN(x.raw)};
}

// ---------------------------------------------------------------- vectors (SLEEF, AVX-512)

#ifdef NUVEC_CPU_SLEEF_AVX512
namespace sleef {
inline Vec<float> wrap(__m512 r) { return Vec<float>(simd::hn::Vec512<float>{r}); }
inline Vec<double> wrap(__m512d r) { return Vec<double>(simd::hn::Vec512<double>{r}); }
}  // namespace sleef

/// e^x of float lanes within 1 ulp in about 60% of SLEEF's expf16_u10 time (exp_nonpositive.h's reduction and
/// polynomial, 2^n by vscalefps: 0.11 against 0.18 ns a float on one core, L1-resident).
inline Vec<float> exp(Vec<float> x) { return sleef::wrap(exp_detail::exp_below<89>(x.raw.raw)); }
inline Vec<double> exp(Vec<double> x) { return sleef::wrap(Sleef_expd8_u10(x.raw.raw)); }
inline Vec<float> expm1(Vec<float> x) { return sleef::wrap(Sleef_expm1f16_u10(x.raw.raw)); }
inline Vec<double> expm1(Vec<double> x) { return sleef::wrap(Sleef_expm1d8_u10(x.raw.raw)); }
inline Vec<float> log(Vec<float> x) { return sleef::wrap(Sleef_logf16_u10(x.raw.raw)); }
inline Vec<double> log(Vec<double> x) { return sleef::wrap(Sleef_logd8_u10(x.raw.raw)); }
inline Vec<float> log2(Vec<float> x) { return sleef::wrap(Sleef_log2f16_u10(x.raw.raw)); }
inline Vec<double> log2(Vec<double> x) { return sleef::wrap(Sleef_log2d8_u10(x.raw.raw)); }
inline Vec<float> log10(Vec<float> x) { return sleef::wrap(Sleef_log10f16_u10(x.raw.raw)); }
inline Vec<double> log10(Vec<double> x) { return sleef::wrap(Sleef_log10d8_u10(x.raw.raw)); }
inline Vec<float> log1p(Vec<float> x) { return sleef::wrap(Sleef_log1pf16_u10(x.raw.raw)); }
inline Vec<double> log1p(Vec<double> x) { return sleef::wrap(Sleef_log1pd8_u10(x.raw.raw)); }
inline Vec<float> sin(Vec<float> x) { return sleef::wrap(Sleef_sinf16_u10(x.raw.raw)); }
inline Vec<double> sin(Vec<double> x) { return sleef::wrap(Sleef_sind8_u10(x.raw.raw)); }
inline Vec<float> cos(Vec<float> x) { return sleef::wrap(Sleef_cosf16_u10(x.raw.raw)); }
inline Vec<double> cos(Vec<double> x) { return sleef::wrap(Sleef_cosd8_u10(x.raw.raw)); }
inline Vec<float> tan(Vec<float> x) { return sleef::wrap(Sleef_tanf16_u10(x.raw.raw)); }
inline Vec<double> tan(Vec<double> x) { return sleef::wrap(Sleef_tand8_u10(x.raw.raw)); }
inline Vec<float> asin(Vec<float> x) { return sleef::wrap(Sleef_asinf16_u10(x.raw.raw)); }
inline Vec<double> asin(Vec<double> x) { return sleef::wrap(Sleef_asind8_u10(x.raw.raw)); }
inline Vec<float> acos(Vec<float> x) { return sleef::wrap(Sleef_acosf16_u10(x.raw.raw)); }
inline Vec<double> acos(Vec<double> x) { return sleef::wrap(Sleef_acosd8_u10(x.raw.raw)); }
inline Vec<float> atan(Vec<float> x) { return sleef::wrap(Sleef_atanf16_u10(x.raw.raw)); }
inline Vec<double> atan(Vec<double> x) { return sleef::wrap(Sleef_atand8_u10(x.raw.raw)); }
inline Vec<float> sinh(Vec<float> x) { return sleef::wrap(Sleef_sinhf16_u10(x.raw.raw)); }
inline Vec<double> sinh(Vec<double> x) { return sleef::wrap(Sleef_sinhd8_u10(x.raw.raw)); }
inline Vec<float> cosh(Vec<float> x) { return sleef::wrap(Sleef_coshf16_u10(x.raw.raw)); }
inline Vec<double> cosh(Vec<double> x) { return sleef::wrap(Sleef_coshd8_u10(x.raw.raw)); }
/// tanh of float lanes in 1.5 ulp at a quarter of the cost of SLEEF's tanhf16_u10 (0.26 against 0.96 ns an element
/// on one Zen 4 core, L1-resident), whose speed matters for GELU: below |x| = 0.9 an odd polynomial, x + x^3 P(x^2)
/// (P fitted to (tanh x - x) / x^3 by least squares on Chebyshev nodes, its error measured over every float in
/// [1e-30, 0.9]); above, (1 - e) / (1 + e) with e = e^-2|x| < 0.17 from the exp of non-positive arguments, whose
/// three roundings stay within 1.5 ulp there (0.33 ns an element as 1 - 2 / (e^2|x| + 1) with SLEEF's exp).
inline Vec<float> tanh(Vec<float> x) {
  namespace hn = simd::hn;
  const Vec<float>::Tag d;
  const Vec<float> a = abs(x);
  const auto t = hn::Mul(a.raw, a.raw);
  auto p = hn::Set(d, -0.0005229779053479433F);
  for (float c : {0.0027655360754579306F, -0.008456761948764324F, 0.021761905401945114F, -0.05395437031984329F,
                  0.13333265483379364F, -0.3333333134651184F}) {
    p = hn::MulAdd(p, t, hn::Set(d, c));
  }
  const Vec<float> small(hn::MulAdd(hn::Mul(a.raw, t), p, a.raw));
  const auto e = exp_nonpositive(d, hn::Mul(a.raw, hn::Set(d, -2.0F)));
  const auto one = hn::Set(d, 1.0F);
  const Vec<float> large(hn::Div(hn::Sub(one, e), hn::Add(one, e)));
  // tanh(|x|) with x's sign: odd, and -0 stays -0.
  return Vec<float>(hn::CopySign(simd::select(a < Vec<float>(0.9F), small, large).raw, x.raw));
}
inline Vec<double> tanh(Vec<double> x) { return sleef::wrap(Sleef_tanhd8_u10(x.raw.raw)); }
inline Vec<float> asinh(Vec<float> x) { return sleef::wrap(Sleef_asinhf16_u10(x.raw.raw)); }
inline Vec<double> asinh(Vec<double> x) { return sleef::wrap(Sleef_asinhd8_u10(x.raw.raw)); }
inline Vec<float> acosh(Vec<float> x) { return sleef::wrap(Sleef_acoshf16_u10(x.raw.raw)); }
inline Vec<double> acosh(Vec<double> x) { return sleef::wrap(Sleef_acoshd8_u10(x.raw.raw)); }
inline Vec<float> atanh(Vec<float> x) { return sleef::wrap(Sleef_atanhf16_u10(x.raw.raw)); }
inline Vec<double> atanh(Vec<double> x) { return sleef::wrap(Sleef_atanhd8_u10(x.raw.raw)); }
inline Vec<float> erf(Vec<float> x) { return sleef::wrap(Sleef_erff16_u10(x.raw.raw)); }
inline Vec<double> erf(Vec<double> x) { return sleef::wrap(Sleef_erfd8_u10(x.raw.raw)); }
inline Vec<float> atan2(Vec<float> y, Vec<float> x) { return sleef::wrap(Sleef_atan2f16_u10(y.raw.raw, x.raw.raw)); }
inline Vec<double> atan2(Vec<double> y, Vec<double> x) { return sleef::wrap(Sleef_atan2d8_u10(y.raw.raw, x.raw.raw)); }
inline Vec<float> pow(Vec<float> x, Vec<float> y) { return sleef::wrap(Sleef_powf16_u10(x.raw.raw, y.raw.raw)); }
inline Vec<double> pow(Vec<double> x, Vec<double> y) { return sleef::wrap(Sleef_powd8_u10(x.raw.raw, y.raw.raw)); }
#endif

/// Real types with the vector math a composite functor (sigmoid, logaddexp) needs.
template <class T>
concept RealMath = Real<T> && requires(T x) {
  math::exp(x);
  math::log1p(x);
};

// ---------------------------------------------------------------- erfinv

using scalar::erfinv;

}  // namespace nuvec::cpu::math

namespace nuvec::cpu {

// The element kinds the functors of unary.cpp and binary.cpp overload on.
using math::Bool;
using math::Complex;
using math::Float;
using math::Integer;
using math::RealMath;
template <class T>
concept RealOrComplex = math::Real<T> || Complex<T>;

}  // namespace nuvec::cpu
