#pragma once

// MLX's microscaled formats on the CPU (mxfp4, mxfp8, nvfp4; nuvec/core/quantization_mode.h): quantizing a weight,
// reading it back, and products that decode tiles of the weight into float32 and hand them to the sgemm.

#include <cstdint>
#include <optional>
#include <vector>

#include "nuvec/core/array.h"
#include "nuvec/core/quantization_mode.h"

namespace nuvec::cpu::quant {

/// One microscaled matrix (row-contiguous): rows x cols values, cols / group_size uint8 scales per row.
struct ScaledMatrix {
  const uint32_t* w;
  const uint8_t* scales;
  int64_t rows;
  int64_t cols;  // unpacked
  QuantizationMode mode;
  float unit;  // what a decoded scale is multiplied by: 1, or an nvfp4 global scale / (448 * 6)
};

/// The value one unit of an nvfp4 scale stands for, from the global scale (input `at` of a node, if present).
float nvfp4_unit(const std::vector<array>& in, size_t at);

/// w (..., K) -> packed codes (uint32) and scales (uint8), as MLX's quantize computes them in w's dtype.
void quantize_scaled(const array& w, QuantizationMode mode, std::optional<float> global_scale, array& codes,
                     array& scales);

/// out (any floating dtype, m.rows x m.cols) = code value * scale, each step rounded to out's dtype as MLX's.
void dequantize_scaled(const ScaledMatrix& m, array& out);

/// out (rows x n, dense float32) = x (rows x k, dense float32) @ m.T (transpose) or x @ m.
void scaled_product(const float* x, int64_t rows, int64_t k, const ScaledMatrix& m, bool transpose, float* out);

}  // namespace nuvec::cpu::quant
