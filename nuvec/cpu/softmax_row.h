#pragma once

// The row pieces of a softmax that softmax.cpp and attention (attention.cpp, attention_vjp.cpp) share: a
// NaN-propagating row max, exp(x - max) stored while it is summed (every element through the same vectorized exp of
// exp_nonpositive.h), and the scaling of a row by 1 / sum.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "nuvec/cpu/exp_nonpositive.h"
#include "nuvec/cpu/highway.h"

namespace nuvec::cpu {

/// Max of a contiguous row; NaN if any element is NaN.
template <class A>
A row_max(const A* x, int64_t n) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  A m = x[0];
  int64_t i = 0;
  if (n >= lanes) {
    auto a0 = hn::LoadU(d, x);
    auto a1 = a0;
    auto nan = hn::IsNaN(a0);
    for (; i + 2 * lanes <= n; i += 2 * lanes) {
      const auto v0 = hn::LoadU(d, x + i);
      const auto v1 = hn::LoadU(d, x + i + lanes);
      a0 = hn::Max(a0, v0);
      a1 = hn::Max(a1, v1);
      nan = hn::Or(nan, hn::Or(hn::IsNaN(v0), hn::IsNaN(v1)));
    }
    for (; i + lanes <= n; i += lanes) {
      const auto v = hn::LoadU(d, x + i);
      a0 = hn::Max(a0, v);
      nan = hn::Or(nan, hn::IsNaN(v));
    }
    if (!hn::AllFalse(d, nan)) {
      return std::numeric_limits<A>::quiet_NaN();
    }
    m = hn::GetLane(hn::MaxOfLanes(d, hn::Max(a0, a1)));
  }
  for (; i < n; ++i) {
    if (std::isnan(x[i])) {
      return x[i];
    }
    m = std::max(m, x[i]);
  }
  return m;
}

/// exp(x - m) for the last n < lanes elements, through a padded vector (so every element uses the same exp).
template <class D, class A>
HWY_INLINE hn::Vec<D> tail_exp(D d, const A* x, int64_t n, hn::Vec<D> m, A* store) {
  HWY_ALIGN A buf[HWY_MAX_BYTES / sizeof(A)];
  std::fill(buf, buf + hn::Lanes(d), -std::numeric_limits<A>::infinity());
  std::copy(x, x + n, buf);
  const auto e = exp_nonpositive(d, hn::Sub(hn::Load(d, buf), m));
  if (store != nullptr) {
    hn::Store(e, d, buf);
    std::copy(buf, buf + n, store);
  }
  return e;
}

/// sum(exp(x - m)), storing each exp in y unless y is null (x and y may alias).
template <class A>
A exp_store_sum(const A* x, A* y, int64_t n, A max) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto m = hn::Set(d, max);
  auto s0 = hn::Zero(d);
  auto s1 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto e0 = exp_nonpositive(d, hn::Sub(hn::LoadU(d, x + i), m));
    const auto e1 = exp_nonpositive(d, hn::Sub(hn::LoadU(d, x + i + lanes), m));
    if (y != nullptr) {
      hn::StoreU(e0, d, y + i);
      hn::StoreU(e1, d, y + i + lanes);
    }
    s0 = hn::Add(s0, e0);
    s1 = hn::Add(s1, e1);
  }
  for (; i + lanes <= n; i += lanes) {
    const auto e = exp_nonpositive(d, hn::Sub(hn::LoadU(d, x + i), m));
    if (y != nullptr) {
      hn::StoreU(e, d, y + i);
    }
    s0 = hn::Add(s0, e);
  }
  if (i < n) {
    s1 = hn::Add(s1, tail_exp(d, x + i, n - i, m, y == nullptr ? y : y + i));
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
}

/// y *= scale.
template <class A>
void scale_row(A* y, int64_t n, A scale) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto f = hn::Set(d, scale);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::Mul(hn::LoadU(d, y + i), f), d, y + i);
  }
  for (; i < n; ++i) {
    y[i] *= scale;
  }
}

}  // namespace nuvec::cpu
