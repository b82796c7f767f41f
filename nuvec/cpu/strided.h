#pragma once

// Walking N arrays of one shape with different strides: adjacent axes are
// merged where every array allows it, and the walk is split into runs of the
// innermost axis so the inner loop is a plain (often unit-stride) loop.

#include <array>
#include <cstdint>

#include "nuvec/core/array.h"

namespace nuvec::cpu {

template <size_t N>
struct StridedLayout {
  Shape shape;                     // collapsed; at least one axis
  std::array<Strides, N> strides;  // in elements

  /// Merges axis i into i+1 wherever stride[i] == stride[i+1] * shape[i+1] for every array.
  StridedLayout(const Shape& full_shape, const std::array<Strides, N>& full_strides) {
    for (size_t k = 0; k < N; ++k) {
      strides[k].clear();
    }
    for (size_t i = 0; i < full_shape.size(); ++i) {
      if (full_shape[i] == 1) {
        continue;  // size-1 axes never move the offset
      }
      bool merge = !shape.empty();
      for (size_t k = 0; k < N && merge; ++k) {
        merge = strides[k].back() == full_strides[k][i] * full_shape[i];
      }
      if (merge) {
        shape.back() *= full_shape[i];
        for (size_t k = 0; k < N; ++k) {
          strides[k].back() = full_strides[k][i];
        }
      } else {
        shape.push_back(full_shape[i]);
        for (size_t k = 0; k < N; ++k) {
          strides[k].push_back(full_strides[k][i]);
        }
      }
    }
    if (shape.empty()) {
      shape.push_back(1);
      for (size_t k = 0; k < N; ++k) {
        strides[k].push_back(0);
      }
    }
  }

  [[nodiscard]] int64_t inner_size() const { return shape.back(); }
  [[nodiscard]] int64_t inner_stride(size_t k) const { return strides[k].back(); }
  [[nodiscard]] size_t rows() const {
    size_t n = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i) {
      n *= static_cast<size_t>(shape[i]);
    }
    return n;
  }

  /// Calls fn(offsets) with the element offset of each array at the start of
  /// every innermost run with index in [row_begin, row_end).
  template <class Fn>
  void for_each_row(size_t row_begin, size_t row_end, Fn&& fn) const {
    const int outer = static_cast<int>(shape.size()) - 1;
    std::array<int64_t, N> offsets{};
    Shape index(outer > 0 ? outer : 0, 0);
    size_t rem = row_begin;
    for (int i = outer - 1; i >= 0; --i) {
      index[i] = static_cast<int32_t>(rem % static_cast<size_t>(shape[i]));
      rem /= static_cast<size_t>(shape[i]);
      for (size_t k = 0; k < N; ++k) {
        offsets[k] += index[i] * strides[k][i];
      }
    }
    for (size_t row = row_begin; row < row_end; ++row) {
      fn(offsets);
      for (int i = outer - 1; i >= 0; --i) {
        ++index[i];
        for (size_t k = 0; k < N; ++k) {
          offsets[k] += strides[k][i];
        }
        if (index[i] < shape[i]) {
          break;
        }
        for (size_t k = 0; k < N; ++k) {
          offsets[k] -= strides[k][i] * shape[i];
        }
        index[i] = 0;
      }
    }
  }
};

/// Byte offset of element `index` (row-major numbering) of an array with `shape` and `strides`.
inline int64_t element_offset(size_t index, const Shape& shape, const Strides& strides) {
  int64_t offset = 0;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    offset += static_cast<int64_t>(index % static_cast<size_t>(shape[i])) * strides[i];
    index /= static_cast<size_t>(shape[i]);
  }
  return offset;
}

/// Whether the array's elements fill its buffer in row-major order.
inline bool is_dense_row_major(const array& a) { return a.flags().row_contiguous; }

/// Minimum items a thread should get before work is split (measured: below
/// this the fork/join costs more than the second core saves).
inline constexpr size_t elementwise_grain = 1 << 15;

}  // namespace nuvec::cpu
