// The Quantize, Dequantize and Fp8Cast kernels, and the dequantization of row blocks that the quantized products
// use for large batches (qmm.cpp). The arithmetic of quantize follows CONFORMANCE.md step by step in float32, so the
// packed values, scales and biases are bit for bit MLX's.

#include "nuvec/cpu/quantized.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "nuvec/cpu/block_quants.h"
#include "nuvec/cpu/copy.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/microscaled.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

namespace {

constexpr size_t grain_values = size_t{1} << 14;  // values of work per thread before splitting pays

/// Quantizes one group of n floats into `bits`-wide codes written at `packed`; returns {scale, bias}.
template <int Bits>
std::pair<float, float> quantize_group(const float* v, int n, uint8_t* packed) {
  constexpr auto n_bins = static_cast<float>((1 << Bits) - 1);
  float hi = v[0];
  float lo = v[0];
  for (int i = 1; i < n; ++i) {
    hi = std::max(hi, v[i]);
    lo = std::min(lo, v[i]);
  }
  float scale = std::max((hi - lo) / n_bins, 1e-7F);
  const bool from_min = std::fabs(lo) > std::fabs(hi);
  const float edge = from_min ? lo : hi;
  if (!from_min) {
    scale = -scale;
  }
  const float q0 = std::nearbyint(edge / scale);  // the default rounding mode: half to even, as numpy's round
  float bias = 0.F;
  if (q0 != 0.F) {
    scale = edge / q0;
    bias = edge;
  }
  for (int c = 0; c < n / 8; ++c) {
    uint64_t u = 0;
    for (int j = 0; j < 8; ++j) {
      const float q = std::clamp(std::nearbyint((v[c * 8 + j] - bias) / scale), 0.F, n_bins);
      u |= static_cast<uint64_t>(q) << (j * Bits);
    }
    std::memcpy(packed + c * Bits, &u, Bits);
  }
  return {scale, bias};
}

}  // namespace

// ---------------------------------------------------------------- FP8 E4M3 (1 sign, 4 exponent, 3 mantissa bits)

uint8_t quant::fp8_encode(float x) {
  const auto sign = static_cast<uint8_t>((std::bit_cast<uint32_t>(x) >> 24) & 0x80U);
  const float a = std::fabs(x);
  if (!(a < 464.F)) {  // 464 is the midpoint between 448 and the next step (480), and rounds to even: 448
    return sign | 0x7EU;
  }
  if (a < 0x1p-6F) {  // subnormals: multiples of 2^-9; 8 of them is the smallest normal, whose code is 8 too
    return sign | static_cast<uint8_t>(std::nearbyint(a * 512.F));
  }
  const int e = static_cast<int>((std::bit_cast<uint32_t>(a) >> 23) & 0xFFU) - 127;  // in [-6, 8]
  auto m = static_cast<int>(std::nearbyint(std::ldexp(a, 3 - e)));                   // in [8, 16]; exact scaling
  int biased = e + 7;
  if (m == 16) {
    m = 8;
    ++biased;
  }
  return sign | static_cast<uint8_t>((biased << 3) | (m - 8));
}

const std::array<float, 256>& quant::fp8_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int code = 0; code < 256; ++code) {
      const int e = (code >> 3) & 0xF;
      const int m = code & 7;
      float v = e == 0 ? std::ldexp(static_cast<float>(m), -9) : std::ldexp(1.F + static_cast<float>(m) / 8.F, e - 7);
      if (e == 15 && m == 7) {
        v = std::numeric_limits<float>::quiet_NaN();
      }
      t[code] = (code & 0x80) != 0 ? -v : v;
    }
    return t;
  }();
  return table;
}

array quant::dense(const array& a) {
  if (a.flags().row_contiguous) {
    return a;
  }
  array out(allocator::malloc(a.nbytes()), a.shape(), a.dtype());
  copy_strided(a, out.raw_data(), out.strides(), a.dtype());
  return out;
}

void quant::dequantize_rows(const Matrix& m, int64_t r0, int64_t r1, int64_t c0, int64_t count, float* out,
                            int64_t ld) {
  const int64_t g0 = c0 / m.group_size;
  const int64_t ng = count / m.group_size;
  std::vector<float> sb(static_cast<size_t>(2 * ng));
  quant::dispatch_bits(m.bits, [&](auto bits_c) {
    constexpr int Bits = decltype(bits_c)::value;
    for (int64_t r = r0; r < r1; ++r) {
      m.load(m.scales, r * m.groups() + g0, ng, sb.data());
      m.load(m.biases, r * m.groups() + g0, ng, sb.data() + ng);
      float* o = out + (r - r0) * ld;
      unpack<Bits>(m.row(r), c0, count, o);
      for (int64_t g = 0; g < ng; ++g) {
        const float s = sb[g];
        const float b = sb[ng + g];
        for (int64_t i = g * m.group_size; i < (g + 1) * m.group_size; ++i) {
          o[i] = s * o[i] + b;
        }
      }
    }
  });
}

