#pragma once

// The KV cache of a batch of sequences of different lengths: the sequences are left-padded to a common length, so
// the newest position of every sequence sits in the same column and one decoding step writes one column for all of
// them. Each sequence keeps its own RoPE offset (its length without the padding) and the masks hide the padding.
// A batch generator prefills groups of prompts in one; sequences leave such a group (filter) when cancelled.

#include <utility>
#include <vector>

#include "nuvec/lm/cache/kv_cache.h"
#include "nuvec/lm/models/language_model.h"

namespace nuvec::lm {

class BatchKVCache : public KVCache {
 public:
  /// A cache for sequences whose inputs start with left_padding[b] padding positions each (one entry per sequence).
  explicit BatchKVCache(std::vector<int> left_padding, int step = 256);

  std::pair<array, array> update_and_fetch(const array& keys, const array& values) override;
  /// A (B, 1, L, L_kv) mask: causal, limited to `window` when given, with each sequence's padding hidden.
  [[nodiscard]] MaskSpec make_mask(int length, std::optional<int> window = std::nullopt) const override;
  /// The columns stored so far, padding included.
  [[nodiscard]] int offset() const override { return columns_; }
  /// Each sequence's own position: the columns stored less its padding.
  [[nodiscard]] std::optional<array> batch_offsets() const override;
  [[nodiscard]] bool is_trimmable() const override { return true; }
  int trim(int n) override;
  /// Keys and values (B, N_kv, L_kv, D); the meta state is the left padding of each sequence.
  [[nodiscard]] std::vector<array> state() const override;
  [[nodiscard]] std::vector<int> meta_state() const override { return left_padding_; }
  void set_state(const std::vector<array>& state, const std::vector<int>& meta_state) override;
  [[nodiscard]] std::string type_name() const override { return "BatchKVCache"; }

  [[nodiscard]] int batch_size() const { return static_cast<int>(left_padding_.size()); }
  [[nodiscard]] const std::vector<int>& left_padding() const { return left_padding_; }
  /// Keeps the sequences at `indices`, in that order, and drops the padding columns all of them share.
  void filter(const std::vector<int>& indices);

 private:
  /// keys_ and values_ cut to the columns in use.
  [[nodiscard]] std::pair<array, array> used() const;

  int step_;
  int columns_ = 0;
  std::vector<int> left_padding_;
  std::optional<array> keys_;
  std::optional<array> values_;
};

/// One BatchKVCache per cache the model makes, for sequences left-padded by `left_padding`.
Cache make_batch_cache(const LanguageModel& model, const std::vector<int>& left_padding);

/// A batch cache of one sequence (no padding) holding the first `positions` positions of `source`, a single
/// sequence's cache for `model` (a prompt cache): its layers must hold their keys and values in position order
/// (growing caches, or rotating ones that have not dropped a position). `source` is left as it was.
Cache batch_cache_from_prefix(const LanguageModel& model, const Cache& source, int positions);

/// Keeps the sequences at `indices` in every layer of a cache made by make_batch_cache.
void filter_batch_cache(Cache& cache, const std::vector<int>& indices);

}  // namespace nuvec::lm
