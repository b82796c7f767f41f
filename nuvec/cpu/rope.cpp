// RoPE: rotary position embedding of x (B, M..., L, D), vectorized with Highway and split across threads by
// (batch, position) pairs.
//
// The angles of one position, (offset + l) * scale * inv_freq[i], are the same for every head, so each pair computes
// its cos/sin table once (float32 or float64) and applies it to the M rows that share it. The inverse frequencies
// are base^(-i / (dims / 2)) written as exp(-i * log(base) / (dims / 2)), or 1 / freqs, exactly as the composition
// computes them. Half and strided rows go through a compute-type scratch row; the output is row-contiguous.

#include <algorithm>
#include <cmath>
#include <vector>

#include "nuvec/core/dispatch.h"
#include "nuvec/cpu/elementwise.h"
#include "nuvec/cpu/highway.h"
#include "nuvec/cpu/kernels.h"

// Highway's extras, included once nuvec/cpu/highway.h has chosen static dispatch.
#include <hwy/contrib/math/math-inl.h>

namespace nuvec::cpu {

namespace {

/// cos and sin of theta[i] = pos * inv_freq[i], i < n.
template <class A>
void angles(A pos, const A* inv_freq, int64_t n, A* cos_out, A* sin_out) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto p = hn::Set(d, pos);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto theta = hn::Mul(p, hn::LoadU(d, inv_freq + i));
    hn::StoreU(hn::Cos(d, theta), d, cos_out + i);
    hn::StoreU(hn::Sin(d, theta), d, sin_out + i);
  }
  for (; i < n; ++i) {
    cos_out[i] = std::cos(pos * inv_freq[i]);
    sin_out[i] = std::sin(pos * inv_freq[i]);
  }
}

/// Rotates the first 2 * half features of a contiguous row (y may alias x): pairs (i, i + half), or (2i, 2i + 1)
/// when traditional.
template <class A>
void rotate_row(const A* x, A* y, int64_t half, bool traditional, const A* c, const A* s) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  if (traditional) {
    for (; i + lanes <= half; i += lanes) {
      hn::Vec<decltype(d)> x1;
      hn::Vec<decltype(d)> x2;
      hn::LoadInterleaved2(d, x + 2 * i, x1, x2);
      const auto cv = hn::LoadU(d, c + i);
      const auto sv = hn::LoadU(d, s + i);
      hn::StoreInterleaved2(hn::NegMulAdd(x2, sv, hn::Mul(x1, cv)), hn::MulAdd(x2, cv, hn::Mul(x1, sv)), d,
                            y + 2 * i);
    }
    for (; i < half; ++i) {
      const A x1 = x[2 * i];
      const A x2 = x[2 * i + 1];
      y[2 * i] = x1 * c[i] - x2 * s[i];
      y[2 * i + 1] = x1 * s[i] + x2 * c[i];
    }
    return;
  }
  for (; i + lanes <= half; i += lanes) {
    const auto x1 = hn::LoadU(d, x + i);
    const auto x2 = hn::LoadU(d, x + half + i);
    const auto cv = hn::LoadU(d, c + i);
    const auto sv = hn::LoadU(d, s + i);
    hn::StoreU(hn::NegMulAdd(x2, sv, hn::Mul(x1, cv)), d, y + i);
    hn::StoreU(hn::MulAdd(x2, cv, hn::Mul(x1, sv)), d, y + half + i);
  }
  for (; i < half; ++i) {
    const A x1 = x[i];
    const A x2 = x[half + i];
    y[i] = x1 * c[i] - x2 * s[i];
    y[half + i] = x1 * s[i] + x2 * c[i];
  }
}

template <class T>
void rope_kernel(const RoPE& p, const Inputs& in, array& out) {
  using A = compute_t<T>;
  const array& x = in[0];
  const int nd = x.ndim();
  const int64_t D = x.shape(-1);
  const int64_t L = x.shape(-2);
  const int64_t B = x.shape(0);
  const Shape mid_shape(x.shape().begin() + 1, x.shape().end() - 2);
  const Strides mid_strides(x.strides().begin() + 1, x.strides().end() - 2);
  const auto M = static_cast<int64_t>(shape_size(mid_shape));
  const int64_t half = p.dims / 2;
  const int64_t stride_b = x.strides(0);
  const int64_t stride_l = x.strides(nd - 2);
  const int64_t stride_d = x.strides(nd - 1);

  // Inverse frequencies in float32, as the composition computes them.
  std::vector<A> inv_freq(static_cast<size_t>(half));
  const float coef = std::log(p.base) / static_cast<float>(half);
  for (int64_t i = 0; i < half; ++i) {
    inv_freq[static_cast<size_t>(i)] =
        p.has_freqs ? static_cast<A>(1.0F / in[2].data<float>()[i * in[2].strides(0)])
                    : static_cast<A>(std::exp(static_cast<float>(-i) * coef));
  }
  const array& offset = in[1];
  const int32_t* offsets = offset.data<int32_t>();
  const bool per_batch = offset.size() > 1;

  const T* src = x.data<T>();
  out.set_data(allocator::malloc(out.nbytes()));
  T* dst = out.data<T>();
  const auto pairs = static_cast<size_t>(B * L);
  const auto work = static_cast<size_t>(std::max<int64_t>(M * D, 1));
  parallel_for(pairs, std::max<size_t>(1, (size_t{1} << 14) / work), [&](size_t begin, size_t end) {
    std::vector<A> table(static_cast<size_t>(2 * half));
    std::vector<A> row(static_cast<size_t>(D));
    A* c = table.data();
    A* s = table.data() + half;
    for (size_t pair = begin; pair < end; ++pair) {
      const auto b = static_cast<int64_t>(pair) / L;
      const auto l = static_cast<int64_t>(pair) % L;
      const int32_t off = offsets[per_batch ? b * offset.strides(0) : 0];
      // The position is rounded to float32 before the multiply, as the composition's float32 arange does.
      const auto pos = static_cast<float>(static_cast<float>(l) + static_cast<float>(off)) * p.scale;
      angles(static_cast<A>(pos), inv_freq.data(), half, c, s);
      for (int64_t m = 0; m < M; ++m) {
        const T* xr = src + b * stride_b + l * stride_l + element_offset(static_cast<size_t>(m), mid_shape, mid_strides);
        T* yr = dst + ((b * M + m) * L + l) * D;
        const A* in_row = nullptr;
        if constexpr (std::is_same_v<T, A>) {
          in_row = stride_d == 1 ? xr : nullptr;
        }
        if (in_row == nullptr) {
          load_block(row.data(), Strided<T>{xr, stride_d}, D);
          in_row = row.data();
        }
        if constexpr (std::is_same_v<T, A>) {
          rotate_row(in_row, yr, half, p.traditional, c, s);
          std::copy(in_row + 2 * half, in_row + D, yr + 2 * half);
        } else {
          rotate_row(in_row, row.data(), half, p.traditional, c, s);
          store_block(yr, row.data(), D);
        }
      }
    }
  });
}

}  // namespace

void run(const RoPE& p, const Inputs& in, Outputs& out) {
  dispatch<floating_types>(in[0].dtype(), "RoPE", [&]<class T>(type_tag<T>) { rope_kernel<T>(p, in, out[0]); });
}

}  // namespace nuvec::cpu
