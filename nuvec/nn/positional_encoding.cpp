#include "nuvec/nn/positional_encoding.h"

#include <cmath>
#include <vector>

#include "nuvec/core/fast.h"
#include "nuvec/core/ops.h"

namespace nuvec::nn {

RoPE::RoPE(int dims, bool traditional, float base, float scale)
    : dims_(dims), traditional_(traditional), base_(base), scale_(scale) {
  if (dims < 2 || dims % 2 != 0) {
    throw_invalid("[RoPE] dims must be a positive even number; given " + std::to_string(dims) + ".");
  }
}

array RoPE::forward(const array& x, int offset) {
  check_input(x, 3, std::nullopt);
  if (x.shape(-1) < dims_) {
    fail("expected input of shape (..., L, D) with D >= " + std::to_string(dims_) + "; given shape " +
         shape_string(x.shape()) + ".");
  }
  return fast::rope(x, dims_, traditional_, base_, scale_, offset);
}

namespace {

/// 2^(-8 h / n) for h = 1..n when n is a power of two; else the slopes of the power of two below n, then every
/// other slope of twice that power.
std::vector<float> alibi_slopes(int n) {
  const int power = 1 << static_cast<int>(std::floor(std::log2(n)));
  std::vector<float> slopes;
  for (int h = 1; h <= power; ++h) {
    slopes.push_back(static_cast<float>(std::exp2(-8.0 * h / power)));
  }
  for (int h = 1; static_cast<int>(slopes.size()) < n; h += 2) {
    slopes.push_back(static_cast<float>(std::exp2(-8.0 * h / (2 * power))));
  }
  return slopes;
}

}  // namespace

array ALiBi::create_alibi_slope(int num_heads, Dtype dtype) {
  if (num_heads < 1) {
    throw_invalid("[ALiBi] num_heads must be positive; given " + std::to_string(num_heads) + ".");
  }
  auto slopes = alibi_slopes(num_heads);
  return astype(array(slopes.begin(), {num_heads, 1, 1}, float32), dtype);
}

array ALiBi::create_alibi_matrix(int q_sequence_length, int k_sequence_length, int num_heads, int offset, Dtype dtype) {
  auto q = arange(offset, q_sequence_length);
  auto k = arange(0, k_sequence_length);
  auto distance = expand_dims(negative(abs(expand_dims(q, 1) - expand_dims(k, 0))), {0, 1});
  return astype(distance * create_alibi_slope(num_heads, dtype), dtype);
}

array ALiBi::forward(const array& attention_scores, int offset, const std::optional<array>& mask) {
  if (attention_scores.ndim() != 4) {
    fail("expected attention scores of shape (B, H, L_q, L_k); given shape " + shape_string(attention_scores.shape()) +
         ".");
  }
  auto bias = create_alibi_matrix(attention_scores.shape(2) + offset, attention_scores.shape(3),
                                  attention_scores.shape(1), offset, attention_scores.dtype());
  auto out = attention_scores + bias;
  return mask ? out + *mask : out;
}

SinusoidalPositionalEncoding::SinusoidalPositionalEncoding(int dims, float min_freq, float max_freq,
                                                           std::optional<float> scale, bool cos_first, bool full_turns)
    : sigmas_(array(0.0F)), scale_(scale.value_or(static_cast<float>(std::sqrt(2.0 / dims)))), cos_first_(cos_first) {
  if (dims < 4 || dims % 2 != 0) {
    throw_invalid("[SinusoidalPositionalEncoding] dims must be an even number >= 4; given " + std::to_string(dims) +
                  ".");
  }
  const int half = dims / 2;
  auto one_zero = array(1.0F) - arange(0, half, float32) / array(static_cast<float>(half - 1));
  const float lo = std::log(min_freq);
  const float hi = std::log(max_freq);
  sigmas_ = exp(one_zero * array(hi - lo) + array(lo));
  if (full_turns) {
    sigmas_ = sigmas_ * array(static_cast<float>(2.0 * M_PI));
  }
  sigmas_.eval();
}

array SinusoidalPositionalEncoding::forward(const array& x) {
  auto y = expand_dims(x, -1) * sigmas_;
  auto s = sin(y);
  auto c = cos(y);
  auto out = cos_first_ ? concatenate({c, s}, -1) : concatenate({s, c}, -1);
  return out * array(scale_);
}

}  // namespace nuvec::nn
