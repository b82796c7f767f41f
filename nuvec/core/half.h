#pragma once

// The two 16-bit floating types nuvec stores: IEEE binary16 (`float16_t`) and
// bfloat16 (`bfloat16_t`). Both are plain bit containers; arithmetic is done in
// float and rounded back, which is exact for + - * / because float carries more
// than twice the significand bits of either format plus two (so rounding twice
// never differs from rounding once).

#include <algorithm>
#include <bit>
#include <compare>
#include <complex>
#include <concepts>
#include <cstdint>
#include <limits>
#include <type_traits>

#ifdef __F16C__
#include <immintrin.h>
#endif

namespace nuvec {

struct float16_t;
struct bfloat16_t;

/// Complex numbers of two float32 halves, nuvec's `complex64` dtype.
using complex64_t = std::complex<float>;

namespace detail {

/// True for nuvec's two 16-bit floating types.
template <class T>
concept half_float = std::same_as<T, float16_t> || std::same_as<T, bfloat16_t>;

/// Bit layout of a 16-bit target format: fraction bits and exponent bias; the decimal exponent range and IEEE status
/// complete what numeric_limits reports (half_limits).
struct Binary16Format {
  static constexpr int mantissa = 10;
  static constexpr int bias = 15;
  static constexpr bool iec559 = true;
  static constexpr int min_exponent10 = -4;
  static constexpr int max_exponent10 = 4;
};
struct BFloat16Format {
  static constexpr int mantissa = 7;
  static constexpr int bias = 127;
  static constexpr bool iec559 = false;  // not an IEEE 754 interchange format
  static constexpr int min_exponent10 = -37;
  static constexpr int max_exponent10 = 38;
};

/// `value >> shift`, rounded to nearest with ties to even. Needs 0 < shift < bits of U.
template <std::unsigned_integral U>
constexpr U shift_right_round_even(U value, int shift) {
  const U kept = value >> shift;
  const U rest = value & ((U{1} << shift) - 1);
  const U half = U{1} << (shift - 1);
  return kept + static_cast<U>(rest > half || (rest == half && (kept & 1U) != 0));
}

/// Rounds a float or double to the 16-bit format `Format` (ties to even) and
/// returns its bits. Rounds from the source directly, so double input is never
/// rounded twice. NaNs come out quiet with their top payload bits kept, which
/// is what F16C does, so both paths agree bit for bit.
template <class Format, std::floating_point F>
  requires(std::numeric_limits<F>::is_iec559 && (sizeof(F) == 4 || sizeof(F) == 8))
constexpr uint16_t round_to_16(F value) {
  using U = std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>;
  constexpr int src_mantissa = std::numeric_limits<F>::digits - 1;
  constexpr int src_bias = std::numeric_limits<F>::max_exponent - 1;
  constexpr int src_bits = static_cast<int>(sizeof(F)) * 8;
  constexpr int mantissa = Format::mantissa;
  constexpr int max_exponent = Format::bias;  // unbiased exponent of the largest finite
  constexpr int min_exponent = 1 - Format::bias;  // unbiased exponent of the smallest normal
  constexpr auto infinity = static_cast<uint16_t>(0x7fffU & ~((1U << mantissa) - 1));
  constexpr auto quiet_bit = static_cast<uint16_t>(1U << (mantissa - 1));

  const auto x = std::bit_cast<U>(value);
  const auto sign = static_cast<uint16_t>((x >> (src_bits - 16)) & 0x8000U);
  const U magnitude = x & (~U{0} >> 1);
  const U src_fraction_mask = (U{1} << src_mantissa) - 1;
  if (magnitude > ((~U{0} >> 1) & ~src_fraction_mask)) {
    const auto payload = static_cast<uint16_t>((magnitude >> (src_mantissa - mantissa)) & ((1U << mantissa) - 1));
    return static_cast<uint16_t>(sign | infinity | quiet_bit | payload);
  }
  const auto biased = static_cast<int>(magnitude >> src_mantissa);
  const int exponent = biased == 0 ? 1 - src_bias : biased - src_bias;
  if (exponent > max_exponent) {
    return static_cast<uint16_t>(sign | infinity);
  }
  const U significand = (magnitude & src_fraction_mask) | (biased == 0 ? U{0} : U{1} << src_mantissa);
  // Place the target's biased exponent above the source-width significand (one
  // less, since the significand carries the implicit bit): one rounding shift
  // then carries into the exponent, and from the largest finite into infinity,
  // by itself. Below the normal range the exponent field is zero and the shift
  // grows by the missing exponent instead, which produces subnormals.
  const int field = std::max(exponent, min_exponent) + Format::bias - 1;
  const int shift = src_mantissa - mantissa + std::max(0, min_exponent - exponent);
  if (shift > src_mantissa + 1) {
    return sign;  // below half the smallest subnormal: rounds to zero
  }
  const U laid_out = (static_cast<U>(field) << src_mantissa) + significand;
  return static_cast<uint16_t>(sign | static_cast<uint16_t>(shift_right_round_even(laid_out, shift)));
}

/// An integer as a double that rounds to any format of at most 51 significand
/// bits exactly as the integer itself would. Wide integers are rounded to odd
/// (dropped bits folded into a sticky last bit) so that a later tie is a tie
/// only when the integer really sits halfway.
template <std::integral I>
  requires(sizeof(I) <= 8)
constexpr double integer_to_double_sticky(I value) {
  bool negative = false;
  auto magnitude = static_cast<uint64_t>(value);
  if constexpr (std::is_signed_v<I>) {
    if (value < 0) {
      negative = true;
      magnitude = uint64_t{0} - magnitude;
    }
  }
  const int drop = std::max(0, static_cast<int>(std::bit_width(magnitude)) - std::numeric_limits<double>::digits);
  if (drop > 0) {
    const uint64_t sticky = (magnitude & ((uint64_t{1} << drop) - 1)) != 0 ? 1 : 0;
    magnitude = ((magnitude >> drop) | sticky) << drop;
  }
  const auto result = static_cast<double>(magnitude);  // exact: at most 53 significant bits
  return negative ? -result : result;
}

/// A long double as a double rounded to odd, which (like above) keeps a later
/// rounding to 16 bits correct. Where long double is double this is the identity.
constexpr double long_double_to_double_sticky(long double value) {
  const auto result = static_cast<double>(value);
  if constexpr (std::numeric_limits<long double>::digits > std::numeric_limits<double>::digits) {
    const auto bits = std::bit_cast<uint64_t>(result);
    const bool inexact = static_cast<long double>(result) != value;
    const bool finite = (bits & 0x7ff0000000000000U) != 0x7ff0000000000000U;
    if (inexact && finite && (bits & 1U) == 0) {
      // The other neighbour of `value` has an odd last bit; step towards `value`.
      const bool away_from_zero = (value < 0) == (static_cast<long double>(result) > value);
      return std::bit_cast<double>(away_from_zero ? bits + 1 : bits - 1);
    }
  }
  return result;
}

/// Rounds any built-in arithmetic value to `Format`, once, ties to even.
template <class Format, class T>
  requires std::is_arithmetic_v<T>
constexpr uint16_t arithmetic_to_16(T value) {
  if constexpr (std::same_as<T, float> || std::same_as<T, double>) {
    return round_to_16<Format>(value);
  } else if constexpr (std::same_as<T, long double>) {
    return round_to_16<Format>(long_double_to_double_sticky(value));
  } else {
    return round_to_16<Format>(integer_to_double_sticky(value));
  }
}

/// float -> binary16 bits without F16C; the reference the fast path is tested against.
constexpr uint16_t float_to_half_portable(float value) { return round_to_16<Binary16Format>(value); }

/// binary16 bits -> float without F16C. Signalling NaNs come out quiet, as with F16C.
constexpr float half_to_float_portable(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000U) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fU;
  const uint32_t fraction = bits & 0x3ffU;
  if (exponent == 0x1f) {
    const uint32_t quiet = fraction != 0 ? 0x400000U : 0U;
    return std::bit_cast<float>(sign | 0x7f800000U | quiet | (fraction << 13));
  }
  if (exponent == 0) {
    if (fraction == 0) {
      return std::bit_cast<float>(sign);
    }
    // Subnormal fraction * 2^-24: normalise so its leading bit becomes the implicit one.
    const int top = static_cast<int>(std::bit_width(fraction)) - 1;
    const uint32_t float_exponent = static_cast<uint32_t>(top + 127 - 24);
    const uint32_t float_fraction = (fraction << (23 - top)) & 0x7fffffU;
    return std::bit_cast<float>(sign | (float_exponent << 23) | float_fraction);
  }
  return std::bit_cast<float>(sign | ((exponent + 127 - 15) << 23) | (fraction << 13));
}

/// float -> binary16 bits, using F16C where the target has it.
constexpr uint16_t float_to_half(float value) {
#ifdef __F16C__
  if (!std::is_constant_evaluated()) {
    // The vector forms, because clang's scalar _cvtss_sh trips -Wpedantic.
    const __m128i half = _mm_cvtps_ph(_mm_set_ss(value), _MM_FROUND_TO_NEAREST_INT);
    return static_cast<uint16_t>(_mm_extract_epi16(half, 0));
  }
#endif
  return float_to_half_portable(value);
}

/// binary16 bits -> float (exact), using F16C where the target has it.
constexpr float half_to_float(uint16_t bits) {
#ifdef __F16C__
  if (!std::is_constant_evaluated()) {
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits)));
  }
