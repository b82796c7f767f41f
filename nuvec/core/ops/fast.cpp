// nuvec::fast: argument checks, the fused nodes, and the composition of each op from plain ops.
//
// Both forms share the checks and the dtype rules (MLX's): the output dtype is x's (promoted with weight and bias
// for the norms) or the promotion of queries, keys and values, and must be floating. Choices where MLX's CPU
// fallback differs or says nothing:
// - the arithmetic runs in float32, or float64 for float64 inputs (MLX computes float64 in float32), and the result
//   is rounded to the output dtype once: the norms apply weight and bias before rounding, and rope computes its
//   rotations in float32 for half inputs, as MLX's fused GPU kernels do;
// - keys and values must have the same sequence length (MLX leaves that to its matmul);
// - a boolean mask replaces a masked score by the lowest finite value, so a query that sees no key averages all
//   values (MLX's CPU behaviour; its GPU gives NaN there). "causal" masks with booleans too, so a query before
//   every key (L_q > L_kv) does the same.

#include "nuvec/core/fast.h"

#include <cmath>
#include <sstream>

#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/output_shapes.h"

namespace nuvec::fast {

using nuvec::detail::make_node;
using nuvec::detail::op_prefix;

namespace {

constexpr const char* sdpa = "scaled_dot_product_attention";

/// The dtype the arithmetic runs in.
Dtype compute_dtype(Dtype out) { return out == float64 ? float64 : float32; }

std::string shape_of(const array& a) { return shape_string(a.shape()); }

void check_norm_param(const array& x, const std::optional<array>& p, const char* op, const char* what) {
  if (!p) {
    return;
  }
  if (p->ndim() != 1) {
    throw_invalid(op_prefix(op) + what + " must have 1 dimension but has " + std::to_string(p->ndim()) +
                  " dimensions (shape " + shape_of(*p) + ").");
  }
  if (p->shape(0) != x.shape(-1)) {
    throw_invalid(op_prefix(op) + what + " must have the same size as the last dimension of x (" +
                  std::to_string(x.shape(-1)) + ") but has " + std::to_string(p->shape(0)) + " elements.");
  }
}

/// Checks a norm's arguments and returns its output dtype.
Dtype check_norm(const array& x, const std::optional<array>& weight, const std::optional<array>& bias,
                 const char* op) {
  if (x.ndim() == 0) {
    throw_invalid(op_prefix(op) + "Input must have at least 1 dimension but got input with 0 dimensions.");
  }
  check_norm_param(x, weight, op, "weight");
  check_norm_param(x, bias, op, "bias");
  Dtype out = x.dtype();
  if (weight) {
    out = promote_types(out, weight->dtype());
  }
  if (bias) {
    out = promote_types(out, bias->dtype());
  }
  if (!is_floating(out)) {
    std::ostringstream msg;
    msg << op_prefix(op) << "Expected a floating point type; received " << out << ".";
    throw_invalid(msg.str());
  }
  return out;
}

/// The checked rope inputs: x, the offset as int32, and the frequencies as float32 when given.
struct RopeArgs {
  array offset;
  std::optional<array> freqs;
  float base;
};

RopeArgs check_rope(const array& x, int dims, std::optional<float> base, const array& offset,
                    const std::optional<array>& freqs, StreamOrDevice s) {
  if (x.ndim() < 3) {
    throw_invalid("[rope] Input must have at least 3 dimensions but got input with " + std::to_string(x.ndim()) +
                  " dimensions (shape " + shape_of(x) + ").");
  }
  if (!is_floating(x.dtype())) {
    std::ostringstream msg;
    msg << "[rope] Input must be a floating type but got " << x.dtype() << ".";
    throw_invalid(msg.str());
  }
  if (offset.ndim() > 1) {
    throw_invalid("[rope] offset must have at most one dimension but has shape " + shape_of(offset) + ".");
  }
  if (offset.size() != 1 && offset.size() != static_cast<size_t>(x.shape(0))) {
    throw_invalid("[rope] offset must be a scalar or vector with " + std::to_string(x.shape(0)) +
                  " elements but has shape " + shape_of(offset) + ".");
  }
  if (!is_integer(offset.dtype())) {
    std::ostringstream msg;
    msg << "[rope] offset must be an integer but got type " << offset.dtype() << ".";
    throw_invalid(msg.str());
  }
  if (dims <= 0 || dims % 2 != 0) {
    throw_invalid("[rope] dims must be positive and even but got " + std::to_string(dims) + ".");
  }
  if (dims > x.shape(-1)) {
    throw_invalid("[rope] dims must not exceed the input's last dimension (" + std::to_string(x.shape(-1)) +
                  ") but got " + std::to_string(dims) + ".");
  }
  if (freqs && base) {
    throw_invalid("[rope] Only one of base or freqs can have a value.");
  }
  if (!freqs && !base) {
    throw_invalid("[rope] Neither base nor freqs has a value.");
  }
  if (freqs && (freqs->ndim() != 1 || freqs->shape(0) != dims / 2)) {
    throw_invalid("[rope] freqs must be one dimensional with size " + std::to_string(dims / 2) + " but got shape " +
                  shape_of(*freqs) + ".");
  }
  if (freqs && !is_floating(freqs->dtype()) && !is_integer(freqs->dtype())) {
    std::ostringstream msg;
    msg << "[rope] freqs must be real numbers but got type " << freqs->dtype() << ".";
    throw_invalid(msg.str());
  }
  RopeArgs args{astype(reshape(offset, {static_cast<int32_t>(offset.size())}, s), int32, s), std::nullopt,
                base.value_or(1.0F)};
  if (freqs) {
    args.freqs = astype(*freqs, float32, s);
  }
  return args;
}

/// The checked attention inputs, converted to the output dtype; the mask broadcast to (B, N_q, L_q, L_kv).
struct AttentionArgs {
  array q;
  array k;
  array v;
  std::optional<array> mask;
  std::optional<array> sinks;
  bool causal;
  Dtype dtype;
};

AttentionArgs check_attention(const array& queries, const array& keys, const array& values,
                              const std::string& mask_mode, const std::optional<array>& mask_arr,
                              const std::optional<array>& sinks, StreamOrDevice s) {
  const std::string tag = op_prefix(sdpa);
  if (queries.ndim() != 4 || keys.ndim() != 4 || values.ndim() != 4) {
    throw_invalid(tag + "queries, keys and values must have 4 dimensions (B, N, L, D); got shapes " +
                  shape_of(queries) + ", " + shape_of(keys) + " and " + shape_of(values) + ".");
  }
  if (mask_mode != "" && mask_mode != "causal" && mask_mode != "array") {
    throw_invalid(tag + "Invalid mask_mode '" + mask_mode + "'. mask_mode must be 'causal', 'array' or ''.");
  }
  const bool causal = mask_mode == "causal";
  if (causal && mask_arr) {
    throw_invalid(tag + "mask_mode 'causal' takes no mask array; got one of shape " + shape_of(*mask_arr) + ".");
  }
  if (keys.shape(0) != queries.shape(0) || values.shape(0) != queries.shape(0)) {
    throw_invalid(tag + "queries, keys and values must have the same batch size; got shapes " + shape_of(queries) +
                  ", " + shape_of(keys) + " and " + shape_of(values) + ".");
  }
  if (queries.shape(-1) != keys.shape(-1)) {
    throw_invalid(tag + "queries and keys must have the same last dimension; got queries " + shape_of(queries) +
                  " and keys " + shape_of(keys) + ".");
  }
  if (keys.shape(1) != values.shape(1) || keys.shape(2) != values.shape(2)) {
    throw_invalid(tag + "keys and values must have the same number of heads and sequence length; got keys " +
                  shape_of(keys) + " and values " + shape_of(values) + ".");
  }
  const int n_q_heads = queries.shape(1);
  const int n_kv_heads = keys.shape(1);
  if (n_kv_heads == 0 ? n_q_heads != 0 : n_q_heads % n_kv_heads != 0) {
    throw_invalid(tag + "n_heads must be a multiple of n_kv_heads, found n_heads " + std::to_string(n_q_heads) +
                  " for n_kv_heads " + std::to_string(n_kv_heads) + ".");
  }
  const Dtype dtype = promote_types(promote_types(queries.dtype(), keys.dtype()), values.dtype());
  if (!is_floating(dtype)) {
    std::ostringstream msg;
    msg << tag << "Expected floating point queries, keys and values; they promote to " << dtype << ".";
    throw_invalid(msg.str());
  }
  AttentionArgs args{astype(queries, dtype, s), astype(keys, dtype, s), astype(values, dtype, s), std::nullopt,
                     std::nullopt, causal, dtype};
  if (mask_arr) {
    const Shape full{queries.shape(0), n_q_heads, queries.shape(2), keys.shape(2)};
    bool fits = mask_arr->ndim() <= 4;
    for (int i = 1; fits && i <= mask_arr->ndim(); ++i) {
      const int m = mask_arr->shape(-i);
      fits = m == 1 || m == full[4 - i];
    }
    if (!fits) {
      throw_invalid(tag + "mask of shape " + shape_of(*mask_arr) + " does not broadcast to (B, N_q, L_q, L_kv) = " +
                    shape_string(full) + ".");
    }
    if (promote_types(mask_arr->dtype(), dtype) != dtype) {
      std::ostringstream msg;
      msg << tag << "Mask type must be bool or promote to the output type " << dtype << "; got "
          << mask_arr->dtype() << ".";
      throw_invalid(msg.str());
    }
    const Dtype mask_dtype = mask_arr->dtype() == bool_ ? bool_ : dtype;
    args.mask = broadcast_to(astype(*mask_arr, mask_dtype, s), full, s);
  }
  if (sinks) {
    if (sinks->ndim() != 1 || sinks->shape(0) != n_q_heads) {
      throw_invalid(tag + "sinks must have shape (" + std::to_string(n_q_heads) + ",), one per query head; got " +
                    shape_of(*sinks) + ".");
    }
    if (promote_types(sinks->dtype(), dtype) != dtype) {
      std::ostringstream msg;
      msg << tag << "Type of sinks must promote to the output type " << dtype << "; got " << sinks->dtype() << ".";
      throw_invalid(msg.str());
    }
    args.sinks = astype(*sinks, dtype, s);
  }
  return args;
}

}  // namespace

// ---------------------------------------------------------------- fused nodes

array rms_norm(const array& x, const std::optional<array>& weight, float eps, StreamOrDevice s) {
  const Dtype out = check_norm(x, weight, std::nullopt, "rms_norm");
  std::vector<array> inputs{astype(x, out, s)};
  if (weight) {
    inputs.push_back(astype(*weight, out, s));
  }
  return make_node(RMSNorm{eps, weight.has_value()}, std::move(inputs), to_stream(s));
}

array layer_norm(const array& x, const std::optional<array>& weight, const std::optional<array>& bias, float eps,
                 StreamOrDevice s) {
  const Dtype out = check_norm(x, weight, bias, "layer_norm");
  std::vector<array> inputs{astype(x, out, s)};
  if (weight) {
    inputs.push_back(astype(*weight, out, s));
  }
  if (bias) {
    inputs.push_back(astype(*bias, out, s));
  }
  return make_node(LayerNorm{eps, weight.has_value(), bias.has_value()}, std::move(inputs), to_stream(s));
}

array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale, const array& offset,
           const std::optional<array>& freqs, StreamOrDevice s) {
  auto args = check_rope(x, dims, base, offset, freqs, s);
  std::vector<array> inputs{x, args.offset};
  if (args.freqs) {
    inputs.push_back(*args.freqs);
  }
  return make_node(RoPE{dims, traditional, args.base, scale, args.freqs.has_value()}, std::move(inputs), to_stream(s));
}

