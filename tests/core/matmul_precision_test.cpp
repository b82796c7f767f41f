// The float32 matmul precision setting (PyTorch's names). What it changes in the products is tested with them
// (tests/cpu/quantized_test.cpp, quantized_blocks_test.cpp).

#include <gtest/gtest.h>

#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec::test {
namespace {

TEST(MatmulPrecision, HighestByDefaultAndSetByName) {
  EXPECT_EQ(get_float32_matmul_precision(), "highest");
  EXPECT_EQ(float32_matmul_precision(), MatmulPrecision::highest);
  {
    const MatmulPrecisionScope scope("high");
    EXPECT_EQ(get_float32_matmul_precision(), "high");
    EXPECT_EQ(float32_matmul_precision(), MatmulPrecision::high);
    set_float32_matmul_precision("medium");
    EXPECT_EQ(float32_matmul_precision(), MatmulPrecision::medium);
  }
  EXPECT_EQ(get_float32_matmul_precision(), "highest");
}

TEST(MatmulPrecision, AnUnknownNameChangesNothing) {
  EXPECT_EQ(error_of([] { set_float32_matmul_precision("fast"); }),
            "[set_float32_matmul_precision] expected \"highest\", \"high\" or \"medium\"; got \"fast\".");
  EXPECT_EQ(error_of([] { set_float32_matmul_precision("High"); }),
            "[set_float32_matmul_precision] expected \"highest\", \"high\" or \"medium\"; got \"High\".");
  EXPECT_EQ(get_float32_matmul_precision(), "highest");
}

}  // namespace
}  // namespace nuvec::test