#endif
  return half_to_float_portable(bits);
}

/// Any built-in arithmetic value -> binary16 bits, with F16C for float where available.
template <class T>
  requires std::is_arithmetic_v<T>
constexpr uint16_t to_float16_bits(T value) {
  if constexpr (std::same_as<T, float>) {
    return float_to_half(value);
  } else {
    return arithmetic_to_16<Binary16Format>(value);
  }
}

/// bfloat16 bits -> float: bfloat16 is the top half of a float, so this is exact
/// and keeps NaN payloads as they are.
constexpr float bfloat_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

}  // namespace detail

/// IEEE 754 binary16: 1 sign, 5 exponent, 10 fraction bits; max 65504.
struct float16_t {
  /// The raw binary16 encoding; kernels may read and write it directly.
  uint16_t bits = 0;

  /// Positive zero.
  constexpr float16_t() = default;

  /// Rounds any built-in arithmetic value to nearest, ties to even; overflow
  /// gives infinity and NaN stays (quiet) NaN.
  template <class T>
    requires std::is_arithmetic_v<T>
  constexpr float16_t(T value)  // NOLINT(google-explicit-constructor): behaves like a built-in float
      : bits(detail::to_float16_bits(value)) {}

  /// Converts from bfloat16, rounding once (bfloat16 -> float is exact).
  template <detail::half_float T>
    requires(!std::same_as<T, float16_t>)
  explicit constexpr float16_t(T value) : float16_t(static_cast<float>(value)) {}

