#pragma once

// The width of a block format's codes, apart from quantization_mode.h, which every primitive's header includes.

#include "nuvec/core/quantization_mode.h"

namespace nuvec {

/// Bits per code of one of GGML's block formats (q4_0 4, q8_0 8, q4_k 4, q6_k 6); 0 for the other modes.
int block_code_bits(QuantizationMode mode);

}  // namespace nuvec
