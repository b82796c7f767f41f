#include "nuvec/lm/generate/paged_cache.h"

#include <algorithm>
#include <string>

#include "nuvec/core/eval.h"
#include "nuvec/core/ops.h"
#include "nuvec/lm/generate/batch_cache.h"

namespace nuvec::lm {

/// What the layers of one view share: the sequences' tables and lengths, and the slots built at the first layer.
struct PagedPass {
  std::vector<std::vector<int>> tables;
  std::vector<int> lengths;
  /// Set by the first layer's write: the positions each sequence appends, and where they and all earlier ones are.
  int appended = -1;
  std::vector<int> write_slots;
  std::optional<array> read_blocks;  // (B, blocks): each sequence's table, padded with its first block
};

/// The blocks a pass reads per sequence: enough for the longest sequence with its new positions.
int blocks_read(const PagedPass& pass, int appended, int block_size) {
  const int longest = *std::max_element(pass.lengths.begin(), pass.lengths.end()) + appended;
  return (longest + block_size - 1) / block_size;
}

/// One layer's cache in a view of a PagedKVStore.
class PagedKVCache : public KVCache {
 public:
  PagedKVCache(PagedKVStore& store, int layer, std::shared_ptr<PagedPass> pass)
      : store_(store), layer_(layer), pass_(std::move(pass)) {}

  std::pair<array, array> update_and_fetch(const array& keys, const array& values) override;
  /// Causal over each sequence's own positions, (B, 1, L, L_kv): whole blocks are read, so the mask also hides the
  /// positions past each sequence's end.
  [[nodiscard]] MaskSpec make_mask(int length, std::optional<int> window = std::nullopt) const override;
  [[nodiscard]] int offset() const override { return *std::max_element(pass_->lengths.begin(), pass_->lengths.end()); }
  [[nodiscard]] std::optional<array> batch_offsets() const override {
    return array(pass_->lengths.begin(), {static_cast<int>(pass_->lengths.size())}, int32);
  }
  [[nodiscard]] bool is_trimmable() const override { return false; }
  int trim(int /*n*/) override { return 0; }
  /// The blocks belong to the store; a view holds nothing of its own to save.
  [[nodiscard]] std::vector<array> state() const override { return {}; }
  [[nodiscard]] std::vector<int> meta_state() const override { return {}; }
  void set_state(const std::vector<array>& /*state*/, const std::vector<int>& /*meta_state*/) override {
    throw_unsupported("[PagedKVCache] a view of a paged store cannot be restored from a saved state.");
  }
  [[nodiscard]] std::string type_name() const override { return "PagedKVCache"; }

 private:
  /// Fills in the pass's slots for `appended` new positions per sequence.
  void plan(int appended) const;