  /// The value with encoding `bits`.
  static constexpr float16_t from_bits(uint16_t bits) {
    float16_t result;
    result.bits = bits;
    return result;
  }

  /// Exact widening, so float16_t mixes with float math.
  constexpr operator float() const { return detail::half_to_float(bits); }  // NOLINT(google-explicit-constructor)
};

/// bfloat16: the top 16 bits of a float (1 sign, 8 exponent, 7 fraction bits).
struct bfloat16_t {
  /// The raw bfloat16 encoding; kernels may read and write it directly.
  uint16_t bits = 0;

  /// Positive zero.
  constexpr bfloat16_t() = default;

  /// Rounds any built-in arithmetic value to nearest, ties to even (not by
  /// truncation); overflow gives infinity and NaN stays (quiet) NaN.
  template <class T>
    requires std::is_arithmetic_v<T>
  constexpr bfloat16_t(T value)  // NOLINT(google-explicit-constructor): behaves like a built-in float
      : bits(detail::arithmetic_to_16<detail::BFloat16Format>(value)) {}

  /// Converts from float16, rounding once (float16 -> float is exact).
  template <detail::half_float T>
    requires(!std::same_as<T, bfloat16_t>)
  explicit constexpr bfloat16_t(T value) : bfloat16_t(static_cast<float>(value)) {}

  /// The value with encoding `bits`.
  static constexpr bfloat16_t from_bits(uint16_t bits) {
    bfloat16_t result;
    result.bits = bits;
    return result;
  }

  /// Exact widening, so bfloat16_t mixes with float math.
  constexpr operator float() const { return detail::bfloat_to_float(bits); }  // NOLINT(google-explicit-constructor)
};

static_assert(sizeof(float16_t) == 2 && alignof(float16_t) == 2);
static_assert(sizeof(bfloat16_t) == 2 && alignof(bfloat16_t) == 2);
static_assert(std::is_trivially_copyable_v<float16_t> && std::is_trivially_copyable_v<bfloat16_t>);

