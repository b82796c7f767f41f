#pragma once

#include "nuvec/core/array.h"

namespace nuvec::cpu {

/// Flags and element span of a layout, for arrays that are views of other arrays.
struct Layout {
  Flags flags;
  size_t data_size;
};
Layout layout_of(const Shape& shape, const Strides& strides);

/// Copies (and converts) `shape` elements between two strided layouts.
void copy_strided(const Shape& shape, const void* src, Dtype src_dtype, const Strides& src_strides, void* dst,
                  Dtype dst_dtype, const Strides& dst_strides);

/// Copies (and converts) src's elements into a destination of src's shape that starts
/// at `dst_data` with `dst_strides` (elements of `dst_dtype`).
void copy_strided(const array& src, void* dst_data, const Strides& dst_strides, Dtype dst_dtype);

/// Gives `out` a fresh row-contiguous buffer holding src's elements converted to out's dtype.
void copy_to_new(const array& src, array& out);

/// Copies `bytes` bytes to dst with streaming stores (past the caches) from dst's first vector-aligned byte on, for
/// outputs too large for the caches; the caller orders them with hwy::FlushStream before reporting its work done.
void stream_copy(void* dst, const void* src, size_t bytes);

/// Allocates out's row-contiguous buffer, reusing `candidate`'s when it may be donated.
void allocate_or_donate(array& out, const array& candidate);

}  // namespace nuvec::cpu
