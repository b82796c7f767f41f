// View primitives: the output shares the input's buffer with new strides.

#include <algorithm>
#include <cstdlib>

#include "nuvec/cpu/copy.h"
#include "nuvec/cpu/kernels.h"

namespace nuvec::cpu {

namespace {

void share(const array& in, array& out, const Strides& strides, int64_t offset = 0) {
  auto layout = layout_of(out.shape(), strides);
  out.copy_shared_buffer(in, strides, layout.flags, layout.data_size, offset);
}

/// numpy's no-copy reshape: each group of input axes that maps onto a group of
/// output axes must be contiguous within itself. Returns false when a copy is needed.
bool reshape_strides(const Shape& in_shape, const Strides& in_strides, const Shape& out_shape, Strides& out) {
  Shape shape;
  Strides strides;
  for (size_t i = 0; i < in_shape.size(); ++i) {
    if (in_shape[i] != 1) {
      shape.push_back(in_shape[i]);
      strides.push_back(in_strides[i]);
    }
  }
  out.assign(out_shape.size(), 0);
  size_t oi = 0;
  size_t ii = 0;
  while (oi < out_shape.size() || ii < shape.size()) {
    if (oi < out_shape.size() && out_shape[oi] == 1) {
      out[oi] = (oi + 1 < out_shape.size()) ? 0 : 1;
      ++oi;
      continue;
    }
    if (ii >= shape.size() || oi >= out_shape.size()) {
      return false;
    }
    // Grow the smaller side until both groups have the same number of elements.
    size_t in_begin = ii;
    size_t out_begin = oi;
    int64_t in_count = shape[ii++];
    int64_t out_count = out_shape[oi++];
    while (in_count != out_count) {
      if (in_count < out_count) {
        if (ii >= shape.size()) {
          return false;
        }
        in_count *= shape[ii++];
      } else {
        if (oi >= out_shape.size()) {
          return false;
        }
        out_count *= out_shape[oi++];
      }
    }
    for (size_t k = in_begin; k + 1 < ii; ++k) {
      if (strides[k] != strides[k + 1] * shape[k + 1]) {
        return false;
      }
    }
    int64_t stride = strides[ii - 1];
    for (size_t k = oi; k-- > out_begin;) {
      out[k] = stride;
      stride *= out_shape[k];
    }
  }
  return true;
}

}  // namespace

void run(const Broadcast&, const Inputs& in, Outputs& out) {
  const auto& a = in[0];
  auto& o = out[0];
  Strides strides(o.ndim(), 0);
  int diff = o.ndim() - a.ndim();
  for (int i = 0; i < a.ndim(); ++i) {
    strides[diff + i] = (a.shape(i) == 1 && o.shape(diff + i) != 1) ? 0 : a.strides(i);
  }
  auto layout = layout_of(o.shape(), strides);
  o.copy_shared_buffer(a, strides, layout.flags, std::min(layout.data_size, a.data_size()));
}

void run(const Reshape&, const Inputs& in, Outputs& out) {
  const auto& a = in[0];
  auto& o = out[0];
  if (a.flags().row_contiguous) {
    share(a, o, row_major_strides(o.shape()));
    return;
  }
  Strides strides;
  if (reshape_strides(a.shape(), a.strides(), o.shape(), strides)) {
    share(a, o, strides);
    return;
  }
  // A copy in a's row-major order is o's row-major order (o's own strides belong to another shape).
  o.set_data(allocator::malloc(o.nbytes()));
  copy_strided(a, o.raw_data(), row_major_strides(a.shape()), o.dtype());
}

void run(const Transpose& p, const Inputs& in, Outputs& out) {
  const auto& a = in[0];
  Strides strides;
  for (int axis : p.axes) {
    strides.push_back(a.strides(axis));
  }
  share(a, out[0], strides);
}

void run(const Slice& p, const Inputs& in, Outputs& out) {
  const auto& a = in[0];
  auto& o = out[0];
  int64_t offset = 0;
  Strides strides(a.ndim());
  for (int i = 0; i < a.ndim(); ++i) {
    offset += static_cast<int64_t>(p.start[i]) * a.strides(i);
    strides[i] = a.strides(i) * p.strides[i];
  }
  if (o.size() == 0) {
    offset = 0;
  }
  share(a, o, strides, offset);
}

void run(const AsStrided& p, const Inputs& in, Outputs& out) {
  // As MLX, the data size is the span from the lowest to the highest element addressed, which is smaller than the
  // size when windows overlap.
  auto& o = out[0];
  auto layout = layout_of(o.shape(), p.strides);
  size_t span = o.size() == 0 ? 0 : 1;
  for (int i = 0; i < o.ndim(); ++i) {
    span += static_cast<size_t>(std::abs(p.strides[i])) * static_cast<size_t>(std::max(o.shape(i) - 1, 0));
  }
  o.copy_shared_buffer(in[0], p.strides, layout.flags, span, static_cast<int64_t>(p.offset));
}

void run(const Diagonal& p, const Inputs& in, Outputs& out) {
  const auto& a = in[0];
  auto& o = out[0];
  Strides strides;
  for (int i = 0; i < a.ndim(); ++i) {
    if (i != p.axis1 && i != p.axis2) {
      strides.push_back(a.strides(i));
    }
  }
  strides.push_back(a.strides(p.axis1) + a.strides(p.axis2));
  int64_t offset = o.size() == 0   ? 0
                   : p.offset >= 0 ? static_cast<int64_t>(p.offset) * a.strides(p.axis2)
                                   : static_cast<int64_t>(-p.offset) * a.strides(p.axis1);
  share(a, o, strides, offset);
}

void run(const View&, const Inputs& in, Outputs& out) {
  const auto& a = in[0];
  auto& o = out[0];
  if (a.itemsize() == o.itemsize()) {
    auto layout = layout_of(o.shape(), a.strides());
    o.copy_shared_buffer(a, a.strides(), layout.flags, a.data_size());
    return;
  }
  // The op made the input row-contiguous: rescale the byte strides.
  auto strides = row_major_strides(o.shape());
  o.copy_shared_buffer(a, strides, a.flags(), a.data_size() * a.itemsize() / o.itemsize());
}

void run(const StopGradient&, const Inputs& in, Outputs& out) { out[0].copy_shared_buffer(in[0]); }

}  // namespace nuvec::cpu
