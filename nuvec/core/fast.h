#pragma once

// Fused operations (MLX's mlx/fast.h): each builds one node with its own CPU kernel, and each has a composition
// from plain ops in nuvec::fast::detail with the same arguments, which the tests compare against and the
// transforms differentiate. Arguments are checked when the op is called; a bad one throws nuvec::error (an
// std::invalid_argument) naming the op.

#include <optional>
#include <string>

#include "nuvec/core/array.h"

namespace nuvec::fast {

/// x * rsqrt(mean(x^2, -1) + eps) * weight over the last axis, computed in float32 at least (float64 stays
/// float64); no weight means a weight of ones. The result has the promotion of x and weight, which must be floating.
/// Throws for a 0-d x, or a weight that is not 1-d with x.shape(-1) elements.
array rms_norm(const array& x, const std::optional<array>& weight, float eps, StreamOrDevice s = {});

/// (x - mean) * rsqrt(var + eps) * weight + bias over the last axis (biased variance), computed in float32 at least;
/// weight and bias are optional. The result has the promotion of x, weight and bias, which must be floating. Throws
/// as rms_norm, for weight and for bias.
array layer_norm(const array& x, const std::optional<array>& weight, const std::optional<array>& bias, float eps,
                 StreamOrDevice s = {});

/// Rotary position embedding of the first `dims` features of x (B, ..., L, D); the other features pass through and
/// the result keeps x's dtype. Feature pair i turns by (offset + position) * scale * base^(-2i / dims), or by
/// (offset + position) * scale / freqs[i] when freqs (dims / 2 values) is given instead of base. traditional
/// rotates adjacent pairs (2i, 2i + 1), otherwise the halves (i, i + dims / 2). Throws for x not floating or under
/// 3-d, dims odd, non-positive or above D, and for both or neither of base and freqs.
array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale, int offset,
           const std::optional<array>& freqs = std::nullopt, StreamOrDevice s = {});
/// As above with an integer offset array: one value, or one offset per batch entry (x.shape(0) elements, at most
/// 1-d); other shapes and non-integer dtypes throw.
array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale, const array& offset,
           const std::optional<array>& freqs = std::nullopt, StreamOrDevice s = {});

/// softmax(scale * queries @ keys^T + mask) @ values: queries (B, N_q, L_q, D), keys (B, N_kv, L_kv, D) and values
/// (B, N_kv, L_kv, D_v) give (B, N_q, L_q, D_v); N_q is a multiple of N_kv (grouped heads). mask_mode "" or "array"
/// applies mask_arr when given (broadcast to (B, N_q, L_q, L_kv); bool keeps the true scores, other dtypes add);
/// "causal" lets query i see keys up to i + L_kv - L_q. A query that sees no key averages all values. sinks (N_q)
/// add one logit per head to each softmax. The result has the inputs' promoted (floating) dtype; the softmax runs in
/// float32 at least. Throws for inputs not 4-d, sizes that disagree, another mask_mode, a mask_arr with "causal",
/// or a mask or sinks that does not fit. `force_fused` asks for the fused kernel, which nuvec always has (MLX throws
/// where its backend has none).
array scaled_dot_product_attention(const array& queries, const array& keys, const array& values, const float scale,
                                   const std::string& mask_mode = "", std::optional<array> mask_arr = {},
                                   const std::optional<array>& sinks = {}, bool force_fused = false,
                                   StreamOrDevice s = {});

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
