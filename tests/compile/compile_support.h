#pragma once

// Helpers of the compile tests: graph inspection and compiled-against-eager comparison.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <unordered_set>

#include "nuvec/nuvec.h"

namespace nuvec::test {

/// Primitives named `name` in the unevaluated graph of `outputs` (each node once).
inline int count_primitives(const std::vector<array>& outputs, std::string_view primitive) {
  std::unordered_set<uintptr_t> seen;
  std::vector<array> stack(outputs.begin(), outputs.end());
  int count = 0;
  while (!stack.empty()) {
    array a = stack.back();
    stack.pop_back();
    if (!a.has_primitive() || !seen.insert(a.node_id()).second) {
      continue;
    }
    count += name(a.primitive()) == primitive ? 1 : 0;
    for (const auto& in : a.inputs()) {
      stack.push_back(in);
    }
  }
  return count;
}

/// Whether compiled equals eager: same dtype and shape, values within rtol (floats, NaNs equal) or equal.
inline ::testing::AssertionResult same_values(const array& compiled, const array& eager, double rtol = 0.0) {
  if (compiled.dtype() != eager.dtype() || compiled.shape() != eager.shape()) {
    return ::testing::AssertionFailure() << "dtype or shape differ: " << dtype_name(compiled.dtype()) << " "
                                         << shape_string(compiled.shape()) << " against "
                                         << dtype_name(eager.dtype()) << " " << shape_string(eager.shape());
  }
  bool ok = false;
  if (is_floating(eager.dtype()) && rtol > 0) {
    ok = allclose(compiled, eager, rtol, rtol, true).item<bool>();
  } else {
    ok = array_equal(compiled, eager, is_floating(eager.dtype())).item<bool>();
  }
  if (ok) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "values differ (rtol " << rtol << ")";
}

/// A kernel cache of the tests' own (kept between runs, so a rerun does not call the compiler again), so tests
/// neither read nor fill the user's.
inline const std::string& test_kernel_cache() {
  static const std::string dir = [] {
    auto path = std::filesystem::temp_directory_path() / "nuvec-compile-tests";
    ::setenv("NUVEC_KERNEL_CACHE", path.c_str(), 1);
    return path.string();
  }();
  return dir;
}

}  // namespace nuvec::test
