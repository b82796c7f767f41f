#pragma once

#include <string>
#include <string_view>

namespace nuvec {

/// How precisely products of float32 matrices may be computed, as PyTorch's torch.set_float32_matmul_precision:
/// - "highest" (the default): float32 throughout;
/// - "high": each input may be carried with at least 16 significant bits (PyTorch's allows TF32's 11);
/// - "medium": at least bfloat16's 8.
/// nuvec reads it where float32 rows meet weights of 8 bits or fewer: the decode-shaped quantized products (a few
/// rows of x against affine or GGML block weights) write x as 8-bit integer levels, three under "highest" (float32's
/// accuracy) and two otherwise (within 2^-16 of the largest |x| of its row, or of its 32 values for the block formats:
/// hundreds of times finer than the weights' own rounding, and a third less arithmetic). Under "medium" the block
/// formats take one level, x rounded to 8 bits per 32 values as llama.cpp's q8_0 activations are. Prefill products
/// (many rows of x) of q4_0x8, q8_0, q4_k and q6_k weights, and of 4- and 8-bit affine weights whose groups are whole
/// blocks of 32 values (two levels, units per 32 values), take the levels of "high" and "medium" too. Every other
/// product computes in float32. Read when a product is computed (at eval), not when its op is built; process-wide.
void set_float32_matmul_precision(std::string_view precision);
/// "highest", "high" or "medium".
[[nodiscard]] std::string get_float32_matmul_precision();

enum class MatmulPrecision { highest, high, medium };
[[nodiscard]] MatmulPrecision float32_matmul_precision();

}  // namespace nuvec
