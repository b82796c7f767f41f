#pragma once

// MLX's microscaled formats on the CPU (mxfp4, mxfp8, nvfp4; nuvec/core/quantization_mode.h): quantizing a weight,
// reading it back, and products: a few rows of x meet the weight decoded in registers (microscaled_gemv.cpp), more
// rows get tiles of the weight decoded into float32 for the sgemm.

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "nuvec/core/array.h"
#include "nuvec/core/quantization_mode.h"

namespace nuvec::cpu::quant {

/// FP4 E2M1 values by code; bit 3 is the sign.
inline constexpr std::array<float, 16> fp4_values{0.F,  0.5F,  1.F,  1.5F,  2.F,  3.F,  4.F,  6.F,
                                                  -0.F, -0.5F, -1.F, -1.5F, -2.F, -3.F, -4.F, -6.F};

/// Up to this many rows of x, a product with w (N, K) decodes the weight in registers (scaled_gemv).
inline constexpr int64_t gemv_rows = 8;

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

/// out (rows x m.rows, dense float32) = x (rows x k, dense float32, 1 to gemv_rows rows) @ m.T.
void scaled_gemv(const float* x, int64_t rows, int64_t k, const ScaledMatrix& m, float* out);

/// out (rows x n, dense float32) = x (rows x k, dense float32) @ m.T (transpose) or x @ m.
void scaled_product(const float* x, int64_t rows, int64_t k, const ScaledMatrix& m, bool transpose, float* out);

}  // namespace nuvec::cpu::quant
