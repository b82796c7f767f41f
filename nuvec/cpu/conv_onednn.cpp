// Convolution through oneDNN's convolution primitive, and convolutions with input dilation (the transposed ones)
// through its deconvolution primitive, which skips the zeros between the dilated input's elements. Activations stay
// channels last (oneDNN's nwc / nhwc / ndhwc, the layouts its AVX-512 and AMX kernels read directly); the weights
// (C_out, kernel..., C_in / groups) are described as owi / ohwi / odhwi (gowi ... with groups) and reordered into the
// blocked layout the chosen kernel wants on each call, since their values may change between calls. Creating a
// primitive generates its code (JIT), so primitives are kept by shape in a small LRU cache.

#include <cstring>
#include <list>
#include <mutex>
#include <optional>
#include <utility>

#include "nuvec/core/error.h"
#include "nuvec/cpu/conv.h"
#include "nuvec/cpu/copy.h"
#include "nuvec/cpu/onednn.h"
#include "nuvec/cpu/scratch.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

namespace {

using dnnl::memory;

struct ConvKey {
  int threads;  // oneDNN sizes its work split when a primitive is made
  bool bf16;
  bool transposed;  // a deconvolution
  ConvGeometry geometry;
  friend bool operator==(const ConvKey&, const ConvKey&) = default;
};

struct ConvEntry {
  memory::desc src;
  memory::desc user_weights;
  memory::desc weights;  // the layout the primitive reads
  memory::desc dst;
  memory::desc scratchpad;  // each execution brings its own (scratchpad_mode::user, see onednn.h)
  dnnl::primitive primitive;
  std::optional<dnnl::reorder> weights_reorder;  // user_weights -> weights, when they differ
};

/// The last `spatial` entries of a 3-d geometry array, as oneDNN dims (with `offset` added).
memory::dims tail(const std::array<int64_t, 3>& values, int spatial, int64_t offset = 0) {
  memory::dims dims;
  for (int i = 3 - spatial; i < 3; ++i) {
    dims.push_back(values[i] + offset);
  }
  return dims;
}

ConvEntry create(const ConvKey& key, const ConvGeometry& g) {
  using tag = memory::format_tag;
  const auto dt = key.bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  const int s = g.spatial;
  const tag act = s == 1 ? tag::nwc : s == 2 ? tag::nhwc : tag::ndhwc;

  memory::dims src_dims{g.batch, g.c_in};
  memory::dims dst_dims{g.batch, g.c_out};
  for (auto d : tail(g.in, s)) {
    src_dims.push_back(d);
  }
  for (auto d : tail(g.out, s)) {
    dst_dims.push_back(d);
  }
  memory::dims wt_dims;
  tag wt_tag;
  if (g.groups == 1) {
    wt_dims = {g.c_out, g.c_in};
    wt_tag = s == 1 ? tag::owi : s == 2 ? tag::ohwi : tag::odhwi;
  } else {
    wt_dims = {g.groups, g.c_out / g.groups, g.c_in / g.groups};
    wt_tag = s == 1 ? tag::gowi : s == 2 ? tag::gohwi : tag::godhwi;
  }
  for (auto d : tail(g.kernel, s)) {
    wt_dims.push_back(d);
  }

  memory::desc src(src_dims, dt, act);
  memory::desc dst(dst_dims, dt, act);
  memory::desc user_weights(wt_dims, dt, wt_tag);
  memory::desc any_weights(wt_dims, dt, tag::any);
  const auto forward = dnnl::prop_kind::forward_inference;
  const auto dilates = tail(g.kernel_dilation, s, -1);
  ConvEntry entry{src, user_weights, {}, dst, {}, {}, std::nullopt};
  const auto attr = user_scratchpad();
  if (key.transposed) {
    // Output position o gathers input i through tap k where o = i * stride - pad_l + k * dilation.
    memory::dims pad_l;
    memory::dims pad_r;
    for (int i = 3 - s; i < 3; ++i) {
      const int64_t span = (g.kernel[i] - 1) * g.kernel_dilation[i];
      pad_l.push_back(span - g.pad_lo[i]);
      pad_r.push_back(span - g.pad_hi[i]);
    }
    dnnl::deconvolution_forward::desc desc(forward, dnnl::algorithm::deconvolution_direct, src, any_weights, dst,
                                           tail(g.input_dilation, s), dilates, pad_l, pad_r);
    dnnl::deconvolution_forward::primitive_desc pd(desc, attr, engine());
    entry.weights = pd.weights_desc();
    entry.scratchpad = pd.scratchpad_desc();
    entry.primitive = dnnl::deconvolution_forward(pd);
  } else {
    dnnl::convolution_forward::desc desc(forward, dnnl::algorithm::convolution_direct, src, any_weights, dst,
                                         tail(g.stride, s), dilates, tail(g.pad_lo, s), tail(g.pad_hi, s));
    dnnl::convolution_forward::primitive_desc pd(desc, attr, engine());
    entry.weights = pd.weights_desc();
    entry.scratchpad = pd.scratchpad_desc();
    entry.primitive = dnnl::convolution_forward(pd);
  }
  if (entry.weights != user_weights) {
    entry.weights_reorder =
        dnnl::reorder(dnnl::reorder::primitive_desc(engine(), user_weights, engine(), entry.weights, attr));
  }
  return entry;
}

class ConvCache {
 public:
  ConvEntry get(const ConvKey& key, const ConvGeometry& g) {
    std::lock_guard lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == key) {
        entries_.splice(entries_.begin(), entries_, it);
        return it->second;
      }
    }
    entries_.emplace_front(key, create(key, g));
    if (entries_.size() > capacity) {
      entries_.pop_back();
    }
    return entries_.front().second;
  }

 private:
  static constexpr size_t capacity = 32;
  std::mutex mutex_;
  std::list<std::pair<ConvKey, ConvEntry>> entries_;
};