namespace detail {

/// Operand pairs the operators below accept: a 16-bit float with another one
/// or with a built-in arithmetic type, in either order. Spelling every mixed
/// pair out as an exact match is what keeps `h + 1.0f` from being ambiguous
/// between "convert h to float" and "convert 1.0f to float16_t".
template <class A, class B>
concept half_operands = (half_float<A> && (half_float<B> || std::is_arithmetic_v<B>)) ||
                        (std::is_arithmetic_v<A> && half_float<B>);

/// Result of `a op b`: the same 16-bit type, or that type with an integer;
/// float or double with a float or double (as float16 + float is float in
/// C++23's extended types); float for float16 with bfloat16.
template <class A, class B>
constexpr auto arithmetic_result() {
  if constexpr (std::same_as<A, B>) {
    return std::type_identity<A>{};
  } else if constexpr (half_float<A> && half_float<B>) {
    return std::type_identity<float>{};
  } else if constexpr (std::floating_point<A> || std::integral<B>) {
    return std::type_identity<A>{};
  } else {
    return std::type_identity<B>{};
  }
}
template <class A, class B>
using arithmetic_result_t = typename decltype(arithmetic_result<A, B>())::type;

/// Type the arithmetic is done in: float for 16-bit results, else the result type.
template <class R>
using compute_t = std::conditional_t<half_float<R>, float, R>;

/// Type a comparison is done in: one that holds both operands exactly where
/// possible (double for integers, which covers every 32-bit one).
template <class A, class B>
using compare_t = std::conditional_t<std::integral<A> || std::integral<B>, double,
                                     std::conditional_t<std::floating_point<A>, A,
                                                        std::conditional_t<std::floating_point<B>, B, float>>>;

}  // namespace detail

/// Arithmetic on 16-bit floats; see `detail::arithmetic_result` for the result type.
template <class A, class B>
  requires detail::half_operands<A, B>
constexpr detail::arithmetic_result_t<A, B> operator+(A a, B b) {
  using R = detail::arithmetic_result_t<A, B>;
  using C = detail::compute_t<R>;
  return R(static_cast<C>(a) + static_cast<C>(b));
}
template <class A, class B>
  requires detail::half_operands<A, B>
constexpr detail::arithmetic_result_t<A, B> operator-(A a, B b) {
  using R = detail::arithmetic_result_t<A, B>;
  using C = detail::compute_t<R>;
  return R(static_cast<C>(a) - static_cast<C>(b));
}
template <class A, class B>
  requires detail::half_operands<A, B>
constexpr detail::arithmetic_result_t<A, B> operator*(A a, B b) {
  using R = detail::arithmetic_result_t<A, B>;
  using C = detail::compute_t<R>;
  return R(static_cast<C>(a) * static_cast<C>(b));
}
template <class A, class B>
  requires detail::half_operands<A, B>
constexpr detail::arithmetic_result_t<A, B> operator/(A a, B b) {
  using R = detail::arithmetic_result_t<A, B>;
  using C = detail::compute_t<R>;
  return R(static_cast<C>(a) / static_cast<C>(b));
}

/// Compound assignment: computes `a op b`, then rounds back to the 16-bit type.
template <detail::half_float H, class B>
  requires detail::half_operands<H, B>
constexpr H& operator+=(H& a, B b) {
  return a = H(a + b);
}
template <detail::half_float H, class B>
  requires detail::half_operands<H, B>
constexpr H& operator-=(H& a, B b) {
  return a = H(a - b);
}
template <detail::half_float H, class B>
  requires detail::half_operands<H, B>
constexpr H& operator*=(H& a, B b) {
  return a = H(a * b);
}
template <detail::half_float H, class B>
  requires detail::half_operands<H, B>
constexpr H& operator/=(H& a, B b) {
  return a = H(a / b);
}

/// Negation flips the sign bit only, so it is exact and keeps NaN payloads.
template <detail::half_float H>
constexpr H operator-(H a) {
  return H::from_bits(static_cast<uint16_t>(a.bits ^ 0x8000U));
}
/// Unary plus keeps the 16-bit type (the built-in one would widen to float).
template <detail::half_float H>
constexpr H operator+(H a) {
  return a;
}

/// IEEE equality: NaN equals nothing, +0 equals -0. `!=` is rewritten from it.
template <class A, class B>
  requires detail::half_operands<A, B>
