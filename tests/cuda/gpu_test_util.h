#pragma once

// Helpers of the GPU suite: each test that runs kernels starts with NUVEC_REQUIRE_GPU() (it skips on a machine
// without a usable GPU), and compares the GPU's result with the CPU backend's on the same inputs.

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "nuvec/nuvec.h"

namespace nuvec::test {

#define NUVEC_REQUIRE_GPU()                         \
  if (!::nuvec::is_available(::nuvec::Device::gpu)) { \
    GTEST_SKIP() << "no usable GPU";                \
  }

/// The relative tolerance for comparing the two backends' results of dtype `d`: the math functions of CUDA and of
/// glibc may differ by an ulp or two, and a 16-bit result rounded from them by one unit of its precision.
inline double gpu_rtol(Dtype d) {
  if (d == float16) {
    return 2e-3;
  }
  if (d == bfloat16) {
    return 1.6e-2;
  }
  if (d == float64) {
    return 1e-13;
  }
  return 2e-6;
}

/// Whether the GPU's `gpu` equals the CPU's `cpu`: same shape and dtype, integers and bools exactly, floats within
/// rtol (and atol near zero), NaNs in the same places.
inline ::testing::AssertionResult same_values(const array& gpu, const array& cpu, double rtol, double atol = 1e-6) {
  eval({gpu, cpu});
  if (gpu.shape() != cpu.shape() || gpu.dtype() != cpu.dtype()) {
    return ::testing::AssertionFailure() << "GPU " << shape_string(gpu.shape()) << " " << dtype_name(gpu.dtype())
                                         << " against CPU " << shape_string(cpu.shape()) << " " << dtype_name(cpu.dtype());
  }
  const Device host = Device::cpu;
  bool equal = false;
  if (issubdtype(cpu.dtype(), inexact)) {
    equal = allclose(astype(gpu, float64, host), astype(cpu, float64, host), rtol, atol, true, host).item<bool>();
  } else {
    equal = array_equal(gpu, cpu, false, host).item<bool>();
  }
  if (equal) {
    return ::testing::AssertionSuccess();
  }
  auto diff = abs(subtract(astype(gpu, float64, host), astype(cpu, float64, host), host), host);
  auto worst = static_cast<int>(argmax(reshape(diff, {-1}, host), host).item<int64_t>());
  auto at = [&](const array& a) { return reshape(astype(a, float64, host), {-1}, host); };
  return ::testing::AssertionFailure() << "first worst difference at flat index " << worst << ": GPU "
                                       << take(at(gpu), worst, host).item<double>() << ", CPU "
                                       << take(at(cpu), worst, host).item<double>();
}

inline ::testing::AssertionResult same_values(const array& gpu, const array& cpu) {
  return same_values(gpu, cpu, gpu_rtol(cpu.dtype()));
}

/// `op(device)` on the GPU against the CPU, or nothing when the op rejects its inputs (it throws on the CPU too).
template <class F>
void compare(const std::string& what, F&& op, Dtype d, double rtol, double atol = 1e-6) {
  array expected(0);
  try {
    expected = op(Device(Device::cpu));
    expected.eval();
  } catch (const nuvec::error&) {
    return;
  }
  auto actual = op(Device(Device::gpu));
  EXPECT_TRUE(same_values(actual, expected, rtol, atol)) << what << " " << dtype_name(d);
}

template <class F>
void compare(const std::string& what, F&& op, Dtype d) {
  compare(what, std::forward<F>(op), d, gpu_rtol(d));
}

}  // namespace nuvec::test
