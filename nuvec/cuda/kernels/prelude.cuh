// The start of every generated CUDA kernel: element types, numpy's scalar math (nuvec/core/scalar_math.h, the very
// header the CPU kernels use, so the GPU computes what the CPU computes), and GCC's math builtins, which that header
// and the expression generator call, as CUDA's math functions. Compiled by NVRTC with -default-device: plain
// functions are device functions.
#pragma once
#include <cstdint>

#define NV_MATH1(name)                                                    \
  inline float __builtin_##name##f(float x) { return ::name##f(x); }      \
  inline double __builtin_##name(double x) { return ::name(x); }
#define NV_MATH2(name)                                                                     \
  inline float __builtin_##name##f(float x, float y) { return ::name##f(x, y); }           \
  inline double __builtin_##name(double x, double y) { return ::name(x, y); }
NV_MATH1(exp) NV_MATH1(expm1) NV_MATH1(exp2) NV_MATH1(log) NV_MATH1(log2) NV_MATH1(log10) NV_MATH1(log1p)
NV_MATH1(sin) NV_MATH1(cos) NV_MATH1(tan) NV_MATH1(asin) NV_MATH1(acos) NV_MATH1(atan)
NV_MATH1(sinh) NV_MATH1(cosh) NV_MATH1(tanh) NV_MATH1(asinh) NV_MATH1(acosh) NV_MATH1(atanh)
NV_MATH1(erf) NV_MATH1(erfc) NV_MATH1(sqrt) NV_MATH1(cbrt) NV_MATH1(fabs) NV_MATH1(floor) NV_MATH1(ceil)
NV_MATH1(rint) NV_MATH1(round) NV_MATH1(trunc)
NV_MATH2(pow) NV_MATH2(atan2) NV_MATH2(fmod) NV_MATH2(copysign) NV_MATH2(fmax) NV_MATH2(fmin) NV_MATH2(hypot)
#undef NV_MATH1
#undef NV_MATH2
inline float __builtin_fmaf(float a, float b, float c) { return ::fmaf(a, b, c); }
inline double __builtin_fma(double a, double b, double c) { return ::fma(a, b, c); }
inline double __builtin_inf() { return __longlong_as_double(0x7ff0000000000000LL); }
inline float __builtin_inff() { return __int_as_float(0x7f800000); }
inline double __builtin_nan(const char*) { return __longlong_as_double(0x7ff8000000000000LL); }
inline float __builtin_nanf(const char*) { return __int_as_float(0x7fc00000); }
template <class T>
inline bool __builtin_isinf(T x) { return ::isinf(x); }
template <class T>
inline bool __builtin_isnan(T x) { return ::isnan(x); }

/// float16 storage: IEEE half bits, converted by the hardware (round to nearest even).
struct nv_half {
  unsigned short bits;
  nv_half() = default;
  nv_half(float x) { asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(x)); }
  nv_half(double x) { asm("cvt.rn.f16.f64 %0, %1;" : "=h"(bits) : "d"(x)); }
  nv_half(int x) : nv_half(static_cast<float>(x)) {}
  nv_half(long long x) : nv_half(static_cast<float>(x)) {}
  nv_half(unsigned x) : nv_half(static_cast<float>(x)) {}
  nv_half(unsigned long long x) : nv_half(static_cast<float>(x)) {}
  nv_half(bool x) : nv_half(x ? 1.0f : 0.0f) {}
  operator float() const {
    float x;
    asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(bits));
    return x;
  }
};
#define _Float16 nv_half

#include "nuvec/core/scalar_math.h"
namespace nv = nuvec::scalar;
