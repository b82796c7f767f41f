#pragma once

// Glue between nuvec arrays and the NumPy oracle: conversions, random inputs
// and a comparison that reports the first mismatch.

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "nuvec/nuvec.h"
#include "tests/support/numpy_oracle.h"

namespace nuvec::test {

/// Evaluates `a` and copies it to a row-major host array.
HostArray to_host(const array& a);
/// An evaluated nuvec array holding the host data.
array from_host(const HostArray& h);
Dtype dtype_from_name(const std::string& name);

/// Runs NumPy code on nuvec arrays (bound to a, b, c, ...) and returns its single result.
HostArray numpy_ref(const std::string& code, const std::vector<array>& inputs);

/// Random values suited to the dtype: small integers, floats in [low, high), random bools.
array random_array(const Shape& shape, Dtype dtype, std::mt19937& rng, double low = -2.0, double high = 2.0);

/// A random shape with `ndim` axes of sizes in [1, max_dim].
Shape random_shape(int ndim, std::mt19937& rng, int max_dim = 5);

/// Element-wise |actual - expected| <= atol + rtol * |expected| (NaNs equal, infinities equal),
/// equal shapes, and equal dtypes when `check_dtype`.
::testing::AssertionResult matches(const array& actual, const HostArray& expected, double rtol = 1e-6,
                                   double atol = 1e-6, bool check_dtype = true);

/// The message of the exception (nuvec::error or a standard one) that fn throws, or "(no error)".
std::string error_of(const std::function<void()>& fn);

/// A path in this test program's own folder of the temporary directory (nuvec_test_<pid>), which is removed when the
/// program exits: programs running at once (two checkouts' suites, a CTest run beside a CI run) never share a file,
/// and none is left behind.
std::string temp_path(const std::string& name);

/// Tolerances that suit the precision of a dtype.
double default_rtol(Dtype dtype);

/// Whether the CPU kernels were built with their AVX-512 VNNI decode products (int8 levels of x), as these tests were.
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
inline constexpr bool int8_decode_built = true;
#else
inline constexpr bool int8_decode_built = false;
#endif

/// Sets the float32 matmul precision ("highest", "high", "medium") for a scope.
class MatmulPrecisionScope {
 public:
  explicit MatmulPrecisionScope(const char* precision) : before_(get_float32_matmul_precision()) {
    set_float32_matmul_precision(precision);
  }
  MatmulPrecisionScope(const MatmulPrecisionScope&) = delete;
  MatmulPrecisionScope& operator=(const MatmulPrecisionScope&) = delete;
  ~MatmulPrecisionScope() { set_float32_matmul_precision(before_); }

 private:
  std::string before_;
};

}  // namespace nuvec::test
