// Tests for nuvec's 16-bit floating types. Expected values come from an
// independent decoder (`reference_value`, built on std::ldexp from the format
// definitions) or are worked out by hand in the comments beside them.

#include "nuvec/core/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>

namespace nuvec {
namespace {

// Decodes a bit pattern from the format definition alone: sign, biased
// exponent field, fraction field; subnormals have no implicit bit.
struct Float16Format {
  using Type = float16_t;
  static constexpr int mantissa = 10;
  static constexpr int bias = 15;
  static constexpr uint16_t max_finite = 0x7bff;
  static constexpr uint16_t quiet_bit = 0x0200;
};
struct BFloat16Format {
  using Type = bfloat16_t;
  static constexpr int mantissa = 7;
  static constexpr int bias = 127;
  static constexpr uint16_t max_finite = 0x7f7f;
  static constexpr uint16_t quiet_bit = 0x0040;
};

template <class Format>
double reference_value(uint16_t bits) {
  const double sign = (bits & 0x8000U) != 0 ? -1.0 : 1.0;
  const int exponent_field = (bits & 0x7fff) >> Format::mantissa;
  const int fraction = bits & ((1 << Format::mantissa) - 1);
  const int all_ones = 0x7fff >> Format::mantissa;
  if (exponent_field == all_ones) {
    return fraction == 0 ? sign * std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  }
  if (exponent_field == 0) {
    return sign * std::ldexp(fraction, 1 - Format::bias - Format::mantissa);
  }
  return sign * std::ldexp((1 << Format::mantissa) + fraction, exponent_field - Format::bias - Format::mantissa);
}

template <class T>
uint16_t bits_of(T value) {
  return value.bits;
}

// --- layout -----------------------------------------------------------------

TEST(Half, LayoutAndDefault) {
  static_assert(sizeof(float16_t) == 2 && sizeof(bfloat16_t) == 2);
  static_assert(std::is_trivially_copyable_v<float16_t> && std::is_trivially_copyable_v<bfloat16_t>);
  static_assert(std::is_same_v<complex64_t, std::complex<float>>);
  static_assert(float16_t{}.bits == 0 && bfloat16_t{}.bits == 0);
  // Everything is usable at compile time (this runs the portable path).
  static_assert(float16_t(1.0f).bits == 0x3c00 && float16_t(65520.0).bits == 0x7c00);
  static_assert(bfloat16_t(1.0f).bits == 0x3f80 && bfloat16_t(-2).bits == 0xc000);
  static_assert(static_cast<float>(float16_t::from_bits(0x3555)) == 0x555p-12f);  // (1024 + 0x155) * 2^(13-25)
  EXPECT_EQ(float16_t{}.bits, 0);
  EXPECT_EQ(bfloat16_t{}.bits, 0);
}

// --- exhaustive decode and round trip ----------------------------------------

template <class Format>
void check_all_bit_patterns() {
  using T = typename Format::Type;
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    const T value = T::from_bits(bits);
    const float widened = value;
    const double expected = reference_value<Format>(bits);
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(widened)) << std::hex << b;
      ASSERT_TRUE(isnan(value)) << std::hex << b;
      // Payload kept, quiet bit set, sign kept: from float and from double.
      const auto quieted = static_cast<uint16_t>(bits | Format::quiet_bit);
      ASSERT_EQ(T(widened).bits, quieted) << std::hex << b;
      ASSERT_EQ(T(static_cast<double>(widened)).bits, quieted) << std::hex << b;
      continue;
    }
    ASSERT_EQ(static_cast<double>(widened), expected) << std::hex << b;
    ASSERT_EQ(std::signbit(widened), (bits & 0x8000U) != 0) << std::hex << b;
    ASSERT_EQ(T(widened).bits, bits) << std::hex << b;
    ASSERT_EQ(T(static_cast<double>(widened)).bits, bits) << std::hex << b;
    ASSERT_EQ(isinf(value), std::isinf(expected)) << std::hex << b;
    ASSERT_EQ(isfinite(value), std::isfinite(expected)) << std::hex << b;
    ASSERT_FALSE(isnan(value)) << std::hex << b;
  }
}

TEST(Half, Float16AllBitPatternsRoundTrip) { check_all_bit_patterns<Float16Format>(); }
TEST(Half, BFloat16AllBitPatternsRoundTrip) { check_all_bit_patterns<BFloat16Format>(); }

