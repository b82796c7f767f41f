#pragma once

// GGML's block formats (nuvec/core/quantization_mode.h) on the CPU: rows of blocks decoded to floats, and products
// of a few rows of x with a weight of such rows computed from the blocks themselves (qmm_blocks.cpp).

#include <cstdint>

#include "nuvec/core/quantization_mode.h"

namespace nuvec::cpu::blocks {

/// The k values of row r of a weight w of rows of blocks, as floats.
void dequantize_row(QuantizationMode mode, const uint8_t* w, int64_t r, int64_t k, float* out);

/// out (rows x n, dense) = x (rows x k, dense float32) @ W.T, W being n rows of blocks of k values each; decode
/// products write x as `levels` (2 or 3) int8 levels (qmm_blocks.cpp).
void product(QuantizationMode mode, const float* x, int64_t rows, int64_t k, const uint8_t* w, int64_t n, int levels,
             float* out);

}  // namespace nuvec::cpu::blocks