constexpr bool operator==(A a, B b) {
  using C = detail::compare_t<A, B>;
  return static_cast<C>(a) == static_cast<C>(b);
}
/// IEEE ordering (unordered when either is NaN); `< <= > >=` are rewritten from it.
template <class A, class B>
  requires detail::half_operands<A, B>
constexpr std::partial_ordering operator<=>(A a, B b) {
  using C = detail::compare_t<A, B>;
  return static_cast<C>(a) <=> static_cast<C>(b);
}

/// True for any NaN encoding. Found by ADL after `using std::isnan;`.
constexpr bool isnan(float16_t x) { return (x.bits & 0x7fffU) > 0x7c00U; }
/// True for +inf and -inf.
constexpr bool isinf(float16_t x) { return (x.bits & 0x7fffU) == 0x7c00U; }
/// True unless infinite or NaN.
constexpr bool isfinite(float16_t x) { return (x.bits & 0x7c00U) != 0x7c00U; }

/// True for any NaN encoding. Found by ADL after `using std::isnan;`.
constexpr bool isnan(bfloat16_t x) { return (x.bits & 0x7fffU) > 0x7f80U; }
/// True for +inf and -inf.
constexpr bool isinf(bfloat16_t x) { return (x.bits & 0x7fffU) == 0x7f80U; }
/// True unless infinite or NaN.
constexpr bool isfinite(bfloat16_t x) { return (x.bits & 0x7f80U) != 0x7f80U; }

}  // namespace nuvec

namespace nuvec::detail {

// NOLINTBEGIN(readability-identifier-naming): std::numeric_limits spells these names
/// The std::numeric_limits members of a 16-bit format, all derived from its layout: a sign bit, an exponent field
/// whose largest value is 2 * bias + 1 (infinities and NaNs), and `mantissa` fraction bits.
template <class T, class Format>
struct half_limits {
 private:
  static constexpr int m = Format::mantissa;
  static constexpr int b = Format::bias;
  static constexpr T make(int exponent, int fraction) {
    return T::from_bits(static_cast<uint16_t>((exponent << m) | fraction));
  }

 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr std::float_denorm_style has_denorm = std::denorm_present;
  static constexpr bool has_denorm_loss = false;
  static constexpr std::float_round_style round_style = std::round_to_nearest;
  static constexpr bool is_iec559 = Format::iec559;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = m + 1;
  // floor(m log10 2) and ceil(1 + digits log10 2), log10 2 = 0.30103 to enough places for 16-bit formats.
  static constexpr int digits10 = m * 30103 / 100000;
  static constexpr int max_digits10 = 2 + digits * 30103 / 100000;
  static constexpr int radix = 2;
  static constexpr int min_exponent = 2 - b;
  static constexpr int min_exponent10 = Format::min_exponent10;
  static constexpr int max_exponent = b + 1;
  static constexpr int max_exponent10 = Format::max_exponent10;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;

  static constexpr T min() noexcept { return make(1, 0); }
  static constexpr T lowest() noexcept { return T::from_bits(static_cast<uint16_t>(0x8000U | max().bits)); }
  static constexpr T max() noexcept { return make(2 * b, (1 << m) - 1); }
  static constexpr T epsilon() noexcept { return make(b - m, 0); }
  static constexpr T round_error() noexcept { return make(b - 1, 0); }
  static constexpr T infinity() noexcept { return make(2 * b + 1, 0); }
  static constexpr T quiet_NaN() noexcept { return make(2 * b + 1, 1 << (m - 1)); }
  static constexpr T signaling_NaN() noexcept { return make(2 * b + 1, 1 << (m - 2)); }
  static constexpr T denorm_min() noexcept { return make(0, 1); }
};
// NOLINTEND(readability-identifier-naming)

}  // namespace nuvec::detail

namespace std {

/// Limits of IEEE binary16.
template <>
struct numeric_limits<nuvec::float16_t> : nuvec::detail::half_limits<nuvec::float16_t, nuvec::detail::Binary16Format> {
};

/// Limits of bfloat16: float's exponent range with 8 significand bits.
template <>
struct numeric_limits<nuvec::bfloat16_t>
    : nuvec::detail::half_limits<nuvec::bfloat16_t, nuvec::detail::BFloat16Format> {};

}  // namespace std
