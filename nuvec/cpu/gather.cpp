// Kernels that read at computed positions: Gather, GatherAxis and DynamicSlice. They only move elements, so each
// runs on the unsigned integer of the element's size; out-of-range indices are clamped (indexing.h).
//
// Gather computes the start of every slice once, then copies the slices as runs, split across threads by output
// element: a take of rows from a dense matrix (the embedding lookup) is one copy per row, streamed when large.

#include <algorithm>

#include "nuvec/cpu/copy.h"
#include "nuvec/cpu/elementwise.h"
#include "nuvec/cpu/highway.h"
#include "nuvec/cpu/indexing.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/prefetch.h"
#include "nuvec/cpu/thread_pool.h"

// Highway's extras, included once nuvec/cpu/highway.h has chosen static dispatch.
#include <hwy/cache_control.h>

namespace nuvec::cpu {

namespace {

/// How far ahead of its copy a streamed gather fetches, and the chunk it copies and fetches at a time.
constexpr int64_t prefetch_bytes = 4096;
constexpr int64_t stream_chunk = 1024;

/// Streams `bytes` from `from` to `to`, fetching up to `prefetch_bytes` ahead all along, into the next slice (null:
/// none, of the same length) near the end: the hardware prefetcher stops at every 4 KiB page and starts late on each.
void stream_slice(char* to, const char* from, const char* next, int64_t bytes) {
  const int64_t distance = std::min(prefetch_bytes, bytes);  // a short slice fetches the next one whole
  for (int64_t done = 0; done < bytes; done += stream_chunk) {
    const int64_t ahead = done + distance;
    if (ahead < bytes) {
      prefetch_l2(from + ahead, std::min(stream_chunk, bytes - ahead));
    } else if (next != nullptr && ahead - bytes < bytes) {
      prefetch_l2(next + (ahead - bytes), std::min(stream_chunk, 2 * bytes - ahead));
    }
    stream_copy(to + done, from + done, static_cast<size_t>(std::min(stream_chunk, bytes - done)));
  }
}

}  // namespace

std::vector<int64_t> load_indices(const array& indices) {
  std::vector<int64_t> values(indices.size());
  copy_strided(indices.shape(), indices.raw_data(), indices.dtype(), indices.strides(), values.data(), int64,
               row_major_strides(indices.shape()));
  return values;
}

void init_from_input(const array& a, array& out) {
  if (a.is_donatable() && a.flags().row_contiguous && a.data_size() == a.size() && a.dtype() == out.dtype()) {
    out.move_shared_buffer(a);
  } else {
    copy_to_new(a, out);
  }
}

array row_major(const array& x) {
  if (x.flags().row_contiguous && x.data_size() == x.size()) {
    return x;
  }
  array copy(allocator::malloc(x.nbytes()), x.shape(), x.dtype());
  copy_strided(x, copy.raw_data(), copy.strides(), copy.dtype());
  return copy;
}

void run(const Gather& p, const Inputs& in, Outputs& out) {
  const array& a = in[0];
  array& o = out[0];
  o.set_data(allocator::malloc(o.nbytes()));
  if (o.size() == 0) {
    return;
  }
  const size_t count = p.axes.empty() ? 1 : in[1].size();
  const size_t slice_size = shape_size(p.slice_sizes);
  // The element offset in `a` of each slice's start.
  std::vector<int64_t> start(count, 0);
  for (size_t k = 0; k < p.axes.size(); ++k) {
    const auto indices = load_indices(in[1 + k]);
    const int axis = p.axes[k];
    const int64_t dim = a.shape(axis);
    const int64_t size = p.slice_sizes[axis];
    const int64_t stride = a.strides(axis);
    for (size_t n = 0; n < count; ++n) {
      start[n] += clamp_start(indices[n], dim, size) * stride;
    }
  }
  const StridedLayout<2> layout(p.slice_sizes, {a.strides(), row_major_strides(p.slice_sizes)});
  // Contiguous slices into an output too large for the caches (the embedding lookup) are streamed out, which saves
  // the read for ownership of each output line, and the next slice's first lines are fetched while one is copied,
  // since the hardware prefetcher only starts on a new slice after a few of its lines missed.
  const bool stream = o.nbytes() >= streaming_bytes && layout.inner_stride(0) == 1 && layout.inner_stride(1) == 1;
  dispatch_bytes(a.itemsize(), [&]<class U>(type_tag<U>) {
    const auto* src = static_cast<const U*>(a.raw_data());
    auto* dst = static_cast<U*>(o.raw_data());
    parallel_for(count * slice_size, elementwise_grain, [&](size_t begin, size_t end) {
      for_each_slice_run(
          layout, slice_size, begin, end, [&](size_t n, const std::array<int64_t, 2>& offsets, int64_t length) {
            U* to = dst + n * slice_size + offsets[1];
            const U* from = src + start[n] + offsets[0];
            if (!stream) {
              move_run(to, layout.inner_stride(1), from, layout.inner_stride(0), length);
              return;
            }
            const auto bytes = length * static_cast<int64_t>(sizeof(U));
            const auto* next = n + 1 < count ? reinterpret_cast<const char*>(src + start[n + 1] + offsets[0]) : nullptr;
            stream_slice(reinterpret_cast<char*>(to), reinterpret_cast<const char*>(from), next, bytes);
          });
      if (stream) {
        hwy::FlushStream();  // order the streamed lines before parallel_for reports this work done
      }
    });
  });
}

void run(const GatherAxis& p, const Inputs& in, Outputs& out) {
  const array& a = in[0];
  array& o = out[0];
  o.set_data(allocator::malloc(o.nbytes()));
  if (o.size() == 0) {
    return;
  }
  const auto indices = load_indices(in[1]);  // in[1] has o's shape, so it shares o's row-major offsets
  // Walk o with a's strides, the axis's stride zeroed: the index adds it back per element.
  Strides a_strides = a.strides();
  const int64_t axis_stride = a_strides[p.axis];
  const int64_t dim = a.shape(p.axis);
  a_strides[p.axis] = 0;
  const StridedLayout<2> layout(o.shape(), {a_strides, row_major_strides(o.shape())});
  const int64_t inner = layout.inner_size();
  const int64_t src_stride = layout.inner_stride(0);
  const int64_t dst_stride = layout.inner_stride(1);
  const size_t grain = std::max<size_t>(1, elementwise_grain / static_cast<size_t>(inner));
  dispatch_bytes(a.itemsize(), [&]<class U>(type_tag<U>) {
    const auto* src = static_cast<const U*>(a.raw_data());
    auto* dst = static_cast<U*>(o.raw_data());
    parallel_for(layout.rows(), grain, [&](size_t begin, size_t end) {
      layout.for_each_row(begin, end, [&](const std::array<int64_t, 2>& offsets) {
        const U* s = src + offsets[0];
        const int64_t* index = indices.data() + offsets[1];
        U* d = dst + offsets[1];
        for (int64_t i = 0; i < inner; ++i) {
          d[i * dst_stride] = s[i * src_stride + clamp_start(index[i * dst_stride], dim, 1) * axis_stride];
        }
      });
    });
  });
}

void run(const DynamicSlice& p, const Inputs& in, Outputs& out) {
  const array& a = in[0];
  array& o = out[0];
  o.set_data(allocator::malloc(o.nbytes()));
  if (o.size() == 0) {
    return;
  }
  const auto starts = load_indices(in[1]);
  int64_t offset = 0;
  for (size_t k = 0; k < p.axes.size(); ++k) {
    const int axis = p.axes[k];
    offset += clamp_start(starts[k], a.shape(axis), p.slice_size[axis]) * a.strides(axis);
  }
  const auto* src = static_cast<const char*>(a.raw_data()) + offset * static_cast<int64_t>(a.itemsize());
  copy_strided(o.shape(), src, a.dtype(), a.strides(), o.raw_data(), o.dtype(), o.strides());
}

}  // namespace nuvec::cpu
