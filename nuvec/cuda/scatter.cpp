// Scatter and ScatterAxis on the GPU (kernels/scatter.cu): the output starts as the array (its buffer when it may
// be donated), each update slice's destination is computed once (-1: dropped), and the updates are combined in.
// `none` keeps the last of duplicate updates, as the CPU does, through a claim pass over a scratch array of one
// word per destination (per slice position on the indexed axes when slices cannot overlap). The reducing types
// use atomics: float sums and products of duplicates may round differently from the CPU's sequential order.
// On the host: complex64 reductions, layouts past max_dims axes, more than 2^31 - 1 update slices, and `none` into
// more than 2^31 - 1 elements.

#include "nuvec/core/compile/expressions.h"
#include "nuvec/cuda/buffers.h"
#include "nuvec/cuda/check.h"
#include "nuvec/cuda/device.h"
#include "nuvec/cuda/indexing.h"
#include "nuvec/cuda/jit.h"
#include "nuvec/cuda/kernel_sources.h"
#include "nuvec/cuda/kernels.h"

namespace nuvec::cuda {

namespace {

/// The scatter's type as scatter.cu numbers them (ScatterType's order).
int op_code(ScatterType type) { return static_cast<int>(type); }

/// The dtype the kernel runs on: `none` only moves elements, as the unsigned integer of their size.
Dtype kernel_dtype(Dtype d, ScatterType type) {
  if (type != ScatterType::none) {
    return d;
  }
  switch (size_of(d)) {
    case 1:
      return uint8;
    case 2:
      return uint16;
    case 4:
      return uint32;
    default:
      return uint64;
  }
}

/// What the scatter kernels need besides the walks.
struct Scratch {
  std::optional<array> targets;  // each slice's destination offset, -1 when dropped
  std::optional<array> keys;     // each slice's position on the indexed axes, when it stands for its destinations
  std::optional<array> winner;   // `none`: the last slice that writes each key
};

/// `none`'s claim pass: a zeroed winner per key (`keys` slices, or each of o's `destinations`), then the claims.
void claim(Scratch& scratch, const Walk<2>& walk, int64_t slice_size, int64_t count, size_t destinations,
           const std::string& source, const Stream& s) {
  const int device = s.device.index;
  const cudaStream_t stream = stream_handle(s);
  auto* targets = scratch.targets ? device_pointer<int64_t>(*scratch.targets, s) : nullptr;
  auto* keys = scratch.keys ? device_pointer<int64_t>(*scratch.keys, s) : nullptr;
  scratch.winner = gpu_array({static_cast<int32_t>(destinations)}, uint32, s);
  auto* winner = device_pointer<unsigned>(*scratch.winner, s);
  check(cudaMemsetAsync(winner, 0, destinations * sizeof(unsigned), stream), "cudaMemsetAsync");
  int64_t total = keys != nullptr ? count : count * slice_size;
  Walk<2> w = walk;
  launch(kernel(source, "nuvec_scatter_claim", device), dim3(grid_size(total, index_block, device)), dim3(index_block),
         0, stream, winner, targets, keys, w, slice_size, total);
}

/// Combines the updates in (see scatter.cu's nuvec_scatter).
void apply(array& o, const array& updates, const Scratch& scratch, const Walk<2>& walk, int64_t slice_size,
           int64_t total, ScatterType type, bool atomic, const std::string& source, const Stream& s) {
  const int device = s.device.index;
  void* dst = device_pointer(o, s);
  const void* src = device_pointer(updates, s);
  auto* targets = scratch.targets ? device_pointer<int64_t>(*scratch.targets, s) : nullptr;
  auto* keys = scratch.keys ? device_pointer<int64_t>(*scratch.keys, s) : nullptr;
  auto* winner = scratch.winner ? device_pointer<unsigned>(*scratch.winner, s) : nullptr;
  Walk<2> w = walk;
  int op = op_code(type);
  int is_atomic = atomic ? 1 : 0;
  launch(kernel(source, "nuvec_scatter", device), dim3(grid_size(total, index_block, device)), dim3(index_block), 0,
         stream_handle(s), dst, src, targets, keys, winner, w, slice_size, total, op, is_atomic);
}

}  // namespace

std::string scatter_source(Dtype d) {
  return "#include \"nuvec/cuda/prelude.cuh\"\ntypedef " + detail::storage_type(d) + " value_t;\ntypedef " +
         detail::compute_type(d) + " compute_t;\ninline compute_t nv_load(value_t x) { return " + detail::load(d, "x") +
         "; }\ninline value_t nv_store(compute_t x) { return " + detail::store(d, "x") + "; }\n" +
         std::string(kernel_source("gather.cu")) + std::string(kernel_source("scatter.cu"));
}

void run(const Scatter& p, const Inputs& in, Outputs& out, const Stream& s) {
  const array& a = in[0];
  const array& updates = in.back();
  array& o = out[0];
  const auto index_ndim = static_cast<size_t>(updates.ndim() - a.ndim());
  const Shape index_shape(updates.shape().begin(), updates.shape().begin() + static_cast<int64_t>(index_ndim));
  const Shape slice(updates.shape().begin() + static_cast<int64_t>(index_ndim), updates.shape().end());
  const size_t count = shape_size(index_shape);
  const size_t slice_size = shape_size(slice);
  const Strides o_strides = row_major_strides(o.shape());
  // The walk over the updates gives their offsets and, on the slice's axes, the destination's within the slice.
  Strides dst_strides(index_ndim, 0);
  dst_strides.insert(dst_strides.end(), o_strides.begin(), o_strides.end());
  auto walk = make_walk<2>(updates.shape(), {updates.strides(), dst_strides});
  std::vector<Walk<2>> index_walks;
  for (size_t k = 0; k < p.axes.size(); ++k) {
    if (auto w = make_walk<2>(index_shape, {in[1 + k].strides(), Strides(index_ndim, 0)})) {
      index_walks.push_back(*w);
    }
  }
  if (!walk || index_walks.size() != p.axes.size() || !can_copy(a.shape(), a.strides(), o_strides) ||
      (o.dtype() == complex64 && p.type != ScatterType::none) || !fits_int32(count) ||
      (p.type == ScatterType::none && !fits_int32(o.size()))) {
    on_host(p, in, out);
    return;
  }
  init_from_input(a, o, s);
  if (count == 0 || slice_size == 0 || o.size() == 0) {
    return;
  }
  const int device = s.device.index;
  const cudaStream_t stream = stream_handle(s);
  const std::string source = scatter_source(kernel_dtype(o.dtype(), p.type));
  // Slices of size 1 on every indexed axis never overlap: their position on those axes stands for all their
  // destinations, so `none` claims one word per position instead of one per element.
  const bool duplicates = count > 1;
  bool disjoint = !p.axes.empty();
  size_t positions = 1;
  Strides key_strides(p.axes.size());
  for (size_t k = p.axes.size(); k-- > 0;) {
    key_strides[k] = static_cast<int64_t>(positions);
    positions *= static_cast<size_t>(o.shape(p.axes[k]));
    disjoint = disjoint && slice[p.axes[k]] == 1;
  }
  const bool per_slice = p.type == ScatterType::none && duplicates && disjoint;

  Scratch scratch;
  if (!p.axes.empty()) {
    scratch.targets = gpu_array({static_cast<int32_t>(count)}, int64, s);
  }
  if (per_slice) {
    scratch.keys = gpu_array({static_cast<int32_t>(count)}, int64, s);
  }
  int64_t* targets = scratch.targets ? device_pointer<int64_t>(*scratch.targets, s) : nullptr;
  int64_t* keys = scratch.keys ? device_pointer<int64_t>(*scratch.keys, s) : nullptr;
  for (size_t k = 0; k < p.axes.size(); ++k) {
    const int axis = p.axes[k];
    const void* indices = device_pointer(in[1 + k], s);
    int kind = index_kind(in[1 + k].dtype());
    auto n = static_cast<int64_t>(count);
    int64_t dim = o.shape(axis);
    int64_t size = slice[axis];
    int64_t stride = o_strides[axis];
    int64_t key_stride = key_strides[k];
    int first = k == 0 ? 1 : 0;
    launch(kernel(source, "nuvec_scatter_targets", device), dim3(grid_size(n, index_block, device)), dim3(index_block),
           0, stream, targets, keys, indices, kind, index_walks[k], n, dim, size, stride, key_stride, first);
  }
  const auto slices = static_cast<int64_t>(count);
  const auto length = static_cast<int64_t>(slice_size);
  if (p.type == ScatterType::none && duplicates) {
    claim(scratch, *walk, length, slices, per_slice ? positions : o.size(), source, s);
  }
  apply(o, updates, scratch, *walk, length, slices * length, p.type, duplicates, source, s);
}

void run(const ScatterAxis& p, const Inputs& in, Outputs& out, const Stream& s) {
  const array& a = in[0];
  const array& indices = in[1];
  const array& updates = in[2];
  array& o = out[0];
  const Strides o_strides = row_major_strides(o.shape());
  // Each update is a slice of one element: its target is its position off the axis plus the index's on it.
  Strides base = o_strides;
  base[p.axis] = 0;
  auto target_walk = make_walk<2>(indices.shape(), {indices.strides(), base});
  auto walk = make_walk<2>(updates.shape(), {updates.strides(), Strides(updates.ndim(), 0)});
  const size_t count = indices.size();
  if (!target_walk || !walk || !can_copy(a.shape(), a.strides(), o_strides) ||
      (o.dtype() == complex64 && p.type != ScatterType::none) || !fits_int32(count) ||
      (p.type == ScatterType::none && !fits_int32(o.size()))) {
    on_host(p, in, out);
    return;
  }
  init_from_input(a, o, s);
  if (count == 0 || o.size() == 0) {
    return;
  }
  const int device = s.device.index;
  const std::string source = scatter_source(kernel_dtype(o.dtype(), p.type));
  Scratch scratch;
  scratch.targets = gpu_array({static_cast<int32_t>(count)}, int64, s);
  int64_t* targets = device_pointer<int64_t>(*scratch.targets, s);
  int64_t* no_keys = nullptr;
  const void* index_data = device_pointer(indices, s);
  int kind = index_kind(indices.dtype());
  auto n = static_cast<int64_t>(count);
  int64_t dim = o.shape(p.axis);
  int64_t size = 1;
  int64_t stride = o_strides[p.axis];
  int64_t key_stride = 0;
  int first = 1;
  launch(kernel(source, "nuvec_scatter_targets", device), dim3(grid_size(n, index_block, device)), dim3(index_block), 0,
         stream_handle(s), targets, no_keys, index_data, kind, *target_walk, n, dim, size, stride, key_stride, first);
  // Duplicates share a position off the axis: the later along the axis is the later in row-major order.
  const bool duplicates = count > 1;
  if (p.type == ScatterType::none && duplicates) {
    claim(scratch, *walk, 1, n, o.size(), source, s);
  }
  apply(o, updates, scratch, *walk, 1, n, p.type, duplicates, source, s);
}

}  // namespace nuvec::cuda
