// The CPU side of element-wise chains (core/eval_chain.h): the chain's nodes run tile by tile, each through the
// per-run kernel cpu::unary or cpu::binary would use, an intermediate living in a per-thread tile buffer of its own
// dtype (so a 16-bit value is rounded where its node would have stored it). Only the last node writes memory.

#include <algorithm>
#include <cstddef>
#include <vector>

#include "nuvec/core/backend.h"
#include "nuvec/cpu/copy.h"
#include "nuvec/cpu/elementwise.h"
#include "nuvec/cpu/elementwise_range.h"
#include "nuvec/cpu/scratch.h"

namespace nuvec::detail {

namespace {

/// Bytes of the largest value of a tile: a tile buffer stays in L2 and the last node's tile is one streaming run.
constexpr int64_t tile_bytes = cpu::streaming_run_bytes;

/// An operand: a leaf (a computed input) or an earlier step.
struct Operand {
  bool step;
  int index;
};

struct Step {
  const Primitive* primitive;
  Dtype in;
  Dtype out;
  std::vector<Operand> operands;
  int slot;  // the tile buffer it writes; -1 for the last step, which writes the output
};

struct Leaf {
  const array* source;
  const std::byte* data;  // read before a donation moves the buffer
  int64_t stride;         // 1, or 0 for one value broadcast everywhere
};

int find(const std::vector<array>& arrays, size_t count, const array& a) {
  for (size_t i = 0; i < count; ++i) {
    if (arrays[i].id() == a.id()) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace

bool eval_chain_cpu(const std::vector<array>& nodes) {
  array out = nodes.back();
  const auto n = static_cast<int64_t>(out.size());
  std::vector<Leaf> leaves;
  std::vector<Step> steps;
  std::vector<int> free_slots;
  int slots = 0;
  size_t item = 1;
  for (size_t s = 0; s < nodes.size(); ++s) {
    const auto& inputs = nodes[s].inputs();
    Step step{&nodes[s].primitive(), inputs[0].dtype(), nodes[s].dtype(), {}, -1};
    for (const auto& in : inputs) {
      if (const int j = find(nodes, s, in); j >= 0) {
        step.operands.push_back({true, j});
        continue;
      }
      // Leaves are read in flat runs: row-contiguous over the whole output, or one broadcast value.
      const bool broadcast = cpu::is_broadcast_value(in, out);
      if (!broadcast && !(in.flags().row_contiguous && static_cast<int64_t>(in.data_size()) == n)) {
        return false;
      }
      auto leaf = std::find_if(leaves.begin(), leaves.end(), [&](const Leaf& l) { return l.source->id() == in.id(); });
      if (leaf == leaves.end()) {
        leaves.push_back({&in, static_cast<const std::byte*>(in.raw_data()), broadcast ? 0 : 1});
        leaf = leaves.end() - 1;
      }
      step.operands.push_back({false, static_cast<int>(leaf - leaves.begin())});
    }
    item = std::max<size_t>({item, size_of(step.in), size_of(step.out)});
    if (s + 1 < nodes.size()) {
      // A fresh buffer before the operands' are given back: no step writes over what it reads.
      if (free_slots.empty()) {
        step.slot = slots++;
      } else {
        step.slot = free_slots.back();
        free_slots.pop_back();
      }
    }
    for (size_t k = 0; k < step.operands.size(); ++k) {
      const Operand o = step.operands[k];
      const bool first_use = std::none_of(step.operands.begin(), step.operands.begin() + static_cast<int64_t>(k),
                                          [&](Operand p) { return p.step && p.index == o.index; });
      if (o.step && first_use) {
        free_slots.push_back(steps[o.index].slot);
      }
    }
    steps.push_back(std::move(step));
  }

  // A leaf only this chain holds may give the output its buffer: every step reads an element before the last one
  // writes it.
  auto donor =
      std::find_if(leaves.begin(), leaves.end(), [&](const Leaf& l) { return cpu::donatable_to(*l.source, out); });
  if (donor != leaves.end()) {
    cpu::allocate_or_donate(out, *donor->source);
  } else {
    out.set_data(allocator::malloc(out.nbytes()));
  }
  if (n == 0) {
    return true;
  }
  auto* output = static_cast<std::byte*>(out.raw_data());
  const bool stream = out.nbytes() >= cpu::streaming_bytes;
  const int64_t tile = tile_bytes / static_cast<int64_t>(item);
  const auto tiles = static_cast<size_t>((n + tile - 1) / tile);
  const size_t slot_bytes = static_cast<size_t>(tile) * item;
  const size_t grain = std::max<size_t>(1, cpu::elementwise_grain / static_cast<size_t>(tile));
  cpu::parallel_for(tiles, grain, [&](size_t begin, size_t end) {
    cpu::Scratch scratch(static_cast<size_t>(slots) * slot_bytes);
    auto* buffers = static_cast<std::byte*>(scratch.get());
    for (size_t t = begin; t < end; ++t) {
      const int64_t first = static_cast<int64_t>(t) * tile;
      const int64_t m = std::min(tile, n - first);
      auto operand = [&](Operand o) -> cpu::RawRun {
        if (o.step) {
          return {buffers + static_cast<size_t>(steps[o.index].slot) * slot_bytes, 1};
        }
        const Leaf& l = leaves[o.index];
        return {l.data + first * l.stride * size_of(l.source->dtype()), l.stride};
      };
      for (const auto& step : steps) {
        const bool last = step.slot < 0;
        void* dst = last ? output + first * size_of(step.out) : buffers + static_cast<size_t>(step.slot) * slot_bytes;
        if (step.operands.size() == 1) {
          cpu::unary_range(*step.primitive, step.in, step.out, dst, m, operand(step.operands[0]), stream && last);
        } else {
          cpu::binary_range(*step.primitive, step.in, step.out, dst, m, operand(step.operands[0]),
                            operand(step.operands[1]), stream && last);
        }
      }
    }
  });
  return true;
}

}  // namespace nuvec::detail
