#pragma once

// The Hadamard matrices of orders 12, 20 and 28 that hadamard_transform combines with Sylvester's for row lengths
// m * 2^k. They are MLX's (which takes them from Sloane's library of Hadamard matrices), built here from their
// constructions:
//   - H_12, Paley's second construction: C (x) [[1, 1], [1, -1]] + I (x) [[1, -1], [-1, -1]] for the symmetric
//     conference matrix C of order 6 over GF(5) (zero diagonal, C C^T = 5 I). H_12 is symmetric.
//   - H_20 and H_28, Williamson's array [[A, B, C, D], [-B, A, -D, C], [-C, D, A, -B], [-D, -C, B, A]] of four
//     symmetric circulant blocks of order 5 or 7 with A A^T + B B^T + C C^T + D D^T = m I. They are not symmetric:
//     the transform's gradient multiplies by the transpose.

#include <cstdint>
#include <vector>

namespace nuvec {

/// The m of a row length n = m * 2^k that hadamard_transform takes: 1 for a power of two, else 12, 20 or 28;
/// 0 for any other length.
int hadamard_order(int64_t n);

/// H_m for m = 12, 20 or 28: m x m, row-major, entries +-1.
const std::vector<int8_t>& hadamard_matrix(int m);

/// Whether H_m equals its transpose (m = 1, 12, 20 or 28).
bool hadamard_symmetric(int m);

}  // namespace nuvec
