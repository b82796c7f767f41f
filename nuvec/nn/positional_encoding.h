#pragma once

// Position encodings: rotary (RoPE, fast::rope), ALiBi attention biases and sinusoidal encodings (mlx.nn's
// definitions).

#include <optional>
#include <string>

#include "nuvec/nn/module.h"

namespace nuvec::nn {

/// Rotates the first `dims` features of (..., L, D) by position-dependent angles, positions offset + [0, L) times
/// scale, frequencies base^(-2i / dims); traditional rotates adjacent pairs (see fast::rope). dims must be even and
/// positive, else the constructor throws.
class RoPE : public UnaryModule {
 public:
  explicit RoPE(int dims, bool traditional = false, float base = 10000.0F, float scale = 1.0F);
  [[nodiscard]] std::string type_name() const override { return "RoPE"; }
  /// forward(x, 0).
  array forward(const array& x) override { return forward(x, 0); }
  /// The rotated x, positions starting at `offset` (a KV cache's length). Throws for a non-floating x, D < dims, or
  /// fewer than 3 axes (fast::rope's rule, which MLX's RoPE inherits by calling it).
  array forward(const array& x, int offset);

 private:
  int dims_;
  bool traditional_;
  float base_;
  float scale_;
};

/// Attention with linear biases, as MLX: adds -slope_h * |i + offset - j| to the scores (B, H, L_q, L_k) of head h.
/// For H a power of two the slopes are 2^(-8 h / H), h = 1..H; otherwise those of the power of two P below H,
/// then every other slope of 2P (Press et al.).
class ALiBi : public Module {
 public:
  [[nodiscard]] std::string type_name() const override { return "ALiBi"; }
  /// The (1, H, L_q, L_k) bias matrix for query positions [offset, q_sequence_length), as MLX: the first argument
  /// is the end position.
  static array create_alibi_matrix(int q_sequence_length, int k_sequence_length, int num_heads, int offset = 0,
                                   Dtype dtype = float32);
  /// The (H, 1, 1) slopes in `dtype`.
  static array create_alibi_slope(int num_heads, Dtype dtype = float32);
  /// scores + the bias in the scores' dtype (+ mask when given); scores that are not 4-d throw.
  array forward(const array& attention_scores, int offset = 0, const std::optional<array>& mask = std::nullopt);
  /// forward(attention_scores, offset, mask).
  array operator()(const array& attention_scores, int offset = 0, const std::optional<array>& mask = std::nullopt) {
    return forward(attention_scores, offset, mask);
  }
};

/// Maps each value v of x to dims features scale * [sin(v * f_i), cos(v * f_i)] (cos first when cos_first), the
/// dims / 2 frequencies f_i spaced geometrically from max_freq down to min_freq (times 2 pi when full_turns); scale
/// defaults to sqrt(2 / dims). dims must be even and >= 4 (MLX also takes 2), else the constructor throws.
class SinusoidalPositionalEncoding : public UnaryModule {
 public:
  explicit SinusoidalPositionalEncoding(int dims, float min_freq = 0.0001F, float max_freq = 1.0F,
                                        std::optional<float> scale = std::nullopt, bool cos_first = false,
                                        bool full_turns = false);
  [[nodiscard]] std::string type_name() const override { return "SinusoidalPositionalEncoding"; }
  /// x.shape + (dims).
  array forward(const array& x) override;

 private:
  array sigmas_;
  float scale_;
  bool cos_first_;
};

}  // namespace nuvec::nn
