#pragma once

// The Hadamard matrices of orders 12, 20 and 28 that hadamard_transform combines with a Sylvester transform for
// sizes m * 2^k (hadamard.cpp).

#include <cstdint>
#include <vector>

namespace nuvec::cpu {

/// The symmetric Hadamard matrix of order m (12, 20 or 28) from Paley's second construction, row-major, entries +-1.
const std::vector<int8_t>& paley_matrix(int m);

}  // namespace nuvec::cpu
