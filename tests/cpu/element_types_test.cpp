#include "nuvec/cpu/element_types.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace nuvec::cpu {
namespace {

constexpr float nan = std::numeric_limits<float>::quiet_NaN();
constexpr float inf = std::numeric_limits<float>::infinity();

TEST(ElementTypes, IsNanForEveryElementType) {
  EXPECT_TRUE(is_nan(nan));
  EXPECT_TRUE(is_nan(static_cast<double>(nan)));
  EXPECT_TRUE(is_nan(float16_t(nan)));
  EXPECT_TRUE(is_nan(bfloat16_t(nan)));
  EXPECT_FALSE(is_nan(inf));
  EXPECT_FALSE(is_nan(float16_t(-inf)));
  EXPECT_FALSE(is_nan(bfloat16_t(1.5F)));
  EXPECT_FALSE(is_nan(int32_t{7}));
  EXPECT_FALSE(is_nan(true));
  // A complex number is NaN when either part is (numpy.isnan).
  EXPECT_TRUE(is_nan(complex64_t(nan, 0.0F)));
  EXPECT_TRUE(is_nan(complex64_t(0.0F, nan)));
  EXPECT_FALSE(is_nan(complex64_t(inf, -inf)));
}

TEST(ElementTypes, GreaterOrdersComplexByRealThenImaginaryPart) {
  // numpy: np.array([1+5j]) > np.array([2+0j]) is False; [2+1j] > [2+0j] is True; [2+0j] > [2+0j] is False.
  EXPECT_FALSE(greater(complex64_t(1, 5), complex64_t(2, 0)));
  EXPECT_TRUE(greater(complex64_t(2, 1), complex64_t(2, 0)));
  EXPECT_FALSE(greater(complex64_t(2, 0), complex64_t(2, 0)));
  EXPECT_TRUE(greater(complex64_t(3, -1), complex64_t(2, 9)));
  EXPECT_TRUE(greater(2.5, 1.0));
  EXPECT_FALSE(greater(int8_t{-3}, int8_t{2}));
}

TEST(ElementTypes, HalfFloatsComputeInFloat) {
  static_assert(std::is_same_v<compute_t<float16_t>, float>);
  static_assert(std::is_same_v<compute_t<bfloat16_t>, float>);
  static_assert(std::is_same_v<compute_t<double>, double>);
  static_assert(std::is_same_v<compute_t<complex64_t>, complex64_t>);
  static_assert(is_half_v<bfloat16_t> && !is_half_v<float>);
  static_assert(is_complex_v<complex64_t> && !is_complex_v<float>);
}

}  // namespace
}  // namespace nuvec::cpu
