#include "nuvec/core/matmul_precision.h"

#include <array>
#include <atomic>
#include <utility>

#include "nuvec/core/error.h"

namespace nuvec {

namespace {

constexpr std::array<std::pair<std::string_view, MatmulPrecision>, 3> names = {{
    {"highest", MatmulPrecision::highest},
    {"high", MatmulPrecision::high},
    {"medium", MatmulPrecision::medium},
}};

std::atomic<MatmulPrecision>& current() {
  static std::atomic<MatmulPrecision> precision{MatmulPrecision::highest};
  return precision;
}

}  // namespace

void set_float32_matmul_precision(std::string_view precision) {
  for (const auto& [name, value] : names) {
    if (name == precision) {
      current().store(value, std::memory_order_relaxed);
      return;
    }
  }
  throw_invalid("[set_float32_matmul_precision] expected \"highest\", \"high\" or \"medium\"; got \"" +
                std::string(precision) + "\".");
}

std::string get_float32_matmul_precision() {
  const MatmulPrecision precision = float32_matmul_precision();
  for (const auto& [name, value] : names) {
    if (value == precision) {
      return std::string(name);
    }
  }
  throw_internal("[get_float32_matmul_precision] unnamed precision");
}

MatmulPrecision float32_matmul_precision() { return current().load(std::memory_order_relaxed); }

}  // namespace nuvec
