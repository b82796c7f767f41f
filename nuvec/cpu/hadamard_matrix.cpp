// Paley's second construction: for a field of q = 1 (mod 4) elements with quadratic character chi, the conference
// matrix C of order q + 1 (C[0][0] = 0, ones elsewhere in its first row and column, C[1 + x][1 + y] = chi(x - y)) is
// symmetric with C C^T = q I, and H = C (x) [[1, 1], [1, -1]] + I (x) [[1, -1], [-1, -1]] is a symmetric Hadamard
// matrix of order 2 (q + 1). Orders 12, 20 and 28 come from q = 5, 9 and 13; GF(9) is GF(3)[i] with i^2 = -1.
// Symmetry matters: the transform's derivative rules apply the transform itself (its transpose).

#include "nuvec/cpu/hadamard_matrix.h"

#include <array>
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
  auto conference = [&](int i, int j) -> int {
    if (i == 0 || j == 0) {
      return i == j ? 0 : 1;
    }
    const int d = minus(i - 1, j - 1);
    return d == 0 ? 0 : (square[d] ? 1 : -1);
  };
  constexpr std::array<std::array<int, 2>, 2> plus{{{1, 1}, {1, -1}}};
  constexpr std::array<std::array<int, 2>, 2> diagonal{{{1, -1}, {-1, -1}}};
  const int n = 2 * c;
  std::vector<int8_t> h(static_cast<size_t>(n * n));
  for (int i = 0; i < c; ++i) {
    for (int j = 0; j < c; ++j) {
      for (int a = 0; a < 2; ++a) {
        for (int b = 0; b < 2; ++b) {
          const int v = conference(i, j) * plus[a][b] + (i == j ? diagonal[a][b] : 0);
          h[(2 * i + a) * n + 2 * j + b] = static_cast<int8_t>(v);
        }
      }
    }
  }
  return h;
}

}  // namespace

const std::vector<int8_t>& paley_matrix(int m) {
  static const std::vector<int8_t> h12 = paley(5, 1);
  static const std::vector<int8_t> h20 = paley(3, 2);
  static const std::vector<int8_t> h28 = paley(13, 1);
  switch (m) {
    case 12:
      return h12;
    case 20:
      return h20;
    case 28:
      return h28;
  }
  throw_internal("[hadamard_transform] No Hadamard matrix of order " + std::to_string(m) + ".");
}

}  // namespace nuvec::cpu
