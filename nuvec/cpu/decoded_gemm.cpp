#include "nuvec/cpu/decoded_gemm.h"

#include <algorithm>
#include <vector>

#include "nuvec/cpu/gemm.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

namespace {

/// The tiles from t0 to t1, one after another on the calling thread: each decoded into `decoded` and multiplied.
void tiles_in_turn(const float* x, int64_t rows, int64_t k, int64_t n, int64_t tile, TileLayout layout,
                   const std::function<void(int64_t t0, int64_t count, float* dst)>& decode, int64_t t0, int64_t t1,
                   float* out) {
  std::vector<float> decoded(static_cast<size_t>(tile * k));
  // A tile narrower than the output is computed aside and copied into its columns.
  std::vector<float> scratch(tile < n ? static_cast<size_t>(rows * tile) : 0);
  const MatrixBatch a{x, 0, k, 1};
  for (int64_t t = t0; t < t1; t += tile) {
    const int64_t count = std::min(tile, n - t);
    decode(t, count, decoded.data());
    const MatrixBatch b = layout == TileLayout::by_column ? MatrixBatch{decoded.data(), 0, 1, k}
                                                          : MatrixBatch{decoded.data(), 0, count, 1};
    float* c = count == n ? out : scratch.data();
    gemm(float32, 1, rows, count, k, 1.F, a, b, 0.F, c);
    if (c != out) {
      for (int64_t r = 0; r < rows; ++r) {
        std::copy_n(c + r * count, count, out + r * n + t);
      }
    }
  }
}

}  // namespace

void decoded_gemm(const float* x, int64_t rows, int64_t k, int64_t n, int64_t tile, TileLayout layout,
                  const std::function<void(int64_t t0, int64_t count, float* dst)>& decode, float* out) {
  tile = std::min(n, tile);
  const int64_t tiles = (n + tile - 1) / tile;
  if (tiles < int64_t{2} * num_threads()) {
    // Too few tiles to share out: each tile's decoding and product are split across the threads.
    tiles_in_turn(x, rows, k, n, tile, layout, decode, 0, n, out);
    return;
  }
  // Each thread decodes its own tiles and multiplies them alone (the calls inside run inline), so a tile is read
  // back from the core's own cache and no thread waits on another between tiles.
  parallel_for(static_cast<size_t>(tiles), 1, [&](size_t begin, size_t end) {
    tiles_in_turn(x, rows, k, n, tile, layout, decode, static_cast<int64_t>(begin) * tile,
                  std::min(n, static_cast<int64_t>(end) * tile), out);
  });
}

}  // namespace nuvec::cpu
