// The Convolution kernel: im2col + GEMM for every floating dtype, a direct loop for depthwise convolutions, and
// oneDNN's convolution primitive (conv_onednn.cpp) for float32 and bfloat16.
//
// im2col gathers, for a chunk of output positions, every input value each position reads (kernel taps by
// channels, zeros where a tap falls in the padding or between the elements of a dilated input) into a dense
// matrix; one GEMM per group then multiplies it by the weight matrix (C_out / groups, taps x C_in / groups),
// which channels-last weights already are. Chunks keep the gathered matrix to a few MiB. float16 and bfloat16
// are gathered into float32 and rounded once at the end; float64 stays float64 (OpenBLAS's dgemm).
//
// Choosing (measured with bench/conv_vs_torch.py, figures in bench/README.md): on ResNet-like float32 shapes
// oneDNN is 1.1-1.4x faster than im2col + GEMM on every row (3x3, 1x1, stride 2; one thread, CPU time) and 4.7x on
// a stride-2 transposed convolution, which it computes as a deconvolution without the dilated input's zeros. So
// oneDNN takes every float32 and bfloat16 convolution it can express (input dilation only with unit strides and
// low padding within the dilated kernel's extent, see onednn_transposed), falling back to GEMM if it has no
// implementation; float64 and float16 take im2col + GEMM, or the direct loop when depthwise (one input channel
// per group, where the GEMMs would have a single column).

#include "nuvec/cpu/conv.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "nuvec/core/allocator.h"
#include "nuvec/core/dispatch.h"
#include "nuvec/cpu/copy.h"
#include "nuvec/cpu/element_types.h"
#include "nuvec/cpu/gemm.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/scratch.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

namespace {

std::atomic<ConvBackend> conv_backend{ConvBackend::automatic};

constexpr size_t chunk_bytes = size_t{8} << 20;  // the im2col matrix of one chunk

ConvGeometry geometry(const Convolution& p, const array& x, const array& w, const array& out) {
  const int spatial = x.ndim() - 2;
  ConvGeometry g{spatial,   x.shape(0), x.shape(-1), w.shape(0), p.groups,  {1, 1, 1}, {1, 1, 1},
                 {1, 1, 1}, {1, 1, 1},  {0, 0, 0},   {0, 0, 0},  {1, 1, 1}, {1, 1, 1}};
  for (int i = 0; i < spatial; ++i) {
    const int a = 3 - spatial + i;
    g.in[a] = x.shape(i + 1);
    g.kernel[a] = w.shape(i + 1);
    g.out[a] = out.shape(i + 1);
    g.stride[a] = p.stride[i];
    g.pad_lo[a] = p.padding_lo[i];
    g.pad_hi[a] = p.padding_hi[i];
    g.kernel_dilation[a] = p.kernel_dilation[i];
    g.input_dilation[a] = p.input_dilation[i];
  }
  return g;
}

bool has_input_dilation(const ConvGeometry& g) {
  return std::any_of(g.input_dilation.begin(), g.input_dilation.end(), [](int64_t d) { return d != 1; });
}

int64_t taps(const ConvGeometry& g) { return g.kernel[0] * g.kernel[1] * g.kernel[2]; }
int64_t out_positions(const ConvGeometry& g) { return g.batch * g.out[0] * g.out[1] * g.out[2]; }

/// `a` dense row-major in `dtype` (converted, and with its kernel axes flipped when `flip`), in `scratch` unless
/// `a` already is that.
const void* dense(const array& a, Dtype dtype, bool flip, std::optional<Scratch>& scratch) {
  if (!flip && a.dtype() == dtype && a.flags().row_contiguous) {
    return a.raw_data();
  }
  scratch.emplace(a.size() * size_of(dtype));
  auto* src = static_cast<const char*>(a.raw_data());
  Strides strides = a.strides();
  if (flip) {  // a view with negative strides over the weight's spatial axes
    for (int i = 1; i + 1 < a.ndim(); ++i) {
      src += (a.shape(i) - 1) * strides[i] * static_cast<int64_t>(a.itemsize());
      strides[i] = -strides[i];
    }
  }
  copy_strided(a.shape(), src, a.dtype(), strides, scratch->get(), dtype, row_major_strides(a.shape()));
  return scratch->get();
}

/// The input position read by output position `o` through kernel tap `k` along axis `a`, or -1 when that falls in
/// the padding or between the elements of a dilated input.
int64_t source_index(const ConvGeometry& g, int a, int64_t o, int64_t k) {
  const int64_t pos = o * g.stride[a] - g.pad_lo[a] + k * g.kernel_dilation[a];
  const int64_t d = g.input_dilation[a];
  if (pos < 0 || pos % d != 0 || pos / d >= g.in[a]) {
    return -1;
  }
  return pos / d;
}

/// Calls fn(tap, input offset of the tap's pixel, or -1) for every tap of output position m.
template <class Fn>
void for_each_tap(const ConvGeometry& g, int64_t m, Fn&& fn) {
  int64_t o[3];
  int64_t rest = m;
  for (int a = 2; a >= 0; --a) {
    o[a] = rest % g.out[a];
    rest /= g.out[a];
  }
  const int64_t n = rest;
  int64_t tap = 0;
  for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) {
    const int64_t i0 = source_index(g, 0, o[0], k0);
    for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
      const int64_t i1 = i0 < 0 ? -1 : source_index(g, 1, o[1], k1);
      for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2, ++tap) {
        const int64_t i2 = i1 < 0 ? -1 : source_index(g, 2, o[2], k2);
        fn(tap, i2 < 0 ? int64_t{-1} : (((n * g.in[0] + i0) * g.in[1] + i1) * g.in[2] + i2) * g.c_in);
      }
    }
  }
}

