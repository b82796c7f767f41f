#include "nuvec/core/dispatch.h"

#include <gtest/gtest.h>

#include <string>

namespace nuvec {
namespace {

TEST(Dispatch, FilteredCallsTheKernelWithTheStorageType) {
  auto size_for = [](Dtype d) {
    return dispatch<floating_types>(d, "Op", []<class T>(type_tag<T>) { return sizeof(T); });
  };
  EXPECT_EQ(size_for(float32), 4U);
  EXPECT_EQ(size_for(float64), 8U);
  EXPECT_EQ(size_for(float16), 2U);
  EXPECT_EQ(size_for(bfloat16), 2U);
  bool is_bfloat = false;
  dispatch<floating_types>(bfloat16, "Op", [&]<class T>(type_tag<T>) { is_bfloat = std::is_same_v<T, bfloat16_t>; });
  EXPECT_TRUE(is_bfloat);
}

TEST(Dispatch, FilteredRejectsOtherDtypesNamingTheOpAndTheDtypes) {
  auto run = [](Dtype d) { dispatch<floating_types>(d, "Softmax", []<class T>(type_tag<T>) {}); };
  for (Dtype d : {bool_, uint8, int32, int64, complex64}) {
    try {
      run(d);
      ADD_FAILURE() << "no error for " << dtype_name(d);
    } catch (const error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::internal);
      EXPECT_EQ(std::string(e.what()),
                "[Softmax] Expected float32, float64, float16 or bfloat16; got " + std::string(dtype_name(d)) + ".");
    }
  }
  try {
    dispatch<type_list<float, complex64_t>>(int8, "Eig", []<class T>(type_tag<T>) {});
    ADD_FAILURE() << "no error for int8";
  } catch (const error& e) {
    EXPECT_STREQ(e.what(), "[Eig] Expected float32 or complex64; got int8.");
  }
}

}  // namespace
}  // namespace nuvec
