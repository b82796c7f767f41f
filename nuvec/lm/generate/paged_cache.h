#pragma once

// The keys and values of a batch generator's sequences, kept in blocks of a fixed number of positions (numbered as
// a BlockPool hands them out): per layer, one buffer of (N_kv, slots, D) in which block b holds slots
// [b * block_size, (b + 1) * block_size). A sequence's positions are found through its block table, so sequences
// share blocks (a common prompt prefix) and a sequence that leaves frees exactly its blocks, with nothing to copy
// or pad. A forward pass goes through a view: its layers write the new positions into their blocks and attend over
// each sequence's blocks gathered back in order, whole blocks at a time, under a mask of each sequence's own
// positions. That gather copies the keys and values once per step: attention reading the blocks in place (a block
// table given to the attention kernel) would save it, and matters as contexts grow.

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "nuvec/lm/cache/kv_cache.h"

namespace nuvec::lm {

class PagedKVStore {
 public:
  /// A store for `layers` layers of up to `blocks` blocks of `block_size` positions; the buffers grow with the
  /// highest block written.
  PagedKVStore(int layers, int blocks, int block_size);

  /// The cache of one forward pass over sequences that hold lengths[b] positions in the blocks tables[b] and append
  /// the pass's positions after them (their tables must already have blocks for those).
  Cache view(const std::vector<const std::vector<int>*>& tables, const std::vector<int>& lengths);
  /// Copies positions [from, to) of sequence `row` of `source` (made by make_batch_cache or
  /// batch_cache_from_prefix) into the blocks of `table`.
  void write(const Cache& source, int row, int from, int to, const std::vector<int>& table);
  /// A batch cache of one sequence holding the first `positions` positions stored in `table`.
  [[nodiscard]] Cache read(const std::vector<int>& table, int positions) const;
  /// Computes the writes made so far.
  void eval();

 private:
  friend class PagedKVCache;

  /// The slot of position `position` of a sequence whose block table is `table`.
  [[nodiscard]] int slot(const std::vector<int>& table, int position) const;
  /// Writes keys and values (n, N_kv, 1, D) into `slots` (n) of `layer`, growing its buffers to hold them.
  void put(int layer, const std::vector<int>& slots, const array& keys, const array& values);

  int blocks_;
  int block_size_;
  std::vector<std::optional<array>> keys_;
  std::vector<std::optional<array>> values_;
};

}  // namespace nuvec::lm
