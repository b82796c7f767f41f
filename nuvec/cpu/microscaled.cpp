// MLX's microscaled formats on the CPU. Quantizing follows MLX's definition op by op in the weight's dtype (each step
// rounded to it, as MLX's composed ops round): per group, the largest magnitude over the largest code value (6 for
// FP4 E2M1, 448 for FP8 E4M3) is the scale. mxfp4 and mxfp8 store it as a power of two, 2^round(log2(scale)) (E8M0:
// the exponent + 127); nvfp4 as an FP8 E4M3 code, of scale * 448 * 6 / global scale when one is given. The values
// divided by the decoded scale are rounded to the nearest code, ties to even, saturating (MLX's to_fp4_e2m1 and
// to_fp8 kernels; OCP MX's roundTiesToEven).

#include "nuvec/cpu/microscaled.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "nuvec/cpu/decoded_gemm.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/quantized.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu::quant {

namespace {

constexpr size_t grain_values = size_t{1} << 14;  // values of work per thread before splitting pays
constexpr int64_t tile_cols = 512;                // output columns per decoded tile of a product
constexpr float nvfp4_range = 448.F * 6.F;        // the largest scale code times the largest value code

/// The E2M1 code of x: nearest value, a tie to the even code, saturating at +-6; NaN gives 6, as MLX's kernels.
uint8_t fp4_encode(float x) {
  if (std::isnan(x)) {
    return 0x7;
  }
  const uint8_t sign = std::signbit(x) ? 0x8 : 0x0;
  const float a = std::fabs(x);
  // The midpoints between neighbouring values: > where the upper code is odd, >= where it is even.
  const uint8_t code = a > 5.F      ? 7
                       : a >= 3.5F  ? 6
                       : a > 2.5F   ? 5
                       : a >= 1.75F ? 4
                       : a > 1.25F  ? 3
                       : a >= 0.75F ? 2
                       : a > 0.25F  ? 1
                                    : 0;
  return sign | code;
}

/// v rounded to T and back: what one of MLX's ops on T arrays leaves.
template <class T>
float in_dtype(float v) {
  return static_cast<float>(static_cast<T>(v));
}

/// A decoded scale code (before any global scale): E4M3 for nvfp4, else E8M0, 2^(s - 127) (255 gives infinity).
float scale_value(QuantizationMode mode, uint8_t s) {
  return mode == QuantizationMode::nvfp4 ? fp8_table()[s] : std::ldexp(1.F, static_cast<int>(s) - 127);
}

/// Quantizes one group of w: its codes into `codes` (bits / 8 bytes a value) and its scale code into `scale`.
/// `encode` is 448 * 6 / global scale for nvfp4 with a global scale, else absent.
template <class T>
void quantize_group(const T* w, int gs, QuantizationMode mode, std::optional<float> encode, uint8_t* codes,
                    uint8_t& scale) {
  float amax = 0.F;
  for (int i = 0; i < gs; ++i) {
    amax = std::max(amax, std::fabs(static_cast<float>(w[i])));
  }
  const bool fp8 = mode == QuantizationMode::mxfp8;
  const float s = in_dtype<T>(amax / (fp8 ? 448.F : 6.F));
  std::array<float, 32> v{};
  if (mode == QuantizationMode::nvfp4) {
    // MLX multiplies by the float32 encoding factor, so these two steps are float32.
    scale = fp8_encode(encode ? s * *encode : s);
    const float decoded = in_dtype<T>(fp8_table()[scale]);
    for (int i = 0; i < gs; ++i) {
      const float q = decoded == 0.F ? 0.F : in_dtype<T>(static_cast<float>(w[i]) / decoded);
      v[i] = encode ? q * *encode : q;
    }
  } else {
    int e = 0;
    if (!std::isfinite(s)) {
      e = 128;
    } else if (s > 0.F) {
      e = std::clamp(static_cast<int>(std::nearbyint(in_dtype<T>(std::log2(s)))), -127, 127);
    }
    scale = static_cast<uint8_t>(e + 127);
    const float power = in_dtype<T>(std::ldexp(1.F, e));
    for (int i = 0; i < gs; ++i) {
      v[i] = in_dtype<T>(static_cast<float>(w[i]) / power);
    }
  }
  if (fp8) {
    for (int i = 0; i < gs; ++i) {
      codes[i] = fp8_encode(v[i]);
    }
  } else {
    for (int i = 0; i < gs; i += 2) {  // value 2j in the low nibble of byte j
      codes[i / 2] = static_cast<uint8_t>(fp4_encode(v[i]) | (fp4_encode(v[i + 1]) << 4));
    }
  }
}

/// Rows r0..r1 and columns c0..c0 + count (whole groups) of m as floats, `ld` apart. `round` takes a decoded scale
/// to the output dtype's precision (MLX computes the scales in it).
template <class Round>
void decode_rows(const ScaledMatrix& m, int64_t r0, int64_t r1, int64_t c0, int64_t count, float* out, int64_t ld,
                 Round round) {
  const MicroscaledLayout layout = microscaled_layout(m.mode);
  const int gs = layout.group_size;
  const int64_t groups = m.cols / gs;
  const int64_t row_bytes = m.cols * layout.bits / 8;
  const auto& fp8 = fp8_table();
  for (int64_t r = r0; r < r1; ++r) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(m.w) + r * row_bytes;
    const uint8_t* scales = m.scales + r * groups;
    float* o = out + (r - r0) * ld - c0;
    for (int64_t g = c0 / gs; g < (c0 + count) / gs; ++g) {
      const float scale = round(scale_value(m.mode, scales[g])) * m.unit;
      const int64_t first = g * gs;
      if (layout.bits == 8) {
        for (int64_t i = first; i < first + gs; ++i) {
          o[i] = fp8[bytes[i]] * scale;
        }
      } else {
        for (int64_t i = first; i < first + gs; i += 2) {
          const uint8_t b = bytes[i / 2];
          o[i] = fp4_values[b & 0xF] * scale;
          o[i + 1] = fp4_values[b >> 4] * scale;
        }
      }
    }
  }
}

