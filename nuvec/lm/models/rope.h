#pragma once

// Rotary position embeddings as Hugging Face's config.json describes them: rope_theta, the rotated fraction of each
// head, and rope_scaling's rope_type: default, linear, dynamic (NTK), llama3, yarn and longrope (su). Each
// computes frequencies for fast::rope; dynamic and longrope change them with the sequence's length, as
// transformers does.

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "nuvec/core/array.h"
#include "nuvec/lm/cache/kv_cache.h"

namespace nuvec::lm {

/// The frequencies fast::rope takes: a base or explicit periods (1 / inverse frequency), the factor positions are
/// multiplied by, and a factor on the rotated features (yarn's and longrope's attention scaling).
struct RopeFrequencies {
  std::optional<float> base;
  std::optional<array> periods;
  float position_scale = 1.0F;
  float magnitude = 1.0F;
};

class RoPE {
 public:
  /// Frequencies that depend on the length of the sequence so far (positions covered, this call's included).
  using Schedule = std::function<RopeFrequencies(int total_length)>;

  RoPE(int dims, bool traditional, RopeFrequencies frequencies);
  RoPE(int dims, bool traditional, Schedule schedule);

  /// Rotates the first dims() features of x (B, N, L, D) at positions offset + [0, L).
  [[nodiscard]] array operator()(const array& x, int offset) const;
  /// As above with one offset per sequence (B,), for batches whose sequences sit at different positions.
  [[nodiscard]] array operator()(const array& x, const array& offsets) const;
  /// At the positions that follow what `cache` holds (per sequence when it has batch offsets); 0 without a cache.
  [[nodiscard]] array operator()(const array& x, const KVCache* cache) const;
  [[nodiscard]] int dims() const { return dims_; }

 private:
  [[nodiscard]] array rotate(const array& x, const array& offsets, int total_length) const;

  int dims_;
  bool traditional_;
  std::optional<RopeFrequencies> fixed_;
  Schedule schedule_;
};

/// The RoPE for `dims` rotated features with base `theta` and config.json's rope_scaling (null: plain RoPE).
/// Throws for an unknown rope_type, naming the supported ones, and for missing scaling fields.
std::shared_ptr<const RoPE> make_rope(int dims, float theta, const nlohmann::json& rope_scaling,
                                      int max_position_embeddings, bool traditional = false);

}  // namespace nuvec::lm
