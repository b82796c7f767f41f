#pragma once

// The quantized cache: keys and values kept in nuvec's affine quantized form (uint32 codes with a scale and a bias
// per group of the head dimension) as they arrive, 2-4x smaller than in the model's dtype. Attention runs on that
// form with quantized_matmul (scores as queries x keys^T, outputs as probabilities x values), so the history is never
// expanded to floats.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nuvec/lm/cache/kv_cache.h"

namespace nuvec::lm {

class QuantizedKVCache : public KVCache {
 public:
  /// Groups of `group_size` (32, 64 or 128) along the head dimension, `bits` (2-6 or 8) per value; the buffers grow
  /// by `step` positions at a time. The head dimension must be a multiple of the group size.
  explicit QuantizedKVCache(int group_size = 64, int bits = 8, int step = 256);

  /// Stores the keys and values and returns every one held, dequantized to the keys' dtype (for callers that need
  /// floats; attend does not).
  std::pair<array, array> update_and_fetch(const array& keys, const array& values) override;
  /// Attention over the quantized keys and values: scores and softmax in float32, grouped-query heads sharing
  /// their key/value head, the output in the queries' dtype.
  array attend(const array& queries, const array& keys, const array& values, float scale, const MaskSpec& mask,
               const std::optional<array>& sinks = std::nullopt) override;
  [[nodiscard]] int offset() const override { return offset_; }
  [[nodiscard]] bool is_trimmable() const override { return true; }
  int trim(int n) override;
  /// {keys' codes, scales, biases, values' codes, scales, biases}, each (B, N_kv, offset, ...).
  [[nodiscard]] std::vector<array> state() const override;
  /// {offset, group_size, bits}, as mlx-lm writes them.
  [[nodiscard]] std::vector<int> meta_state() const override { return {offset_, group_size_, bits_}; }
  void set_state(const std::vector<array>& state, const std::vector<int>& meta_state) override;
  [[nodiscard]] std::string type_name() const override { return "QuantizedKVCache"; }

  [[nodiscard]] int group_size() const { return group_size_; }
  [[nodiscard]] int bits() const { return bits_; }

 private:
  /// One quantized tensor (B, N_kv, capacity, ...): codes, scales and biases.
  struct Quantized {
    array codes;
    array scales;
    array biases;
  };

  /// Quantizes keys and values into the buffers after the positions already held.
  void store(const array& keys, const array& values);
  [[nodiscard]] array dequantized(const Quantized& q, Dtype dtype) const;

  int group_size_;
  int bits_;
  int step_;
  int offset_ = 0;
  std::optional<Quantized> keys_;
  std::optional<Quantized> values_;
};

}  // namespace nuvec::lm
