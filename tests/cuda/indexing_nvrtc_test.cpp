// Every kernel source the gather, scatter, slice-update and random rules can generate compiles with NVRTC: one
// gather.cu per access size, one scatter.cu per dtype it combines (the moving `none` uses the unsigned dtypes
// among them), and random.cu. Compiling needs no GPU, so this runs on any machine with the toolkit.

#include <gtest/gtest.h>

#include <string>

#include "nuvec/cuda/indexing.h"
#include "nuvec/cuda/jit.h"
#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

constexpr int hopper = 90;

TEST(CudaIndexingNvrtc, GatherSourcesCompileForEveryAccessSize) {
  for (size_t bytes : {1, 2, 4, 8, 16}) {
    EXPECT_NO_THROW(cuda::compile_cubin(cuda::gather_source(bytes), hopper)) << bytes << " bytes";
  }
}

TEST(CudaIndexingNvrtc, ScatterSourcesCompileForEveryDtypeButComplex) {
  for (Dtype d : all_dtypes) {
    if (d != complex64) {
      EXPECT_NO_THROW(cuda::compile_cubin(cuda::scatter_source(d), hopper)) << dtype_name(d);
    }
  }
}

TEST(CudaIndexingNvrtc, RandomSourceCompiles) { EXPECT_NO_THROW(cuda::compile_cubin(cuda::random_source(), hopper)); }

}  // namespace
}  // namespace nuvec