// --- rounding at every midpoint ------------------------------------------------

// For each pair of neighbouring finite values (and the largest finite with the
// first value past it, which is where overflow starts), the exact midpoint
// rounds to the one with an even last bit, and the nearest float and double on
// either side of it round to the near neighbour. The double just above a
// midpoint rounds to the midpoint when first narrowed to float, so this also
// shows doubles are rounded once.
template <class Format, class F>
void check_midpoints() {
  using T = typename Format::Type;
  for (uint32_t b = 0; b <= Format::max_finite; ++b) {
    const auto lower = static_cast<uint16_t>(b);
    const auto upper = static_cast<uint16_t>(b + 1);
    const double low = reference_value<Format>(lower);
    const double high = b == Format::max_finite ? std::ldexp(1.0, Format::bias + 1) : reference_value<Format>(upper);
    const auto mid = static_cast<F>((low + high) / 2);
    ASSERT_EQ(static_cast<double>(mid), (low + high) / 2) << "midpoint not exact " << std::hex << b;
    const uint16_t even = (lower & 1U) == 0 ? lower : upper;
    const F below = std::nextafter(mid, F{0});
    const F above = std::nextafter(mid, std::numeric_limits<F>::infinity());
    for (const uint16_t sign : {uint16_t{0}, uint16_t{0x8000}}) {
      const F s = sign != 0 ? F{-1} : F{1};
      ASSERT_EQ(T(s * mid).bits, even | sign) << std::hex << b;
      ASSERT_EQ(T(s * below).bits, lower | sign) << std::hex << b;
      ASSERT_EQ(T(s * above).bits, upper | sign) << std::hex << b;
      if constexpr (std::is_same_v<T, float16_t> && std::is_same_v<F, float>) {
        ASSERT_EQ(detail::float_to_half_portable(s * mid), even | sign) << std::hex << b;
        ASSERT_EQ(detail::float_to_half_portable(s * below), lower | sign) << std::hex << b;
        ASSERT_EQ(detail::float_to_half_portable(s * above), upper | sign) << std::hex << b;
      }
    }
  }
}

TEST(Half, Float16RoundsEveryMidpointFromFloat) { check_midpoints<Float16Format, float>(); }
TEST(Half, Float16RoundsEveryMidpointFromDouble) { check_midpoints<Float16Format, double>(); }
TEST(Half, BFloat16RoundsEveryMidpointFromFloat) { check_midpoints<BFloat16Format, float>(); }
TEST(Half, BFloat16RoundsEveryMidpointFromDouble) { check_midpoints<BFloat16Format, double>(); }

// --- specific values -------------------------------------------------------------

TEST(Half, Float16SpecificValues) {
  // Largest finite is (2 - 2^-10) * 2^15 = 65504; halfway to 2^16 is 65520,
  // which ties away from the odd 0x7bff, i.e. to infinity.
  EXPECT_EQ(bits_of(float16_t(65504.0f)), 0x7bff);
  EXPECT_EQ(bits_of(float16_t(65519.99f)), 0x7bff);
  EXPECT_EQ(bits_of(float16_t(65520.0f)), 0x7c00);
  EXPECT_EQ(bits_of(float16_t(-65520.0f)), 0xfc00);
  EXPECT_EQ(bits_of(float16_t(1e10f)), 0x7c00);
  EXPECT_EQ(bits_of(float16_t(std::numeric_limits<float>::infinity())), 0x7c00);
  EXPECT_EQ(bits_of(float16_t(-std::numeric_limits<double>::infinity())), 0xfc00);
  EXPECT_EQ(bits_of(float16_t(1e300)), 0x7c00);
  // Subnormals step by 2^-24; 2^-25 is a tie between 0 and 2^-24 and goes to 0.
  EXPECT_EQ(bits_of(float16_t(0x1p-24f)), 0x0001);
  EXPECT_EQ(bits_of(float16_t(0x1p-25f)), 0x0000);
  EXPECT_EQ(bits_of(float16_t(-0x1p-25f)), 0x8000);
  EXPECT_EQ(bits_of(float16_t(0x1.000002p-25f)), 0x0001);
  EXPECT_EQ(bits_of(float16_t(0x3p-25f)), 0x0002);          // tie 1.5 * 2^-24 -> 2 * 2^-24
  EXPECT_EQ(bits_of(float16_t(0x1p-14f - 0x1p-25f)), 0x0400);  // tie 0x3ff/0x400 -> 0x400, smallest normal
  EXPECT_EQ(bits_of(float16_t(0x1p-14f)), 0x0400);
  EXPECT_EQ(bits_of(float16_t(1e-300)), 0x0000);
  EXPECT_EQ(bits_of(float16_t(std::numeric_limits<float>::denorm_min())), 0x0000);
  EXPECT_EQ(bits_of(float16_t(-0.0f)), 0x8000);
  // Ties to even around 1 (ulp 2^-10): 1 + 2^-11 -> 1, 1 + 3*2^-11 -> 1 + 2^-9.
  EXPECT_EQ(bits_of(float16_t(1.0f + 0x1p-11f)), 0x3c00);
  EXPECT_EQ(bits_of(float16_t(1.0f + 0x3p-11f)), 0x3c02);
  EXPECT_EQ(bits_of(float16_t(1.0 + 0x1p-11)), 0x3c00);
  EXPECT_EQ(bits_of(float16_t(0.1f)), 0x2e66);  // 0.1 = 1.6 * 2^-4; 0.6 * 1024 = 614.4 -> 0x266
  EXPECT_EQ(bits_of(float16_t(-2.5)), 0xc100);
}

