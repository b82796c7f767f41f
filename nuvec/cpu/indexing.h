#pragma once

// What the gather and scatter kernels share (gather.cpp, scatter.cpp): indices read as int64, the out-of-range
// rules, byte-sized element types for kernels that only move data, and a walk over slices split into runs.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "nuvec/core/array.h"
#include "nuvec/core/dispatch.h"
#include "nuvec/cpu/strided.h"

namespace nuvec::cpu {

/// The values of an integer index array as int64, in row-major order of its shape (unsigned values of 2^63 or more
/// wrap to negative numbers, as a C++ conversion does).
std::vector<int64_t> load_indices(const array& indices);

/// Gives `out` a's elements in a row-major buffer, taking a's buffer when it may be donated.
void init_from_input(const array& a, array& out);

/// A row-major copy of `x` (x itself when it already is one).
array row_major(const array& x);

/// A gather's start on an axis of size `dim` for a slice of `size`: negative indices count from the end once, then
/// the start is clamped so the slice fits (size <= dim holds).
inline int64_t clamp_start(int64_t index, int64_t dim, int64_t size) {
  if (index < 0) {
    index += dim;
  }
  return std::clamp<int64_t>(index, 0, dim - size);
}

/// A scatter's start on an axis, or -1 when the update does not fit there (it is then dropped).
inline int64_t checked_start(int64_t index, int64_t dim, int64_t size) {
  if (index < 0) {
    index += dim;
  }
  return index >= 0 && index <= dim - size ? index : -1;
}

/// The unsigned integer of N bytes: kernels that only move elements run on these.
template <size_t N>
using bits_t = std::conditional_t<N == 1, uint8_t,
                                  std::conditional_t<N == 2, uint16_t, std::conditional_t<N == 4, uint32_t, uint64_t>>>;

/// Calls fn(type_tag<bits_t<itemsize>>{}).
template <class Fn>
void dispatch_bytes(size_t itemsize, Fn&& fn) {
  if (itemsize == 1) {
    fn(type_tag<uint8_t>{});
  } else if (itemsize == 2) {
    fn(type_tag<uint16_t>{});
  } else if (itemsize == 4) {
    fn(type_tag<uint32_t>{});
  } else {
    fn(type_tag<uint64_t>{});
  }
}

/// dst[i * dst_stride] = src[i * src_stride] for i < n; one memcpy when both are dense.
template <class U>
void move_run(U* dst, int64_t dst_stride, const U* src, int64_t src_stride, int64_t n) {
  if (dst_stride == 1 && src_stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(U));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    dst[i * dst_stride] = src[i * src_stride];
  }
}

/// Walks the elements [begin, end) of `count` slices laid end to end (slice n holds elements [n * slice_size,
/// (n + 1) * slice_size), each walked in row-major order by `layout`) and calls fn(n, offsets, length) once per
/// piece of an innermost run, with the offsets of the piece's first element.
template <size_t N, class Fn>
void for_each_slice_run(const StridedLayout<N>& layout, size_t slice_size, size_t begin, size_t end, Fn&& fn) {
  const auto inner = static_cast<size_t>(layout.inner_size());
  size_t w = begin;
  while (w < end) {
    const size_t n = w / slice_size;
    const size_t first = w - n * slice_size;
    const size_t last = std::min(end - n * slice_size, slice_size);  // this slice's elements [first, last)
    const size_t row_begin = first / inner;
    size_t row = row_begin;
    layout.for_each_row(row_begin, (last + inner - 1) / inner, [&](std::array<int64_t, N> offsets) {
      const size_t lo = std::max(first, row * inner) - row * inner;
      const size_t hi = std::min(last - row * inner, inner);
      for (size_t k = 0; k < N; ++k) {
        offsets[k] += static_cast<int64_t>(lo) * layout.inner_stride(k);
      }
      fn(n, offsets, static_cast<int64_t>(hi - lo));
      ++row;
    });
    w = n * slice_size + last;
  }
}

}  // namespace nuvec::cpu
