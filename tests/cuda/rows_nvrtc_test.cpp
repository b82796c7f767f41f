// Every kernel source the reduction and row rules can generate compiles with NVRTC (rows.h): reduce.cu for each
// op, input and output dtype the accumulator rule accepts, with its second pass over partial results; arg_reduce.cu
// and arange.cu for every dtype but complex64; softmax.cu, norm.cu and rope.cu for the floating dtypes. Compiling
// needs no GPU, so this runs on any machine with the toolkit; the distinct sources compile on several threads.

#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "nuvec/cuda/jit.h"
#include "nuvec/cuda/rows.h"
#include "nuvec/nuvec.h"

namespace nuvec {
namespace {

constexpr int hopper = 90;

/// Each distinct source with the first instantiation that generates it.
std::map<std::string, std::string> all_sources() {
  std::map<std::string, std::string> sources;
  auto add = [&](const std::string& source, const std::string& what) { sources.emplace(source, what); };
  const ReduceType ops[] = {ReduceType::sum, ReduceType::prod, ReduceType::max,
                            ReduceType::min, ReduceType::all,  ReduceType::any};
  for (Dtype in : all_dtypes) {
    if (in == complex64) {
      continue;
    }
    const std::string name(dtype_name(in));
    for (ReduceType op : ops) {
      for (Dtype out : all_dtypes) {
        const auto acc = cuda::reduce_accumulator(op, in, out);
        if (!acc) {
          continue;
        }
        const std::string what = "reduce " + std::to_string(static_cast<int>(op)) + " " + name + " to " +
                                 std::string(dtype_name(out)) + " in " + std::string(dtype_name(*acc));
        add(cuda::reduce_source(op, in, *acc, out), what);
        add(cuda::reduce_source(op, *acc, *acc, out), what + ", second pass");
      }
    }
    add(cuda::arg_reduce_source(ArgReduceType::argmax, in), "argmax " + name);
    add(cuda::arg_reduce_source(ArgReduceType::argmin, in), "argmin " + name);
    add(cuda::arange_source(in), "arange " + name);
  }
  for (Dtype d : {float32, float64, float16, bfloat16}) {
    const std::string name(dtype_name(d));
    add(cuda::softmax_source(d), "softmax " + name);
    add(cuda::norm_source(d), "norm " + name);
    add(cuda::rope_source(d), "rope " + name);
  }
  return sources;
}

TEST(CudaRowsNvrtc, EveryReductionAndRowSourceCompiles) {
  const auto sources = all_sources();
  std::vector<std::pair<std::string, std::string>> work(sources.begin(), sources.end());
  const size_t threads = std::max(1U, std::thread::hardware_concurrency());
  // Each thread compiles every threads-th source and returns the failures' messages.
  std::vector<std::future<std::vector<std::string>>> parts;
  for (size_t t = 0; t < threads; ++t) {
    parts.push_back(std::async(std::launch::async, [&, t] {
      std::vector<std::string> failures;
      for (size_t i = t; i < work.size(); i += threads) {
        try {
          cuda::compile_cubin(work[i].first, hopper);
        } catch (const std::exception& e) {
          failures.push_back(work[i].second + ": " + e.what());
        }
      }
      return failures;
    }));
  }
  for (auto& part : parts) {
    for (const auto& failure : part.get()) {
      ADD_FAILURE() << failure;
    }
  }
  EXPECT_GT(work.size(), 100U);  // the sweep reaches the reduce instantiations
}

/// The accumulator of a reduction, complex64 standing for none.
Dtype accumulator(ReduceType op, Dtype in, Dtype out) {
  return cuda::reduce_accumulator(op, in, out).value_or(complex64);
}

TEST(CudaRowsNvrtc, AccumulatorsFollowTheCpuKernels) {
  EXPECT_EQ(accumulator(ReduceType::sum, int8, int32), uint32);
  EXPECT_EQ(accumulator(ReduceType::prod, uint16, uint32), uint32);
  EXPECT_EQ(accumulator(ReduceType::sum, int64, int64), uint64);
  EXPECT_EQ(accumulator(ReduceType::sum, bool_, int32), uint32);
  EXPECT_EQ(accumulator(ReduceType::sum, float16, float16), float32);
  EXPECT_EQ(accumulator(ReduceType::sum, bfloat16, float32), float32);  // mean's sum
  EXPECT_EQ(accumulator(ReduceType::sum, int32, float32), float64);     // mean's sum
  EXPECT_EQ(accumulator(ReduceType::max, float16, float16), float32);
  EXPECT_EQ(accumulator(ReduceType::min, uint8, uint8), uint8);
  EXPECT_EQ(accumulator(ReduceType::any, float32, bool_), bool_);
  EXPECT_EQ(accumulator(ReduceType::sum, complex64, complex64), complex64);
  EXPECT_EQ(accumulator(ReduceType::max, float32, float64), complex64);
}

}  // namespace
}  // namespace nuvec