TEST(Half, BFloat16SpecificValues) {
  const auto from_float_bits = [](uint32_t bits) { return bits_of(bfloat16_t(std::bit_cast<float>(bits))); };
  EXPECT_EQ(from_float_bits(0x3f808000), 0x3f80);  // tie, even stays
  EXPECT_EQ(from_float_bits(0x3f818000), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(from_float_bits(0x3f808001), 0x3f81);
  EXPECT_EQ(from_float_bits(0x3f807fff), 0x3f80);
  EXPECT_EQ(from_float_bits(0x00008000), 0x0000);  // subnormal tie to even zero
  EXPECT_EQ(from_float_bits(0x00018000), 0x0002);
  EXPECT_EQ(from_float_bits(0x7f7fffff), 0x7f80);  // FLT_MAX overflows
  EXPECT_EQ(from_float_bits(0x7f7f7fff), 0x7f7f);
  EXPECT_EQ(bits_of(bfloat16_t(3.38953139e38f)), 0x7f7f);
  EXPECT_EQ(bits_of(bfloat16_t(1e39)), 0x7f80);
  EXPECT_EQ(bits_of(bfloat16_t(-1e39)), 0xff80);
  EXPECT_EQ(bits_of(bfloat16_t(0x1p-133)), 0x0001);  // smallest subnormal
  EXPECT_EQ(bits_of(bfloat16_t(0x1p-134)), 0x0000);  // tie to even zero
  EXPECT_EQ(bits_of(bfloat16_t(1e-300)), 0x0000);
  EXPECT_EQ(bits_of(bfloat16_t(-0.0)), 0x8000);
  EXPECT_EQ(bits_of(bfloat16_t(0.1f)), 0x3dcd);  // 0x3dcccccd rounds up
}

TEST(Half, NaNStaysQuietNaN) {
  const float signalling = std::bit_cast<float>(0x7f800001U);
  const float negative_quiet = std::bit_cast<float>(0xffc00000U);
  EXPECT_EQ(bits_of(float16_t(signalling)), 0x7e00);
  EXPECT_EQ(bits_of(float16_t(negative_quiet)), 0xfe00);
  EXPECT_EQ(bits_of(float16_t(std::bit_cast<double>(0x7ff0000000000001ULL))), 0x7e00);
  EXPECT_EQ(bits_of(bfloat16_t(signalling)), 0x7fc0);
  EXPECT_EQ(bits_of(bfloat16_t(negative_quiet)), 0xffc0);
  EXPECT_EQ(bits_of(bfloat16_t(std::numeric_limits<double>::quiet_NaN())), 0x7fc0);
  EXPECT_EQ(detail::float_to_half_portable(signalling), 0x7e00);
  EXPECT_TRUE(std::isnan(static_cast<float>(float16_t::from_bits(0x7c01))));
}

// A double just above a tie whose float rounding lands exactly on the tie.
TEST(Half, DoubleRoundsOnce) {
  // 1 + 2^-11 + 2^-40 is above the tie between 1 and 1 + 2^-10; as a float it
  // becomes the tie itself and would go down to 1.
  const double above_tie = 1.0 + 0x1p-11 + 0x1p-40;
  ASSERT_EQ(static_cast<double>(static_cast<float>(above_tie)), 1.0 + 0x1p-11);
  EXPECT_EQ(bits_of(float16_t(above_tie)), 0x3c01);
  EXPECT_EQ(bits_of(float16_t(-above_tie)), 0xbc01);
  // Just below 65520 (double ulp there is 2^-37); as a float it is 65520 -> inf.
  const double below_overflow = 65520.0 - 0x1p-37;
  ASSERT_EQ(static_cast<float>(below_overflow), 65520.0f);
  EXPECT_EQ(bits_of(float16_t(below_overflow)), 0x7bff);
  // bfloat16: ulp 2^-7 at 1, tie at 1 + 2^-8.
  const double bf_above_tie = 1.0 + 0x1p-8 + 0x1p-40;
  ASSERT_EQ(static_cast<double>(static_cast<float>(bf_above_tie)), 1.0 + 0x1p-8);
  EXPECT_EQ(bits_of(bfloat16_t(bf_above_tie)), 0x3f81);
}

TEST(Half, LongDoubleRoundsOnce) {
  if constexpr (std::numeric_limits<long double>::digits >= 64) {
    // Above the 1 | 1 + 2^-10 tie by 2^-60: a double would land on the tie.
    const long double above_tie = 1.0L + 0x1p-11L + 0x1p-60L;
    ASSERT_EQ(static_cast<double>(above_tie), 1.0 + 0x1p-11);
    EXPECT_EQ(bits_of(float16_t(above_tie)), 0x3c01);
    EXPECT_EQ(bits_of(float16_t(-above_tie)), 0xbc01);
    EXPECT_EQ(bits_of(bfloat16_t(1.0L + 0x1p-8L + 0x1p-60L)), 0x3f81);
    EXPECT_EQ(bits_of(bfloat16_t(1.0L + 0x1p-8L - 0x1p-60L)), 0x3f80);
  } else {
    GTEST_SKIP() << "long double is double here";
  }
  EXPECT_EQ(bits_of(float16_t(1.0L + 0x1p-11L)), 0x3c00);
}

TEST(Half, IntegersRoundOnce) {
  EXPECT_EQ(bits_of(float16_t(1)), 0x3c00);
  EXPECT_EQ(bits_of(float16_t(-2)), 0xc000);
  EXPECT_EQ(bits_of(float16_t(true)), 0x3c00);
  EXPECT_EQ(bits_of(float16_t(uint8_t{255})), 0x5bf8);  // 1.9921875 * 2^7
  EXPECT_EQ(bits_of(float16_t(2049)), 0x6800);          // tie 2048 | 2050 -> 2048
  EXPECT_EQ(bits_of(float16_t(2051)), 0x6802);          // tie 2050 | 2052 -> 2052
  EXPECT_EQ(bits_of(float16_t(65519)), 0x7bff);
  EXPECT_EQ(bits_of(float16_t(65520)), 0x7c00);
  EXPECT_EQ(bits_of(float16_t(std::numeric_limits<int64_t>::min())), 0xfc00);
  // bfloat16 at 2^60 has ulp 2^53; 2^60 + 2^52 is a tie. A plain int64 -> double
  // conversion turns 2^60 + 2^52 + 1 into the tie, which would round down.
  const int64_t two60 = int64_t{1} << 60;
  EXPECT_EQ(bits_of(bfloat16_t(two60)), 0x5d80);  // exponent 127 + 60 = 0xbb
  EXPECT_EQ(bits_of(bfloat16_t(two60 + (int64_t{1} << 52))), 0x5d80);
  EXPECT_EQ(bits_of(bfloat16_t(two60 + (int64_t{1} << 52) + 1)), 0x5d81);
  EXPECT_EQ(bits_of(bfloat16_t(-(two60 + (int64_t{1} << 52) + 1))), 0xdd81);
  EXPECT_EQ(bits_of(bfloat16_t(two60 + 3 * (int64_t{1} << 52))), 0x5d82);
  EXPECT_EQ(bits_of(bfloat16_t(std::numeric_limits<uint64_t>::max())), 0x5f80);  // -> 2^64
  EXPECT_EQ(bits_of(bfloat16_t(std::numeric_limits<int64_t>::min())), 0xdf00);  // -2^63
}

// --- F16C against the portable code --------------------------------------------

TEST(Half, F16CMatchesPortable) {
#ifdef __F16C__
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    ASSERT_EQ(std::bit_cast<uint32_t>(detail::half_to_float(bits)),
              std::bit_cast<uint32_t>(detail::half_to_float_portable(bits)))
        << std::hex << b;
  }
  std::mt19937 rng(20240611);
  std::uniform_real_distribution<float> in_range(-70000.0f, 70000.0f);
  std::uniform_int_distribution<int> exponent(-30, 18);
  for (int i = 0; i < 4'000'000; ++i) {
    const float any_bits = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    const float near_range = std::ldexp(in_range(rng), exponent(rng) - 16);
    for (const float f : {any_bits, near_range, in_range(rng)}) {
      ASSERT_EQ(detail::float_to_half(f), detail::float_to_half_portable(f)) << std::hexfloat << f;
    }
  }
#else
  GTEST_SKIP() << "built without F16C; only the portable path exists";
#endif
}

