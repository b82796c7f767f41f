// Paley's conference matrices: for a field of q = 1 (mod 4) elements with quadratic character chi, the matrix of
// order q + 1 with C[0][0] = 0, ones elsewhere in its first row and column, and C[1 + x][1 + y] = chi(x - y) is
// symmetric (chi(-1) = 1) with C C^T = q I. Orders 6, 10 and 14 (for H_12, H_20, H_28) come from q = 5, 9 and 13;
// GF(9) is GF(3)[i] with i^2 = -1. H_m's symmetry matters: the transform's derivative rules apply the transform
// itself (its transpose).

#include "nuvec/cpu/hadamard_matrix.h"

#include <string>

#include "nuvec/core/error.h"

namespace nuvec::cpu {

namespace {

/// The matrix over GF(p^e), e = 1 or 2, p = 3 (mod 4) when e = 2. Element a + b i is numbered a + p b.
std::vector<int8_t> paley(int p, int e) {
  const int q = e == 1 ? p : p * p;
  auto minus = [p](int x, int y) { return (x % p - y % p + p) % p + p * ((x / p - y / p + p) % p); };
  std::vector<bool> square(static_cast<size_t>(q), false);
  for (int x = 1; x < q; ++x) {
    const int a = x % p;
    const int b = x / p;
    square[((a * a - b * b) % p + p) % p + p * (2 * a * b % p)] = true;  // (a + b i)^2
  }
  const int c = q + 1;
  std::vector<int8_t> conference(static_cast<size_t>(c * c));
  for (int i = 0; i < c; ++i) {
    for (int j = 0; j < c; ++j) {
      int v = 1;
      if (i == j) {
        v = 0;
      } else if (i > 0 && j > 0) {
        v = square[minus(i - 1, j - 1)] ? 1 : -1;
      }
      conference[i * c + j] = static_cast<int8_t>(v);
    }
  }
  return conference;
}

}  // namespace

const std::vector<int8_t>& conference_matrix(int m) {
  static const std::vector<int8_t> c6 = paley(5, 1);
  static const std::vector<int8_t> c10 = paley(3, 2);
  static const std::vector<int8_t> c14 = paley(13, 1);
  switch (m) {
    case 12:
      return c6;
    case 20:
      return c10;
    case 28:
      return c14;
  }
  throw_internal("[hadamard_transform] No Hadamard matrix of order " + std::to_string(m) + ".");
}

}  // namespace nuvec::cpu
