#include "nuvec/lm/models/gguf_convert.h"

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>
#include <vector>

#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/io/blob.h"
#include "nuvec/lm/models/gguf_model.h"

namespace nuvec::lm::detail {

namespace {

/// a[begin:end] along axis (offsets within one tensor's axis, so within int).
array cut(const array& a, int axis, int64_t begin, int64_t end) {
  return nuvec::detail::slice_axis(a, axis, static_cast<int>(begin), static_cast<int>(end), {});
}

/// Repacked blocks by (tensor, axis, first and end value or row): the codes, scales and biases of one run are
/// repacked once for the three weights.
using Repacked = std::map<std::tuple<const GGUFBlocks*, int, int64_t, int64_t>, std::vector<array>>;

// Along the last axis a conversion counts values (what a code, scale or element stands for); its parts come in whole
// blocks.

/// Values in `units` of the converted weight (codes of `c.bits` in 32-bit words, or scales).
int64_t values_in(const GGUFConversion& c, int64_t units) {
  if (!c.packed) {
    return units;
  }
  return c.part == 0 ? units * 32 / c.bits : units * c.group;
}

/// The converted weight's units holding `values`; with `stored`, the stored tensor's (codes of `c.stored_bits`).
int64_t units_of(const GGUFConversion& c, int64_t values, bool stored = false) {
  if (!c.packed) {
    return values;
  }
  return c.part == 0 ? values * (stored ? c.stored_bits : c.bits) / 32 : values / c.group;
}

/// The values a run must start and end at: whole blocks, or whole words of codes.
int64_t grain_of(const GGUFConversion& c) {
  if (c.blocks) {
    return static_cast<int64_t>(c.blocks->info->block_elems);
  }
  if (!c.packed) {
    return 1;
  }
  return c.part == 0 ? 32 : c.group;
}

/// The converted weight over [begin, end) of `axis` (values along the last axis, else rows), or whole for axis -1.
array convert_run(const GGUFConversion& c, int axis, int64_t begin, int64_t end, Repacked& repacked) {
  array piece = c.stored;
  const int last = c.blocks ? static_cast<int>(c.blocks->shape.size()) - 1 : c.stored.ndim() - 1;
  if (c.blocks) {
    const GGUFBlocks& b = *c.blocks;
    auto [it, fresh] = repacked.try_emplace({&b, axis, begin, end});
    if (fresh) {
      array raw = b.blocks;
      Shape shape = b.shape;
      if (axis == last) {
        // Whole blocks: the grain of a run is a block.
        const auto elems = static_cast<int64_t>(b.info->block_elems);
        const auto bytes = static_cast<int64_t>(b.info->block_bytes);
        raw = cut(raw, axis, begin / elems * bytes, end / elems * bytes);
      } else if (axis >= 0) {
        raw = cut(raw, axis, begin, end);
      }
      if (axis >= 0) {
        shape[axis] = static_cast<int32_t>(end - begin);
      }
      raw = contiguous(raw);
      raw.eval();
      it->second = io::detail::pack_blocks(*b.info, raw.data<uint8_t>(), shape);
    }
    piece = it->second[static_cast<size_t>(c.part)];
  } else if (axis == last) {
    piece = cut(piece, axis, units_of(c, begin, true), units_of(c, end, true));
  } else if (axis >= 0) {
    piece = cut(piece, axis, begin, end);
  }
  if (c.packed && c.part == 0 && c.stored_bits != c.bits) {
    piece = widen_codes(piece, c.stored_bits, c.bits);
  }
  if (c.heads > 0) {
    // A run of rows is whole heads (convert_region widens it to them).
    const int rows = c.blocks ? c.blocks->shape[0] : c.stored.shape(0);
    piece = unpermute_rope_rows(piece, axis == 0 ? static_cast<int>(c.heads * (end - begin) / rows) : c.heads);
  }
  if (c.minus_one) {
    piece = subtract(astype(piece, float32), array(1.0F));
  }
  return piece;
}

/// The converted weight (of `shape`, whole) cut to `region`: each run converted from its whole blocks or heads, then
/// cut exactly.
array convert_region(const GGUFConversion& c, const Shape& shape, const WeightRegion& region, Repacked& repacked) {
  const int axis = region.axis;
  const bool last = axis == static_cast<int>(shape.size()) - 1;
  std::vector<array> pieces;
  for (const auto& [begin, end] : region.ranges) {
    int64_t from = begin;
    int64_t to = end;
    int64_t grain = 1;
    int64_t limit = shape[axis];
    if (last) {
      from = values_in(c, begin);
      to = values_in(c, end);
      grain = grain_of(c);
      limit = values_in(c, shape[axis]);
    } else if (axis == 0 && c.heads > 0) {
      grain = shape[0] / c.heads;
    }
    const int64_t run_begin = from / grain * grain;
    const int64_t run_end = std::min(limit, (to + grain - 1) / grain * grain);
    array piece = convert_run(c, axis, run_begin, run_end, repacked);
    if (run_begin == from && run_end == to) {
      pieces.push_back(piece);
    } else {
      pieces.push_back(last ? cut(piece, axis, units_of(c, from - run_begin), units_of(c, to - run_begin))
                            : cut(piece, axis, from - run_begin, to - run_begin));
    }
  }
  return contiguous(pieces.size() == 1 ? pieces[0] : concatenate(pieces, axis));
}

}  // namespace

array widen_codes(const array& packed, int bits, int wider) {
  array w = contiguous(packed);
  w.eval();
  const int64_t words = w.shape(-1);
  const int64_t rows = static_cast<int64_t>(w.size()) / words;
  const int64_t count = words * 32 / bits;
  const int64_t wide_words = count * wider / 32;
  Shape shape = w.shape();
  shape.back() = static_cast<int32_t>(wide_words);
  array out = io::detail::allocate(shape, uint32);
  auto* dst = static_cast<uint32_t*>(out.raw_data());
  std::fill_n(dst, rows * wide_words, 0U);
  const auto* src = w.data<uint32_t>();
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  for (int64_t r = 0; r < rows; ++r) {
    const uint32_t* in = src + r * words;
    uint32_t* row = dst + r * wide_words;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t bit = i * bits;
      uint64_t window = in[bit / 32];
      if (bit % 32 + bits > 32) {
        window |= uint64_t{in[bit / 32 + 1]} << 32;
      }
      const auto code = static_cast<uint32_t>((window >> (bit % 32)) & mask);
      row[i * wider / 32] |= code << (i * wider % 32);
    }
  }
  return out;
}

void convert_gguf_weights(std::unordered_map<std::string, array>& weights,
                          const std::unordered_map<std::string, GGUFConversion>& conversions, const LoadPlan& plan) {
  // The codes, scales and biases of one tensor one after the other, so that its blocks are repacked once and the
  // repacked runs freed before the next tensor's.
  std::vector<std::pair<const GGUFBlocks*, std::string>> order;
  for (const auto& [name, value] : weights) {
    if (auto c = conversions.find(name); c != conversions.end()) {
      order.emplace_back(c->second.blocks.get(), name);
    }
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::less<>()(a.first, b.first) || (a.first == b.first && a.second < b.second);
  });
  Repacked repacked;
  const GGUFBlocks* previous = nullptr;
  for (const auto& [blocks, name] : order) {
    if (blocks != previous) {
      repacked.clear();
      previous = blocks;
    }
    const GGUFConversion& c = conversions.at(name);
    array& value = weights.at(name);
    const WeightRegion* region = plan.region(name);
    value =
        region != nullptr ? convert_region(c, value.shape(), *region, repacked) : convert_run(c, -1, 0, 0, repacked);
    value.eval();
  }
}

}  // namespace nuvec::lm::detail
