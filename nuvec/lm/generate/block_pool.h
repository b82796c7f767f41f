#pragma once

// The bookkeeping of a KV cache kept in blocks of a fixed number of positions, shared by every sequence of a batch
// generator (vLLM's paged attention and automatic prefix caching): which blocks are free, which sequences hold which,
// and which full blocks hold which tokens. A full block that a prompt filled is registered under the hash of every
// token up to its end, so a later prompt that starts the same way takes the same blocks (reference-counted) instead
// of computing and storing them again. A registered block nobody holds stays until its place is needed (least
// recently used first) or more of them than `max_idle_blocks` wait. The keys and values themselves live in a
// PagedKVStore, indexed by the same block numbers.

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nuvec::lm {

class BlockPool {
 public:
  /// `blocks` blocks of `block_size` positions; at most `max_idle_blocks` registered blocks kept while unheld.
  BlockPool(int blocks, int block_size, int max_idle_blocks);

  [[nodiscard]] int block_size() const { return block_size_; }
  /// Every block, held or not.
  [[nodiscard]] int capacity() const { return static_cast<int>(blocks_.size()); }
  /// Blocks some sequence holds.
  [[nodiscard]] int used() const { return capacity() - static_cast<int>(free_.size() + idle_.size()); }
  /// Blocks allocate() can hand out: free ones and registered ones nobody holds.
  [[nodiscard]] int available() const { return static_cast<int>(free_.size() + idle_.size()); }
  /// Registered blocks, held or not.
  [[nodiscard]] int registered() const { return static_cast<int>(by_hash_.size()); }
  /// Blocks needed for `positions` positions.
  [[nodiscard]] int blocks_for(int positions) const { return (positions + block_size_ - 1) / block_size_; }

  /// A block for one holder: the free block with the lowest number, else the least recently used registered block
  /// nobody holds (forgotten); none when every block is held.
  std::optional<int> allocate();
  /// Drops one hold on each of `blocks`, the last first, so that a sequence's tail is forgotten before its head.
  void release(const std::vector<int>& blocks);
  /// The registered blocks that hold the leading full blocks of `tokens`, as many as match in a row, each held once
  /// more for the caller.
  std::vector<int> match(std::span<const int32_t> tokens);
  /// Registers the full blocks of `tokens`, stored in `table` (one block per block_size positions), that are not
  /// registered yet; a block whose tokens another block already holds stays unregistered.
  void publish(std::span<const int32_t> tokens, const std::vector<int>& table);

 private:
  struct Block {
    int holders = 0;
    std::optional<uint64_t> hash;
    /// What the hash covers, to tell a collision from a match: the previous block's hash and this block's tokens.
    uint64_t parent = 0;
    std::vector<int32_t> tokens;
  };

  /// The hash of a block holding `tokens` after blocks hashing to `parent`.
  static uint64_t chain(uint64_t parent, std::span<const int32_t> tokens);
  /// The block registered for `tokens` after `parent`, if any.
  [[nodiscard]] std::optional<int> lookup(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) const;
  void forget(int block);

  int block_size_;
  int max_idle_blocks_;
  std::vector<Block> blocks_;
  /// Lowest number first, so that a store's buffers grow only as far as the highest block in use.
  std::set<int> free_;
  /// Registered blocks nobody holds, by when they were released.
  std::set<std::pair<uint64_t, int>> idle_;
  std::unordered_map<int, uint64_t> idle_since_;
  std::unordered_map<uint64_t, int> by_hash_;
  uint64_t clock_ = 0;
};

}  // namespace nuvec::lm