void run(const Quantize& p, const Inputs& in, Outputs& out) {
  for (auto& o : out) {
    o.set_data(allocator::malloc(o.nbytes()));
  }
  if (in[0].size() == 0) {
    return;
  }
  if (is_microscaled(p.mode)) {
    std::optional<float> global_scale;
    if (in.size() > 1) {
      global_scale = *quant::data_of<const float>(quant::dense(in[1]));
    }
    quant::quantize_scaled(in[0], p.mode, global_scale, out[0], out[1]);
    return;
  }
  const array w = quant::dense(in[0]);
  const size_t groups = out[1].size();
  const int gs = p.group_size;
  auto* packed = static_cast<uint8_t*>(out[0].raw_data());
  dispatch<floating_types>(w.dtype(), "Quantize", [&]<class T>(type_tag<T>) {
    const T* src = quant::data_of<T>(w);
    T* scales = quant::data_of<T>(out[1]);
    T* biases = quant::data_of<T>(out[2]);
    quant::dispatch_bits(p.bits, [&](auto bits_c) {
      constexpr int Bits = decltype(bits_c)::value;
      parallel_for(groups, grain_values / gs, [&](size_t g0, size_t g1) {
        std::array<float, 128> v{};
        for (size_t g = g0; g < g1; ++g) {
          for (int i = 0; i < gs; ++i) {
            v[i] = static_cast<float>(src[g * gs + i]);
          }
          auto [scale, bias] = quantize_group<Bits>(v.data(), gs, packed + g * gs * Bits / 8);
          scales[g] = static_cast<T>(scale);
          biases[g] = static_cast<T>(bias);
        }
      });
    });
  });
}

void run(const Dequantize& p, const Inputs& in, Outputs& out) {
  auto& o = out[0];
  o.set_data(allocator::malloc(o.nbytes()));
  if (o.size() == 0) {
    return;
  }
  const array w = quant::dense(in[0]);
  if (is_block_format(p.mode)) {
    const int64_t k = o.shape(-1);
    const auto* blocks = quant::data_of<const uint8_t>(w);
    dispatch<floating_types>(o.dtype(), "Dequantize", [&]<class T>(type_tag<T>) {
      T* dst = quant::data_of<T>(o);
      parallel_for(static_cast<size_t>(o.shape(0)), grain_values / static_cast<size_t>(std::max<int64_t>(k, 1)) + 1,
                   [&](size_t r0, size_t r1) {
                     std::vector<float> row(static_cast<size_t>(k));
                     for (size_t r = r0; r < r1; ++r) {
                       blocks::dequantize_row(p.mode, blocks, static_cast<int64_t>(r), k, row.data());
                       std::copy(row.begin(), row.end(), dst + r * k);
                     }
                   });
    });
    return;
  }
  if (is_microscaled(p.mode)) {
    const array scales = quant::dense(in[1]);
    const int64_t cols = o.shape(-1);
    quant::dequantize_scaled({quant::data_of<const uint32_t>(w), quant::data_of<const uint8_t>(scales),
                              static_cast<int64_t>(o.size()) / cols, cols, p.mode, quant::nvfp4_unit(in, 2)},
                             o);
    return;
  }
  const array scales = quant::dense(in[1]);
  const array biases = quant::dense(in[2]);
  // The scales' dtype and the output's are dispatched apart: no kernel per pair of dtypes.
  const quant::ToFloat load = dispatch<floating_types>(
      scales.dtype(), "Dequantize", []<class S>(type_tag<S>) -> quant::ToFloat { return &quant::to_float<S>; });
  dispatch<floating_types>(o.dtype(), "Dequantize", [&]<class T>(type_tag<T>) {
    const int64_t cols = o.shape(-1);
    const auto rows = static_cast<int64_t>(o.size()) / cols;
    quant::Matrix m{quant::data_of<uint32_t>(w),
                    scales.raw_data(),
                    biases.raw_data(),
                    rows,
                    cols,
                    p.bits,
                    p.group_size,
                    load,
                    static_cast<int>(scales.itemsize())};
    T* dst = quant::data_of<T>(o);
    // Whole rows per task, or groups of one row when rows are few and long.
    const int64_t chunk = std::min<int64_t>(cols, std::max<int64_t>(p.group_size, 4096 / p.group_size * p.group_size));
    const int64_t per_row = (cols + chunk - 1) / chunk;
    parallel_for(static_cast<size_t>(rows * per_row), grain_values / chunk, [&](size_t t0, size_t t1) {
      std::vector<float> buf(static_cast<size_t>(chunk));
      for (auto t = static_cast<int64_t>(t0); t < static_cast<int64_t>(t1); ++t) {
        const int64_t r = t / per_row;
        const int64_t c0 = (t % per_row) * chunk;
        const int64_t count = std::min(chunk, cols - c0);
        quant::dequantize_rows(m, r, r + 1, c0, count, buf.data(), chunk);
        for (int64_t i = 0; i < count; ++i) {
          dst[r * cols + c0 + i] = static_cast<T>(buf[i]);
        }
      }
    });
  });
}

void run(const Fp8Cast& p, const Inputs& in, Outputs& out) {
  auto& o = out[0];
  o.set_data(allocator::malloc(o.nbytes()));
  const array x = quant::dense(in[0]);
  const size_t n = o.size();
  if (p.encode) {
    auto* dst = quant::data_of<uint8_t>(o);
    dispatch<floating_types>(x.dtype(), "Fp8Cast", [&]<class T>(type_tag<T>) {
      const T* src = quant::data_of<T>(x);
      parallel_for(n, grain_values, [&](size_t i0, size_t i1) {
        for (size_t i = i0; i < i1; ++i) {
          dst[i] = quant::fp8_encode(static_cast<float>(src[i]));
        }
      });
    });
    return;
  }
  const auto* src = quant::data_of<uint8_t>(x);
  const auto& table = quant::fp8_table();
  dispatch<floating_types>(o.dtype(), "Fp8Cast", [&]<class T>(type_tag<T>) {
    T* dst = quant::data_of<T>(o);
    parallel_for(n, grain_values, [&](size_t i0, size_t i1) {
      for (size_t i = i0; i < i1; ++i) {
        dst[i] = static_cast<T>(table[src[i]]);
      }
    });
  });
}

}  // namespace nuvec::cpu
