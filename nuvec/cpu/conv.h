#pragma once

// The convolution kernel's two implementations and the choice between them (see conv.cpp for the rule and the
// measurements behind it): oneDNN's convolution primitive (conv_onednn.cpp) and im2col + GEMM (conv.cpp).

#include <array>
#include <cstdint>

#include "nuvec/core/dtype.h"

namespace nuvec::cpu {

/// Which implementation computes convolutions: `automatic` picks per shape; the others force one where it
/// applies (oneDNN takes float32 and bfloat16, with input dilation only as in onednn_transposed; GEMM takes
/// everything).
enum class ConvBackend { automatic, onednn, gemm };
void set_conv_backend(ConvBackend backend);
ConvBackend get_conv_backend();

/// One convolution's sizes, with 1-d and 2-d problems written as 3-d ones (leading axes of size 1), so that
/// every implementation has one loop nest. Indices: [0] depth, [1] height, [2] width.
struct ConvGeometry {
  int spatial;  // the caller's number of spatial axes (1 to 3)
  int64_t batch;
  int64_t c_in;
  int64_t c_out;
  int64_t groups;
  std::array<int64_t, 3> in;
  std::array<int64_t, 3> kernel;
  std::array<int64_t, 3> out;
  std::array<int64_t, 3> stride;
  std::array<int64_t, 3> pad_lo;
  std::array<int64_t, 3> pad_hi;
  std::array<int64_t, 3> kernel_dilation;
  std::array<int64_t, 3> input_dilation;
  friend bool operator==(const ConvGeometry&, const ConvGeometry&) = default;
};

/// Whether oneDNN can compute a convolution with input dilation: as a deconvolution (a transposed convolution,
/// which flips the kernel itself), which needs unit strides and low padding within the dilated kernel's extent.
bool onednn_transposed(const ConvGeometry& g);

/// out = conv(in, weight) through oneDNN, for dense channels-last float32 or bfloat16 operands. `weight` is read as
/// it is: flipped by the caller when the convolution flips, or, with input dilation (a deconvolution, see
/// onednn_transposed), when it does not. Returns false when oneDNN has no implementation.
bool onednn_conv(const ConvGeometry& g, Dtype dtype, const void* in, const void* weight, void* out);

}  // namespace nuvec::cpu
