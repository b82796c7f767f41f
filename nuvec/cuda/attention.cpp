// ScaledDotProductAttention on the GPU (kernels/attention.cu): any layout of q, k, v and the mask (strides passed to
// the kernel), grouped heads, causal, boolean or additive masks and sinks. Value rows wider than
// max_value_features run on the host.

#include <string>

#include "nuvec/core/compile/expressions.h"
#include "nuvec/cuda/buffers.h"
#include "nuvec/cuda/device.h"
#include "nuvec/cuda/jit.h"
#include "nuvec/cuda/kernel_sources.h"
#include "nuvec/cuda/kernels.h"

namespace nuvec::cuda {

namespace {

constexpr int threads = 128;
constexpr int max_value_features = 4 * threads;

struct Strides4 {
  int64_t s[4];
};

/// An operand's strides over (B, N, L, D); broadcast axes (size 1 against a larger output) read at stride 0.
Strides4 strides_of(const array& a, const Shape& full) {
  Strides4 st{};
  for (int axis = 0; axis < 4; ++axis) {
    st.s[axis] = a.shape(axis) == 1 && full[static_cast<size_t>(axis)] != 1 ? 0 : a.strides(axis);
  }
  return st;
}

std::string prefix(Dtype t, Dtype mask, int mask_kind, bool causal, bool sinks, int per_thread) {
  auto define = [](const std::string& name, const std::string& value) { return "#define " + name + " " + value + "\n"; };
  std::string text = "#include \"nuvec/cuda/prelude.cuh\"\ntypedef " + detail::storage_type(t) + " T;\ntypedef " +
                     detail::storage_type(mask) + " M;\n";
  text += define("NV_LOAD(x)", detail::load(t, "(x)")) + define("NV_STORE(x)", detail::store(t, "(x)")) +
          define("NV_MASK_LOAD(x)", detail::load(mask, "(x)")) + define("NV_MASK", std::to_string(mask_kind)) +
          define("NV_CAUSAL", causal ? "1" : "0") + define("NV_SINKS", sinks ? "1" : "0") +
          define("NV_THREADS", std::to_string(threads)) + define("NV_DV_PER_THREAD", std::to_string(per_thread));
  return text;
}

}  // namespace

void run(const ScaledDotProductAttention& p, const Inputs& in, Outputs& out, const Stream& s) {
  const array& q = in[0];
  const array& k = in[1];
  const array& v = in[2];
  const int dv = v.shape(3);
  if (dv > max_value_features || q.dtype() == float64) {
    on_host(p, in, out);
    return;
  }
  allocate_output(out[0], s);
  if (out[0].size() == 0) {
    return;
  }
  const bool has_mask = p.mask != AttentionMask::none;
  const int mask_kind = p.mask == AttentionMask::none ? 0 : p.mask == AttentionMask::boolean ? 1 : 2;
  const Dtype mask_dtype = has_mask ? in[3].dtype() : q.dtype();
  const int per_thread = (dv + threads - 1) / threads;
  const std::string source = prefix(q.dtype(), mask_dtype, mask_kind, p.causal, p.has_sinks, per_thread) +
                             std::string(kernel_source("attention.cu"));
  const Shape scores{q.shape(0), q.shape(1), q.shape(2), k.shape(2)};
  auto qs = strides_of(q, q.shape());
  auto ks = strides_of(k, k.shape());
  auto vs = strides_of(v, v.shape());
  Strides4 ms{};
  const void* q_ptr = device_pointer(q, s);
  const void* k_ptr = device_pointer(k, s);
  const void* v_ptr = device_pointer(v, s);
  const void* mask_ptr = q_ptr;  // unread without a mask
  if (has_mask) {
    ms = strides_of(in[3], scores);
    mask_ptr = device_pointer(in[3], s);
  }
  const void* sinks_ptr = p.has_sinks ? device_pointer(in[has_mask ? 4 : 3], s) : q_ptr;
  void* out_ptr = device_pointer(out[0], s);
  int lq = q.shape(2);
  int lk = k.shape(2);
  int d = q.shape(3);
  int dv_features = dv;
  int group = q.shape(1) / k.shape(1);
  float scale = p.scale;
  const size_t shared_bytes = sizeof(float) * static_cast<size_t>(d + threads + threads / 32);
  const dim3 grid(static_cast<unsigned>(lq), static_cast<unsigned>(q.shape(1)), static_cast<unsigned>(q.shape(0)));
  launch(kernel(source, "nuvec_attention", s.device.index), grid, dim3(threads), shared_bytes, stream_handle(s), q_ptr,
         k_ptr, v_ptr, mask_ptr, sinks_ptr, out_ptr, qs, ks, vs, ms, lq, lk, d, dv_features, group, scale);
}

}  // namespace nuvec::cuda
