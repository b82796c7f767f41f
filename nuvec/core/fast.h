#pragma once

// Fused operations (MLX's mlx/fast.h): each builds one node with its own CPU kernel, and each has a composition
// from plain ops in nuvec::fast::detail with the same arguments, which the tests compare against and the
// transforms differentiate.

#include <optional>
#include <string>

#include "nuvec/core/array.h"

namespace nuvec::fast {

/// x * rsqrt(mean(x^2, -1) + eps) * weight over the last axis, computed in float32 at least.
array rms_norm(const array& x, const std::optional<array>& weight, float eps, StreamOrDevice s = {});

/// (x - mean) * rsqrt(var + eps) * weight + bias over the last axis, computed in float32 at least.
array layer_norm(const array& x, const std::optional<array>& weight, const std::optional<array>& bias, float eps,
                 StreamOrDevice s = {});

/// Rotary position embedding of the first `dims` features of x (..., L, D), positions offset + [0, L) times
/// `scale`, frequencies base^(-2i / dims) or 1 / freqs; traditional rotates adjacent pairs.
array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale, int offset,
           const std::optional<array>& freqs = std::nullopt, StreamOrDevice s = {});
/// As above with an integer offset array: a scalar, or one offset per batch entry (x.shape(0) elements).
array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale, const array& offset,
           const std::optional<array>& freqs = std::nullopt, StreamOrDevice s = {});

/// softmax(scale * queries @ keys^T + mask) @ values for (B, N_q, L_q, D) queries and (B, N_kv, L_kv, D) keys and
/// values (N_q a multiple of N_kv); mask_mode "" or "array" with mask_arr (bool selects, others add) or "causal";
/// sinks (N_q) add one logit per head to each softmax. The softmax runs in float32 at least.
array scaled_dot_product_attention(const array& queries, const array& keys, const array& values, const float scale,
                                   const std::string& mask_mode = "", std::optional<array> mask_arr = {},
                                   const std::optional<array>& sinks = {}, StreamOrDevice s = {});

namespace detail {

// The compositions of the fused ops from plain ops: same arguments, same checks, same results up to rounding.
array rms_norm_composed(const array& x, const std::optional<array>& weight, float eps, StreamOrDevice s = {});
array layer_norm_composed(const array& x, const std::optional<array>& weight, const std::optional<array>& bias,
                          float eps, StreamOrDevice s = {});
array rope_composed(const array& x, int dims, bool traditional, std::optional<float> base, float scale, int offset,
                    const std::optional<array>& freqs = std::nullopt, StreamOrDevice s = {});
array rope_composed(const array& x, int dims, bool traditional, std::optional<float> base, float scale,
                    const array& offset, const std::optional<array>& freqs = std::nullopt, StreamOrDevice s = {});
array scaled_dot_product_attention_composed(const array& queries, const array& keys, const array& values,
                                            const float scale, const std::string& mask_mode = "",
                                            std::optional<array> mask_arr = {},
                                            const std::optional<array>& sinks = {}, StreamOrDevice s = {});

}  // namespace detail

}  // namespace nuvec::fast
