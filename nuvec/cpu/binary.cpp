// CPU kernels of the binary element-wise primitives: one kernel template
// (`binary_kernel`) and one functor per primitive, as in unary.cpp. Both
// inputs have the output's shape and one dtype (the op layer promotes and
// broadcasts); a broadcast input arrives as a zero stride and is read once.

#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "nuvec/core/dispatch.h"
#include "nuvec/core/power_form.h"
#include "nuvec/cpu/elementwise.h"
#include "nuvec/cpu/elementwise_range.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/math.h"

namespace nuvec::cpu {

namespace {

using simd::select;

/// Element types (never vectors): comparisons produce bool per element.
template <class T>
concept Scalar = !simd::is_vec<T>;

/// numpy's ordering of complex numbers: by real part, then imaginary part, where
/// a NaN imaginary part makes the real comparison fail. `Strict` compares the
/// real parts, `Then` the imaginary parts of equal real parts.
template <class Strict, class Then>
bool lexicographic(complex64_t a, complex64_t b) {
  return (Strict{}(a.real(), b.real()) && !std::isnan(a.imag()) && !std::isnan(b.imag())) ||
         (a.real() == b.real() && Then{}(a.imag(), b.imag()));
}

// ---------------------------------------------------------------- functors

struct AddFn {
  template <Bool T>
  T operator()(T a, T b) const {
    return a || b;
  }
  template <Integer T>
  T operator()(T a, T b) const {
    return math::wrap_add(a, b);
  }
  template <RealOrComplex T>
  T operator()(T a, T b) const {
    return a + b;
  }
};

struct SubtractFn {
  template <Bool T>
  T operator()(T a, T b) const {
    return a != b;
  }
  template <Integer T>
  T operator()(T a, T b) const {
    return math::wrap_sub(a, b);
  }
  template <RealOrComplex T>
  T operator()(T a, T b) const {
    return a - b;
  }
};

struct MultiplyFn {
  template <Bool T>
  T operator()(T a, T b) const {
    return a && b;
  }
  template <Integer T>
  T operator()(T a, T b) const {
    return math::wrap_mul(a, b);
  }
  template <RealOrComplex T>
  T operator()(T a, T b) const {
    return a * b;
  }
};

/// True division for floats; numpy's floor division (`//`) for integers, as floor_divide builds it.
struct DivideFn {
  template <Bool T>
  T operator()(T a, T b) const {
    return a && b;
  }
  template <Integer T>
  T operator()(T a, T b) const {
    return math::floor_divide(a, b);
  }
  template <RealOrComplex T>
  T operator()(T a, T b) const {
    return a / b;
  }
};

/// numpy's %, with the sign of the divisor.
struct RemainderFn {
  template <Bool T>
  T operator()(T, T) const {
    return false;
  }
  template <class T>
  requires Integer<T> || Float<T> T operator()(T a, T b) const { return math::remainder(a, b); }
};

struct PowerFn {
  template <Bool T>
  T operator()(T a, T b) const {
    return a || !b;
  }
  template <Integer T>
  T operator()(T a, T b) const {
    return math::power(a, b);
  }
  auto operator()(auto a, auto b) const -> decltype(math::pow(a, b)) { return math::pow(a, b); }
};

/// x ** e for one exponent e (a scalar operand), without pow where detail::power_form allows, with pow's results at
/// the edges: sqrt(-0) is -0 and sqrt(-inf) NaN where pow gives +0 and +inf, hence the fabs and the select.
template <math::Real C>
struct ConstantPowerFn {
  C e;
  nuvec::detail::PowerForm form;

  template <class T>
  requires requires(T v) { math::pow(v, v); }
  T operator()(T x, T) const {
    using Kind = nuvec::detail::PowerForm::Kind;
    const T minus_inf(-std::numeric_limits<C>::infinity());
    switch (form.kind) {
      case Kind::product:
        return product(x);
      case Kind::sqrt:
        return select(x == minus_inf, T(std::numeric_limits<C>::infinity()), math::abs(math::sqrt(x)));
      case Kind::rsqrt:
        return select(x == minus_inf, T(C(0)), T(C(1)) / math::abs(math::sqrt(x)));
      case Kind::pow:
        return math::pow(x, T(e));
    }
    return x;
  }

