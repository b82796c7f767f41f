#pragma once

// The Hadamard matrices of orders 12, 20 and 28 that hadamard_transform combines with a Sylvester transform for
// sizes m * 2^k (hadamard.cpp), from Paley's second construction: H_m = C (x) [[1, 1], [1, -1]] + I (x) [[1, -1],
// [-1, -1]] for a symmetric conference matrix C of order m / 2 (zero diagonal, +-1 elsewhere, C C^T = (m/2 - 1) I).
// H_m is symmetric, with H_m H_m^T = m I.

#include <cstdint>
#include <vector>

namespace nuvec::cpu {

/// The conference matrix C of H_m for m = 12, 20 or 28: order m / 2, row-major, entries 0 (the diagonal) and +-1.
const std::vector<int8_t>& conference_matrix(int m);

}  // namespace nuvec::cpu
