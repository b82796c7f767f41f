#include "nuvec/lm/cache/quantized_cache.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "nuvec/core/ops.h"

namespace nuvec::lm {

namespace {

/// Slots [0, stop) of a (B, N, capacity, ...) buffer.
array first_slots(const array& buffer, int stop) {
  if (stop == buffer.shape(2)) {
    return buffer;
  }
  Shape end = buffer.shape();
  end[2] = stop;
  return slice(buffer, {0, 0, 0, 0}, std::move(end));
}

array zero_slots(const array& like, int length) {
  Shape shape = like.shape();
  shape[2] = length;
  return zeros(shape, like.dtype());
}

std::string number(int n) { return std::to_string(n); }

/// The user's mask (broadcastable to (B, N_q, L, total)) as (B', N_kv or 1, repeats or 1, L', capacity), padded
/// past `total` with `fill`.
array grouped_mask(const array& mask, const Shape& scores_shape, int n_q, int total, const array& fill) {
  const int capacity = scores_shape[4];
  const Shape full{scores_shape[0], n_q, scores_shape[3], total};
  bool fits = mask.ndim() <= 4;
  for (int i = 1; fits && i <= mask.ndim(); ++i) {
    fits = mask.shape(-i) == 1 || mask.shape(-i) == full[4 - i];
  }
  if (!fits) {
    throw_invalid("[QuantizedKVCache] mask of shape " + shape_string(mask.shape()) +
                  " does not broadcast to (B, N_q, L, L_kv) = " + shape_string(full) + ".");
  }
  Shape four(static_cast<size_t>(4 - mask.ndim()), 1);
  four.insert(four.end(), mask.shape().begin(), mask.shape().end());
  Shape target = four;
  target[3] = total;
  array m = broadcast_to(reshape(mask, four), target);
  if (capacity > total) {
    m = pad(m, {3}, {0}, {capacity - total}, fill);
  }
  const bool per_head = four[1] == n_q && n_q > 1;
  return reshape(m, {four[0], per_head ? scores_shape[1] : 1, per_head ? scores_shape[2] : 1, four[2], capacity});
}

void check_format(int group_size, int bits) {
  if (group_size != 32 && group_size != 64 && group_size != 128) {
    throw_invalid("[QuantizedKVCache] group_size must be 32, 64 or 128; got " + number(group_size) + ".");
  }
  if (bits < 2 || bits > 8 || bits == 7) {
    throw_invalid("[QuantizedKVCache] bits must be 2, 3, 4, 5, 6 or 8; got " + number(bits) + ".");
  }
}

}  // namespace

QuantizedKVCache::QuantizedKVCache(int group_size, int bits, int step)
    : group_size_(group_size), bits_(bits), step_(step) {
  check_format(group_size, bits);
  if (step < 1) {
    throw_invalid("[QuantizedKVCache] step must be positive; got " + number(step) + ".");
  }
}

void QuantizedKVCache::store(const array& keys, const array& values) {
  if (keys.ndim() != 4 || values.ndim() != 4 || keys.shape(0) != values.shape(0) || keys.shape(1) != values.shape(1) ||
      keys.shape(2) != values.shape(2)) {
    throw_invalid("[QuantizedKVCache] keys and values must be (B, N_kv, L, D) with the same B, N_kv and L; got " +
                  shape_string(keys.shape()) + " and " + shape_string(values.shape()) + ".");
  }
  if (keys.shape(3) % group_size_ != 0 || values.shape(3) % group_size_ != 0) {
    throw_invalid("[QuantizedKVCache] the head dimension must be a multiple of the group size " + number(group_size_) +
                  "; got keys " + shape_string(keys.shape()) + " and values " + shape_string(values.shape()) + ".");
  }
  const int length = keys.shape(2);
  const int needed = offset_ + length;
  const std::vector<array> qk = quantize(keys, group_size_, bits_);
  const std::vector<array> qv = quantize(values, group_size_, bits_);
  if (!keys_ || needed > keys_->codes.shape(2)) {
    // Growing copies the held positions once per `step`; decoding in between writes in place.
    const int capacity = capacity_for(needed, step_);
    auto grow = [&](const std::optional<Quantized>& held, const std::vector<array>& like) {
      if (!held) {
        return Quantized{zero_slots(like[0], capacity), zero_slots(like[1], capacity), zero_slots(like[2], capacity)};
      }
      auto part = [&](const array& buffer, const array& incoming) {
        return concatenate({first_slots(buffer, offset_), zero_slots(incoming, capacity - offset_)}, 2);
      };
      return Quantized{part(held->codes, like[0]), part(held->scales, like[1]), part(held->biases, like[2])};
    };
    keys_ = grow(keys_, qk);
    values_ = grow(values_, qv);
  }
  auto write = [&](array& buffer, const array& incoming) {
    Shape stop = buffer.shape();
    stop[2] = needed;
    buffer = slice_update(buffer, incoming, {0, 0, offset_, 0}, std::move(stop));
  };
  write(keys_->codes, qk[0]);
  write(keys_->scales, qk[1]);
  write(keys_->biases, qk[2]);
  write(values_->codes, qv[0]);
  write(values_->scales, qv[1]);
  write(values_->biases, qv[2]);
  offset_ = needed;
}

array QuantizedKVCache::dequantized(const Quantized& q, Dtype dtype) const {
  return dequantize(first_slots(q.codes, offset_), first_slots(q.scales, offset_), first_slots(q.biases, offset_),
                    group_size_, bits_, "affine", std::nullopt, dtype);
}

std::pair<array, array> QuantizedKVCache::update_and_fetch(const array& keys, const array& values) {
  store(keys, values);
  return {dequantized(*keys_, keys.dtype()), dequantized(*values_, values.dtype())};
}

array QuantizedKVCache::attend(const array& queries, const array& keys, const array& values, float scale,
                               const MaskSpec& mask, const std::optional<array>& sinks) {
  if (queries.ndim() != 4 || keys.ndim() != 4 || queries.shape(0) != keys.shape(0) ||
      queries.shape(3) != keys.shape(3) || keys.shape(1) == 0 || queries.shape(1) % keys.shape(1) != 0) {
    std::ostringstream msg;
    msg << "[QuantizedKVCache] queries (B, N_q, L, D) need keys (B, N_kv, L, D) with N_q a multiple of N_kv; got "
        << "queries " << shape_string(queries.shape()) << " and keys " << shape_string(keys.shape()) << ".";
    throw_invalid(msg.str());
  }
  if (sinks && (sinks->ndim() != 1 || sinks->shape(0) != queries.shape(1))) {
    throw_invalid("[QuantizedKVCache] sinks must have shape (" + number(queries.shape(1)) +
                  ",), one per query head; got " + shape_string(sinks->shape()) + ".");
  }
  if (mask.mode != "" && mask.mode != "causal" && mask.mode != "array") {
    throw_invalid("[QuantizedKVCache] mask mode must be '', 'causal' or 'array'; got '" + mask.mode + "'.");
  }
  if (mask.mode == "array" && !mask.mask) {
    throw_invalid("[QuantizedKVCache] mask mode 'array' needs a mask array.");
  }
  store(keys, values);
  const int batch = queries.shape(0);
  const int n_q = queries.shape(1);
  const int length = queries.shape(2);
  const int n_kv = keys.shape(1);
  const int repeats = n_q / n_kv;
  const int total = offset_;
  // Scores over the whole buffer: its codes are contiguous, so the products read them in place; the slots past
  // `total` are masked out below (a sliced buffer would be copied to make it dense).
  const int capacity = keys_->codes.shape(2);

  // Query heads that share a key/value head become rows of one product: (B, N_kv, repeats * L, D).
  array q = multiply(astype(queries, float32), array(scale, float32));
  q = reshape(q, {batch, n_kv, repeats * length, queries.shape(3)});
  array scores = quantized_matmul(q, keys_->codes, keys_->scales, keys_->biases, true, group_size_, bits_);
  scores = reshape(scores, {batch, n_kv, repeats, length, capacity});

  const array key_pos = arange(0, capacity, int32);
  std::optional<array> allowed;
  if (mask.mode == "causal") {
    allowed = less_equal(key_pos, reshape(arange(total - length, total, int32), {length, 1}));
  } else if (capacity > total) {
    allowed = less(key_pos, array(total, int32));
  }
  if (mask.mode == "array") {
    if (mask.mask->dtype() == bool_) {
      array user = grouped_mask(*mask.mask, scores.shape(), n_q, total, array(false));
      allowed = allowed ? logical_and(*allowed, user) : user;
    } else {
      scores = add(scores, astype(grouped_mask(*mask.mask, scores.shape(), n_q, total, array(0.0F)), float32));
    }
  }
  if (allowed) {
    scores = where(*allowed, scores, array(-std::numeric_limits<float>::infinity(), float32));
  }
  array probs = [&] {
    if (!sinks) {
      return softmax(scores, -1, true);
    }
    // A sink is one more logit per query head that takes probability but has no value.
    const array sink =
        broadcast_to(reshape(astype(*sinks, float32), {1, n_kv, repeats, 1, 1}), {batch, n_kv, repeats, length, 1});
    const array with_sink = softmax(concatenate({sink, scores}, -1), -1, true);
    return slice(with_sink, {0, 0, 0, 0, 1}, with_sink.shape());
  }();
  probs = reshape(probs, {batch, n_kv, repeats * length, capacity});
  array out = quantized_matmul(probs, values_->codes, values_->scales, values_->biases, false, group_size_, bits_);
  out = reshape(out, {batch, n_q, length, out.shape(-1)});
  return astype(out, queries.dtype());
}

int QuantizedKVCache::trim(int n) {
  const int dropped = std::clamp(n, 0, offset_);
  offset_ -= dropped;
  return dropped;
}

std::vector<array> QuantizedKVCache::state() const {
  if (!keys_) {
    return {};
  }
  std::vector<array> out;
  for (const Quantized* q : {&*keys_, &*values_}) {
    out.push_back(first_slots(q->codes, offset_));
    out.push_back(first_slots(q->scales, offset_));
    out.push_back(first_slots(q->biases, offset_));
  }
  return out;
}

void QuantizedKVCache::set_state(const std::vector<array>& state, const std::vector<int>& meta_state) {
  if (meta_state.size() != 3) {
    throw_invalid("[QuantizedKVCache] meta state is {offset, group_size, bits}; got " +
                  number(static_cast<int>(meta_state.size())) + " numbers.");
  }
  const int offset = meta_state[0];
  const int group_size = meta_state[1];
  const int bits = meta_state[2];
  check_format(group_size, bits);
  if (state.empty()) {
    keys_.reset();
    values_.reset();
    offset_ = 0;
    group_size_ = group_size;
    bits_ = bits;
    return;
  }
  if (state.size() != 6) {
    throw_invalid("[QuantizedKVCache] a cache's state is the codes, scales and biases of its keys and values; got " +
                  number(static_cast<int>(state.size())) + " arrays.");
  }
  for (size_t first : {size_t{0}, size_t{3}}) {
    const array& codes = state[first];
    const array& scales = state[first + 1];
    const array& biases = state[first + 2];
    const bool consistent = codes.ndim() == 4 && codes.dtype() == uint32 && scales.shape() == biases.shape() &&
                            scales.ndim() == 4 && scales.shape(2) == codes.shape(2) &&
                            int64_t{codes.shape(3)} * 32 == int64_t{scales.shape(3)} * group_size * bits &&
                            offset >= 0 && codes.shape(2) >= offset && codes.shape(2) == state[0].shape(2);
    if (!consistent) {
      throw_invalid("[QuantizedKVCache] inconsistent state for offset " + number(offset) + ", group_size " +
                    number(group_size) + ", bits " + number(bits) + ": codes " + shape_string(codes.shape()) +
                    ", scales " + shape_string(scales.shape()) + ", biases " + shape_string(biases.shape()) + ".");
    }
  }
  group_size_ = group_size;
  bits_ = bits;
  offset_ = offset;
  keys_ = Quantized{state[0], state[1], state[2]};
  values_ = Quantized{state[3], state[4], state[5]};
}

}  // namespace nuvec::lm