// --- arithmetic and comparisons -----------------------------------------------------

template <class T>
void check_arithmetic() {
  const T one = T(1.0f);
  const T two = T(2);
  // Mixed operations compile unambiguously and pick the expected types.
  static_assert(std::is_same_v<decltype(one + one), T>);
  static_assert(std::is_same_v<decltype(one + 1.0f), float>);
  static_assert(std::is_same_v<decltype(1.0f + one), float>);
  static_assert(std::is_same_v<decltype(one * 2.0), double>);
  static_assert(std::is_same_v<decltype(one * 2), T>);
  static_assert(std::is_same_v<decltype(2 * one), T>);
  static_assert(std::is_same_v<decltype(one / int64_t{3}), T>);
  static_assert(std::is_same_v<decltype(one < 0.5f), bool>);
  static_assert(std::is_same_v<decltype(0.5 >= one), bool>);
  static_assert(std::is_same_v<decltype(-one), T>);
  static_assert(std::is_same_v<decltype(+one), T>);
  static_assert(std::is_same_v<decltype(float16_t(1.0f) + bfloat16_t(1.0f)), float>);
  static_assert(std::is_convertible_v<T, float> && std::is_convertible_v<float, T>);
  static_assert(std::is_convertible_v<T, double> && std::is_convertible_v<int, T>);
  static_assert(!std::is_convertible_v<float16_t, bfloat16_t> && !std::is_convertible_v<bfloat16_t, float16_t>);

  EXPECT_EQ(bits_of(one + one), bits_of(two));
  EXPECT_EQ(one + 1.0f, 2.0f);
  EXPECT_EQ(one * 2.0, 2.0);
  EXPECT_EQ(bits_of(one * 2), bits_of(two));
  EXPECT_EQ(bits_of(two - one), bits_of(one));
  EXPECT_EQ(bits_of(one / two), bits_of(T(0.5f)));
  EXPECT_EQ(bits_of(one / T(0)), bits_of(std::numeric_limits<T>::infinity()));
  EXPECT_TRUE(isnan(T(0) / T(0)));
  EXPECT_EQ(bits_of(-T(0)), 0x8000);
  EXPECT_EQ(bits_of(-std::numeric_limits<T>::quiet_NaN()), std::numeric_limits<T>::quiet_NaN().bits | 0x8000);
  // Results are rounded back: 1 + epsilon / 2 is a tie and stays at 1.
  const T half_epsilon = T(static_cast<float>(std::numeric_limits<T>::epsilon()) / 2);
  EXPECT_EQ(bits_of(one + half_epsilon), bits_of(one));
  EXPECT_EQ(bits_of(one + half_epsilon * 3), bits_of(one + std::numeric_limits<T>::epsilon() * 2));

  T x = one;
  x += 1.0f;
  EXPECT_EQ(bits_of(x), bits_of(two));
  x *= 3;
  EXPECT_EQ(x, 6);
  x -= T(1.0f);
  EXPECT_EQ(x, 5.0);
  x /= 2.0;
  EXPECT_EQ(x, 2.5f);

  // IEEE comparisons: NaN is unordered and unequal to itself; -0 == +0.
  const T nan = std::numeric_limits<T>::quiet_NaN();
  EXPECT_FALSE(nan == nan);
  EXPECT_TRUE(nan != nan);
  EXPECT_FALSE(nan < one || nan > one || nan <= one || nan >= one);
  EXPECT_FALSE(nan == 1.0f);
  EXPECT_TRUE(T(0) == -T(0));
  EXPECT_TRUE(one < two && two > one && one <= one && one >= one && one != two);
  EXPECT_TRUE(one < 1.5f && 1.5f > one && one == 1 && 1 == one && one != 2.0 && one <= 1u);
  EXPECT_TRUE(float16_t(1.0f) == bfloat16_t(1.0f));
  EXPECT_TRUE(float16_t(1.0f) < bfloat16_t(2.0f));
}