  PagedKVStore& store_;
  int layer_;
  std::shared_ptr<PagedPass> pass_;
};

void PagedKVCache::plan(int appended) const {
  PagedPass& pass = *pass_;
  pass.appended = appended;
  const int batch = static_cast<int>(pass.lengths.size());
  const int blocks = blocks_read(pass, appended, store_.block_size_);
  std::vector<int> read(static_cast<size_t>(batch) * blocks);
  for (int b = 0; b < batch; ++b) {
    const std::vector<int>& table = pass.tables[b];
    const int length = pass.lengths[b];
    for (int i = 0; i < appended; ++i) {
      pass.write_slots.push_back(store_.slot(table, length + i));
    }
    const int own = (length + appended + store_.block_size_ - 1) / store_.block_size_;
    for (int j = 0; j < blocks; ++j) {
      // Blocks past a sequence's end read its first block again: the mask hides them.
      read[static_cast<size_t>(b) * blocks + j] = table.at(static_cast<size_t>(j < own ? j : 0));
    }
  }
  pass.read_blocks = array(read.begin(), {batch, blocks}, int32);
}

std::pair<array, array> PagedKVCache::update_and_fetch(const array& keys, const array& values) {
  const int batch = static_cast<int>(pass_->lengths.size());
  if (keys.ndim() != 4 || keys.shape(0) != batch) {
    throw_invalid("[PagedKVCache] expected keys (B, N_kv, L, D) for a view of " + std::to_string(batch) +
                  " sequences; got " + std::to_string(keys.ndim()) + " axes with " +
                  std::to_string(keys.ndim() > 0 ? keys.shape(0) : 0) + " rows.");
  }
  const int appended = keys.shape(2);
  if (pass_->appended < 0) {
    plan(appended);
  } else if (pass_->appended != appended) {
    throw_invalid("[PagedKVCache] every layer of a view appends the same positions: " +
                  std::to_string(pass_->appended) + " before, " + std::to_string(appended) + " now.");
  }
  auto flat = [&](const array& a) {
    return reshape(transpose(a, {0, 2, 1, 3}), {batch * appended, a.shape(1), 1, a.shape(3)});
  };
  store_.put(layer_, pass_->write_slots, flat(keys), flat(values));
  // Whole blocks are gathered (runs of block_size positions per head), then seen as each sequence's positions in
  // order: each head's positions stay contiguous, as attention streams them.
  const int size = store_.block_size_;
  const int blocks = pass_->read_blocks->shape(1);
  auto gathered = [&](const array& buffer) {
    const int heads = buffer.shape(0);
    const array by_block = reshape(buffer, {heads, buffer.shape(1) / size, size, buffer.shape(2)});
    const array rows = reshape(take(by_block, *pass_->read_blocks, 1), {heads, batch, blocks * size, buffer.shape(2)});
    return transpose(rows, {1, 0, 2, 3});
  };
  return {gathered(*store_.keys_[layer_]), gathered(*store_.values_[layer_])};
}

MaskSpec PagedKVCache::make_mask(int length, std::optional<int> window) const {
  const std::vector<int>& lengths = pass_->lengths;
  const int batch = static_cast<int>(lengths.size());
  const int total = blocks_read(*pass_, length, store_.block_size_) * store_.block_size_;
  const array query = add(reshape(array(lengths.begin(), {batch}, int32), {batch, 1, 1, 1}),
                          reshape(arange(0, length, int32), {1, 1, length, 1}));
  const array key = reshape(arange(0, total, int32), {1, 1, 1, total});
  array keep = less_equal(key, query);
  if (window) {
    keep = logical_and(keep, greater(key, subtract(query, array(*window))));
  }
  return {"array", keep};
}

PagedKVStore::PagedKVStore(int layers, int blocks, int block_size)
    : blocks_(blocks),
      block_size_(block_size),
      keys_(static_cast<size_t>(layers)),
      values_(static_cast<size_t>(layers)) {}

int PagedKVStore::slot(const std::vector<int>& table, int position) const {
  const auto block = static_cast<size_t>(position / block_size_);
  if (block >= table.size()) {
    throw_internal("[PagedKVStore] position " + std::to_string(position) + " is past the " +
                   std::to_string(table.size()) + " blocks its sequence holds.");
  }
  return table[block] * block_size_ + position % block_size_;
}

void PagedKVStore::put(int layer, const std::vector<int>& slots, const array& keys, const array& values) {
  const int needed = *std::max_element(slots.begin(), slots.end()) / block_size_ + 1;
  auto grow = [&](std::optional<array>& buffer, const array& like) {
    const int held = buffer ? buffer->shape(1) / block_size_ : 0;
    if (held >= needed) {
      return;
    }
    // Doubling keeps the copies of growth few; the pool's size bounds it.
    const int blocks = std::min(blocks_, std::max(needed, 2 * held));
    const array fresh = zeros({like.shape(1), (blocks - held) * block_size_, like.shape(3)}, like.dtype());
    buffer = buffer ? concatenate({*buffer, fresh}, 1) : fresh;
  };
  grow(keys_[static_cast<size_t>(layer)], keys);
  grow(values_[static_cast<size_t>(layer)], values);
  const array index(slots.begin(), {static_cast<int>(slots.size())}, int32);
  keys_[static_cast<size_t>(layer)] = scatter(*keys_[static_cast<size_t>(layer)], index, keys, 1);
  values_[static_cast<size_t>(layer)] = scatter(*values_[static_cast<size_t>(layer)], index, values, 1);
}

Cache PagedKVStore::view(const std::vector<const std::vector<int>*>& tables, const std::vector<int>& lengths) {
  auto pass = std::make_shared<PagedPass>();
  for (const std::vector<int>* table : tables) {
    pass->tables.push_back(*table);
  }
  pass->lengths = lengths;
  Cache cache;
  cache.reserve(keys_.size());
  for (size_t layer = 0; layer < keys_.size(); ++layer) {
    cache.push_back(std::make_shared<PagedKVCache>(*this, static_cast<int>(layer), pass));
  }
  return cache;
}

void PagedKVStore::write(const Cache& source, int row, int from, int to, const std::vector<int>& table) {
  if (source.size() != keys_.size()) {
    throw_invalid("[PagedKVStore] a cache of " + std::to_string(source.size()) + " layers does not fit a store of " +
                  std::to_string(keys_.size()) + ".");
  }
  if (to <= from) {
    return;
  }
  std::vector<int> slots;
  for (int p = from; p < to; ++p) {
    slots.push_back(slot(table, p));
  }
  for (size_t layer = 0; layer < source.size(); ++layer) {
    const std::vector<array> state = source[layer]->state();
    const int padding = source[layer]->meta_state().at(static_cast<size_t>(row));
    auto cut = [&](const array& a) {
      const array rows = slice(a, {row, 0, padding + from, 0}, {row + 1, a.shape(1), padding + to, a.shape(3)});
      return transpose(rows, {2, 1, 0, 3});  // (positions, N_kv, 1, D)
    };
    put(static_cast<int>(layer), slots, cut(state.at(0)), cut(state.at(1)));
  }
}

Cache PagedKVStore::read(const std::vector<int>& table, int positions) const {
  std::vector<int> slots;
  for (int p = 0; p < positions; ++p) {
    slots.push_back(slot(table, p));
  }
  const array index(slots.begin(), {positions}, int32);
  Cache cache;
  for (size_t layer = 0; layer < keys_.size(); ++layer) {
    auto single = std::make_shared<BatchKVCache>(std::vector<int>{0});
    if (positions > 0) {
      auto rows = [&](const array& buffer) { return expand_dims(take(buffer, index, 1), 0); };
      single->set_state({rows(*keys_[layer]), rows(*values_[layer])}, {0});
    }
    cache.push_back(std::move(single));
  }
  return cache;
}

void PagedKVStore::eval() {
  std::vector<array> buffers;
  for (size_t layer = 0; layer < keys_.size(); ++layer) {
    if (keys_[layer]) {
      buffers.push_back(*keys_[layer]);
      buffers.push_back(*values_[layer]);
    }
  }
  nuvec::eval(std::move(buffers));
}

}  // namespace nuvec::lm