/// Runs a cached primitive on dense operands.
void execute(const ConvEntry& entry, Dtype dtype, const void* in, const void* weight, void* out) {
  try {
    auto& eng = engine();
    thread_local dnnl::stream stream(eng);
    memory src(entry.src, eng, const_cast<void*>(in));
    memory dst(entry.dst, eng, out);
    memory user_weights(entry.user_weights, eng, const_cast<void*>(weight));
    std::optional<Scratch> reordered;
    memory weights = user_weights;
    if (entry.weights_reorder) {
      reordered.emplace(entry.weights.get_size());
      weights = memory(entry.weights, eng, reordered->get());
      entry.weights_reorder->execute(stream, {{DNNL_ARG_FROM, user_weights}, {DNNL_ARG_TO, weights}});
    }
    Scratch scratch(entry.scratchpad.get_size());
    entry.primitive.execute(stream, {{DNNL_ARG_SRC, src},
                                     {DNNL_ARG_WEIGHTS, weights},
                                     {DNNL_ARG_DST, dst},
                                     {DNNL_ARG_SCRATCHPAD, memory(entry.scratchpad, eng, scratch.get())}});
    stream.wait();
  } catch (const dnnl::error& e) {
    throw_internal("[conv] oneDNN " + std::string(dtype_name(dtype)) + " convolution failed: " + e.what());
  }
}

/// Runs the primitive for `g` on dense operands; false when oneDNN has no implementation. The batch is split
/// into one piece per thread of nuvec's pool, each a single-threaded primitive (see gemm.cpp on why oneDNN's
/// OpenMP teams are avoided); a batch smaller than the thread count runs as one primitive on an OpenMP team.
bool onednn_run(const ConvGeometry& g, Dtype dtype, const void* in, const void* weight, void* out) {
  static ConvCache cache;
  sync_library_threads();
  const int threads = num_threads();
  const int64_t pieces = g.batch >= threads ? threads : 1;
  const int team = pieces == 1 ? threads : 1;
  const bool transposed = g.input_dilation != std::array<int64_t, 3>{1, 1, 1};
  auto part = [&](int64_t count) {
    ConvGeometry sub = g;
    sub.batch = count;
    return std::pair{ConvKey{team, dtype == bfloat16, transposed, sub}, sub};
  };
  try {
    set_onednn_threads(team);
    for (int64_t count : {g.batch / pieces, (g.batch + pieces - 1) / pieces}) {
      auto [key, sub] = part(count);
      cache.get(key, sub);
    }
  } catch (const dnnl::error&) {
    return false;
  }
  const auto item = static_cast<int64_t>(size_of(dtype));
  const int64_t in_sample = g.c_in * g.in[0] * g.in[1] * g.in[2] * item;
  const int64_t out_sample = g.c_out * g.out[0] * g.out[1] * g.out[2] * item;
  parallel_for(static_cast<size_t>(pieces), 1, [&](size_t begin, size_t end) {
    set_onednn_threads(team);
    for (auto i = static_cast<int64_t>(begin); i < static_cast<int64_t>(end); ++i) {
      const int64_t lo = g.batch * i / pieces;
      const int64_t hi = g.batch * (i + 1) / pieces;
      auto [key, sub] = part(hi - lo);
      execute(cache.get(key, sub), dtype, static_cast<const char*>(in) + lo * in_sample, weight,
              static_cast<char*>(out) + lo * out_sample);
    }
  });
  set_onednn_threads(1);
  return true;
}

}  // namespace

bool onednn_transposed(const ConvGeometry& g) {
  for (int i = 0; i < 3; ++i) {
    if (g.stride[i] != 1 || g.pad_lo[i] > (g.kernel[i] - 1) * g.kernel_dilation[i]) {
      return false;
    }
  }
  return true;
}

bool onednn_conv(const ConvGeometry& g, Dtype dtype, const void* in, const void* weight, void* out) {
  // Output rows past the last one a transposed convolution reaches (high padding beyond the dilated kernel's
  // extent, from an output_padding larger than the padding) are zeros: oneDNN computes the rest into scratch.
  ConvGeometry reached = g;
  const bool transposed = g.input_dilation != std::array<int64_t, 3>{1, 1, 1};
  bool cropped = false;
  for (int i = 0; transposed && i < 3; ++i) {
    const int64_t extra = g.pad_hi[i] - (g.kernel[i] - 1) * g.kernel_dilation[i];
    if (extra > 0) {
      reached.pad_hi[i] -= extra;
      reached.out[i] -= extra;
      cropped = true;
    }
  }
  if (!cropped) {
    return onednn_run(g, dtype, in, weight, out);
  }
  const Shape full{static_cast<int32_t>(g.batch), static_cast<int32_t>(g.out[0]), static_cast<int32_t>(g.out[1]),
                   static_cast<int32_t>(g.out[2]), static_cast<int32_t>(g.c_out)};
  Shape part = full;
  for (int i = 0; i < 3; ++i) {
    part[i + 1] = static_cast<int32_t>(reached.out[i]);
  }
  Scratch scratch(shape_size(part) * size_of(dtype));
  if (!onednn_run(reached, dtype, in, weight, scratch.get())) {
    return false;
  }
  std::memset(out, 0, shape_size(full) * size_of(dtype));
  copy_strided(part, scratch.get(), dtype, row_major_strides(part), out, dtype, row_major_strides(full));
  return true;
}

}  // namespace nuvec::cpu
