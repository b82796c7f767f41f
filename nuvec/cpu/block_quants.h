#pragma once

// GGML's block formats (nuvec/core/quantization_mode.h) on the CPU: rows of blocks decoded to floats, and products
// of a few rows of x with a weight of such rows computed from the blocks themselves (qmm_blocks.cpp).

#include <cstdint>

#include "nuvec/core/quantization_mode.h"

namespace nuvec::cpu::quant {
struct Matrix;
}  // namespace nuvec::cpu::quant

namespace nuvec::cpu::blocks {

/// Sub-block j's 6-bit scale and min in a q4_k block's 12 bytes of them (the low 6 bits of bytes 0-7 hold sub-blocks
/// 0-3, bytes 8-11 the low 4 bits of 4-7, whose top 2 bits sit in the spare bits of bytes 0-7).
void q4_k_scale_min(const uint8_t* s, int j, int& scale, int& min);

/// The k values of row r of a weight w of rows of blocks, as floats.
void dequantize_row(QuantizationMode mode, const uint8_t* w, int64_t r, int64_t k, float* out);

/// out (rows x n, dense) = x (rows x k, dense float32) @ W.T, W being n rows of blocks of k values each; decode
/// products write x as `levels` (1, 2 or 3) int8 levels, and so do prefill products of some formats (qmm_blocks.cpp).
void product(QuantizationMode mode, const float* x, int64_t rows, int64_t k, const uint8_t* w, int64_t n, int levels,
             float* out);

/// out (rows x m.rows, dense) = x (rows x m.cols, dense float32) @ m.T for affine weights of 4 or 8 bits whose groups
/// are whole blocks of 32 values, by the block formats' prefill kernel on `levels` (1 or 2) int8 levels of x per 32
/// values, the biases meeting x's sums; false, computing nothing, for other weights, more levels, an x with
/// infinities or NaNs or values too small for the levels' units, or a CPU without AVX-512 VNNI.
bool affine_prefill(const float* x, int64_t rows, const quant::Matrix& m, int levels, float* out);

}  // namespace nuvec::cpu::blocks
