#pragma once

// e^x of float vectors: for non-positive arguments (the kernels whose exponentials never exceed 1: softmax rows and
// attention (x - max), and tanh's large arguments (e^-2|x|)), and on AVX-512 over the whole float range (exp itself).

#include <type_traits>

#include "nuvec/cpu/highway.h"

// Highway's extras, included once nuvec/cpu/highway.h has chosen static dispatch.
#include <hwy/contrib/math/math-inl.h>

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
#include <immintrin.h>
#define NUVEC_CPU_EXP_SCALEF 1
#endif

namespace nuvec::cpu {

namespace exp_detail {

/// 2^n p(r) for c in [-104, 89]: n = round(c / ln 2) (the rounding constant's addition rounds, so n is exact),
/// r = c - n ln 2 in two steps, p(r) = e^r by a degree-6 polynomial (within 1 ulp); `scale(p, n, t)` applies 2^n
/// (t: c / ln 2 plus the rounding constant, whose low bits hold n).
template <class D, class Scale>
HWY_INLINE hn::Vec<D> exp_of_clamped(D d, hn::Vec<D> c, const Scale& scale) {
  const auto rounding = hn::Set(d, 12582912.0F);  // 1.5 * 2^23: adding it rounds to an integer, n in the low bits
  const auto t = hn::MulAdd(c, hn::Set(d, 1.44269502F), rounding);
  const auto n = hn::Sub(t, rounding);
  auto r = hn::MulAdd(n, hn::Set(d, -0.693145751953125F), c);
  r = hn::MulAdd(n, hn::Set(d, -1.42860677e-06F), r);
  auto q = hn::MulAdd(hn::Set(d, 0.00139336439F), r, hn::Set(d, 0.00836317521F));
  q = hn::MulAdd(q, r, hn::Set(d, 0.0416664667F));
  q = hn::MulAdd(q, r, hn::Set(d, 0.166665763F));
  q = hn::MulAdd(q, r, hn::Set(d, 0.5F));
  const auto one = hn::Set(d, 1.0F);
  return scale(hn::MulAdd(r, hn::MulAdd(r, q, one), one), n, t);
}

#ifdef NUVEC_CPU_EXP_SCALEF
/// e^min(max(x, -104), High) with a NaN x kept (vminps/vmaxps return their second operand when either is NaN), 2^n
/// applied by vscalefps: one rounding down to the denormals, +inf past the largest float. (The zero-masked forms with
/// every lane kept are the plain instructions; GCC 12's unmasked intrinsics warn of an uninitialized operand.)
template <int High>
HWY_INLINE __m512 exp_below(__m512 x) {
  const auto all = static_cast<__mmask16>(0xFFFF);
  const __m512 c = _mm512_maskz_max_ps(all, _mm512_set1_ps(-104.0F),
                                       _mm512_maskz_min_ps(all, _mm512_set1_ps(static_cast<float>(High)), x));
  const hn::Simd<float, 16, 0> d;
  const auto scale = [&](auto p, auto n, auto) { return hn::Vec512<float>{_mm512_maskz_scalef_ps(all, p.raw, n.raw)}; };
  return exp_of_clamped(d, hn::Vec512<float>{c}, scale).raw;
}
#endif

}  // namespace exp_detail

/// e^x for x <= 0 (larger x count as 0; NaN passes through), within 1 ulp, as compile's generated exp; a row's
/// x - max is never positive. On AVX-512 the clamps are vmaxps/vminps and 2^n is one vscalefps (6 vector operations
/// fewer than compares, blends and the exponent-field route: tanh 0.34 -> 0.29 ns a float in L1 on this Zen 5);
/// elsewhere 2^(n+64) from the rounding constant's bits and then 2^-64, so that results down to the denormals round
/// once. Both are half the time of Highway's general Exp. float64 keeps Highway's Exp.
template <class D>
HWY_INLINE hn::Vec<D> exp_nonpositive(D d, hn::Vec<D> x) {
  using T = hn::TFromD<D>;
  if constexpr (!std::is_same_v<T, float>) {
    return hn::Exp(d, hn::IfThenElse(hn::Gt(x, hn::Zero(d)), hn::Zero(d), x));
  } else {
#ifdef NUVEC_CPU_EXP_SCALEF
    if constexpr (sizeof(hn::Vec<D>) == 64) {
      return hn::Vec<D>{exp_detail::exp_below<0>(x.raw)};
    }
#endif
    const hn::RebindToUnsigned<D> du;
    const auto low = hn::Set(d, -104.0F);
    const auto c = hn::IfThenElse(hn::Gt(x, hn::Zero(d)), hn::Zero(d), hn::IfThenElse(hn::Lt(x, low), low, x));
    return exp_detail::exp_of_clamped(d, c, [&](auto p, auto, auto t) {
      // 2^(n+64): n + 64 + 127 in the exponent field (n >= -150 keeps it positive); a NaN p stays NaN.
      const auto scale = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(hn::BitCast(du, t), hn::Set(du, 191U))));
      return hn::Mul(hn::Mul(p, scale), hn::Set(d, 5.421010862427522e-20F));
    });
  }
}

}  // namespace nuvec::cpu
