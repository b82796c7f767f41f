// Rules of the fused ops of nuvec::fast. Their vjps are fused primitives too (RMSNormVJP, LayerNormVJP,
// ScaledDotProductAttentionVJP: one kernel each instead of the backward pass of a composition); their jvps and
// vmaps, and every rule of the vjp primitives themselves (second derivatives), transform the compositions of plain
// ops the primitives equal.

#include <algorithm>

#include "nuvec/core/fast.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/transforms/rules.h"

namespace nuvec::detail {

namespace {

Function rms_norm_function(const RMSNorm& p) {
  return [p](const std::vector<array>& in) {
    return std::vector<array>{
        fast::detail::rms_norm_composed(in[0], p.has_weight ? std::optional<array>(in[1]) : std::nullopt, p.eps)};
  };
}

Function layer_norm_function(const LayerNorm& p) {
  return [p](const std::vector<array>& in) {
    size_t next = 1;
    std::optional<array> weight;
    std::optional<array> bias;
    if (p.has_weight) {
      weight = in[next++];
    }
    if (p.has_bias) {
      bias = in[next];
    }
    return std::vector<array>{fast::detail::layer_norm_composed(in[0], weight, bias, p.eps)};
  };
}

Function rope_function(const RoPE& p) {
  return [p](const std::vector<array>& in) {
    std::optional<array> freqs = p.has_freqs ? std::optional<array>(in[2]) : std::nullopt;
    std::optional<float> base = p.has_freqs ? std::nullopt : std::optional<float>(p.base);
    return std::vector<array>{fast::detail::rope_composed(in[0], p.dims, p.traditional, base, p.scale, in[1], freqs)};
  };
}

Function attention_function(const ScaledDotProductAttention& p) {
  return [p](const std::vector<array>& in) {
    size_t next = 3;
    std::optional<array> mask;
    std::optional<array> sinks;
    if (p.mask != AttentionMask::none) {
      mask = in[next++];
    }
    if (p.has_sinks) {
      sinks = in[next];
    }
    std::string mode = p.causal ? "causal" : (mask ? "array" : "");
    return std::vector<array>{
        fast::detail::scaled_dot_product_attention_composed(in[0], in[1], in[2], p.scale, mode, mask, sinks)};
  };
}

/// The vjp of `forward` as a function of the forward's inputs followed by the output's cotangent, differentiated
/// with respect to the inputs whose indices are listed (the others, such as a mask, are constants).
Function vjp_function(Function forward, std::vector<size_t> differentiable) {
  return [forward = std::move(forward), differentiable = std::move(differentiable)](const std::vector<array>& in) {
    std::vector<array> primals;
    for (size_t i : differentiable) {
      primals.push_back(in[i]);
    }
    auto with_constants = [&](const std::vector<array>& xs) {
      std::vector<array> all(in.begin(), in.end() - 1);
      for (size_t k = 0; k < differentiable.size(); ++k) {
        all[differentiable[k]] = xs[k];
      }
      return forward(all);
    };
    return vjp(with_constants, primals, {in.back()}).second;
  };
}

std::vector<size_t> first_n(size_t n) {
  std::vector<size_t> indices(n);
  for (size_t i = 0; i < n; ++i) {
    indices[i] = i;
  }
  return indices;
}

/// The inputs of a vjp primitive that get cotangents: all of the forward's but an attention mask.
std::vector<size_t> attention_differentiable(bool has_mask, bool has_sinks) {
  std::vector<size_t> indices{0, 1, 2};
  if (has_sinks) {
    indices.push_back(has_mask ? 4 : 3);
  }
  return indices;
}

/// Applies a vjp primitive to the forward's inputs and the cotangent; returns the gradients the argnums ask for
/// (`differentiable[i]` is the forward input whose gradient is the primitive's output i).
std::vector<array> fused_vjp(Primitive vjp_primitive, const VjpArgs& args, const std::vector<size_t>& differentiable) {
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (size_t i : differentiable) {
    shapes.push_back(args.primals[i].shape());
    dtypes.push_back(args.primals[i].dtype());
  }
  std::vector<array> inputs = args.primals;
  inputs.push_back(args.cotangents[0]);
  auto stream = args.primals[0].stream();
  auto grads = array::make_arrays(std::move(shapes), dtypes, std::move(vjp_primitive), std::move(inputs), stream);
  std::vector<array> picked;
  for (int a : args.argnums) {
    auto at = std::find(differentiable.begin(), differentiable.end(), static_cast<size_t>(a));
    picked.push_back(grads[static_cast<size_t>(at - differentiable.begin())]);
  }
  return picked;
}

bool only_first_mapped(const VmapArgs& args) {
  for (size_t i = 1; i < args.axes.size(); ++i) {
    if (args.axes[i] >= 0) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::vector<array> vjp_of(const RMSNorm& p, const VjpArgs& args) {
  return fused_vjp(RMSNormVJP{p.eps, p.has_weight}, args, first_n(args.primals.size()));
}
std::vector<array> jvp_of(const RMSNorm& p, const JvpArgs& args) { return jvp_through(rms_norm_function(p), args); }
Batched vmap_of(const RMSNorm& p, const VmapArgs& args) {
  if (only_first_mapped(args)) {
    auto inputs = args.inputs;
    inputs[0] = moved_front(args, 0);
    return reapply_front(p, std::move(inputs), args);
  }
  return vmap_through(rms_norm_function(p), args);
}

std::vector<array> vjp_of(const LayerNorm& p, const VjpArgs& args) {
  return fused_vjp(LayerNormVJP{p.eps, p.has_weight, p.has_bias}, args, first_n(args.primals.size()));
}
std::vector<array> jvp_of(const LayerNorm& p, const JvpArgs& args) {
  return jvp_through(layer_norm_function(p), args);
}
Batched vmap_of(const LayerNorm& p, const VmapArgs& args) {
  if (only_first_mapped(args)) {
    auto inputs = args.inputs;
    inputs[0] = moved_front(args, 0);
    return reapply_front(p, std::move(inputs), args);
  }
  return vmap_through(layer_norm_function(p), args);
}

std::vector<array> vjp_of(const RoPE& p, const VjpArgs& args) { return vjp_through(rope_function(p), args); }
std::vector<array> jvp_of(const RoPE& p, const JvpArgs& args) { return jvp_through(rope_function(p), args); }
Batched vmap_of(const RoPE& p, const VmapArgs& args) { return vmap_through(rope_function(p), args); }

std::vector<array> vjp_of(const ScaledDotProductAttention& p, const VjpArgs& args) {
  const bool has_mask = p.mask != AttentionMask::none;
  // The fused kernel gives no mask cotangent; an additive mask being differentiated takes the composition.
  if (has_mask && std::find(args.argnums.begin(), args.argnums.end(), 3) != args.argnums.end()) {
    return vjp_through(attention_function(p), args);
  }
  return fused_vjp(ScaledDotProductAttentionVJP{p.scale, p.causal, p.mask, p.has_sinks}, args,
                   attention_differentiable(has_mask, p.has_sinks));
}
std::vector<array> jvp_of(const ScaledDotProductAttention& p, const JvpArgs& args) {
  return jvp_through(attention_function(p), args);
}
Batched vmap_of(const ScaledDotProductAttention& p, const VmapArgs& args) {
  return vmap_through(attention_function(p), args);
}

// ---- The vjp primitives: every rule transforms the vjp of the composition.

namespace {

Function rms_norm_vjp_function(const RMSNormVJP& p) {
  return vjp_function(rms_norm_function(RMSNorm{p.eps, p.has_weight}), first_n(p.has_weight ? 2 : 1));
}

Function layer_norm_vjp_function(const LayerNormVJP& p) {
  return vjp_function(layer_norm_function(LayerNorm{p.eps, p.has_weight, p.has_bias}),
                      first_n(1 + (p.has_weight ? 1 : 0) + (p.has_bias ? 1 : 0)));
}

Function attention_vjp_function(const ScaledDotProductAttentionVJP& p) {
  return vjp_function(attention_function(ScaledDotProductAttention{p.scale, p.causal, p.mask, p.has_sinks}),
                      attention_differentiable(p.mask != AttentionMask::none, p.has_sinks));
}

}  // namespace

std::vector<array> vjp_of(const RMSNormVJP& p, const VjpArgs& args) {
  return vjp_through(rms_norm_vjp_function(p), args);
}
std::vector<array> jvp_of(const RMSNormVJP& p, const JvpArgs& args) {
  return jvp_through(rms_norm_vjp_function(p), args);
}
Batched vmap_of(const RMSNormVJP& p, const VmapArgs& args) { return vmap_through(rms_norm_vjp_function(p), args); }

std::vector<array> vjp_of(const LayerNormVJP& p, const VjpArgs& args) {
  return vjp_through(layer_norm_vjp_function(p), args);
}
std::vector<array> jvp_of(const LayerNormVJP& p, const JvpArgs& args) {
  return jvp_through(layer_norm_vjp_function(p), args);
}
Batched vmap_of(const LayerNormVJP& p, const VmapArgs& args) {
  return vmap_through(layer_norm_vjp_function(p), args);
}

std::vector<array> vjp_of(const ScaledDotProductAttentionVJP& p, const VjpArgs& args) {
  return vjp_through(attention_vjp_function(p), args);
}
std::vector<array> jvp_of(const ScaledDotProductAttentionVJP& p, const JvpArgs& args) {
  return jvp_through(attention_vjp_function(p), args);
}
Batched vmap_of(const ScaledDotProductAttentionVJP& p, const VmapArgs& args) {
  return vmap_through(attention_vjp_function(p), args);
}

}  // namespace nuvec::detail
