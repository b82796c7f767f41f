#pragma once

// Position encodings: rotary (RoPE, fast::rope), ALiBi attention biases and sinusoidal encodings (mlx.nn's
// definitions).

#include <optional>
#include <string>

#include "nuvec/nn/module.h"

namespace nuvec::nn {

/// Rotates the first `dims` features of (..., L, D) by position-dependent angles, positions offset + [0, L).
class RoPE : public UnaryModule {
 public:
  explicit RoPE(int dims, bool traditional = false, float base = 10000.0F, float scale = 1.0F);
  [[nodiscard]] std::string type_name() const override { return "RoPE"; }
  array forward(const array& x) override { return forward(x, 0); }
  array forward(const array& x, int offset);

 private:
  int dims_;
  bool traditional_;
  float base_;
  float scale_;
};

/// Attention with linear biases: adds -slope_h * |i + offset - j| to the scores (B, H, L_q, L_k) of head h, with
/// slopes 2^(-8 h / H) for h = 1..H.
class ALiBi : public Module {
 public:
  [[nodiscard]] std::string type_name() const override { return "ALiBi"; }
  /// The (1, H, L_q, L_k) bias matrix.
  static array create_alibi_matrix(int q_sequence_length, int k_sequence_length, int num_heads, int offset = 0,
                                   Dtype dtype = float32);
  /// scores + the bias (+ mask when given).
  array forward(const array& attention_scores, int offset = 0, const std::optional<array>& mask = std::nullopt);
  array operator()(const array& attention_scores, int offset = 0, const std::optional<array>& mask = std::nullopt) {
    return forward(attention_scores, offset, mask);
  }
};

/// Maps each value v of x to dims features scale * [sin(v * f_i), cos(v * f_i)] (cos first when cos_first), the
/// frequencies f_i spaced geometrically from max_freq down to min_freq (times 2 pi when full_turns); scale defaults
/// to sqrt(2 / dims).
class SinusoidalPositionalEncoding : public UnaryModule {
 public:
  explicit SinusoidalPositionalEncoding(int dims, float min_freq = 0.0001F, float max_freq = 1.0F,
                                        std::optional<float> scale = std::nullopt, bool cos_first = false,
                                        bool full_turns = false);
  [[nodiscard]] std::string type_name() const override { return "SinusoidalPositionalEncoding"; }
  array forward(const array& x) override;

 private:
  array sigmas_;
  float scale_;
  bool cos_first_;
};

}  // namespace nuvec::nn
