// SliceUpdate, DynamicSlice and DynamicSliceUpdate on the GPU, and the copies into views the indexing rules share.
// A plain slice update is a copy into a view of the output; the reducing ones run scatter.cu's kernel on the one
// slice. The dynamic ones run gather.cu's nuvec_dynamic_copy, which reads the start on the device (a KV cache's
// position never reaches the host), moving up to 16 bytes per access where rows are dense. Layouts past max_dims
// axes and complex64 reductions run on the host.

#include "nuvec/cuda/buffers.h"
#include "nuvec/cuda/device.h"
#include "nuvec/cuda/indexing.h"
#include "nuvec/cuda/jit.h"
#include "nuvec/cuda/kernels.h"

namespace nuvec::cuda {

namespace {

/// The clamped start of a dynamic slice on each axis, as gather.cu's nv_starts (passed by value).
struct Starts {
  int64_t dim[max_dims];
  int64_t size[max_dims];
  int64_t stride[max_dims];
  int count;
};

/// Copies `from` into `to` through `walk` (operand 0 from, 1 to), adding the start (read from `start` on the
/// device) to the destination's offsets (`into_to`) or the source's.
void dynamic_copy(const array& from, array& to, const array& start, Walk<2> walk, Starts starts, bool into_to,
                  const Stream& s) {
  const int device = s.device.index;
  void* dst = device_pointer(to, s);
  const void* src = device_pointer(from, s);
  const void* start_data = starts.count > 0 ? device_pointer(start, s) : nullptr;
  int kind = index_kind(start.dtype());
  int64_t start_stride = start.ndim() == 1 ? start.strides(0) : 0;
  const Strides offsets(starts.stride, starts.stride + starts.count);
  const size_t bytes = access_bytes(walk, from.itemsize(), {dst, src}, offsets);
  const auto factor = static_cast<int64_t>(bytes / from.itemsize());
  widen(walk, factor);
  for (int k = 0; k < starts.count; ++k) {
    starts.stride[k] /= factor;
  }
  int64_t total = 1;
  for (int d = 0; d < walk.ndim; ++d) {
    total *= walk.shape[d];
  }
  int into = into_to ? 1 : 0;
  launch(kernel(gather_source(bytes), "nuvec_dynamic_copy", device), dim3(grid_size(total, index_block, device)),
         dim3(index_block), 0, stream_handle(s), dst, src, start_data, kind, start_stride, starts, into, walk, total);
}

}  // namespace

bool can_copy(const Shape& shape, const Strides& in_strides, const Strides& out_strides) {
  return make_walk<2>(shape, {in_strides, out_strides}).has_value();
}

void init_from_input(const array& a, array& out, const Stream& s) {
  if (a.dtype() == out.dtype() && donate(a, out, s)) {
    return;
  }
  allocate_output(out, s);
  copy(a, out, s);
}

array view_into(const array& base, const Shape& shape, const Strides& strides, int64_t offset, const Stream& s) {
  array place(shape, base.dtype(), StopGradient{}, {}, s);
  place.copy_shared_buffer(base, strides, Flags{false, false, false}, base.size(), offset);
  return place;
}

void run(const SliceUpdate& p, const Inputs& in, Outputs& out, const Stream& s) {
  const array& update = in[1];
  array& o = out[0];
  const Strides o_strides = row_major_strides(o.shape());
  int64_t offset = 0;
  Strides window(o.ndim());
  for (int i = 0; i < o.ndim(); ++i) {
    offset += static_cast<int64_t>(p.start[i]) * o_strides[i];
    window[i] = o_strides[i] * p.strides[i];
  }
  auto walk = make_walk<2>(update.shape(), {update.strides(), window});
  if (!walk || !can_copy(in[0].shape(), in[0].strides(), o_strides) ||
      (o.dtype() == complex64 && p.type != ScatterType::none)) {
    on_host(p, in, out);
    return;
  }
  init_from_input(in[0], o, s);
  if (update.size() == 0) {
    return;
  }
  if (p.type == ScatterType::none) {
    array place = view_into(o, update.shape(), window, offset, s);
    copy(update, place, s);
    return;
  }
  // One slice of distinct positions: no targets, no atomics.
  const int device = s.device.index;
  void* dst = static_cast<char*>(device_pointer(o, s)) + offset * static_cast<int64_t>(o.itemsize());
  const void* src = device_pointer(update, s);
  const int64_t* no_targets = nullptr;
  const int64_t* no_keys = nullptr;
  const unsigned* no_winner = nullptr;
  auto total = static_cast<int64_t>(update.size());
  int op = static_cast<int>(p.type);
  int atomic = 0;
  launch(kernel(scatter_source(o.dtype()), "nuvec_scatter", device), dim3(grid_size(total, index_block, device)),
         dim3(index_block), 0, stream_handle(s), dst, src, no_targets, no_keys, no_winner, *walk, total, total, op,
         atomic);
}

void run(const DynamicSlice& p, const Inputs& in, Outputs& out, const Stream& s) {
  const array& a = in[0];
  array& o = out[0];
  auto walk = make_walk<2>(o.shape(), {a.strides(), row_major_strides(o.shape())});
  if (!walk || p.axes.size() > static_cast<size_t>(max_dims)) {
    on_host(p, in, out);
    return;
  }
  allocate_output(o, s);
  if (o.size() == 0) {
    return;
  }
  Starts starts{};
  starts.count = static_cast<int>(p.axes.size());
  for (size_t k = 0; k < p.axes.size(); ++k) {
    const int axis = p.axes[k];
    starts.dim[k] = a.shape(axis);
    starts.size[k] = p.slice_size[axis];
    starts.stride[k] = a.strides(axis);
  }
  dynamic_copy(a, o, in[1], *walk, starts, false, s);
}

void run(const DynamicSliceUpdate& p, const Inputs& in, Outputs& out, const Stream& s) {
  const array& update = in[1];
  array& o = out[0];
  const Strides o_strides = row_major_strides(o.shape());
  auto walk = make_walk<2>(update.shape(), {update.strides(), o_strides});
  if (!walk || p.axes.size() > static_cast<size_t>(max_dims) || !can_copy(in[0].shape(), in[0].strides(), o_strides)) {
    on_host(p, in, out);
    return;
  }
  init_from_input(in[0], o, s);
  if (update.size() == 0) {
    return;
  }
  Starts starts{};
  starts.count = static_cast<int>(p.axes.size());
  for (size_t k = 0; k < p.axes.size(); ++k) {
    const int axis = p.axes[k];
    starts.dim[k] = o.shape(axis);
    starts.size[k] = update.shape(axis);
    starts.stride[k] = o_strides[axis];
  }
  dynamic_copy(update, o, in[2], *walk, starts, true, s);
}

}  // namespace nuvec::cuda
