#pragma once

// What the GPU's gather, scatter, slice-update and pad rules share (gather.cpp, scatter.cpp, slice_update.cpp,
// pad.cpp): the walk descriptor kernels/gather.cu declares, the widening of data moves to 16-byte accesses, and the
// kernel sources each rule compiles (exposed so that a test compiles every one without a GPU).

#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>

#include "nuvec/core/array.h"
#include "nuvec/cuda/elementwise.h"

namespace nuvec::cuda {

/// A row-major walk over a shape giving K operands' element offsets, as gather.cu's nv_walk (passed by value).
template <size_t K>
struct Walk {
  int64_t shape[max_dims];
  int64_t strides[K][max_dims];
  int ndim;
};

/// The walk over `shape` with each operand's strides, size-1 axes dropped and adjacent axes merged where every
/// operand is contiguous across them (as elementwise merges them); nullopt past max_dims axes.
template <size_t K>
std::optional<Walk<K>> make_walk(const Shape& shape, const std::array<Strides, K>& strides) {
  Walk<K> w{};
  int nd = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) {
      continue;
    }
    bool merge = nd > 0;
    for (size_t k = 0; k < K && merge; ++k) {
      merge = w.strides[k][nd - 1] == strides[k][d] * shape[d];
    }
    if (merge) {
      w.shape[nd - 1] *= shape[d];
      for (size_t k = 0; k < K; ++k) {
        w.strides[k][nd - 1] = strides[k][d];
      }
      continue;
    }
    if (nd == max_dims) {
      return std::nullopt;
    }
    w.shape[nd] = shape[d];
    for (size_t k = 0; k < K; ++k) {
      w.strides[k][nd] = strides[k][d];
    }
    ++nd;
  }
  w.ndim = nd;
  return w;
}

/// The bytes one access of a data move can take (a power of two from `itemsize` to 16): the walk's innermost axis
/// is dense in every operand, and its length, every other stride, each of `offsets` (element strides the kernel
/// adds to the walk's offsets) and each address are multiples of it.
template <size_t K>
size_t access_bytes(const Walk<K>& w, size_t itemsize, std::initializer_list<const void*> addresses,
                    const Strides& offsets) {
  const int inner = w.ndim - 1;
  for (size_t k = 0; k < K && inner >= 0; ++k) {
    if (w.strides[k][inner] != 1) {
      return itemsize;
    }
  }
  size_t bytes = 16;
  auto fits = [&](int64_t elements) {
    return (elements * static_cast<int64_t>(itemsize)) % static_cast<int64_t>(bytes) == 0;
  };
  auto all_fit = [&] {
    if (inner < 0 || !fits(w.shape[inner])) {
      return false;
    }
    for (size_t k = 0; k < K; ++k) {
      for (int d = 0; d < inner; ++d) {
        if (!fits(w.strides[k][d])) {
          return false;
        }
      }
    }
    for (int64_t stride : offsets) {
      if (!fits(stride)) {
        return false;
      }
    }
    for (const void* address : addresses) {
      if (reinterpret_cast<uintptr_t>(address) % bytes != 0) {
        return false;
      }
    }
    return true;
  };
  while (bytes > itemsize && !all_fit()) {
    bytes /= 2;
  }
  return bytes;
}

/// The walk in units of `factor` elements (access_bytes / itemsize): the innermost axis shortens, strides shrink.
template <size_t K>
void widen(Walk<K>& w, int64_t factor) {
  if (factor == 1) {
    return;
  }
  const int inner = w.ndim - 1;
  w.shape[inner] /= factor;
  for (size_t k = 0; k < K; ++k) {
    for (int d = 0; d < inner; ++d) {
      w.strides[k][d] /= factor;
    }
  }
}

/// How gather.cu reads an index array of dtype `d`: its size in bytes, negative for signed integers.
inline int index_kind(Dtype d) { return is_signed_integer(d) ? -static_cast<int>(size_of(d)) : size_of(d); }

/// Whether n fits the int32 dimensions of a scratch array (and `none`'s 32-bit slice numbers).
inline bool fits_int32(size_t n) { return n <= static_cast<size_t>(std::numeric_limits<int32_t>::max()); }

/// The threads per block of every kernel here.
inline constexpr unsigned index_block = 256;

/// gather.cu for moving elements of `bytes` (1, 2, 4, 8 or 16).
std::string gather_source(size_t bytes);
/// gather.cu and scatter.cu for combining elements of `d` (not complex64); `none` uses the unsigned dtype of d's
/// size.
std::string scatter_source(Dtype d);
/// random.cu.
std::string random_source();

/// Whether copy() can copy an array of `shape` and `in_strides` into `out_strides` (at most max_dims merged axes).
bool can_copy(const Shape& shape, const Strides& in_strides, const Strides& out_strides);

/// Gives `out` a's elements in a row-contiguous buffer on `s`: a's own when it may be donated, else a copy. Needs
/// can_copy of a into row-major strides.
void init_from_input(const array& a, array& out, const Stream& s);

/// An array of `shape` viewing `base`'s buffer with `strides`, from element `offset`: a place to copy() into.
array view_into(const array& base, const Shape& shape, const Strides& strides, int64_t offset, const Stream& s);

}  // namespace nuvec::cuda
