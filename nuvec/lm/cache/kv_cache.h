#pragma once

// Key-value caches for attention: one per layer, each holding the keys and values of every position seen so far
// (or of a window of them), in the model's dtype unless the cache says otherwise. A layer hands its new keys and
// values to the cache and attends through it, so a cache that stores keys in another form (quantized, rotating,
// left-padded batches) changes nothing in the model's code.

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nuvec/core/array.h"

namespace nuvec::lm {

/// What attention over the cache must mask, as fast::scaled_dot_product_attention takes it: "" (nothing),
/// "causal", or "array" with a boolean (B or 1, 1, L, L_kv) mask that selects the positions to keep.
struct MaskSpec {
  std::string mode;
  std::optional<array> mask;
};

class KVCache {
 public:
  KVCache() = default;
  KVCache(const KVCache&) = delete;
  KVCache& operator=(const KVCache&) = delete;
  KVCache(KVCache&&) = delete;
  KVCache& operator=(KVCache&&) = delete;
  virtual ~KVCache() = default;

  /// Stores keys and values (B, N_kv, L, D) after those already held and returns every key and value the new
  /// queries attend to, (B, N_kv, L_kv, D) each.
  virtual std::pair<array, array> update_and_fetch(const array& keys, const array& values) = 0;
  /// Attention of queries (B, N_q, L, D) over the cache after storing keys and values (B, N_kv, L, D): the default
  /// is fast::scaled_dot_product_attention over update_and_fetch; caches that keep another form override it.
  virtual array attend(const array& queries, const array& keys, const array& values, float scale, const MaskSpec& mask,
                       const std::optional<array>& sinks = std::nullopt);
  /// The mask for L new queries (taken before they are stored); `window` limits each query to the last `window`
  /// positions (sliding-window attention).
  [[nodiscard]] virtual MaskSpec make_mask(int length, std::optional<int> window = std::nullopt) const;

  /// Positions stored so far: the offset of the next token for RoPE.
  [[nodiscard]] virtual int offset() const = 0;
  /// Per-sequence RoPE offsets (B,) when the sequences of a batch sit at different positions; none otherwise.
  [[nodiscard]] virtual std::optional<array> batch_offsets() const { return std::nullopt; }

  /// Whether trim() can drop positions (a rotating cache that has wrapped cannot).
  [[nodiscard]] virtual bool is_trimmable() const = 0;
  /// Drops the last `n` positions (speculative decoding's rejected drafts); returns how many were dropped.
  virtual int trim(int n) = 0;

  /// The arrays that hold the cache's contents and the numbers that describe it, for saving prompt caches.
  [[nodiscard]] virtual std::vector<array> state() const = 0;
  [[nodiscard]] virtual std::vector<int> meta_state() const = 0;
  /// Restores what state() and meta_state() gave.
  virtual void set_state(const std::vector<array>& state, const std::vector<int>& meta_state) = 0;
  /// The class name, saved with prompt caches ("KVCache", "RotatingKVCache", ...).
  [[nodiscard]] virtual std::string type_name() const = 0;
  /// Bytes held by the cache's arrays.
  [[nodiscard]] size_t nbytes() const;
  /// Whether nothing has been stored yet.
  [[nodiscard]] bool empty() const { return offset() == 0; }

  /// Readies the cache for at least `positions` positions in all (those held included; the largest reservation
  /// counts): its next growth takes them at once instead of one step at a time, so a request of known length copies
  /// its history at most once. Past them the cache grows by steps again; a cache of fixed size ignores the hint.
  void reserve(int positions) { reserved_ = std::max(reserved_, positions); }

 protected:
  /// The buffer size that holds `needed` positions: the reservation where it covers them, else whole `step`s.
  [[nodiscard]] int capacity_for(int needed, int step) const;

 private:
  int reserved_ = 0;
};

/// A model's caches, one per layer.
using Cache = std::vector<std::shared_ptr<KVCache>>;

/// The growing cache: keys and values kept whole, in buffers that grow by `step` positions at a time so that
/// decoding one token writes in place instead of copying the history.
class GrowingKVCache : public KVCache {
 public:
  explicit GrowingKVCache(int step = 256) : step_(step) {}
  std::pair<array, array> update_and_fetch(const array& keys, const array& values) override;
  [[nodiscard]] int offset() const override { return offset_; }
  [[nodiscard]] bool is_trimmable() const override { return true; }
  int trim(int n) override;
  [[nodiscard]] std::vector<array> state() const override;
  [[nodiscard]] std::vector<int> meta_state() const override { return {}; }
  void set_state(const std::vector<array>& state, const std::vector<int>& meta_state) override;
  [[nodiscard]] std::string type_name() const override { return "KVCache"; }

 private:
  int step_;
  int offset_ = 0;
  std::optional<array> keys_;
  std::optional<array> values_;
};

}  // namespace nuvec::lm