array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale, int offset,
           const std::optional<array>& freqs, StreamOrDevice s) {
  return rope(x, dims, traditional, base, scale, array(offset), freqs, s);
}

array scaled_dot_product_attention(const array& queries, const array& keys, const array& values, const float scale,
                                   const std::string& mask_mode, std::optional<array> mask_arr,
                                   const std::optional<array>& sinks, bool /*force_fused*/, StreamOrDevice s) {
  auto args = check_attention(queries, keys, values, mask_mode, mask_arr, sinks, s);
  AttentionMask mask = AttentionMask::none;
  std::vector<array> inputs{args.q, args.k, args.v};
  if (args.mask) {
    mask = args.mask->dtype() == bool_ ? AttentionMask::boolean : AttentionMask::additive;
    inputs.push_back(*args.mask);
  }
  if (args.sinks) {
    inputs.push_back(*args.sinks);
  }
  return make_node(ScaledDotProductAttention{scale, args.causal, mask, args.sinks.has_value()}, std::move(inputs),
                   to_stream(s));
}

// ---------------------------------------------------------------- compositions

namespace detail {

array rms_norm_composed(const array& x, const std::optional<array>& weight, float eps, StreamOrDevice s) {
  const Dtype out = check_norm(x, weight, std::nullopt, "rms_norm");
  const Dtype acc = compute_dtype(out);
  auto xf = astype(x, acc, s);
  auto y = multiply(xf, rsqrt(add(mean(square(xf, s), -1, true, s), array(eps, acc), s), s), s);
  if (weight) {
    y = multiply(y, astype(*weight, acc, s), s);
  }
  return astype(y, out, s);
}

array layer_norm_composed(const array& x, const std::optional<array>& weight, const std::optional<array>& bias,
                          float eps, StreamOrDevice s) {
  const Dtype out = check_norm(x, weight, bias, "layer_norm");
  const Dtype acc = compute_dtype(out);
  auto xf = astype(x, acc, s);
  auto centered = subtract(xf, mean(xf, -1, true, s), s);
  auto variance = mean(square(centered, s), -1, true, s);
  auto y = multiply(centered, rsqrt(add(variance, array(eps, acc), s), s), s);
  if (weight) {
    y = multiply(y, astype(*weight, acc, s), s);
  }
  if (bias) {
    y = add(y, astype(*bias, acc, s), s);
  }
  return astype(y, out, s);
}

array rope_composed(const array& x, int dims, bool traditional, std::optional<float> base, float scale,
                    const array& offset, const std::optional<array>& freqs, StreamOrDevice s) {
  auto args = check_rope(x, dims, base, offset, freqs, s);
  const Dtype acc = compute_dtype(x.dtype());
  // (B, M, L, D): the axes between the first and the last two fold into M.
  const Shape shape = x.shape();
  const int B = shape[0];
  const auto M = static_cast<int>(shape_size(Shape(shape.begin() + 1, shape.end() - 2)));
  const int L = shape[shape.size() - 2];
  auto x4 = reshape(x, {B, M, L, shape.back()}, s);
  const int half = dims / 2;

  // Angles (B or 1, 1, L, half): (offset + position) * scale * inverse frequency, in float32.
  auto positions = add(arange(0.0, static_cast<double>(L), float32, s), reshape(args.offset, {-1, 1, 1}, s), s);
  positions = multiply(positions, array(scale, float32), s);
  auto inv_freqs = args.freqs ? reciprocal(*args.freqs, s)
                              : exp(multiply(arange(0.0, static_cast<double>(-half), -1.0, float32, s),
                                             array(std::log(args.base) / static_cast<float>(half), float32), s),
                                    s);
  // Positions and frequencies are float32 values; their product and its cos and sin use the compute dtype.
  auto theta = multiply(astype(expand_dims(positions, -1, s), acc, s), astype(inv_freqs, acc, s), s);
  auto cos_t = cos(theta, s);
  auto sin_t = sin(theta, s);

  auto xf = astype(x4, acc, s);
  array x1 = traditional ? slice(xf, {0, 0, 0, 0}, {B, M, L, dims}, {1, 1, 1, 2}, s)
                         : slice(xf, {0, 0, 0, 0}, {B, M, L, half}, s);
  array x2 = traditional ? slice(xf, {0, 0, 0, 1}, {B, M, L, dims}, {1, 1, 1, 2}, s)
                         : slice(xf, {0, 0, 0, half}, {B, M, L, dims}, s);
  auto y1 = subtract(multiply(x1, cos_t, s), multiply(x2, sin_t, s), s);
  auto y2 = add(multiply(x1, sin_t, s), multiply(x2, cos_t, s), s);
  auto rotated = traditional ? reshape(stack({y1, y2}, -1, s), {B, M, L, dims}, s) : concatenate({y1, y2}, -1, s);
  if (dims < x4.shape(3)) {
    rotated = concatenate({rotated, slice(xf, {0, 0, 0, dims}, x4.shape(), s)}, -1, s);
  }
  return reshape(astype(rotated, x.dtype(), s), shape, s);
}

array rope_composed(const array& x, int dims, bool traditional, std::optional<float> base, float scale, int offset,
                    const std::optional<array>& freqs, StreamOrDevice s) {
  return rope_composed(x, dims, traditional, base, scale, array(offset), freqs, s);
}

array scaled_dot_product_attention_composed(const array& queries, const array& keys, const array& values,
                                            const float scale, const std::string& mask_mode,
                                            std::optional<array> mask_arr, const std::optional<array>& sinks,
                                            StreamOrDevice s) {
  auto args = check_attention(queries, keys, values, mask_mode, mask_arr, sinks, s);
  const int n_q_heads = args.q.shape(1);
  const int n_kv_heads = args.k.shape(1);
  const int repeats = n_kv_heads == 0 ? 1 : n_q_heads / n_kv_heads;
  auto q = multiply(args.q, array(scale, args.dtype), s);
  auto k = args.k;
  auto v = args.v;
  // Grouped heads: (B, N_kv, repeats, L, D) queries against (B, N_kv, 1, L, D) keys and values.
  if (repeats > 1) {
    q = unflatten(q, 1, {n_kv_heads, repeats}, s);
    k = expand_dims(k, 2, s);
    v = expand_dims(v, 2, s);
  }
  auto scores = matmul(q, swapaxes(k, -1, -2, s), s);
  std::optional<array> mask = args.mask;
  if (args.causal) {
    const int q_len = q.shape(-2);
    const int k_len = k.shape(-2);
    auto q_idx = expand_dims(arange(k_len - q_len, k_len, s), 1, s);
    mask = greater_equal(q_idx, expand_dims(arange(0, k_len, s), 0, s), s);
  } else if (mask && repeats > 1) {
    mask = unflatten(*mask, 1, {n_kv_heads, repeats}, s);
  }
  if (mask) {
    scores = mask->dtype() == bool_ ? where(*mask, scores, array(finfo(scores.dtype()).min, scores.dtype()), s)
                                    : add(scores, *mask, s);
  }
  if (args.sinks) {
    // One extra logit per head in front of the keys, dropped after the softmax.
    auto sink = expand_dims(*args.sinks, {0, 2, 3}, s);
    if (repeats > 1) {
      sink = unflatten(sink, 1, {n_kv_heads, repeats}, s);
    }
    Shape column = scores.shape();
    column.back() = 1;
    scores = concatenate({broadcast_to(sink, column, s), scores}, -1, s);
  }
  scores = softmax(scores, std::vector<int>{-1}, true, s);
  if (args.sinks) {
    Shape start(scores.ndim(), 0);
    start.back() = 1;
    scores = slice(scores, start, scores.shape(), s);
  }
  auto out = matmul(astype(scores, args.dtype, s), v, s);
  return repeats > 1 ? flatten(out, 1, 2, s) : out;
}

}  // namespace detail

}  // namespace nuvec::fast
