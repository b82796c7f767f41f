#include "nuvec/core/block_code_bits.h"

namespace nuvec {

int block_code_bits(QuantizationMode mode) {
  switch (mode) {
    case QuantizationMode::affine:
    case QuantizationMode::mxfp4:
    case QuantizationMode::mxfp8:
    case QuantizationMode::nvfp4:
      return 0;  // not block formats
    case QuantizationMode::q4_0:
    case QuantizationMode::q4_0x8:
    case QuantizationMode::q4_0x16:
    case QuantizationMode::q4_k:
    case QuantizationMode::q4_kx16:
      return 4;
    case QuantizationMode::q8_0:
    case QuantizationMode::q8_0x16:
      return 8;
    case QuantizationMode::q6_k:
    case QuantizationMode::q6_kx16:
      return 6;
  }
  return 0;
}

}  // namespace nuvec