/// out = conv(x, w) through im2col + GEMM: x dense (T), w dense (C_out, taps, C_in / groups) in C.
template <class T, class C>
void gemm_conv(const ConvGeometry& g, const T* x, const C* w, T* out) {
  const Dtype compute = dtype_v<C>;
  const int64_t cig = g.c_in / g.groups;
  const int64_t cog = g.c_out / g.groups;
  const int64_t kc = taps(g) * cig;  // the reduction length of one group
  const int64_t width = g.groups * kc;
  const int64_t m_total = out_positions(g);
  const bool pointwise = taps(g) == 1 && !has_input_dilation(g) && g.stride == std::array<int64_t, 3>{1, 1, 1} &&
                         g.pad_lo == std::array<int64_t, 3>{0, 0, 0} && g.in == g.out;
  if constexpr (std::is_same_v<T, C>) {
    if (pointwise && g.groups == 1) {  // the input already is the im2col matrix
      gemm(compute, 1, m_total, g.c_out, g.c_in, 1.F, {x, 0, g.c_in, 1}, {w, 0, 1, g.c_in}, 0.F, out);
      return;
    }
  }
  const int64_t chunk = std::clamp<int64_t>(static_cast<int64_t>(chunk_bytes / (width * sizeof(C))), 1, m_total);
  Scratch col(static_cast<size_t>(chunk * width) * sizeof(C));
  const bool direct_out = std::is_same_v<T, C> && g.groups == 1;
  std::optional<Scratch> result;
  if (!direct_out) {
    result.emplace(static_cast<size_t>(chunk * cog) * sizeof(C));
  }
  auto* cols = static_cast<C*>(col.get());
  for (int64_t m0 = 0; m0 < m_total; m0 += chunk) {
    const int64_t rows = std::min(chunk, m_total - m0);
    parallel_for(static_cast<size_t>(rows), std::max<size_t>(1, 16384 / width), [&](size_t begin, size_t end) {
      for (auto r = static_cast<int64_t>(begin); r < static_cast<int64_t>(end); ++r) {
        C* row = cols + r * width;
        for_each_tap(g, m0 + r, [&](int64_t tap, int64_t offset) {
          for (int64_t gi = 0; gi < g.groups; ++gi) {
            C* dst = row + gi * kc + tap * cig;
            if (offset < 0) {
              std::fill(dst, dst + cig, C{0});
            } else {
              const T* src = x + offset + gi * cig;
              for (int64_t c = 0; c < cig; ++c) {
                dst[c] = static_cast<C>(src[c]);
              }
            }
          }
        });
      }
    });
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      const MatrixBatch a{cols + gi * kc, 0, width, 1};
      const MatrixBatch b{w + gi * cog * kc, 0, 1, kc};
      if (direct_out) {
        gemm(compute, 1, rows, cog, kc, 1.F, a, b, 0.F, out + m0 * g.c_out);
      } else {
        gemm(compute, 1, rows, cog, kc, 1.F, a, b, 0.F, result->get());
        copy_strided({static_cast<int32_t>(rows), static_cast<int32_t>(cog)}, result->get(), compute, {cog, 1},
                     out + m0 * g.c_out + gi * cog, dtype_v<T>, {g.c_out, 1});
      }
    }
  }
}

