#include "nuvec/cpu/decoded_gemm.h"

#include <algorithm>
#include <vector>

#include "nuvec/cpu/gemm.h"

namespace nuvec::cpu {

void decoded_gemm(const float* x, int64_t rows, int64_t k, int64_t n, int64_t tile, TileLayout layout,
                  const std::function<void(int64_t t0, int64_t count, float* dst)>& decode, float* out) {
  tile = std::min(n, tile);
  std::vector<float> decoded(static_cast<size_t>(tile * k));
  // A tile narrower than the output is computed aside and copied into its columns.
  std::vector<float> scratch(tile < n ? static_cast<size_t>(rows * tile) : 0);
  const MatrixBatch a{x, 0, k, 1};
  for (int64_t t0 = 0; t0 < n; t0 += tile) {
    const int64_t count = std::min(tile, n - t0);
    decode(t0, count, decoded.data());
    const MatrixBatch b = layout == TileLayout::by_column ? MatrixBatch{decoded.data(), 0, 1, k}
                                                          : MatrixBatch{decoded.data(), 0, count, 1};
    float* c = count == n ? out : scratch.data();
    gemm(float32, 1, rows, count, k, 1.F, a, b, 0.F, c);
    if (c != out) {
      for (int64_t r = 0; r < rows; ++r) {
        std::copy_n(c + r * count, count, out + r * n + t0);
      }
    }
  }
}

}  // namespace nuvec::cpu