TEST(Half, Float16Arithmetic) { check_arithmetic<float16_t>(); }
TEST(Half, BFloat16Arithmetic) { check_arithmetic<bfloat16_t>(); }

TEST(Half, Float16ArithmeticRounding) {
  // 2048 + 1: float16 spacing at 2048 is 2, so the exact 2049 ties to 2048.
  EXPECT_EQ(bits_of(float16_t(2048) + float16_t(1)), 0x6800);
  EXPECT_EQ(bits_of(float16_t(2050) + float16_t(1)), 0x6802);  // 2051 ties 2050 | 2052 -> 2052
  EXPECT_EQ(bits_of(float16_t(65504) + float16_t(16)), 0x7c00);
  EXPECT_EQ(bits_of(float16_t(65504) + 15), 0x7bff);
}

TEST(Half, CrossConversion) {
  // 1 + 2^-10 (exact in float16) is below bfloat16's first tie above 1,
  // 1 + 2^-8, so it rounds down to 1.
  EXPECT_EQ(bits_of(static_cast<bfloat16_t>(float16_t::from_bits(0x3c01))), 0x3f80);
  EXPECT_EQ(bits_of(static_cast<bfloat16_t>(float16_t(65504))), 0x4780);  // 65504 -> 65536
  EXPECT_EQ(bits_of(static_cast<float16_t>(bfloat16_t(1e30f))), 0x7c00);
  EXPECT_EQ(bits_of(static_cast<float16_t>(bfloat16_t(0.5f))), 0x3800);
  EXPECT_EQ(static_cast<int>(float16_t(-3.0f)), -3);
  EXPECT_EQ(static_cast<complex64_t>(bfloat16_t(2.0f)), complex64_t(2.0f, 0.0f));
}

