#pragma once

// Sums over a contiguous row that the row kernels share (attention, norms, quantized products): one loop, two vector
// accumulators wide, whose per-element step each sum supplies.

#include <cstdint>

#include "nuvec/cpu/highway.h"

namespace nuvec::cpu {

/// The sum over i in [0, n) of the terms that `step(d, acc, i)` adds to a vector of lanes starting at i (vector or
/// scalar acc alike: one generic lambda serves both, so each term is written once).
template <class A, class Step>
A row_sum(int64_t n, Step&& step) {
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  auto s0 = hn::Zero(d);
  auto s1 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    s0 = step(d, s0, i);
    s1 = step(d, s1, i + lanes);
  }
  for (; i + lanes <= n; i += lanes) {
    s0 = step(d, s0, i);
  }
  A total = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
  const hn::CappedTag<A, 1> one;
  for (; i < n; ++i) {
    total += hn::GetLane(step(one, hn::Zero(one), i));
  }
  return total;
}

/// sum(x[i] * y[i]).
template <class A>
A dot(const A* x, const A* y, int64_t n) {
  return row_sum<A>(
      n, [&](auto d, auto acc, int64_t i) { return hn::MulAdd(hn::LoadU(d, x + i), hn::LoadU(d, y + i), acc); });
}

/// sum(x[i]).
template <class A>
A sum_row(const A* x, int64_t n) {
  return row_sum<A>(n, [&](auto d, auto acc, int64_t i) { return hn::Add(acc, hn::LoadU(d, x + i)); });
}

/// sum((x[i] - shift)^2).
template <class A>
A sum_squares(const A* x, int64_t n, A shift) {
  return row_sum<A>(n, [&](auto d, auto acc, int64_t i) {
    const auto v = hn::Sub(hn::LoadU(d, x + i), hn::Set(d, shift));
    return hn::MulAdd(v, v, acc);
  });
}

}  // namespace nuvec::cpu
