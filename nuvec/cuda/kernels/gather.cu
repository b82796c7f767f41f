// Kernels that read at computed positions: Gather, GatherAxis, DynamicSlice and (writing) DynamicSliceUpdate, with
// the walk and index helpers scatter.cu shares (its source is compiled after this one). They only move elements:
// value_t is the unsigned type of the bytes one access moves (up to uint4, 16 bytes), prepended with the prelude.
// Index arrays may have any integer dtype, passed as a kind: the size in bytes, negative for signed types.
// Out-of-range indices are clamped as the CPU's gather.cpp does.
#include "nuvec/cuda/prelude.cuh"

/// The most axes a walk has once adjacent axes that are contiguous in every operand are merged (elementwise.h's
/// max_dims).
#define NV_WALK_DIMS 8

/// A row-major walk over a shape, giving each of K operands an element offset (indexing.h's Walk).
template <int K>
struct nv_walk {
  int64_t shape[NV_WALK_DIMS];
  int64_t strides[K][NV_WALK_DIMS];
  int ndim;
};

/// The operands' offsets of element i of the walk. Unrolled, so the descriptor is read from the parameter space.
template <int K>
inline void walk_offsets(const nv_walk<K>& w, int64_t i, int64_t (&offsets)[K]) {
  for (int k = 0; k < K; ++k) {
    offsets[k] = 0;
  }
#pragma unroll
  for (int d = NV_WALK_DIMS - 1; d >= 0; --d) {
    if (d < w.ndim) {
      int64_t c = i;  // the outermost axis takes the rest
      if (d > 0) {
        c = i % w.shape[d];
        i /= w.shape[d];
      }
#pragma unroll
      for (int k = 0; k < K; ++k) {
        offsets[k] += c * w.strides[k][d];
      }
    }
  }
}

/// Element i of an index array of `kind`, as int64 (unsigned values of 2^63 or more wrap, as on the CPU).
inline int64_t load_index(const void* p, int64_t i, int kind) {
  switch (kind) {
    case -1:
      return static_cast<const int8_t*>(p)[i];
    case -2:
      return static_cast<const int16_t*>(p)[i];
    case -4:
      return static_cast<const int32_t*>(p)[i];
    case -8:
      return static_cast<const int64_t*>(p)[i];
    case 1:
      return static_cast<const uint8_t*>(p)[i];
    case 2:
      return static_cast<const uint16_t*>(p)[i];
    case 4:
      return static_cast<const uint32_t*>(p)[i];
    default:
      return static_cast<int64_t>(static_cast<const uint64_t*>(p)[i]);
  }
}

/// A gather's start on an axis of size dim for a slice of size: negative indices count from the end once, then the
/// start is clamped so the slice fits.
inline int64_t clamp_start(int64_t index, int64_t dim, int64_t size) {
  if (index < 0) {
    index += dim;
  }
  return index < 0 ? 0 : (index > dim - size ? dim - size : index);
}

#define NV_GRID_LOOP(i, n) \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/// Adds each slice's clamped start on one axis (times the axis's stride) into starts; `first` sets it instead.
extern "C" __global__ void nuvec_gather_starts(int64_t* starts, const void* indices, int kind, nv_walk<1> walk,
                                               int64_t count, int64_t dim, int64_t size, int64_t stride, int first) {
  NV_GRID_LOOP(n, count) {
    int64_t at[1];
    walk_offsets(walk, n, at);
    const int64_t start = clamp_start(load_index(indices, at[0], kind), dim, size) * stride;
    starts[n] = first ? start : starts[n] + start;
  }
}

/// Slice n of the row-major output is read from a at starts[n] (0 without starts) through the slice's walk.
extern "C" __global__ void nuvec_gather(value_t* __restrict__ out, const value_t* __restrict__ a, const int64_t* starts,
                                        nv_walk<1> slice, int64_t slice_size, int64_t total) {
  NV_GRID_LOOP(i, total) {
    const int64_t n = i / slice_size;
    int64_t at[1];
    walk_offsets(slice, i - n * slice_size, at);
    out[i] = a[(starts != nullptr ? starts[n] : 0) + at[0]];
  }
}

/// take_along_axis: the walk over the row-major output gives a's offset (its axis's stride zeroed) and the index's;
/// the clamped index adds the axis back.
extern "C" __global__ void nuvec_gather_axis(value_t* __restrict__ out, const value_t* __restrict__ a,
                                             const void* indices, int kind, nv_walk<2> walk, int64_t dim,
                                             int64_t axis_stride, int64_t total) {
  NV_GRID_LOOP(i, total) {
    int64_t at[2];
    walk_offsets(walk, i, at);
    out[i] = a[at[0] + clamp_start(load_index(indices, at[1], kind), dim, 1) * axis_stride];
  }
}

/// The starts of a dynamic slice: on axis k, index k of the start array, clamped to fit a slice of size[k] in
/// dim[k], times stride[k].
struct nv_starts {
  int64_t dim[NV_WALK_DIMS];
  int64_t size[NV_WALK_DIMS];
  int64_t stride[NV_WALK_DIMS];
  int count;
};

/// dst = src through the walk (operand 0 src, 1 dst), the dynamic start added to the destination's offsets
/// (DynamicSliceUpdate) or the source's (DynamicSlice). Every thread reads the few start indices itself, so the start
/// never has to reach the host.
extern "C" __global__ void nuvec_dynamic_copy(value_t* __restrict__ dst, const value_t* __restrict__ src,
                                              const void* start, int kind, int64_t start_stride, nv_starts starts,
                                              int into_dst, nv_walk<2> walk, int64_t total) {
  int64_t base = 0;
#pragma unroll
  for (int k = 0; k < NV_WALK_DIMS; ++k) {
    if (k < starts.count) {
      base += clamp_start(load_index(start, k * start_stride, kind), starts.dim[k], starts.size[k]) * starts.stride[k];
    }
  }
  const int64_t src_base = into_dst ? 0 : base;
  const int64_t dst_base = into_dst ? base : 0;
  NV_GRID_LOOP(i, total) {
    int64_t at[2];
    walk_offsets(walk, i, at);
    dst[dst_base + at[1]] = src[src_base + at[0]];
  }
}