// --- limits and classification ---------------------------------------------------

TEST(Half, Float16Limits) {
  using L = std::numeric_limits<float16_t>;
  static_assert(L::is_specialized && L::is_signed && !L::is_integer && L::has_infinity && L::has_quiet_NaN);
  static_assert(L::digits == 11 && L::radix == 2 && L::is_iec559);
  // The bit patterns half_limits derives from the layout, as IEEE 754 lists them for binary16.
  static_assert(L::max().bits == 0x7bff && L::lowest().bits == 0xfbff && L::min().bits == 0x0400);
  static_assert(L::infinity().bits == 0x7c00 && L::quiet_NaN().bits == 0x7e00 && L::signaling_NaN().bits == 0x7d00);
  EXPECT_EQ(static_cast<float>(L::max()), 65504.0f);
  EXPECT_EQ(static_cast<float>(L::lowest()), -65504.0f);
  EXPECT_EQ(static_cast<float>(L::min()), std::ldexp(1.0f, -14));
  EXPECT_EQ(static_cast<float>(L::epsilon()), std::ldexp(1.0f, -10));
  EXPECT_EQ(static_cast<float>(L::denorm_min()), std::ldexp(1.0f, -24));
  EXPECT_EQ(static_cast<float>(L::round_error()), 0.5f);
  EXPECT_TRUE(isinf(L::infinity()) && L::infinity() > L::max());
  EXPECT_TRUE(isnan(L::quiet_NaN()) && isnan(L::signaling_NaN()));
  // The members agree with each other: epsilon is the gap above 1, digits
  // counts the significand, min and max match the exponent range.
  EXPECT_EQ(static_cast<float>(float16_t::from_bits(0x3c01)) - 1.0f, static_cast<float>(L::epsilon()));
  EXPECT_EQ(static_cast<float>(L::epsilon()), std::ldexp(1.0f, 1 - L::digits));
  EXPECT_EQ(static_cast<float>(L::min()), std::ldexp(1.0f, L::min_exponent - 1));
  EXPECT_EQ(static_cast<float>(L::max()), std::ldexp(1.0f, L::max_exponent) - std::ldexp(1.0f, L::max_exponent - L::digits));
  EXPECT_EQ(L::digits10, static_cast<int>(std::floor((L::digits - 1) * std::log10(2.0))));
  EXPECT_EQ(L::max_digits10, static_cast<int>(std::ceil(1 + L::digits * std::log10(2.0))));
  EXPECT_EQ(L::min_exponent10, static_cast<int>(std::ceil(std::log10(static_cast<float>(L::min())))));
  EXPECT_EQ(L::max_exponent10, static_cast<int>(std::floor(std::log10(static_cast<float>(L::max())))));
  static_assert(std::numeric_limits<const float16_t>::digits == 11);
}