/// out = conv(x, w) for one input channel per group: each output channel o reads input channel o / (C_out /
/// groups), so a position is a sum over taps of channel-wise products. w dense (C_out, taps) in C.
template <class T, class C>
void depthwise_conv(const ConvGeometry& g, const T* x, const C* w, T* out) {
  const int64_t cog = g.c_out / g.groups;
  const int64_t kt = taps(g);
  std::vector<C> wt(static_cast<size_t>(kt * g.c_out));  // (taps, C_out): rows read with unit stride
  for (int64_t o = 0; o < g.c_out; ++o) {
    for (int64_t t = 0; t < kt; ++t) {
      wt[t * g.c_out + o] = w[o * kt + t];
    }
  }
  const int64_t m_total = out_positions(g);
  parallel_for(static_cast<size_t>(m_total), std::max<size_t>(1, 4096 / (kt * g.c_out)), [&](size_t begin, size_t end) {
    std::vector<C> acc(static_cast<size_t>(g.c_out));
    for (auto m = static_cast<int64_t>(begin); m < static_cast<int64_t>(end); ++m) {
      std::fill(acc.begin(), acc.end(), C{0});
      for_each_tap(g, m, [&](int64_t tap, int64_t offset) {
        if (offset < 0) {
          return;
        }
        const T* src = x + offset;
        const C* wrow = wt.data() + tap * g.c_out;
        if (cog == 1) {
          for (int64_t o = 0; o < g.c_out; ++o) {
            acc[o] += static_cast<C>(src[o]) * wrow[o];
          }
        } else {
          for (int64_t o = 0; o < g.c_out; ++o) {
            acc[o] += static_cast<C>(src[o / cog]) * wrow[o];
          }
        }
      });
      T* dst = out + m * g.c_out;
      for (int64_t o = 0; o < g.c_out; ++o) {
        dst[o] = static_cast<T>(acc[o]);
      }
    }
  });
}

/// Whether oneDNN computes this convolution (the rule in the header comment).
bool use_onednn(const ConvGeometry& g, Dtype dtype) {
  if ((dtype != float32 && dtype != bfloat16) || (has_input_dilation(g) && !onednn_transposed(g))) {
    return false;
  }
  switch (conv_backend.load(std::memory_order_relaxed)) {
    case ConvBackend::automatic:
    case ConvBackend::onednn:
      return true;
    case ConvBackend::gemm:
      return false;
  }
  return false;
}

}  // namespace

void set_conv_backend(ConvBackend backend) { conv_backend.store(backend, std::memory_order_relaxed); }
ConvBackend get_conv_backend() { return conv_backend.load(std::memory_order_relaxed); }

void run(const Convolution& p, const Inputs& in, Outputs& out) {
  const array& x = in[0];
  const array& w = in[1];
  array& o = out[0];
  o.set_data(allocator::malloc(o.nbytes()));
  if (o.size() == 0) {
    return;
  }
  const ConvGeometry g = geometry(p, x, w, o);
  if (x.size() == 0) {  // no input channels (or no input rows at all): every sum is empty
    std::memset(o.raw_data(), 0, o.nbytes());
    return;
  }
  const Dtype dtype = o.dtype();
  std::optional<Scratch> x_copy;
  const void* xd = dense(x, dtype, false, x_copy);
  if (use_onednn(g, dtype)) {
    std::optional<Scratch> w_copy;
    // A deconvolution flips the kernel itself.
    const bool flip = p.flip != has_input_dilation(g);
    if (onednn_conv(g, dtype, xd, dense(w, dtype, flip, w_copy), o.raw_data())) {
      return;
    }
  }
  dispatch<floating_types>(dtype, "Convolution", [&]<class T>(type_tag<T>) {
    using C = compute_t<T>;
    std::optional<Scratch> w_copy;
    const auto* wd = static_cast<const C*>(dense(w, dtype_v<C>, p.flip, w_copy));
    const auto* xt = static_cast<const T*>(xd);
    auto* ot = static_cast<T*>(o.raw_data());
    if (g.c_in == g.groups && g.groups > 1) {
      depthwise_conv<T, C>(g, xt, wd, ot);
    } else {
      gemm_conv<T, C>(g, xt, wd, ot);
    }
  });
}

}  // namespace nuvec::cpu
