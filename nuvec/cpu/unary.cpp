// CPU kernels of the unary element-wise primitives: one kernel template
// (`unary_kernel`) and one functor per primitive. A functor's call operator
// exists only for the element types the op is defined on; the kernel asks for
// it with a requires-expression, so a dtype the op layer rejects is never
// instantiated. Functors written for a generic T also run on SIMD vectors.

#include <cstring>
#include <string>

#include "nuvec/core/dispatch.h"
#include "nuvec/cpu/elementwise.h"
#include "nuvec/cpu/elementwise_range.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/math.h"

namespace nuvec::cpu {

namespace {

using simd::select;

// ---------------------------------------------------------------- functors

struct AbsFn {
  template <Integer T>
  T operator()(T x) const {
    return math::wrap_abs(x);
  }
  auto operator()(auto x) const -> decltype(math::abs(x)) { return math::abs(x); }
};

struct NegativeFn {
  template <Integer T>
  T operator()(T x) const {
    return math::wrap_neg(x);
  }
  template <RealOrComplex T>
  T operator()(T x) const {
    return -x;
  }
};

struct SignFn {
  template <Integer T>
  T operator()(T x) const {
    return static_cast<T>((x > 0) - (x < 0));
  }
  /// -1, 0 or 1; NaN stays NaN (and zero keeps its sign).
  template <math::Real T>
  T operator()(T x) const {
    return select(x > T(0), T(1), select(x < T(0), T(-1), x));
  }
  /// x / |x|, and 0 for 0.
  template <Complex T>
  T operator()(T x) const {
    return x == T(0) ? T(0) : x / std::abs(x);
  }
};

struct FloorFn {
  auto operator()(auto x) const -> decltype(math::floor(x)) { return math::floor(x); }
};
struct CeilFn {
  auto operator()(auto x) const -> decltype(math::ceil(x)) { return math::ceil(x); }
};
/// Half to even, as numpy.
struct RoundFn {
  auto operator()(auto x) const -> decltype(math::rint(x)) { return math::rint(x); }
};

struct SquareFn {
  template <Bool T>
  T operator()(T x) const {
    return x;
  }
  template <Integer T>
  T operator()(T x) const {
    return math::wrap_mul(x, x);
  }
  template <RealOrComplex T>
  T operator()(T x) const {
    return x * x;
  }
};

struct SqrtFn {
  auto operator()(auto x) const -> decltype(math::sqrt(x)) { return math::sqrt(x); }
};
struct RsqrtFn {
  template <RealOrComplex T>
  T operator()(T x) const {
    return T(1) / math::sqrt(x);
  }
};
struct ReciprocalFn {
  template <RealOrComplex T>
  T operator()(T x) const {
    return T(1) / x;
  }
};

struct ExpFn {
  auto operator()(auto x) const -> decltype(math::exp(x)) { return math::exp(x); }
};
struct Expm1Fn {
  auto operator()(auto x) const -> decltype(math::expm1(x)) { return math::expm1(x); }
};
struct LogFn {
  auto operator()(auto x) const -> decltype(math::log(x)) { return math::log(x); }
};
struct Log2Fn {
  auto operator()(auto x) const -> decltype(math::log2(x)) { return math::log2(x); }
};
struct Log10Fn {
  auto operator()(auto x) const -> decltype(math::log10(x)) { return math::log10(x); }
};
struct Log1pFn {
  auto operator()(auto x) const -> decltype(math::log1p(x)) { return math::log1p(x); }
};
struct SinFn {
  auto operator()(auto x) const -> decltype(math::sin(x)) { return math::sin(x); }
};
struct CosFn {
  auto operator()(auto x) const -> decltype(math::cos(x)) { return math::cos(x); }
};
struct TanFn {
  auto operator()(auto x) const -> decltype(math::tan(x)) { return math::tan(x); }
};
struct ArcSinFn {
  auto operator()(auto x) const -> decltype(math::asin(x)) { return math::asin(x); }
};
struct ArcCosFn {
  auto operator()(auto x) const -> decltype(math::acos(x)) { return math::acos(x); }
};
struct ArcTanFn {
  auto operator()(auto x) const -> decltype(math::atan(x)) { return math::atan(x); }
};
struct SinhFn {
  auto operator()(auto x) const -> decltype(math::sinh(x)) { return math::sinh(x); }
};
struct CoshFn {
  auto operator()(auto x) const -> decltype(math::cosh(x)) { return math::cosh(x); }
};
struct TanhFn {
  auto operator()(auto x) const -> decltype(math::tanh(x)) { return math::tanh(x); }
};
struct ArcSinhFn {
  auto operator()(auto x) const -> decltype(math::asinh(x)) { return math::asinh(x); }
};
struct ArcCoshFn {
  auto operator()(auto x) const -> decltype(math::acosh(x)) { return math::acosh(x); }
};
struct ArcTanhFn {
  auto operator()(auto x) const -> decltype(math::atanh(x)) { return math::atanh(x); }
};
struct ErfFn {
  auto operator()(auto x) const -> decltype(math::erf(x)) { return math::erf(x); }
};
struct ErfInvFn {
  template <Float T>
  T operator()(T x) const {
    return math::erfinv(x);
  }
};

/// 1 / (1 + e^-x) from e = e^-|x|, so neither side overflows or loses the tail.
struct SigmoidFn {
  template <RealMath T>
  T operator()(T x) const {
    const T e = math::exp(-math::abs(x));
    const T r = T(1) / (T(1) + e);
    return select(x >= T(0), r, e * r);
  }
  template <Complex T>
  T operator()(T x) const {
    return T(1) / (T(1) + std::exp(-x));
  }
};

struct ConjugateFn {
  template <Complex T>
  T operator()(T x) const {
    return std::conj(x);
  }
};
struct RealFn {
  template <Complex T>
  float operator()(T x) const {
    return x.real();
  }
};
struct ImagFn {
  template <Complex T>
  float operator()(T x) const {
    return x.imag();
  }
};

struct IsNaNFn {
  template <class T>
  requires Float<T> || Complex<T>
  bool operator()(T x) const { return math::isnan(x); }
};
struct IsInfFn {
  template <class T>
  requires Float<T> || Complex<T>
  bool operator()(T x) const { return math::isinf(x); }
};

struct LogicalNotFn {
  // Tests the stored byte: GCC 12 vectorizes that, but not `!x` on bool.
  template <Bool T>
  T operator()(T x) const {
    uint8_t byte = 0;
    std::memcpy(&byte, &x, 1);
    return byte == 0;
  }
};
struct BitwiseInvertFn {
  template <Integer T>
  T operator()(T x) const {
    return static_cast<T>(~x);
  }
};

// One overload per unary primitive: a primitive without one fails to compile in cpu::unary.
AbsFn functor(const Abs&) { return {}; }
NegativeFn functor(const Negative&) { return {}; }
SignFn functor(const Sign&) { return {}; }
FloorFn functor(const Floor&) { return {}; }
CeilFn functor(const Ceil&) { return {}; }
RoundFn functor(const Round&) { return {}; }
SquareFn functor(const Square&) { return {}; }
SqrtFn functor(const Sqrt&) { return {}; }
RsqrtFn functor(const Rsqrt&) { return {}; }
ReciprocalFn functor(const Reciprocal&) { return {}; }
ExpFn functor(const Exp&) { return {}; }
Expm1Fn functor(const Expm1&) { return {}; }
LogFn functor(const Log&) { return {}; }
Log2Fn functor(const Log2&) { return {}; }
Log10Fn functor(const Log10&) { return {}; }
Log1pFn functor(const Log1p&) { return {}; }
SinFn functor(const Sin&) { return {}; }
CosFn functor(const Cos&) { return {}; }
TanFn functor(const Tan&) { return {}; }
ArcSinFn functor(const ArcSin&) { return {}; }
ArcCosFn functor(const ArcCos&) { return {}; }
ArcTanFn functor(const ArcTan&) { return {}; }
SinhFn functor(const Sinh&) { return {}; }
CoshFn functor(const Cosh&) { return {}; }
TanhFn functor(const Tanh&) { return {}; }
ArcSinhFn functor(const ArcSinh&) { return {}; }
ArcCoshFn functor(const ArcCosh&) { return {}; }
ArcTanhFn functor(const ArcTanh&) { return {}; }
SigmoidFn functor(const Sigmoid&) { return {}; }
ErfFn functor(const Erf&) { return {}; }
ErfInvFn functor(const ErfInv&) { return {}; }
ConjugateFn functor(const Conjugate&) { return {}; }
RealFn functor(const Real&) { return {}; }
ImagFn functor(const Imag&) { return {}; }
IsNaNFn functor(const IsNaN&) { return {}; }
IsInfFn functor(const IsInf&) { return {}; }
LogicalNotFn functor(const LogicalNot&) { return {}; }
BitwiseInvertFn functor(const BitwiseInvert&) { return {}; }

// ---------------------------------------------------------------- the kernel

/// out[0..n) = op(x) for one run of the input; T is the stored input type. `stream`: out is too large for the caches.
template <class T, class Op, class S>
void unary_run(const Op& op, S* out, int64_t n, Strided<T> x, bool stream) {
  using C = compute_t<T>;
  using R = decltype(op(std::declval<C>()));
  if constexpr (std::same_as<T, C> && std::same_as<S, R>) {
    if (x.stride == 1) {
      apply_unary(op, out, x.ptr, n, stream);  // straight between the buffers, vectorized where possible
      return;
    }
  }
  alignas(64) C staged[stage_block];
  alignas(64) R results[stage_block];
  if (x.stride == 0) {  // a broadcast value: compute it once
    load_block(staged, x, 1);
    apply_unary(op, results, staged, 1);
    store_block(out, results, 1);
    std::fill_n(out + 1, n - 1, out[0]);
    return;
  }
  for (int64_t i = 0; i < n; i += stage_block) {
    const int64_t m = std::min(stage_block, n - i);
    load_block(staged, Strided<T>{x.ptr + i * x.stride, x.stride}, m);
    apply_unary(op, results, staged, m);
    store_block(out + i, results, m);
  }
}

template <class Op>
void unary_kernel(std::string_view name, const Op& op, const array& in, array& out) {
  dispatch(in.dtype(), [&]<class T>(type_tag<T>) {
    using C = compute_t<T>;
    if constexpr (requires(const Op& f, C x) { f(x); }) {
      using S = store_t<T, decltype(op(std::declval<C>()))>;
      check_output_dtype<S>(name, out);
      const bool stream = out.nbytes() >= streaming_bytes;
      elementwise<S, T>(
          out, [&](S* o, int64_t n, Strided<T> x) { unary_run(op, o, n, x, stream); }, in);
    } else {
      unsupported_dtype(name, in.dtype());
    }
  });
}

/// Calls fn(name, functor) for the UnaryPrimitive p holds.
template <class Fn>
void with_functor(const Primitive& p, const Fn& fn) {
  std::visit(
      [&]<class P>(const P& primitive) {
        if constexpr (!UnaryPrimitive<P>) {
          internal_error(P::name, "cpu::unary was given a primitive that is not unary.");
        } else if constexpr (requires { functor(primitive); }) {
          fn(P::name, functor(primitive));
        } else {
          static_assert(sizeof(P) == 0, "cpu/unary.cpp: a unary primitive lacks its functor(const P&) overload");
        }
      },
      p);
}

}  // namespace

void unary(const Primitive& p, const array& in, array& out) {
  with_functor(p, [&](std::string_view name, const auto& op) { unary_kernel(name, op, in, out); });
}

void unary_range(const Primitive& p, Dtype in, Dtype out_dtype, void* out, int64_t n, RawRun x, bool stream) {
  with_functor(p, [&]<class Op>(std::string_view name, const Op& op) {
    dispatch(in, [&]<class T>(type_tag<T>) {
      using C = compute_t<T>;
      if constexpr (requires(const Op& f, C v) { f(v); }) {
        using S = store_t<T, decltype(op(std::declval<C>()))>;
        if (out_dtype != dtype_v<S>) {
          internal_error(name, "unary_range was given an output dtype the kernel does not produce.");
        }
        unary_run(op, static_cast<S*>(out), n, Strided<T>{static_cast<const T*>(x.ptr), x.stride}, stream);
      } else {
        unsupported_dtype(name, in);
      }
    });
  });
}

}  // namespace nuvec::cpu
