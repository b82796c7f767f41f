#pragma once

// What the quantization kernels share (quantized.cpp, qmm.cpp): the packed format and a float view of the scales.
//
// A packed row is a little-endian bit stream: value i occupies bits [i * bits, (i + 1) * bits). Eight values always
// fill exactly `bits` bytes, so every width (2 to 8) is read and written eight values at a time from `bits` bytes at
// byte offset (i / 8) * bits; groups (16, 32, 64 or 128 values) start on such a boundary.

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "nuvec/core/array.h"
#include "nuvec/core/dispatch.h"
#include "nuvec/core/error.h"

namespace nuvec::cpu::quant {

/// The elements of an array a kernel reads or writes (its outputs are not yet marked available).
template <class T>
T* data_of(const array& a) {
  return static_cast<T*>(a.raw_data());
}

/// Calls fn(std::integral_constant<int, Bits>{}) for a supported width.
template <class Fn>
decltype(auto) dispatch_bits(int bits, Fn&& fn) {
  switch (bits) {
    case 2:
      return fn(std::integral_constant<int, 2>{});
    case 3:
      return fn(std::integral_constant<int, 3>{});
    case 4:
      return fn(std::integral_constant<int, 4>{});
    case 5:
      return fn(std::integral_constant<int, 5>{});
    case 6:
      return fn(std::integral_constant<int, 6>{});
    case 8:
      return fn(std::integral_constant<int, 8>{});
  }
  throw_internal("[quantization] unsupported bit width " + std::to_string(bits));
}

/// out[0 .. count) = the values [first, first + count) of a packed row, as floats; first and count multiples of 8.
template <int Bits>
void unpack(const uint32_t* row, int64_t first, int64_t count, float* out) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(row) + first / 8 * Bits;
  constexpr uint64_t mask = (uint64_t{1} << Bits) - 1;
  for (int64_t c = 0; c < count / 8; ++c) {
    uint64_t u = 0;
    std::memcpy(&u, bytes + c * Bits, Bits);
    for (int j = 0; j < 8; ++j) {
      out[c * 8 + j] = static_cast<float>((u >> (j * Bits)) & mask);
    }
  }
}

/// Converts count scales or biases of the kernel's dtype, starting at element `offset`, to float.
using ToFloat = void (*)(const void* src, int64_t offset, int64_t count, float* dst);

template <class T>
void to_float(const void* src, int64_t offset, int64_t count, float* dst) {
  const T* s = static_cast<const T*>(src) + offset;
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(dst, s, static_cast<size_t>(count) * sizeof(float));
  } else {
    for (int64_t i = 0; i < count; ++i) {
      dst[i] = static_cast<float>(s[i]);
    }
  }
}

/// One quantized matrix (row-contiguous): rows x cols values, `groups` scales and biases per row.
struct Matrix {
  const uint32_t* w;
  const void* scales;
  const void* biases;
  int64_t rows;
  int64_t cols;  // unpacked
  int bits;
  int group_size;
  ToFloat load;  // reads scales and biases
  int item;      // bytes per scale or bias

  [[nodiscard]] int64_t words() const { return cols * bits / 32; }
  [[nodiscard]] int64_t groups() const { return cols / group_size; }
  [[nodiscard]] const uint32_t* row(int64_t r) const { return w + r * words(); }
  /// The bytes of row r's scales (or biases: `base` is either).
  [[nodiscard]] const char* scale_row(const void* base, int64_t r) const {
    return static_cast<const char*>(base) + r * groups() * item;
  }
};

/// Asks for the scales and biases of row r of m to be brought into L2 (decode kernels, rows ahead).
inline void prefetch_scales(const Matrix& m, int64_t r) {
  for (int64_t byte = 0; byte < m.groups() * m.item; byte += 64) {
    __builtin_prefetch(m.scale_row(m.scales, r) + byte, 0, 2);
    __builtin_prefetch(m.scale_row(m.biases, r) + byte, 0, 2);
  }
}

/// The FP8 E4M3 code of x: round to nearest even; magnitudes that would round past 448, infinities and NaN give
/// +-448 (MLX's saturation; E4M3 has no infinity and its NaN code is never produced).
uint8_t fp8_encode(float x);
/// Every FP8 E4M3 code's value (0x7F and 0xFF are NaN).
const std::array<float, 256>& fp8_table();

/// `a` itself when row-contiguous, else a dense copy.
array dense(const array& a);

/// out (rows r0..r1 of m, dense float, `ld` apart; columns c0..c0+count, multiples of the group size) =
/// scale * q + bias.
void dequantize_rows(const Matrix& m, int64_t r0, int64_t r1, int64_t c0, int64_t count, float* out, int64_t ld);

/// The sums of x (rows x k, dense) over each group of group_size: rows x (k / group_size).
std::vector<float> group_sums(const float* x, int64_t rows, int64_t k, int group_size);

/// out (rows x m.rows, dense) = x (rows x k, dense float32, finite) @ m.T on integer dot products, x split into
/// `levels` (2 or 3) int8 levels. False, with nothing written, where the CPU lacks AVX-512 VNNI or the width is not
/// 2, 4 or 8 bits.
bool int8_decode(const float* x, int64_t rows, int64_t k, const Matrix& m, int levels, float* out);

}  // namespace nuvec::cpu::quant
