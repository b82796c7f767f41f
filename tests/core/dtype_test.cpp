#include <gtest/gtest.h>

#include <sstream>

#include "nuvec/core/ops/utils.h"
#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec {
namespace {

// The promotion table of CONFORMANCE.md (MLX 0.32), verbatim: rows and columns in dtype order.
constexpr const char* promotion_table = R"(
        b    u8   u16  u32  u64  i8   i16  i32  i64  f16  f32  f64  bf16 c64
b      b    u8   u16  u32  u64  i8   i16  i32  i64  f16  f32  f64  bf16 c64
u8     u8   u8   u16  u32  u64  i16  i16  i32  i64  f16  f32  f64  bf16 c64
u16    u16  u16  u16  u32  u64  i32  i32  i32  i64  f16  f32  f64  bf16 c64
u32    u32  u32  u32  u32  u64  i64  i64  i64  i64  f16  f32  f64  bf16 c64
u64    u64  u64  u64  u64  u64  f32  f32  f32  f32  f16  f32  f64  bf16 c64
i8     i8   i16  i32  i64  f32  i8   i16  i32  i64  f16  f32  f64  bf16 c64
i16    i16  i16  i32  i64  f32  i16  i16  i32  i64  f16  f32  f64  bf16 c64
i32    i32  i32  i32  i64  f32  i32  i32  i32  i64  f16  f32  f64  bf16 c64
i64    i64  i64  i64  i64  f32  i64  i64  i64  i64  f16  f32  f64  bf16 c64
f16    f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f32  f64  f32  c64
f32    f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64  f32  c64
f64    f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  c64
bf16   bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32  f32  f64  bf16 c64
c64    c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64
)";

Dtype from_short_name(const std::string& name) {
  const std::pair<const char*, Dtype> names[] = {
      {"b", bool_},     {"u8", uint8},    {"u16", uint16},    {"u32", uint32},   {"u64", uint64},
      {"i8", int8},     {"i16", int16},   {"i32", int32},     {"i64", int64},    {"f16", float16},
      {"f32", float32}, {"f64", float64}, {"bf16", bfloat16}, {"c64", complex64}};
  for (auto [short_name, dtype] : names) {
    if (name == short_name) {
      return dtype;
    }
  }
  throw std::invalid_argument(name);
}

TEST(Dtype, PromotionTableMatchesConformance) {
  std::istringstream table(promotion_table);
  std::string header;
  std::getline(table, header);  // the leading blank line
  std::getline(table, header);
  for (int row = 0; row < num_dtypes; ++row) {
    std::string name;
    table >> name;
    ASSERT_EQ(from_short_name(name), all_dtypes[row]);
    for (int col = 0; col < num_dtypes; ++col) {
      std::string cell;
      table >> cell;
      EXPECT_EQ(promote_types(all_dtypes[row], all_dtypes[col]), from_short_name(cell))
          << all_dtypes[row] << " with " << all_dtypes[col];
    }
  }
}

TEST(Dtype, PromotionIsSymmetric) {
  for (auto a : all_dtypes) {
    for (auto b : all_dtypes) {
      EXPECT_EQ(promote_types(a, b), promote_types(b, a)) << a << " " << b;
    }
  }
}

TEST(Dtype, SizesAndNames) {
  const int sizes[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 2, 8};
  const char* names[] = {"bool",  "uint8", "uint16",  "uint32",  "uint64",  "int8",     "int16",
                         "int32", "int64", "float16", "float32", "float64", "bfloat16", "complex64"};
  for (int i = 0; i < num_dtypes; ++i) {
    EXPECT_EQ(size_of(all_dtypes[i]), sizes[i]);
    EXPECT_EQ(dtype_name(all_dtypes[i]), names[i]);
  }
}

TEST(Dtype, Categories) {
  EXPECT_TRUE(issubdtype(bool_, generic));
  EXPECT_FALSE(issubdtype(bool_, number));
  EXPECT_TRUE(issubdtype(uint8, unsignedinteger));
  EXPECT_TRUE(issubdtype(uint8, integer));
  EXPECT_TRUE(issubdtype(uint8, number));
  EXPECT_FALSE(issubdtype(uint8, signedinteger));
  EXPECT_TRUE(issubdtype(int32, signedinteger));
  EXPECT_TRUE(issubdtype(float16, floating));
  EXPECT_TRUE(issubdtype(bfloat16, inexact));
  EXPECT_FALSE(issubdtype(float32, integer));
  EXPECT_TRUE(issubdtype(complex64, complexfloating));
  EXPECT_TRUE(issubdtype(complex64, inexact));
  EXPECT_FALSE(issubdtype(complex64, floating));
  EXPECT_TRUE(issubdtype(floating, inexact));
  EXPECT_TRUE(issubdtype(integer, number));
  EXPECT_FALSE(issubdtype(number, integer));
  EXPECT_TRUE(issubdtype(float32, float32));
  EXPECT_FALSE(issubdtype(float32, float64));
}

TEST(Dtype, ScalarConstructorsFollowMlx) {
  EXPECT_EQ(array(1).dtype(), int32);
  EXPECT_EQ(array(2.0).dtype(), float32);
  EXPECT_EQ(array(2.0F).dtype(), float32);
  EXPECT_EQ(array(true).dtype(), bool_);
  EXPECT_EQ(array(int64_t{3}).dtype(), int64);
  EXPECT_EQ(array(uint8_t{3}).dtype(), uint8);
  EXPECT_EQ(array(complex64_t(1, 2)).dtype(), complex64);
  EXPECT_EQ(array({1, 2, 3}).dtype(), int32);
  EXPECT_EQ(array({1.0, 2.0}).dtype(), float32);
}

TEST(Dtype, NoWeakScalarsInCpp) {
  // A scalar's dtype counts fully: int32 array + float32 scalar is float32.
  auto a = array({1, 2, 3});
  EXPECT_EQ((a + array(1.0F)).dtype(), float32);
  EXPECT_EQ((a + 1.0F).dtype(), float32);
  EXPECT_EQ((array({1, 2}, int8) + 1).dtype(), int32);
  EXPECT_EQ(result_type(array(1, int8), array(1, uint8)), int16);
}

TEST(Dtype, OneNameHelperWritesTheDtypesOfMessages) {
  // The ops' messages name dtypes through detail::dtype_string (random, quantized and the special products had their
  // own copies of it).
  EXPECT_EQ(detail::dtype_string(bfloat16), "bfloat16");
  EXPECT_EQ(detail::dtype_string(complex64), "complex64");
  using test::error_of;
  EXPECT_EQ(error_of([] { random::uniform(0.0F, 1.0F, {2}, int32); }),
            "[uniform] Can only generate uniform numbers with real floating point type; got int32.");
  EXPECT_EQ(error_of([] {
              segmented_mm(ones({2, 4}), ones({4, 2}), array({0.0F, 4.0F}, {1, 2}));
            }),
            "[segmented_mm] The segments must be integers; got float32.");
  EXPECT_EQ(error_of([] { from_fp8(ones({2}), float32); }), "[from_fp8] Input must be uint8 fp8 codes; got float32.");
}

}  // namespace
}  // namespace nuvec
