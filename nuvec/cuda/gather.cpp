// Gather and GatherAxis on the GPU (kernels/gather.cu). Gather computes each slice's start once (a small kernel per
// index array, which may each have their own integer dtype), then copies the slices, reading and writing up to 16
// bytes at a time where the slices are dense: a take of rows from a row-contiguous table (the embedding lookup) is
// a row copy per index in 16-byte accesses. Cases past the walk's max_dims axes run on the host.

#include "nuvec/cuda/buffers.h"
#include "nuvec/cuda/device.h"
#include "nuvec/cuda/indexing.h"
#include "nuvec/cuda/jit.h"
#include "nuvec/cuda/kernel_sources.h"
#include "nuvec/cuda/kernels.h"

namespace nuvec::cuda {

namespace {

const char* bytes_type(size_t bytes) {
  switch (bytes) {
    case 1:
      return "uint8_t";
    case 2:
      return "uint16_t";
    case 4:
      return "uint32_t";
    case 8:
      return "uint64_t";
    default:
      return "uint4";
  }
}

}  // namespace

std::string gather_source(size_t bytes) {
  return "#include \"nuvec/cuda/prelude.cuh\"\ntypedef " + std::string(bytes_type(bytes)) + " value_t;\n" +
         std::string(kernel_source("gather.cu"));
}

void run(const Gather& p, const Inputs& in, Outputs& out, const Stream& s) {
  const array& a = in[0];
  array& o = out[0];
  const size_t count = p.axes.empty() ? 1 : in[1].size();
  auto slice = make_walk<1>(p.slice_sizes, {a.strides()});
  std::vector<Walk<1>> index_walks;
  for (size_t k = 0; k < p.axes.size(); ++k) {
    const array& indices = in[1 + k];
    if (auto w = make_walk<1>(indices.shape(), {indices.strides()})) {
      index_walks.push_back(*w);
    }
  }
  if (!slice || index_walks.size() != p.axes.size() || !fits_int32(count)) {
    on_host(p, in, out);  // more than max_dims axes that do not merge, or 2^31 slices
    return;
  }
  allocate_output(o, s);
  if (o.size() == 0) {
    return;
  }
  const int device = s.device.index;
  const cudaStream_t stream = stream_handle(s);
  const void* src = device_pointer(a, s);
  void* dst = device_pointer(o, s);
  Strides axis_strides;
  for (int axis : p.axes) {
    axis_strides.push_back(a.strides(axis));
  }
  const size_t bytes = access_bytes(*slice, a.itemsize(), {src, dst}, axis_strides);
  const auto factor = static_cast<int64_t>(bytes / a.itemsize());
  widen(*slice, factor);
  const std::string source = gather_source(bytes);

  std::optional<array> starts;  // element offsets in a (in accesses) of each slice's start
  int64_t* start_data = nullptr;
  if (!p.axes.empty()) {
    starts = gpu_array({static_cast<int32_t>(count)}, int64, s);
    start_data = device_pointer<int64_t>(*starts, s);
  }
  for (size_t k = 0; k < p.axes.size(); ++k) {
    const int axis = p.axes[k];
    const void* indices = device_pointer(in[1 + k], s);
    int kind = index_kind(in[1 + k].dtype());
    auto n = static_cast<int64_t>(count);
    int64_t dim = a.shape(axis);
    int64_t size = p.slice_sizes[axis];
    int64_t stride = axis_strides[k] / factor;
    int first = k == 0 ? 1 : 0;
    launch(kernel(source, "nuvec_gather_starts", device), dim3(grid_size(n, index_block, device)), dim3(index_block), 0,
           stream, start_data, indices, kind, index_walks[k], n, dim, size, stride, first);
  }
  int64_t slice_size = static_cast<int64_t>(shape_size(p.slice_sizes)) / factor;
  auto total = static_cast<int64_t>(count) * slice_size;
  launch(kernel(source, "nuvec_gather", device), dim3(grid_size(total, index_block, device)), dim3(index_block), 0,
         stream, dst, src, start_data, *slice, slice_size, total);
}

void run(const GatherAxis& p, const Inputs& in, Outputs& out, const Stream& s) {
  const array& a = in[0];
  const array& indices = in[1];
  array& o = out[0];
  // Walk the output with a's strides, the axis's zeroed: the index adds it back per element.
  Strides a_strides = a.strides();
  a_strides[p.axis] = 0;
  auto walk = make_walk<2>(o.shape(), {a_strides, indices.strides()});
  if (!walk) {
    on_host(p, in, out);  // more than max_dims axes that do not merge
    return;
  }
  allocate_output(o, s);
  if (o.size() == 0) {
    return;
  }
  const int device = s.device.index;
  void* dst = device_pointer(o, s);
  const void* src = device_pointer(a, s);
  const void* index_data = device_pointer(indices, s);
  int kind = index_kind(indices.dtype());
  int64_t dim = a.shape(p.axis);
  int64_t axis_stride = a.strides(p.axis);
  auto total = static_cast<int64_t>(o.size());
  launch(kernel(gather_source(a.itemsize()), "nuvec_gather_axis", device), dim3(grid_size(total, index_block, device)),
         dim3(index_block), 0, stream_handle(s), dst, src, index_data, kind, *walk, dim, axis_stride, total);
}

}  // namespace nuvec::cuda
