#include "nuvec/core/quantization_mode.h"

#include <array>

namespace nuvec {

namespace {
constexpr std::array all_modes = {QuantizationMode::affine, QuantizationMode::q4_0, QuantizationMode::q8_0,
                                  QuantizationMode::q4_k, QuantizationMode::q6_k};
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
      return {0, 0};
    case QuantizationMode::q4_0:
      return {32, 18};
    case QuantizationMode::q8_0:
      return {32, 34};
    case QuantizationMode::q4_k:
      return {256, 144};
    case QuantizationMode::q6_k:
      return {256, 210};
  }
  return {0, 0};
}

}  // namespace nuvec
