#include "nuvec/lm/cache/kv_cache.h"

#include <algorithm>

#include "nuvec/core/fast.h"
#include "nuvec/core/ops.h"

namespace nuvec::lm {

array KVCache::attend(const array& queries, const array& keys, const array& values, float scale, const MaskSpec& mask,
                      const std::optional<array>& sinks) {
  auto [all_keys, all_values] = update_and_fetch(keys, values);
  return fast::scaled_dot_product_attention(queries, all_keys, all_values, scale, mask.mode, mask.mask, sinks);
}

MaskSpec KVCache::make_mask(int length, std::optional<int> window) const {
  const int start = offset();
  const int total = start + length;
  if (!window || total <= *window) {
    // The fused causal mask aligns the last query with the last key, which is what a cache needs.
    return length == 1 ? MaskSpec{} : MaskSpec{"causal", std::nullopt};
  }
  // Query i (at position start + i) sees keys at positions (start + i - window, start + i].
  const array query_pos = reshape(arange(start, total, int32), {length, 1});
  const array key_pos = reshape(arange(0, total, int32), {1, total});
  const array keep = logical_and(less_equal(key_pos, query_pos), greater(key_pos, subtract(query_pos, array(*window))));
  return {"array", reshape(keep, {1, 1, length, total})};
}

size_t KVCache::nbytes() const {
  size_t total = 0;
  for (const auto& a : state()) {
    total += a.nbytes();
  }
  return total;
}

int KVCache::capacity_for(int needed, int step) const {
  return needed <= reserved_ ? reserved_ : (needed + step - 1) / step * step;
}

namespace {

/// The first `count` positions (axis 2) of a (B, N, L, D) buffer.
array first_positions(const array& held, int count) {
  Shape stop = held.shape();
  stop[2] = count;
  return slice(held, {0, 0, 0, 0}, stop);
}

}  // namespace

std::pair<array, array> GrowingKVCache::update_and_fetch(const array& keys, const array& values) {
  const int length = keys.shape(2);
  if (!keys_ || offset_ + length > keys_->shape(2)) {
    const int capacity = capacity_for(offset_ + length, step_);
    auto grown = [&](const std::optional<array>& held, const array& incoming) {
      Shape shape = incoming.shape();
      shape[2] = capacity - offset_;
      array fresh = zeros(shape, incoming.dtype());
      if (!held) {
        return fresh;
      }
      return concatenate({first_positions(*held, offset_), fresh}, 2);
    };
    keys_ = grown(keys_, keys);
    values_ = grown(values_, values);
  }
  auto write = [&](array& held, const array& incoming) {
    Shape start{0, 0, offset_, 0};
    Shape stop = held.shape();
    stop[2] = offset_ + length;
    held = slice_update(held, incoming, start, stop);
  };
  write(*keys_, keys);
  write(*values_, values);
  offset_ += length;
  return {first_positions(*keys_, offset_), first_positions(*values_, offset_)};
}

int GrowingKVCache::trim(int n) {
  const int dropped = std::min(n, offset_);
  offset_ -= dropped;
  return dropped;
}

std::vector<array> GrowingKVCache::state() const {
  if (!keys_) {
    return {};
  }
  return {first_positions(*keys_, offset_), first_positions(*values_, offset_)};
}

void GrowingKVCache::set_state(const std::vector<array>& state, const std::vector<int>& /*meta_state*/) {
  if (state.empty()) {
    keys_.reset();
    values_.reset();
    offset_ = 0;
    return;
  }
  if (state.size() != 2) {
    throw_invalid("[KVCache] a cache's state is its keys and values; got " + std::to_string(state.size()) + " arrays.");
  }
  keys_ = state[0];
  values_ = state[1];
  offset_ = state[0].shape(2);
}

}  // namespace nuvec::lm
