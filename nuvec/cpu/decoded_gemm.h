#pragma once

// Products with weights that are decoded before they are multiplied (quantized formats): the weight is decoded to
// float32 one tile of output columns at a time, and each tile goes through the sgemm, so the decoded copy stays a
// tile's size.

#include <cstdint>
#include <functional>

namespace nuvec::cpu {

/// The order a tile's decoded values are written in: `by_column`, the values of each output column together (a tile
/// of `count` columns is count x k, a row of a transposed weight per column); `by_row`, k rows of `count` values.
enum class TileLayout { by_column, by_row };

/// out (rows x n, row-major) = x (rows x k, row-major) times a weight of k x n values. For the tiles of at most
/// `tile` columns from t0, `decode(t0, count, dst)` writes the tile's float32 values to dst in `layout`.
void decoded_gemm(const float* x, int64_t rows, int64_t k, int64_t n, int64_t tile, TileLayout layout,
                  const std::function<void(int64_t t0, int64_t count, float* dst)>& decode, float* out);

}  // namespace nuvec::cpu