  /// x ** n as the generated code multiplies it (detail::power_by_squaring).
  template <class T>
  T product(T x) const {
    if (form.n == 0) {
      return T(C(1));
    }
    const T result = nuvec::detail::power_by_squaring(x, form.n < 0 ? -form.n : form.n,
                                                      [](const T& a, const T& b) { return a * b; });
    return form.n < 0 ? T(C(1)) / result : result;
  }
};

/// x ** N for an integral exponent known when compiled (|N| <= 8, detail::power_form's products): the products
/// unroll, where ConstantPowerFn walked the exponent's bits for every vector (pow(x, 3) 1.2x the time of square(x)
/// on one thread).
template <int N>
struct ProductPowerFn {
  template <class T>
  requires requires(T v) { math::pow(v, v); }
  T operator()(T x, T) const {
    using C = simd::lane_t<T>;
    if constexpr (N == 0) {
      return T(C(1));
    } else {
      const T result =
          nuvec::detail::power_by_squaring(x, N < 0 ? -N : N, [](const T& a, const T& b) { return a * b; });
      if constexpr (N < 0) {
        return T(C(1)) / result;
      } else {
        return result;
      }
    }
  }
};

/// Calls fn(std::integral_constant<int, n>) for an exponent -8 <= n <= 8.
template <class Fn, int... K>
void with_exponent(int n, const Fn& fn, std::integer_sequence<int, K...>) {
  static_cast<void>(((n == K - 8 ? (fn(std::integral_constant<int, K - 8>{}), true) : false) || ...));
}

/// The larger value; a NaN on either side wins.
struct MaximumFn {
  template <Bool T>
  T operator()(T a, T b) const {
    return a || b;
  }
  template <Integer T>
  T operator()(T a, T b) const {
    return std::max(a, b);
  }
  template <math::Real T>
  T operator()(T a, T b) const {
    return select((a > b) | math::isnan(a), a, b);
  }
  template <Complex T>
  T operator()(T a, T b) const {
    return lexicographic<std::greater<>, std::greater_equal<>>(a, b) || math::isnan(a) ? a : b;
  }
};

/// The smaller value; a NaN on either side wins.
struct MinimumFn {
  template <Bool T>
  T operator()(T a, T b) const {
    return a && b;
  }
  template <Integer T>
  T operator()(T a, T b) const {
    return std::min(a, b);
  }
  template <math::Real T>
  T operator()(T a, T b) const {
    return select((a < b) | math::isnan(a), a, b);
  }
  template <Complex T>
  T operator()(T a, T b) const {
    return lexicographic<std::less<>, std::less_equal<>>(a, b) || math::isnan(a) ? a : b;
  }
};

/// log(e^a + e^b) = max + log1p(e^-|a - b|); equal infinities give themselves.
struct LogAddExpFn {
  template <RealMath T>
  T operator()(T a, T b) const {
    const T d = a - b;
    const T r = select(d > T(0), a, b) + math::log1p(math::exp(-math::abs(d)));
    return select(a == b, a + T(std::numbers::ln2_v<simd::lane_t<T>>), r);
  }
  template <Complex T>
  T operator()(T a, T b) const {
    const bool a_larger = a.real() > b.real();
    const T big = a_larger ? a : b;
    return big + std::log(1.0F + std::exp((a_larger ? b : a) - big));
  }
};

struct ArcTan2Fn {
  auto operator()(auto y, auto x) const -> decltype(math::atan2(y, x)) { return math::atan2(y, x); }
};

struct EqualFn {
  bool equal_nan = false;
  template <Scalar T>
  bool operator()(T a, T b) const {
    if constexpr (Float<T> || Complex<T>) {
      return a == b || (equal_nan && math::isnan(a) && math::isnan(b));
    } else {
      return a == b;
    }
  }
};
struct NotEqualFn {
  template <Scalar T>
  bool operator()(T a, T b) const {
    return a != b;
  }
};

struct GreaterFn {
  template <Scalar T>
  bool operator()(T a, T b) const {
    if constexpr (Complex<T>) {
      return lexicographic<std::greater<>, std::greater<>>(a, b);
    } else {
      return a > b;
    }
  }
};
struct GreaterEqualFn {
  template <Scalar T>
  bool operator()(T a, T b) const {
    if constexpr (Complex<T>) {
      return lexicographic<std::greater<>, std::greater_equal<>>(a, b);
    } else {
      return a >= b;
    }
  }
};
struct LessFn {
  template <Scalar T>
  bool operator()(T a, T b) const {
    if constexpr (Complex<T>) {
      return lexicographic<std::less<>, std::less<>>(a, b);
    } else {
      return a < b;
    }
  }
};
struct LessEqualFn {
  template <Scalar T>
  bool operator()(T a, T b) const {
    if constexpr (Complex<T>) {
      return lexicographic<std::less<>, std::less_equal<>>(a, b);
    } else {
      return a <= b;
    }
  }
};

struct LogicalAndFn {
  template <Bool T>
  T operator()(T a, T b) const {
    return a && b;
  }
};
struct LogicalOrFn {
  template <Bool T>
  T operator()(T a, T b) const {
    return a || b;
  }
};

template <class T>
concept IntegerOrBool = Integer<T> || Bool<T>;

struct BitwiseAndFn {
  template <IntegerOrBool T>
  T operator()(T a, T b) const {
    return static_cast<T>(a & b);
  }
};
struct BitwiseOrFn {
  template <IntegerOrBool T>
  T operator()(T a, T b) const {
    return static_cast<T>(a | b);
  }
};
struct BitwiseXorFn {
  template <IntegerOrBool T>
  T operator()(T a, T b) const {
    return static_cast<T>(a ^ b);
  }
};
struct LeftShiftFn {
  template <Integer T>
  T operator()(T a, T b) const {
    return math::shift_left(a, b);
  }
};
struct RightShiftFn {
  template <Integer T>
  T operator()(T a, T b) const {
    return math::shift_right(a, b);
  }
};

// One overload per binary primitive: a primitive without one fails to compile in cpu::binary.
AddFn functor(const Add&) { return {}; }
SubtractFn functor(const Subtract&) { return {}; }
MultiplyFn functor(const Multiply&) { return {}; }
DivideFn functor(const Divide&) { return {}; }
RemainderFn functor(const Remainder&) { return {}; }
PowerFn functor(const Power&) { return {}; }
MaximumFn functor(const Maximum&) { return {}; }
MinimumFn functor(const Minimum&) { return {}; }
LogAddExpFn functor(const LogAddExp&) { return {}; }
ArcTan2Fn functor(const ArcTan2&) { return {}; }
EqualFn functor(const Equal& p) { return {p.equal_nan}; }
NotEqualFn functor(const NotEqual&) { return {}; }
GreaterFn functor(const Greater&) { return {}; }
GreaterEqualFn functor(const GreaterEqual&) { return {}; }
LessFn functor(const Less&) { return {}; }
LessEqualFn functor(const LessEqual&) { return {}; }
LogicalAndFn functor(const LogicalAnd&) { return {}; }
LogicalOrFn functor(const LogicalOr&) { return {}; }
BitwiseAndFn functor(const BitwiseAnd&) { return {}; }
BitwiseOrFn functor(const BitwiseOr&) { return {}; }
BitwiseXorFn functor(const BitwiseXor&) { return {}; }
LeftShiftFn functor(const LeftShift&) { return {}; }
RightShiftFn functor(const RightShift&) { return {}; }

// ---------------------------------------------------------------- the kernel

/// out[0..n) = op(a, b) for one run of each input; T is the stored input type. `stream`: out is too large for the
/// caches.
template <class T, class Op, class S>
void binary_run(const Op& op, S* out, int64_t n, Strided<T> a, Strided<T> b, bool stream) {
  using C = compute_t<T>;
  using R = decltype(op(std::declval<C>(), std::declval<C>()));
  const bool scalar_a = a.stride == 0;
  const bool scalar_b = b.stride == 0;
  if constexpr (std::same_as<Op, PowerFn> && Float<C>) {
    // One exponent for the whole run: products or square roots where they give pow's results.
    if (scalar_b) {
      C e{};
      load_block(&e, b, 1);
      const auto form = nuvec::detail::power_form(static_cast<double>(e));
      if (form.kind == nuvec::detail::PowerForm::Kind::product) {
        with_exponent(
            form.n,
            [&](auto exponent) { binary_run(ProductPowerFn<decltype(exponent)::value>{}, out, n, a, b, stream); },
            std::make_integer_sequence<int, 17>{});
        return;
      }
      binary_run(ConstantPowerFn<C>{e, form}, out, n, a, b, stream);
      return;
    }
  }
  if constexpr (std::same_as<T, C> && std::same_as<S, R>) {
    if ((scalar_a || a.stride == 1) && (scalar_b || b.stride == 1)) {
      // Straight between the buffers, vectorized where possible.
      apply_binary(op, out, a.ptr, scalar_a, b.ptr, scalar_b, n, stream);
      return;
    }
  }
  // Convert (16-bit floats) or gather (other strides) blocks first; a broadcast
  // value is staged once.
  alignas(64) C staged_a[stage_block];
  alignas(64) C staged_b[stage_block];
  alignas(64) R results[stage_block];
  if (scalar_a) {
    load_block(staged_a, a, 1);
  }
  if (scalar_b) {
    load_block(staged_b, b, 1);
  }
  for (int64_t i = 0; i < n; i += stage_block) {
    const int64_t m = std::min(stage_block, n - i);
    if (!scalar_a) {
      load_block(staged_a, Strided<T>{a.ptr + i * a.stride, a.stride}, m);
    }
    if (!scalar_b) {
      load_block(staged_b, Strided<T>{b.ptr + i * b.stride, b.stride}, m);
    }
    apply_binary(op, results, staged_a, scalar_a, staged_b, scalar_b, m);
    store_block(out + i, results, m);
  }
}

template <class Op>
void binary_kernel(std::string_view name, const Op& op, const array& a, const array& b, array& out) {
  if (a.dtype() != b.dtype()) {
    internal_error(name, std::string("The inputs must have one dtype; got ") + std::string(dtype_name(a.dtype())) +
                             " and " + std::string(dtype_name(b.dtype())) + ".");
  }
  dispatch(a.dtype(), [&]<class T>(type_tag<T>) {
    using C = compute_t<T>;
    if constexpr (requires(const Op& f, C x) { f(x, x); }) {
      using S = store_t<T, decltype(op(std::declval<C>(), std::declval<C>()))>;
      check_output_dtype<S>(name, out);
      const bool stream = out.nbytes() >= streaming_bytes;
      elementwise<S, T, T>(
          out, [&](S* o, int64_t n, Strided<T> x, Strided<T> y) { binary_run(op, o, n, x, y, stream); }, a, b);
    } else {
      unsupported_dtype(name, a.dtype());
    }
  });
}

/// Calls fn(name, functor) for the BinaryPrimitive p holds.
template <class Fn>
void with_functor(const Primitive& p, const Fn& fn) {
  std::visit(
      [&]<class P>(const P& primitive) {
        if constexpr (!BinaryPrimitive<P>) {
          internal_error(P::name, "cpu::binary was given a primitive that is not binary.");
        } else if constexpr (requires { functor(primitive); }) {
          fn(P::name, functor(primitive));
        } else {
          static_assert(sizeof(P) == 0, "cpu/binary.cpp: a binary primitive lacks its functor(const P&) overload");
        }
      },
      p);
}

}  // namespace

void binary(const Primitive& p, const array& a, const array& b, array& out) {
  with_functor(p, [&](std::string_view name, const auto& op) { binary_kernel(name, op, a, b, out); });
}

void binary_range(const Primitive& p, Dtype in, Dtype out_dtype, void* out, int64_t n, RawRun a, RawRun b,
                  bool stream) {
  with_functor(p, [&]<class Op>(std::string_view name, const Op& op) {
    dispatch(in, [&]<class T>(type_tag<T>) {
      using C = compute_t<T>;
      if constexpr (requires(const Op& f, C v) { f(v, v); }) {
        using S = store_t<T, decltype(op(std::declval<C>(), std::declval<C>()))>;
        if (out_dtype != dtype_v<S>) {
          internal_error(name, "binary_range was given an output dtype the kernel does not produce.");
        }
        binary_run(op, static_cast<S*>(out), n, Strided<T>{static_cast<const T*>(a.ptr), a.stride},
                   Strided<T>{static_cast<const T*>(b.ptr), b.stride}, stream);
      } else {
        unsupported_dtype(name, in);
      }
    });
  });
}

}  // namespace nuvec::cpu
