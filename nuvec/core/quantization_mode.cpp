#include "nuvec/core/quantization_mode.h"

#include <array>

namespace nuvec {

namespace {
constexpr std::array all_modes = {QuantizationMode::affine,  QuantizationMode::q4_0,   QuantizationMode::q8_0,
                                  QuantizationMode::q4_k,    QuantizationMode::q6_k,   QuantizationMode::mxfp4,
                                  QuantizationMode::mxfp8,   QuantizationMode::nvfp4,  QuantizationMode::q4_0x8,
                                  QuantizationMode::q4_kx16, QuantizationMode::q4_0x16};
}  // namespace

std::string_view mode_name(QuantizationMode mode) {
  switch (mode) {
    case QuantizationMode::affine:
      return "affine";
    case QuantizationMode::q4_0:
      return "q4_0";
    case QuantizationMode::q8_0:
      return "q8_0";
    case QuantizationMode::q4_k:
      return "q4_k";
    case QuantizationMode::q6_k:
      return "q6_k";
    case QuantizationMode::mxfp4:
      return "mxfp4";
    case QuantizationMode::mxfp8:
      return "mxfp8";
    case QuantizationMode::nvfp4:
      return "nvfp4";
    case QuantizationMode::q4_0x8:
      return "q4_0x8";
    case QuantizationMode::q4_kx16:
      return "q4_kx16";
    case QuantizationMode::q4_0x16:
      return "q4_0x16";
  }
  return "unknown";
}

std::optional<QuantizationMode> parse_quantization_mode(std::string_view name) {
  for (QuantizationMode mode : all_modes) {
    if (mode_name(mode) == name) {
      return mode;
    }
  }
  return std::nullopt;
}

BlockLayout block_layout(QuantizationMode mode) {
  switch (mode) {
    case QuantizationMode::affine:
    case QuantizationMode::mxfp4:
    case QuantizationMode::mxfp8:
    case QuantizationMode::nvfp4:
      return {0, 0};
    case QuantizationMode::q4_0:
    case QuantizationMode::q4_0x8:
    case QuantizationMode::q4_0x16:
      return {32, 18};
    case QuantizationMode::q8_0:
      return {32, 34};
    case QuantizationMode::q4_k:
    case QuantizationMode::q4_kx16:
      return {256, 144};
    case QuantizationMode::q6_k:
      return {256, 210};
  }
  return {0, 0};
}

int block_rows(QuantizationMode mode) {
  switch (mode) {
    case QuantizationMode::q4_0x8:
      return 8;
    case QuantizationMode::q4_kx16:
    case QuantizationMode::q4_0x16:
      return 16;
    case QuantizationMode::affine:
    case QuantizationMode::mxfp4:
    case QuantizationMode::mxfp8:
    case QuantizationMode::nvfp4:
      return 0;
    case QuantizationMode::q4_0:
    case QuantizationMode::q8_0:
    case QuantizationMode::q4_k:
    case QuantizationMode::q6_k:
      return 1;
  }
  return 0;
}

QuantizationMode plain_layout(QuantizationMode mode) {
  switch (mode) {
    case QuantizationMode::q4_0x8:
    case QuantizationMode::q4_0x16:
      return QuantizationMode::q4_0;
    case QuantizationMode::q4_kx16:
      return QuantizationMode::q4_k;
    case QuantizationMode::affine:
    case QuantizationMode::q4_0:
    case QuantizationMode::q8_0:
    case QuantizationMode::q4_k:
    case QuantizationMode::q6_k:
    case QuantizationMode::mxfp4:
    case QuantizationMode::mxfp8:
    case QuantizationMode::nvfp4:
      return mode;
  }
  return mode;
}

bool is_block_format(QuantizationMode mode) { return block_layout(mode).values != 0; }

bool is_microscaled(QuantizationMode mode) {
  return mode == QuantizationMode::mxfp4 || mode == QuantizationMode::mxfp8 || mode == QuantizationMode::nvfp4;
}

MicroscaledLayout microscaled_layout(QuantizationMode mode) {
  switch (mode) {
    case QuantizationMode::mxfp4:
      return {32, 4};
    case QuantizationMode::mxfp8:
      return {32, 8};
    case QuantizationMode::nvfp4:
      return {16, 4};
    case QuantizationMode::affine:
    case QuantizationMode::q4_0:
    case QuantizationMode::q8_0:
    case QuantizationMode::q4_k:
    case QuantizationMode::q6_k:
    case QuantizationMode::q4_0x8:
    case QuantizationMode::q4_kx16:
    case QuantizationMode::q4_0x16:
      return {0, 0};
  }
  return {0, 0};
}

}  // namespace nuvec