TEST(Half, BFloat16Limits) {
  using L = std::numeric_limits<bfloat16_t>;
  static_assert(L::is_specialized && L::is_signed && !L::is_integer && L::has_infinity && L::has_quiet_NaN);
  static_assert(L::digits == 8 && L::radix == 2 && !L::is_iec559);
  // bfloat16 is float's top half: its patterns are float's (0x7f7fffff, 0x7fc00000, ...) cut to 16 bits.
  static_assert(L::max().bits == 0x7f7f && L::lowest().bits == 0xff7f && L::min().bits == 0x0080);
  static_assert(L::infinity().bits == 0x7f80 && L::quiet_NaN().bits == 0x7fc0 && L::signaling_NaN().bits == 0x7fa0);
  EXPECT_EQ(static_cast<float>(L::max()), 3.38953139e38f);
  EXPECT_EQ(static_cast<float>(L::max()), std::ldexp(255.0f, 120));  // (2 - 2^-7) * 2^127
  EXPECT_EQ(static_cast<float>(L::lowest()), -3.38953139e38f);
  EXPECT_EQ(static_cast<float>(L::min()), std::ldexp(1.0f, -126));
  EXPECT_EQ(static_cast<float>(L::epsilon()), 0.0078125f);
  EXPECT_EQ(static_cast<float>(L::denorm_min()), std::ldexp(1.0f, -133));
  EXPECT_EQ(static_cast<float>(L::round_error()), 0.5f);
  EXPECT_TRUE(isinf(L::infinity()) && L::infinity() > L::max());
  EXPECT_TRUE(isnan(L::quiet_NaN()) && isnan(L::signaling_NaN()));
  EXPECT_EQ(static_cast<float>(bfloat16_t::from_bits(0x3f81)) - 1.0f, static_cast<float>(L::epsilon()));
  EXPECT_EQ(static_cast<float>(L::epsilon()), std::ldexp(1.0f, 1 - L::digits));
  EXPECT_EQ(static_cast<float>(L::min()), std::ldexp(1.0f, L::min_exponent - 1));
  EXPECT_EQ(static_cast<double>(static_cast<float>(L::max())),
            std::ldexp(1.0, L::max_exponent) - std::ldexp(1.0, L::max_exponent - L::digits));
  EXPECT_EQ(L::digits10, static_cast<int>(std::floor((L::digits - 1) * std::log10(2.0))));
  EXPECT_EQ(L::max_digits10, static_cast<int>(std::ceil(1 + L::digits * std::log10(2.0))));
  EXPECT_EQ(L::min_exponent10, static_cast<int>(std::ceil(std::log10(static_cast<float>(L::min())))));
  EXPECT_EQ(L::max_exponent10, static_cast<int>(std::floor(std::log10(static_cast<float>(L::max())))));
}

// Generic kernels write `using std::isnan; isnan(x)` and must reach both the
// standard overloads and ours.
TEST(Half, ClassificationThroughUsingStd) {
  const auto classify = []<class T>(T x) {
    using std::isfinite;
    using std::isinf;
    using std::isnan;
    return (isnan(x) ? 1 : 0) + (isinf(x) ? 2 : 0) + (isfinite(x) ? 4 : 0);
  };
  const auto check = [&]<class T>(std::type_identity<T>) {
    using L = std::numeric_limits<T>;
    EXPECT_EQ(classify(L::quiet_NaN()), 1);
    EXPECT_EQ(classify(-L::infinity()), 2);
    EXPECT_EQ(classify(L::max()), 4);
    EXPECT_EQ(classify(L::denorm_min()), 4);
    EXPECT_EQ(classify(T(0)), 4);
  };
  check(std::type_identity<float>{});
  check(std::type_identity<float16_t>{});
  check(std::type_identity<bfloat16_t>{});
}

}  // namespace
}  // namespace nuvec
