// RMSNorm and LayerNorm over the last axis: one row at a time, vectorized with Highway, rows split across threads.
//
// A row is read from memory once: its statistics pass leaves it in L1/L2 for the normalizing pass. Rows of
// float16/bfloat16 (and strided rows) are converted into a float32 scratch row first, so the arithmetic is float32
// (float64 for float64) and the result is rounded to the output dtype once, after weight and bias. LayerNorm takes
// the mean first and then the mean of squared deviations, which stays accurate for rows with a large mean.

#ifndef HWY_COMPILE_ONLY_STATIC
#define HWY_COMPILE_ONLY_STATIC 1  // kernels are compiled for the build machine's CPU (-march=native)
#endif
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "nuvec/core/dispatch.h"
#include "nuvec/cpu/elementwise.h"
#include "nuvec/cpu/kernels.h"

namespace nuvec::cpu {

namespace {

namespace hn = hwy::HWY_NAMESPACE;

/// sum((x - shift)^2) over a contiguous row.
template <class A>
A sum_squares(const A* x, int64_t n, A shift) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto c = hn::Set(d, shift);
  auto s0 = hn::Zero(d);
  auto s1 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto v0 = hn::Sub(hn::LoadU(d, x + i), c);
    const auto v1 = hn::Sub(hn::LoadU(d, x + i + lanes), c);
    s0 = hn::MulAdd(v0, v0, s0);
    s1 = hn::MulAdd(v1, v1, s1);
  }
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::Sub(hn::LoadU(d, x + i), c);
    s0 = hn::MulAdd(v, v, s0);
  }
  A total = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
  for (; i < n; ++i) {
    total += (x[i] - shift) * (x[i] - shift);
  }
  return total;
}

/// sum(x) over a contiguous row.
template <class A>
A sum_row(const A* x, int64_t n) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  auto s0 = hn::Zero(d);
  auto s1 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    s0 = hn::Add(s0, hn::LoadU(d, x + i));
    s1 = hn::Add(s1, hn::LoadU(d, x + i + lanes));
  }
  for (; i + lanes <= n; i += lanes) {
    s0 = hn::Add(s0, hn::LoadU(d, x + i));
  }
  A total = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
  for (; i < n; ++i) {
    total += x[i];
  }
  return total;
}

/// y = (x - shift) * inv * w [+ b]; x and y may alias.
template <class A>
void normalize_row(const A* x, A* y, int64_t n, A shift, A inv, const A* w, const A* b) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto c = hn::Set(d, shift);
  const auto f = hn::Set(d, inv);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    auto v = hn::Mul(hn::Mul(hn::Sub(hn::LoadU(d, x + i), c), f), hn::LoadU(d, w + i));
    if (b != nullptr) {
      v = hn::Add(v, hn::LoadU(d, b + i));
    }
    hn::StoreU(v, d, y + i);
  }
  for (; i < n; ++i) {
    y[i] = (x[i] - shift) * inv * w[i] + (b != nullptr ? b[i] : A{0});
  }
}

/// A 1-d parameter (weight or bias) in compute type; `fill` when absent.
template <class T, class A = compute_t<T>>
std::vector<A> load_param(const array* p, int64_t n, A fill) {
  std::vector<A> out(static_cast<size_t>(n), fill);
  if (p != nullptr && n > 0) {
    load_block(out.data(), Strided<T>{p->data<T>(), p->strides(0)}, n);
  }
  return out;
}

template <class T>
void norm_kernel(const Inputs& in, array& out, float eps, bool has_weight, bool has_bias, bool centered) {
  using A = compute_t<T>;
  const array& x = in[0];
  const int64_t n = x.shape(-1);
  const size_t rows = n == 0 ? 0 : x.size() / static_cast<size_t>(n);
  const auto w = load_param<T>(has_weight ? &in[1] : nullptr, n, A{1});
  const auto b = load_param<T>(has_bias ? &in[has_weight ? 2 : 1] : nullptr, n, A{0});
  const Shape lead_shape(x.shape().begin(), x.shape().end() - 1);
  const Strides lead_strides(x.strides().begin(), x.strides().end() - 1);
  const bool dense = x.flags().row_contiguous;
  const int64_t stride = x.strides(-1);
  const T* src = x.data<T>();
  allocate_or_donate(out, x);  // each row is read before it is written
  T* dst = out.data<T>();
  parallel_for(rows, std::max<size_t>(1, (size_t{1} << 14) / static_cast<size_t>(std::max<int64_t>(n, 1))),
               [&](size_t begin, size_t end) {
                 std::vector<A> scratch;
                 for (size_t r = begin; r < end; ++r) {
                   const T* row = src + (dense ? static_cast<int64_t>(r) * n
                                               : element_offset(r, lead_shape, lead_strides));
                   const A* xr = nullptr;
                   if constexpr (std::is_same_v<T, A>) {
                     xr = stride == 1 ? row : nullptr;
                   }
                   if (xr == nullptr) {
                     scratch.resize(static_cast<size_t>(n));
                     load_block(scratch.data(), Strided<T>{row, stride}, n);
                     xr = scratch.data();
                   }
                   const A mean = centered ? sum_row(xr, n) / static_cast<A>(n) : A{0};
                   const A inv = A{1} / std::sqrt(sum_squares(xr, n, mean) / static_cast<A>(n) + static_cast<A>(eps));
                   T* yr = dst + static_cast<int64_t>(r) * n;
                   if constexpr (std::is_same_v<T, A>) {
                     normalize_row(xr, yr, n, mean, inv, w.data(), has_bias ? b.data() : nullptr);
                   } else {
                     scratch.resize(static_cast<size_t>(n));
                     normalize_row(xr, scratch.data(), n, mean, inv, w.data(), has_bias ? b.data() : nullptr);
                     store_block(yr, scratch.data(), n);
                   }
                 }
               });
}

template <class Fn>
void dispatch_floating(const array& a, const char* name, Fn&& fn) {
  dispatch(a.dtype(), [&]<class T>(type_tag<T>) {
    if constexpr (std::is_floating_point_v<T> || is_half_v<T>) {
      fn(type_tag<T>{});
    } else {
      throw_internal(std::string("[") + name + "] Expected a floating input, got " +
                     std::string(dtype_name(a.dtype())) + ".");
    }
  });
}

}  // namespace

void run(const RMSNorm& p, const Inputs& in, Outputs& out) {
  dispatch_floating(in[0], "RMSNorm", [&]<class T>(type_tag<T>) {
    norm_kernel<T>(in, out[0], p.eps, p.has_weight, false, false);
  });
}

void run(const LayerNorm& p, const Inputs& in, Outputs& out) {
  dispatch_floating(in[0], "LayerNorm", [&]<class T>(type_tag<T>) {
    norm_kernel<T>(in, out[0], p.eps, p.has_weight, p.has_bias, true);
  });
}

}  // namespace nuvec::cpu
