// MLX's utils.h, dtype.h and graph_utils.h, called as MLX code calls them: a declaration that changes or goes missing
// fails to compile here.

#include <gtest/gtest.h>

#include <sstream>

#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

TEST(MlxApiUtils, Axes) {
  EXPECT_EQ(normalize_axis_index(-1, 3), 2);
  EXPECT_EQ(normalize_axis_index(1, 3, "[op] "), 1);
  try {
    (void)normalize_axis_index(3, 3, "[op] ");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "[op] Axis 3 is out of bounds for array with 3 dimensions.");
  }
}

TEST(MlxApiUtils, Dtypes) {
  EXPECT_EQ(kindof(bool_), Dtype::Kind::b);
  EXPECT_EQ(kindof(uint16), Dtype::Kind::u);
  EXPECT_EQ(kindof(int64), Dtype::Kind::i);
  EXPECT_EQ(kindof(float16), Dtype::Kind::f);
  EXPECT_EQ(kindof(float64), Dtype::Kind::f);
  EXPECT_EQ(kindof(bfloat16), Dtype::Kind::V);
  EXPECT_EQ(kindof(complex64), Dtype::Kind::c);
  std::ostringstream os;
  os << kindof(int8) << kindof(bfloat16) << " " << float32;
  EXPECT_EQ(os.str(), "iV float32");
  EXPECT_TRUE(issubdtype(float32, Dtype::Category::floating));
  EXPECT_EQ(promote_types(int8, uint8), int16);
  EXPECT_EQ(result_type({array(1), array(1.0F)}), float32);
  EXPECT_EQ(size_of(float16), 2);
  EXPECT_EQ(finfo(float16).max, 65504.0);
  EXPECT_EQ(iinfo(int8).min, -128);
  EXPECT_EQ(broadcast_shapes({2, 1}, {3}), (Shape{2, 3}));
}

TEST(MlxApiUtils, PrintGraph) {
  auto a = array({1.0F, 2.0F});
  auto b = array({3.0F, 4.0F});
  auto c = exp(a + b);
  std::ostringstream one;
  print_graph(one, c);
  EXPECT_EQ(one.str(), "A\nB\nAdd A B -> C\nExp C -> D\n");
  std::ostringstream many;
  print_graph(many, std::vector<array>{c, a * b});
  EXPECT_NE(many.str().find("Multiply A B -> "), std::string::npos);
  std::ostringstream devices;
  devices << Device(Device::cpu) << " " << default_stream(Device::cpu);
  EXPECT_EQ(devices.str(), "Device(cpu, 0) Stream(Device(cpu, 0), 0)");
}

}  // namespace
}  // namespace nuvec
