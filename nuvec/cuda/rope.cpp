// RoPE on the GPU (kernels/rope.cu): x (B, ..., L, D) is read through its strides when the axes between B and L
// merge into one (a transposed (B, L, H, D) -> (B, H, L, D) does), else copied row-contiguous first. A thread per
// rotated pair (and per feature past dims, copied), which computes its angle; the output is row-contiguous.

#include <bit>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#include "nuvec/cuda/buffers.h"
#include "nuvec/cuda/device.h"
#include "nuvec/cuda/jit.h"
#include "nuvec/cuda/kernels.h"
#include "nuvec/cuda/rows.h"

namespace nuvec::cuda {

namespace {

constexpr unsigned block_threads = 256;

/// rope.cu's nv_rope_layout, member for member.
struct RopeLayout {
  int64_t batch, mid, length, features;
  int64_t batch_stride, mid_stride, length_stride, feature_stride;
  int64_t offset_stride;
  int64_t table_stride;
  int half;
  int traditional;
  int invert;
  float scale;
};
static_assert(sizeof(RopeLayout) == 96, "RopeLayout must match rope.cu's nv_rope_layout");

/// The inverse frequencies base^(-i / half), i < half, in float32 as the CPU computes them (nuvec/cpu/rope.cpp), on
/// `s`'s device: made once per (device, base, half) and kept for the process, so the upload reads a host buffer
/// that lives on (a few hundred bytes each).
const array& inverse_frequencies(float base, int half, const Stream& s) {
  static std::mutex mutex;
  static auto* tables = new std::map<std::tuple<int, uint32_t, int>, array>();  // never freed, as GPU buffers
  std::lock_guard lock(mutex);
  const auto key = std::tuple{s.device.index, std::bit_cast<uint32_t>(base), half};
  auto found = tables->find(key);
  if (found == tables->end()) {
    std::vector<float> values(static_cast<size_t>(half));
    const float coef = std::log(base) / static_cast<float>(half);
    for (int i = 0; i < half; ++i) {
      values[static_cast<size_t>(i)] = std::exp(static_cast<float>(-i) * coef);
    }
    found = tables->emplace(key, array(values.begin(), Shape{half}, float32)).first;
  }
  return found->second;
}

/// The size and stride of the axes between the first and the last two merged into one; nullopt when they do not
/// merge.
std::optional<std::pair<int64_t, int64_t>> merged_middle(const array& x) {
  int64_t size = 1;
  int64_t stride = 0;
  for (int i = x.ndim() - 3; i >= 1; --i) {
    if (x.shape(i) == 1) {
      continue;
    }
    if (size == 1) {
      stride = x.strides(i);
    } else if (x.strides(i) != stride * size) {
      return std::nullopt;
    }
    size *= x.shape(i);
  }
  return std::pair{size, stride};
}

}  // namespace

void run(const RoPE& p, const Inputs& in, Outputs& out, const Stream& s) {
  array& o = out[0];
  if (o.size() == 0) {
    allocate_output(o, s);
    return;
  }
  const array* x = &in[0];
  std::optional<array> copied;
  auto middle = merged_middle(*x);
  if (!middle) {
    copied = dense_copy(*x, s);
    if (!copied) {
      on_host(p, in, out);
      return;
    }
    x = &*copied;
    middle = merged_middle(*x);
  }
  allocate_output(o, s);
  const int nd = x->ndim();
  const array& offset = in[1];
  RopeLayout g{};
  g.batch = x->shape(0);
  g.mid = middle->first;
  g.length = x->shape(nd - 2);
  g.features = x->shape(nd - 1);
  g.batch_stride = x->strides(0);
  g.mid_stride = middle->second;
  g.length_stride = x->strides(nd - 2);
  g.feature_stride = x->strides(nd - 1);
  g.offset_stride = offset.size() > 1 ? offset.strides(0) : 0;
  g.half = p.dims / 2;
  g.traditional = p.traditional ? 1 : 0;
  g.scale = p.scale;
  void* table = nullptr;
  if (p.has_freqs) {
    table = device_pointer(in[2], s);
    g.table_stride = in[2].strides(0);
    g.invert = 1;
  } else {
    table = device_pointer(inverse_frequencies(p.base, g.half, s), s);
    g.table_stride = 1;
  }
  void* input = device_pointer(*x, s);
  void* y = device_pointer(o, s);
  void* offsets = device_pointer(offset, s);
  const int device = s.device.index;
  const int64_t work = g.batch * g.mid * g.length * (g.features - g.half);
  launch(kernel(rope_source(o.dtype()), "nv_rope", device), dim3(grid_size(work, block_threads, device)),
         dim3(block_threads), 0, stream_handle(s), input, y, offsets, table, g);
}

}  // namespace nuvec::cuda
