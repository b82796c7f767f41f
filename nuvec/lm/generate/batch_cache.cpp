#include "nuvec/lm/generate/batch_cache.h"

#include <algorithm>
#include <memory>
#include <string>

#include "nuvec/core/ops.h"

namespace nuvec::lm {
namespace {

/// The first `columns` positions of a (B, N, capacity, D) buffer.
array first_columns(const array& buffer, int columns) {
  Shape stop = buffer.shape();
  stop[2] = columns;
  return slice(buffer, {0, 0, 0, 0}, stop);
}

BatchKVCache& as_batch_cache(const std::shared_ptr<KVCache>& layer) {
  auto* batch = dynamic_cast<BatchKVCache*>(layer.get());
  if (batch == nullptr) {
    throw_invalid(std::string("[BatchKVCache] expected a cache made by make_batch_cache; got a ") + layer->type_name() +
                  ".");
  }
  return *batch;
}

}  // namespace

BatchKVCache::BatchKVCache(std::vector<int> left_padding, int step)
    : step_(step), left_padding_(std::move(left_padding)) {
  if (std::any_of(left_padding_.begin(), left_padding_.end(), [](int p) { return p < 0; })) {
    throw_invalid("[BatchKVCache] left padding must not be negative.");
  }
}

std::pair<array, array> BatchKVCache::update_and_fetch(const array& keys, const array& values) {
  if (keys.ndim() != 4 || keys.shape(0) != batch_size()) {
    throw_invalid("[BatchKVCache] expected keys (B, N_kv, L, D) for a batch of " + std::to_string(batch_size()) +
                  " sequences; got " + std::to_string(keys.ndim()) + " axes with " +
                  std::to_string(keys.ndim() > 0 ? keys.shape(0) : 0) + " rows.");
  }
  const int length = keys.shape(2);
  if (!keys_ || columns_ + length > keys_->shape(2)) {
    // Grow by whole steps so that decoding writes into spare columns instead of copying the history.
    const int steps = (step_ + length - 1) / step_;
    auto grown = [&](const std::optional<array>& held, const array& incoming) {
      Shape shape = incoming.shape();
      shape[2] = steps * step_;
      array fresh = zeros(shape, incoming.dtype());
      return held ? concatenate({first_columns(*held, columns_), fresh}, 2) : fresh;
    };
    keys_ = grown(keys_, keys);
    values_ = grown(values_, values);
  }
  auto write = [&](array& held, const array& incoming) {
    Shape stop = held.shape();
    stop[2] = columns_ + length;
    held = slice_update(held, incoming, {0, 0, columns_, 0}, stop);
  };
  write(*keys_, keys);
  write(*values_, values);
  columns_ += length;
  return used();
}

MaskSpec BatchKVCache::make_mask(int length, std::optional<int> window) const {
  if (std::all_of(left_padding_.begin(), left_padding_.end(), [](int p) { return p == 0; })) {
    return KVCache::make_mask(length, window);
  }
  const int total = columns_ + length;
  const array query = reshape(arange(columns_, total, int32), {1, 1, length, 1});
  const array key = reshape(arange(0, total, int32), {1, 1, 1, total});
  const array padding(left_padding_.begin(), {batch_size(), 1, 1, 1}, int32);
  array keep = logical_and(less_equal(key, query), greater_equal(key, padding));
  if (window) {
    keep = logical_and(keep, greater(key, subtract(query, array(*window))));
  }
  // A padding query sees no real key; letting it see itself keeps its softmax finite, so no NaN reaches the
  // padding columns of the next layer's cache (masked weights of zero times NaN would still give NaN).
  keep = logical_or(keep, equal(key, query));
  return {"array", keep};
}

std::optional<array> BatchKVCache::batch_offsets() const {
  std::vector<int32_t> offsets;
  offsets.reserve(left_padding_.size());
  for (int p : left_padding_) {
    offsets.push_back(columns_ - p);
  }
  return array(offsets.begin(), {batch_size()}, int32);
}

int BatchKVCache::trim(int n) {
  const int dropped = std::clamp(n, 0, columns_);
  columns_ -= dropped;
  for (int& p : left_padding_) {
    p = std::min(p, columns_);
  }
  return dropped;
}

std::pair<array, array> BatchKVCache::used() const {
  return {first_columns(*keys_, columns_), first_columns(*values_, columns_)};
}

std::vector<array> BatchKVCache::state() const {
  if (!keys_) {
    return {};
  }
  auto [keys, values] = used();
  return {keys, values};
}

void BatchKVCache::set_state(const std::vector<array>& state, const std::vector<int>& meta_state) {
  if (!state.empty() && state.size() != 2) {
    throw_invalid("[BatchKVCache] a cache's state is its keys and values; got " + std::to_string(state.size()) +
                  " arrays.");
  }
  if (!state.empty() && (state[0].ndim() != 4 || state[0].shape(0) != static_cast<int>(meta_state.size()))) {
    throw_invalid("[BatchKVCache] the keys must be (B, N_kv, L, D) with one row per left padding entry (" +
                  std::to_string(meta_state.size()) + ").");
  }
  left_padding_ = meta_state;
  if (state.empty()) {
    keys_.reset();
    values_.reset();
    columns_ = 0;
    return;
  }
  keys_ = state[0];
  values_ = state[1];
  columns_ = state[0].shape(2);
}

void BatchKVCache::filter(const std::vector<int>& indices) {
  for (int i : indices) {
    if (i < 0 || i >= batch_size()) {
      throw_invalid("[BatchKVCache] filter index " + std::to_string(i) + " is outside a batch of " +
                    std::to_string(batch_size()) + " sequences.");
    }
  }
  std::vector<int> kept;
  kept.reserve(indices.size());
  for (int i : indices) {
    kept.push_back(left_padding_[i]);
  }
  left_padding_ = std::move(kept);
  if (left_padding_.empty()) {
    keys_.reset();
    values_.reset();
    columns_ = 0;
    return;
  }
  if (!keys_) {
    return;
  }
  const array rows(indices.begin(), {static_cast<int>(indices.size())}, int32);
  auto [keys, values] = used();
  keys = take(keys, rows, 0);
  values = take(values, rows, 0);
  // Padding every remaining sequence shares is dead weight: drop those columns.
  const int shared = *std::min_element(left_padding_.begin(), left_padding_.end());
  if (shared > 0) {
    Shape stop = keys.shape();
    keys = slice(keys, {0, 0, shared, 0}, stop);
    stop = values.shape();
    values = slice(values, {0, 0, shared, 0}, stop);
    columns_ -= shared;
    for (int& p : left_padding_) {
      p -= shared;
    }
  }
  keys_ = keys;
  values_ = values;
}

Cache make_batch_cache(const LanguageModel& model, const std::vector<int>& left_padding) {
  const size_t layers = model.make_cache().size();
  Cache cache;
  cache.reserve(layers);
  for (size_t i = 0; i < layers; ++i) {
    cache.push_back(std::make_shared<BatchKVCache>(left_padding));
  }
  return cache;
}

Cache batch_cache_from_prefix(const LanguageModel& model, const Cache& source, int positions) {
  Cache cache = make_batch_cache(model, {0});
  if (source.size() != cache.size()) {
    throw_invalid("[BatchKVCache] a prompt cache of " + std::to_string(source.size()) +
                  " layers does not fit a model with " + std::to_string(cache.size()) + ".");
  }
  for (size_t i = 0; i < source.size(); ++i) {
    const KVCache& layer = *source[i];
    const bool in_order = dynamic_cast<const GrowingKVCache*>(&layer) != nullptr ||
                          (layer.type_name() == "RotatingKVCache" && layer.is_trimmable());
    if (!in_order) {
      throw_unsupported(std::string("[BatchKVCache] a batched request cannot start from a ") + layer.type_name() +
                        (layer.type_name() == "RotatingKVCache" ? " that has dropped positions" : "") +
                        "; it needs keys and values kept whole, in position order.");
    }
    if (positions < 0 || positions > layer.offset()) {
      throw_invalid("[BatchKVCache] cannot take " + std::to_string(positions) + " positions from a cache holding " +
                    std::to_string(layer.offset()) + ".");
    }
    const std::vector<array> state = layer.state();
    if (positions == 0 || state.empty()) {
      continue;
    }
    if (state[0].shape(0) != 1) {
      throw_invalid("[BatchKVCache] a batched request starts from a cache of one sequence; this one holds " +
                    std::to_string(state[0].shape(0)) + ".");
    }
    cache[i]->set_state({first_columns(state[0], positions), first_columns(state[1], positions)}, {0});
  }
  return cache;
}

void filter_batch_cache(Cache& cache, const std::vector<int>& indices) {
  for (const auto& layer : cache) {
    as_batch_cache(layer).filter(indices);
  }
}

}  // namespace nuvec::lm