float as_is(float v) { return v; }

}  // namespace

float nvfp4_unit(const std::vector<array>& in, size_t at) {
  if (in.size() <= at) {
    return 1.F;
  }
  const array g = dense(in[at]);
  return *data_of<const float>(g) / nvfp4_range;
}

void quantize_scaled(const array& w, QuantizationMode mode, std::optional<float> global_scale, array& codes,
                     array& scales) {
  const array wd = dense(w);
  const int gs = microscaled_layout(mode).group_size;
  const int bits = microscaled_layout(mode).bits;
  const size_t groups = scales.size();
  std::optional<float> encode;
  if (global_scale) {
    encode = nvfp4_range / *global_scale;
  }
  auto* packed = data_of<uint8_t>(codes);
  auto* scale_codes = data_of<uint8_t>(scales);
  dispatch<floating_types>(wd.dtype(), "Quantize", [&]<class T>(type_tag<T>) {
    const T* src = data_of<const T>(wd);
    parallel_for(groups, grain_values / gs, [&](size_t g0, size_t g1) {
      for (size_t g = g0; g < g1; ++g) {
        quantize_group<T>(src + g * gs, gs, mode, encode, packed + g * gs * bits / 8, scale_codes[g]);
      }
    });
  });
}

void dequantize_scaled(const ScaledMatrix& m, array& out) {
  dispatch<floating_types>(out.dtype(), "Dequantize", [&]<class T>(type_tag<T>) {
    T* dst = data_of<T>(out);
    parallel_for(
        static_cast<size_t>(m.rows), grain_values / static_cast<size_t>(m.cols) + 1, [&](size_t r0, size_t r1) {
          std::vector<float> row(static_cast<size_t>(m.cols));
          for (auto r = static_cast<int64_t>(r0); r < static_cast<int64_t>(r1); ++r) {
            decode_rows(m, r, r + 1, 0, m.cols, row.data(), m.cols, &in_dtype<T>);
            std::transform(row.begin(), row.end(), dst + r * m.cols, [](float v) { return static_cast<T>(v); });
          }
        });
  });
}

void scaled_product(const float* x, int64_t rows, int64_t k, const ScaledMatrix& m, bool transpose, float* out) {
  const int64_t n = transpose ? m.rows : m.cols;
  if (rows == 0 || n == 0) {
    return;
  }
  if (k == 0) {
    std::fill_n(out, rows * n, 0.F);
    return;
  }
  if (transpose && rows <= gemv_rows) {
    scaled_gemv(x, rows, k, m, out);
    return;
  }
  decoded_gemm(
      x, rows, k, n, tile_cols, transpose ? TileLayout::by_column : TileLayout::by_row,
      [&](int64_t t0, int64_t count, float* decoded) {
        if (transpose) {  // rows t0.. of w (N, K) become columns of b
          parallel_for(static_cast<size_t>(count), 1, [&](size_t r0, size_t r1) {
            const auto first = static_cast<int64_t>(r0);
            decode_rows(m, t0 + first, t0 + static_cast<int64_t>(r1), 0, k, decoded + first * k, k, &as_is);
          });
        } else {  // columns t0.. of every row of w (K, N)
          parallel_for(static_cast<size_t>(k), 1, [&](size_t r0, size_t r1) {
            const auto first = static_cast<int64_t>(r0);
            decode_rows(m, first, static_cast<int64_t>(r1), t0, count, decoded + first * count, count, &as_is);
          });
        }
      },
      out);
}

}  // namespace nuvec::cpu::quant
