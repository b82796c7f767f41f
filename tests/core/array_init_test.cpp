// Arrays from brace lists in the forms MLX code writes them (MLX's array.h constructors).

#include <gtest/gtest.h>

#include <limits>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr double dinf = std::numeric_limits<double>::infinity();

TEST(ArrayInit, EmptyListIsAnEmptyFloat32Array) {
  array a({});
  EXPECT_EQ(a.dtype(), float32);
  EXPECT_EQ(a.shape(), Shape{0});
  array b({}, int32);
  EXPECT_EQ(b.dtype(), int32);
  EXPECT_EQ(b.shape(), Shape{0});
}

TEST(ArrayInit, MixedFloatAndDoubleListsAreFloat32) {
  array a({inf, 2.0, 3.0});
  EXPECT_EQ(a.dtype(), float32);
  ASSERT_EQ(a.shape(), Shape{3});
  EXPECT_EQ(a.data<float>()[0], inf);
  EXPECT_EQ(a.data<float>()[2], 3.0F);
  array b({1.0, inf});
  EXPECT_EQ(b.dtype(), float32);
  EXPECT_EQ(b.shape(), Shape{2});
  EXPECT_EQ(b.data<float>()[1], inf);
  EXPECT_TRUE(all(isclose(b, array({1.0F, inf}))).item<bool>());
  array c({0.5F, 1.5, -2.0F});
  EXPECT_EQ(c.dtype(), float32);
  EXPECT_EQ(c.data<float>()[1], 1.5F);
}

TEST(ArrayInit, ListsOfDoublesAreFloat32NotAComplexScalar) {
  // {1.0, inf} of doubles once bound to the complex64 scalar constructor.
  array a({1.0, dinf});
  EXPECT_EQ(a.dtype(), float32);
  EXPECT_EQ(a.ndim(), 1);
  EXPECT_EQ(a.size(), 2U);
  array b({1.0, 2.0}, {2, 1});
  EXPECT_EQ(b.dtype(), float32);
  EXPECT_EQ(b.shape(), (Shape{2, 1}));
}

TEST(ArrayInit, TheUsualFormsKeepTheirDtypes) {
  EXPECT_EQ(array({1, 2, 3}).dtype(), int32);
  EXPECT_EQ(array({1.0F, 2.0F}).dtype(), float32);
  EXPECT_EQ(array({true, false}).dtype(), bool_);
  EXPECT_EQ(array({1, 2, 3}, float16).dtype(), float16);
  EXPECT_EQ(array({1, 2, 3, 4}, {2, 2}).shape(), (Shape{2, 2}));
  EXPECT_EQ(array({1.0F, 2.0F}, {1, 2}, bfloat16).dtype(), bfloat16);
  EXPECT_EQ(array(complex64_t(1.0F, 2.0F)).dtype(), complex64);
  EXPECT_EQ(array(complex64_t(1.0F, 2.0F)).ndim(), 0);
}

}  // namespace
}  // namespace nuvec
