#pragma once

// The rotating cache: a fixed window of positions for sliding-window attention (and for bounding memory on long
// generations). Once full, decoding writes each new token over the oldest one in place, so the buffer's slots are
// no longer in position order; make_mask knows where every position sits. The first `keep` positions are never
// overwritten (attention sinks).
//
// Slots: [0, keep) hold positions 0..keep-1; [keep, idx) the newest positions, in order; [idx, used) older ones,
// in order. A buffer in position order is the case idx == used. Layout and meta state follow mlx-lm's
// RotatingKVCache, so prompt caches saved by either load in the other.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nuvec/lm/cache/kv_cache.h"

namespace nuvec::lm {

class RotatingKVCache : public KVCache {
 public:
  /// A window of `max_size` positions that keeps the first `keep` (0 <= keep < max_size) and grows its buffer by
  /// `step` positions at a time until it holds max_size.
  explicit RotatingKVCache(int max_size, int keep = 0, int step = 256);

  /// Single tokens (and chunks that still fit) are written in place; a longer chunk once the window is full is
  /// joined to the window's last max_size - 1 positions, so every new query sees a whole window.
  std::pair<array, array> update_and_fetch(const array& keys, const array& values) override;
  /// The causal mask limited to the window (and to `window` when given), laid out as the buffer will hold the
  /// keys once the `length` new ones are stored.
  [[nodiscard]] MaskSpec make_mask(int length, std::optional<int> window = std::nullopt) const override;
  [[nodiscard]] int offset() const override { return slots_.offset; }
  /// True until a position has been dropped from the window.
  [[nodiscard]] bool is_trimmable() const override;
  int trim(int n) override;
  [[nodiscard]] std::vector<array> state() const override;
  /// {keep, max_size, offset, idx}, as mlx-lm writes them.
  [[nodiscard]] std::vector<int> meta_state() const override;
  void set_state(const std::vector<array>& state, const std::vector<int>& meta_state) override;
  [[nodiscard]] std::string type_name() const override { return "RotatingKVCache"; }

  [[nodiscard]] int max_size() const { return max_size_; }
  [[nodiscard]] int keep() const { return keep_; }

 private:
  /// Where positions sit in the buffer: `offset` positions seen, `used` slots filled, `idx` the next slot to write.
  struct Slots {
    int offset = 0;
    int used = 0;
    int idx = 0;
  };
  /// How an update of `length` positions is stored.
  enum class Path { append, ring, join };

  [[nodiscard]] Path path_for(int length) const;
  /// The slots after storing `length` more positions.
  [[nodiscard]] Slots after(int length) const;
  /// The position held by each filled slot of `s`.
  [[nodiscard]] std::vector<int> positions(const Slots& s) const;
  /// The filled slots in position order, keeping the sinks and the newest `retain - keep` others.
  [[nodiscard]] array in_order(const array& buffer, int retain) const;
  /// Grows the buffer (shaped like keys and values) to hold `needed` slots: a reservation or whole steps, at most
  /// max_size. Not KVCache::reserve, which only sizes this growth.
  void make_room(const array& keys, const array& values, int needed);
  [[nodiscard]] std::pair<array, array> filled() const;

  int max_size_;
  int keep_;
  int step_;
  Slots slots_;
  std::optional<array> keys_;
  std::optional<array> values_;
};

}  // namespace nuvec::lm
