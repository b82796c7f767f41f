#include "nuvec/lm/cache/rotating_cache.h"

#include <algorithm>
#include <cstdint>

#include "nuvec/core/ops.h"

namespace nuvec::lm {

namespace {

/// Slots [start, stop) of a (B, N, L, D) buffer.
array slots_of(const array& buffer, int start, int stop) {
  if (start == 0 && stop == buffer.shape(2)) {
    return buffer;
  }
  Shape begin{0, 0, start, 0};
  Shape end = buffer.shape();
  end[2] = stop;
  return slice(buffer, std::move(begin), std::move(end));
}

/// A zero-filled buffer like `like` with `length` slots.
array zero_slots(const array& like, int length) {
  Shape shape = like.shape();
  shape[2] = length;
  return zeros(shape, like.dtype());
}

void check_update(const array& keys, const array& values) {
  if (keys.ndim() != 4 || values.ndim() != 4 || keys.shape(0) != values.shape(0) || keys.shape(1) != values.shape(1) ||
      keys.shape(2) != values.shape(2)) {
    throw_invalid("[RotatingKVCache] keys and values must be (B, N_kv, L, D) with the same B, N_kv and L; got " +
                  shape_string(keys.shape()) + " and " + shape_string(values.shape()) + ".");
  }
}

}  // namespace

RotatingKVCache::RotatingKVCache(int max_size, int keep, int step) : max_size_(max_size), keep_(keep), step_(step) {
  if (max_size < 1 || keep < 0 || keep >= max_size || step < 1) {
    throw_invalid("[RotatingKVCache] needs max_size >= 1, 0 <= keep < max_size and step >= 1; got max_size " +
                  std::to_string(max_size) + ", keep " + std::to_string(keep) + ", step " + std::to_string(step) + ".");
  }
}

RotatingKVCache::Path RotatingKVCache::path_for(int length) const {
  if (slots_.idx == slots_.used && slots_.used + length <= max_size_) {
    return Path::append;
  }
  return length == 1 ? Path::ring : Path::join;
}

RotatingKVCache::Slots RotatingKVCache::after(int length) const {
  const Slots& s = slots_;
  if (length == 0) {
    return s;
  }
  switch (path_for(length)) {
    case Path::append:
      return {s.offset + length, s.used + length, s.used + length};
    case Path::ring: {
      // A buffer longer than the window (after a join) is first cut back to the window, in position order.
      const int idx = s.used > max_size_ ? max_size_ : s.idx;
      const int slot = idx == max_size_ ? keep_ : idx;
      return {s.offset + 1, max_size_, slot + 1};
    }
    case Path::join: {
      const int retain = std::min(s.used, max_size_ - 1);
      return {s.offset + length, retain + length, retain + length};
    }
  }
  return s;
}

std::vector<int> RotatingKVCache::positions(const Slots& s) const {
  std::vector<int> pos(static_cast<size_t>(s.used));
  for (int slot = 0; slot < s.used; ++slot) {
    if (slot < keep_) {
      pos[slot] = slot;
    } else if (slot < s.idx) {
      pos[slot] = s.offset - s.idx + slot;  // the newest, ending at offset - 1 in slot idx - 1
    } else {
      pos[slot] = s.offset - s.used + keep_ + (slot - s.idx);  // the older ones, ending just before the newest
    }
  }
  return pos;
}

array RotatingKVCache::in_order(const array& buffer, int retain) const {
  const Slots& s = slots_;
  const int sinks = std::min(keep_, s.used);
  // The non-sink slots in position order, as [start, stop) runs.
  std::vector<std::pair<int, int>> runs;
  if (s.idx == s.used) {
    runs = {{sinks, s.used}};
  } else {
    runs = {{s.idx, s.used}, {keep_, s.idx}};
  }
  int drop = std::max(0, (s.used - sinks) - (retain - sinks));
  std::vector<array> parts;
  if (sinks > 0) {
    parts.push_back(slots_of(buffer, 0, sinks));
  }
  for (auto [start, stop] : runs) {
    const int skipped = std::min(drop, stop - start);
    drop -= skipped;
    if (start + skipped < stop) {
      parts.push_back(slots_of(buffer, start + skipped, stop));
    }
  }
  if (parts.empty()) {
    return slots_of(buffer, 0, 0);
  }
  return parts.size() == 1 ? parts[0] : concatenate(parts, 2);
}

void RotatingKVCache::make_room(const array& keys, const array& values, int needed) {
  const int capacity = std::min(max_size_, capacity_for(needed, step_));
  if (!keys_) {
    keys_ = zero_slots(keys, capacity);
    values_ = zero_slots(values, capacity);
    return;
  }
  if (needed <= keys_->shape(2)) {
    return;
  }
  // Growing copies the filled slots once per `step` positions; decoding in between writes in place.
  keys_ = concatenate({slots_of(*keys_, 0, slots_.used), zero_slots(keys, capacity - slots_.used)}, 2);
  values_ = concatenate({slots_of(*values_, 0, slots_.used), zero_slots(values, capacity - slots_.used)}, 2);
}

std::pair<array, array> RotatingKVCache::update_and_fetch(const array& keys, const array& values) {
  check_update(keys, values);
  const int length = keys.shape(2);
  if (length == 0) {
    return keys_ ? filled() : std::pair{keys, values};
  }
  const Slots next = after(length);
  auto write = [](array& buffer, const array& incoming, int slot) {
    Shape start{0, 0, slot, 0};
    Shape stop = buffer.shape();
    stop[2] = slot + incoming.shape(2);
    buffer = slice_update(buffer, incoming, std::move(start), std::move(stop));
  };
  switch (path_for(length)) {
    case Path::append:
      make_room(keys, values, next.used);
      write(*keys_, keys, slots_.used);
      write(*values_, values, slots_.used);
      break;
    case Path::ring:
      if (keys_->shape(2) > max_size_) {
        keys_ = in_order(*keys_, max_size_);
        values_ = in_order(*values_, max_size_);
      }
      write(*keys_, keys, next.idx - 1);
      write(*values_, values, next.idx - 1);
      break;
    case Path::join: {
      const int retain = std::min(slots_.used, max_size_ - 1);
      keys_ = keys_ ? concatenate({in_order(*keys_, retain), keys}, 2) : keys;
      values_ = values_ ? concatenate({in_order(*values_, retain), values}, 2) : values;
      break;
    }
  }
  slots_ = next;
  return filled();
}

MaskSpec RotatingKVCache::make_mask(int length, std::optional<int> window) const {
  const Slots next = after(length);
  const std::vector<int> pos = positions(next);
  const int first = slots_.offset;  // the first new query's position
  auto visible = [&](int query, int key) {
    const int age = query - key;
    return age >= 0 && (key < keep_ || age < max_size_ - keep_) && (!window || age < *window);
  };
  const int last = first + length - 1;
  // The last query is the most limited: when it sees every key, each query sees every key up to its own position.
  if (std::all_of(pos.begin(), pos.end(), [&](int key) { return visible(last, key); })) {
    if (length == 1) {
      return {};
    }
    bool sorted = true;
    for (size_t slot = 1; slot < pos.size() && sorted; ++slot) {
      sorted = pos[slot] == pos[slot - 1] + 1;
    }
    if (sorted) {
      return {"causal", std::nullopt};
    }
  }
  const auto columns = static_cast<int>(pos.size());
  std::vector<uint8_t> allowed(static_cast<size_t>(length) * columns);
  for (int q = 0; q < length; ++q) {
    for (int slot = 0; slot < columns; ++slot) {
      allowed[static_cast<size_t>(q) * columns + slot] = visible(first + q, pos[slot]) ? 1 : 0;
    }
  }
  return {"array", array(allowed.begin(), Shape{1, 1, length, columns}, bool_)};
}

bool RotatingKVCache::is_trimmable() const { return slots_.offset == slots_.used && slots_.idx == slots_.used; }

int RotatingKVCache::trim(int n) {
  if (!is_trimmable() || n <= 0) {
    return 0;
  }
  const int dropped = std::min(n, slots_.offset);
  slots_ = {slots_.offset - dropped, slots_.used - dropped, slots_.idx - dropped};
  return dropped;
}

std::pair<array, array> RotatingKVCache::filled() const {
  return {slots_of(*keys_, 0, slots_.used), slots_of(*values_, 0, slots_.used)};
}

std::vector<array> RotatingKVCache::state() const {
  if (!keys_) {
    return {};
  }
  auto [keys, values] = filled();
  return {keys, values};
}

std::vector<int> RotatingKVCache::meta_state() const { return {keep_, max_size_, slots_.offset, slots_.idx}; }

void RotatingKVCache::set_state(const std::vector<array>& state, const std::vector<int>& meta_state) {
  // mlx-lm wrote {keep, max_size, step, offset, idx} before it dropped `step`; both load.
  if (meta_state.size() != 4 && meta_state.size() != 5) {
    throw_invalid("[RotatingKVCache] meta state is {keep, max_size, offset, idx}; got " +
                  std::to_string(meta_state.size()) + " numbers.");
  }
  const bool with_step = meta_state.size() == 5;
  const int keep = meta_state[0];
  const int max_size = meta_state[1];
  const int offset = meta_state[with_step ? 3 : 2];
  const int idx = meta_state[with_step ? 4 : 3];
  if (max_size < 1 || keep < 0 || keep >= max_size) {
    throw_invalid("[RotatingKVCache] meta state needs max_size >= 1 and 0 <= keep < max_size; got max_size " +
                  std::to_string(max_size) + ", keep " + std::to_string(keep) + ".");
  }
  if (state.size() != 2 && !state.empty()) {
    throw_invalid("[RotatingKVCache] a cache's state is its keys and values; got " + std::to_string(state.size()) +
                  " arrays.");
  }
  if (!state.empty()) {
    check_update(state[0], state[1]);
  }
  const int used = state.empty() ? 0 : state[0].shape(2);
  // A buffer that is not in position order is a full ring.
  if (used > offset || idx < 0 || idx > used || (idx != used && (used != max_size || idx < keep))) {
    throw_invalid("[RotatingKVCache] inconsistent state: " + std::to_string(used) + " slots held, offset " +
                  std::to_string(offset) + ", idx " + std::to_string(idx) + ", max_size " + std::to_string(max_size) +
                  ", keep " + std::to_string(keep) + ".");
  }
  keep_ = keep;
  max_size_ = max_size;
  slots_ = {offset, used, idx};
  if (state.empty()) {
    keys_.reset();
    values_.reset();
  } else {
    keys_ = state[0];
    values_ = state[1];
  }
}

}  // namespace nuvec::lm
