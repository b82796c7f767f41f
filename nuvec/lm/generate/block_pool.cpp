#include "nuvec/lm/generate/block_pool.h"

#include <algorithm>
#include <string>

#include "nuvec/core/error.h"

namespace nuvec::lm {

BlockPool::BlockPool(int blocks, int block_size, int max_idle_blocks)
    : block_size_(block_size), max_idle_blocks_(max_idle_blocks), blocks_(static_cast<size_t>(std::max(blocks, 0))) {
  if (blocks <= 0 || block_size <= 0 || max_idle_blocks < 0) {
    throw_invalid("[BlockPool] needs a positive number of blocks and block size and no negative idle limit; got " +
                  std::to_string(blocks) + " blocks of " + std::to_string(block_size) + " positions, " +
                  std::to_string(max_idle_blocks) + " idle.");
  }
  for (int b = 0; b < blocks; ++b) {
    free_.insert(free_.end(), b);
  }
}

uint64_t BlockPool::chain(uint64_t parent, std::span<const int32_t> tokens) {
  // FNV-1a over the parent's hash and the tokens: cheap, and lookup() checks the tokens themselves.
  uint64_t hash = 14695981039346656037ULL;
  auto mix = [&](uint64_t value) {
    for (int byte = 0; byte < 8; ++byte) {
      hash = (hash ^ ((value >> (8 * byte)) & 0xFF)) * 1099511628211ULL;
    }
  };
  mix(parent);
  for (int32_t token : tokens) {
    mix(static_cast<uint32_t>(token));
  }
  return hash;
}

std::optional<int> BlockPool::lookup(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) const {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) {
    return std::nullopt;
  }
  const Block& block = blocks_[static_cast<size_t>(it->second)];
  if (block.parent != parent || !std::equal(tokens.begin(), tokens.end(), block.tokens.begin(), block.tokens.end())) {
    return std::nullopt;
  }
  return it->second;
}

void BlockPool::forget(int block) {
  Block& entry = blocks_[static_cast<size_t>(block)];
  by_hash_.erase(*entry.hash);
  entry.hash.reset();
  entry.tokens.clear();
  idle_.erase({idle_since_.at(block), block});
  idle_since_.erase(block);
}

std::optional<int> BlockPool::allocate() {
  int block = 0;
  if (!free_.empty()) {
    block = *free_.begin();
    free_.erase(free_.begin());
  } else if (!idle_.empty()) {
    block = idle_.begin()->second;
    forget(block);
  } else {
    return std::nullopt;
  }
  blocks_[static_cast<size_t>(block)].holders = 1;
  return block;
}

void BlockPool::release(const std::vector<int>& blocks) {
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    Block& block = blocks_.at(static_cast<size_t>(*it));
    if (block.holders <= 0) {
      throw_internal("[BlockPool] block " + std::to_string(*it) + " released more often than it was held.");
    }
    if (--block.holders > 0) {
      continue;
    }
    if (block.hash) {
      idle_since_[*it] = ++clock_;
      idle_.emplace(clock_, *it);
    } else {
      free_.insert(*it);
    }
  }
  while (static_cast<int>(idle_.size()) > max_idle_blocks_) {
    const int oldest = idle_.begin()->second;
    forget(oldest);
    free_.insert(oldest);
  }
}

std::vector<int> BlockPool::match(std::span<const int32_t> tokens) {
  std::vector<int> found;
  uint64_t parent = 0;
  for (size_t start = 0; start + block_size_ <= tokens.size(); start += static_cast<size_t>(block_size_)) {
    const std::span<const int32_t> piece = tokens.subspan(start, static_cast<size_t>(block_size_));
    const uint64_t hash = chain(parent, piece);
    const std::optional<int> block = lookup(hash, parent, piece);
    if (!block) {
      break;
    }
    Block& entry = blocks_[static_cast<size_t>(*block)];
    if (entry.holders++ == 0) {
      idle_.erase({idle_since_.at(*block), *block});
      idle_since_.erase(*block);
    }
    found.push_back(*block);
    parent = hash;
  }
  return found;
}

void BlockPool::publish(std::span<const int32_t> tokens, const std::vector<int>& table) {
  uint64_t parent = 0;
  const size_t full = std::min(tokens.size() / static_cast<size_t>(block_size_), table.size());
  for (size_t i = 0; i < full; ++i) {
    const std::span<const int32_t> piece = tokens.subspan(i * block_size_, static_cast<size_t>(block_size_));
    const uint64_t hash = chain(parent, piece);
    Block& block = blocks_.at(static_cast<size_t>(table[i]));
    if (!block.hash && !by_hash_.contains(hash)) {
      block.hash = hash;
      block.parent = parent;
      block.tokens.assign(piece.begin(), piece.end());
      by_hash_[hash] = table[i];
    }
    parent = hash;
  }
}

}  // namespace nuvec::lm
