#include "nuvec/core/hadamard_matrix.h"

#include <array>
#include <bit>
#include <string>
#include <string_view>

#include "nuvec/core/error.h"

namespace nuvec {

namespace {

using Matrix = std::vector<int8_t>;

/// The index of entry (r, s) of an m x m row-major matrix.
size_t at(int r, int s, int m) { return static_cast<size_t>(r) * static_cast<size_t>(m) + static_cast<size_t>(s); }

/// Paley's second construction from the conference matrix of order q + 1 over GF(q), q prime and 1 (mod 4):
/// C[0][0] = 0, ones in the rest of the first row and column, C[1 + x][1 + y] = chi(x - y) with chi the quadratic
/// character (chi(-1) = 1 makes C symmetric).
Matrix paley(int q) {
  std::vector<bool> square(static_cast<size_t>(q), false);
  for (int x = 1; x < q; ++x) {
    square[static_cast<size_t>(x * x % q)] = true;
  }
  const int c = q + 1;
  auto conference = [&](int i, int j) {
    if (i == j) {
      return 0;
    }
    if (i == 0 || j == 0) {
      return 1;
    }
    return square[static_cast<size_t>(((i - j) % q + q) % q)] ? 1 : -1;
  };
  // Entry (2i + a, 2j + b) of C (x) [[1, 1], [1, -1]] + I (x) [[1, -1], [-1, -1]].
  const int m = 2 * c;
  Matrix h(static_cast<size_t>(m * m));
  for (int r = 0; r < m; ++r) {
    for (int s = 0; s < m; ++s) {
      const int a = r % 2;
      const int b = s % 2;
      const int k1 = a == 1 && b == 1 ? -1 : 1;
      const int k2 = a == 0 && b == 0 ? 1 : -1;
      h[at(r, s, m)] = static_cast<int8_t>(conference(r / 2, s / 2) * k1 + (r / 2 == s / 2 ? k2 : 0));
    }
  }
  return h;
}

/// Williamson's array of the symmetric circulants whose first rows are given as '+' and '-'.
Matrix williamson(const std::array<std::string_view, 4>& first_rows) {
  const auto n = static_cast<int>(first_rows[0].size());
  // Block (i, j) of the array is sign[i][j] times circulant which[i][j].
  constexpr int which[4][4] = {{0, 1, 2, 3}, {1, 0, 3, 2}, {2, 3, 0, 1}, {3, 2, 1, 0}};
  constexpr int sign[4][4] = {{1, 1, 1, 1}, {-1, 1, -1, 1}, {-1, 1, 1, -1}, {-1, -1, 1, 1}};
  const int m = 4 * n;
  Matrix h(static_cast<size_t>(m * m));
  for (int r = 0; r < m; ++r) {
    for (int s = 0; s < m; ++s) {
      const int i = r / n;
      const int j = s / n;
      const char entry = first_rows[static_cast<size_t>(which[i][j])][static_cast<size_t>(((s - r) % n + n) % n)];
      h[at(r, s, m)] = static_cast<int8_t>(sign[i][j] * (entry == '+' ? 1 : -1));
    }
  }
  return h;
}

}  // namespace

int hadamard_order(int64_t n) {
  if (n >= 1 && std::has_single_bit(static_cast<uint64_t>(n))) {
    return 1;
  }
  for (int m : {12, 20, 28}) {
    if (n % m == 0 && std::has_single_bit(static_cast<uint64_t>(n / m))) {
      return m;
    }
  }
  return 0;
}

const Matrix& hadamard_matrix(int m) {
  // Williamson's circulants of orders 5 and 7 (the solutions in Sloane's library): B = A for order 5.
  static const Matrix h12 = paley(5);
  static const Matrix h20 = williamson({"+----", "+----", "++--+", "+-++-"});
  static const Matrix h28 = williamson({"+------", "++----+", "+-+--+-", "+--++--"});
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

bool hadamard_symmetric(int m) {
  if (m == 1) {
    return true;
  }
  const Matrix& h = hadamard_matrix(m);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < i; ++j) {
      if (h[at(i, j, m)] != h[at(j, i, m)]) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace nuvec
