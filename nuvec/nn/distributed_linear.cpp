#include "nuvec/nn/distributed_linear.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nuvec/core/op_prefix.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/quantization_mode.h"
#include "nuvec/core/random.h"
#include "nuvec/core/transforms.h"
#include "nuvec/distributed/ops.h"

namespace nuvec::nn {

namespace {

distributed::Group resolve(const std::optional<distributed::Group>& group) {
  return group ? *group : distributed::detail::default_group();
}

std::string list_text(const std::vector<int>& values) {
  std::string out = "(";
  for (size_t i = 0; i < values.size(); ++i) {
    out.append(i == 0 ? "" : ", ").append(std::to_string(values[i]));
  }
  return out.append(")");
}

/// dim split as evenly as possible into n multiples of `block`, the remainder going to the first ranks.
std::vector<int> even_sizes(int dim, int n, int block = 1) {
  const int base = dim / block / n;
  const int extra = dim / block % n;
  std::vector<int> sizes;
  for (int r = 0; r < n; ++r) {
    sizes.push_back((base + (r < extra ? 1 : 0)) * block);
  }
  return sizes;
}

/// A quantized layer's rows split in multiples of `block` when there are enough blocks, so that the paired
/// sharded-to-all layer's columns (which must be) split at the same features.
std::vector<int> quantized_row_sizes(int dim, int n, int block) {
  return dim % block == 0 && dim / block >= n ? even_sizes(dim, n, block) : even_sizes(dim, n);
}

/// `sizes` (or the even split) after checking that they give every rank a positive multiple of `block` and sum to
/// dim.
std::vector<int> checked_sizes(const std::string& layer, int dim, int n, const RankSizes& sizes,
                               const std::string& what, int block = 1) {
  std::vector<int> s = sizes ? *sizes : even_sizes(dim, n, block);
  int total = 0;
  for (int v : s) {
    total += v;
  }
  if (static_cast<int>(s.size()) != n || total != dim) {
    throw_invalid(nuvec::detail::op_prefix(layer) + "expected " + std::to_string(n) + " sizes that sum to the " + what +
                  " size " + std::to_string(dim) + "; given " + list_text(s) + ".");
  }
  if (*std::min_element(s.begin(), s.end()) <= 0) {
    throw_invalid(nuvec::detail::op_prefix(layer) + "cannot shard the " + what + " size " + std::to_string(dim) +
                  " across " + std::to_string(n) + " ranks; sizes " + list_text(s) + ".");
  }
  if (std::any_of(s.begin(), s.end(), [block](int v) { return v % block != 0; })) {
    throw_invalid(nuvec::detail::op_prefix(layer) + "the sizes " + list_text(s) + " must be multiples of " +
                  std::to_string(block) + ".");
  }
  return s;
}

bool single(const Segments& segments) {
  const int* count = std::get_if<int>(&segments);
  return count != nullptr ? *count == 1 : std::get<std::vector<double>>(segments).empty();
}

/// Each rank's features of a layer of `dim` along its sharded side, and the sizes its parameters are cut with
/// (none: each segment cut evenly).
struct LayerSizes {
  std::vector<int> per_rank;
  RankSizes cut;
};

LayerSizes layer_sizes(const std::string& layer, int dim, int n, const Segments& segments, const RankSizes& sizes,
                       const std::vector<int>& fallback, const std::string& what, int block = 1) {
  if (single(segments)) {
    auto s = checked_sizes(layer, dim, n, sizes ? sizes : RankSizes(fallback), what, block);
    return {s, s};
  }
  if (sizes) {
    throw_invalid(nuvec::detail::op_prefix(layer) + "explicit sizes need a single segment.");
  }
  if (dim % n != 0) {
    throw_invalid(nuvec::detail::op_prefix(layer) + "cannot shard the " + what + " size " + std::to_string(dim) +
                  " of a fused weight across " + std::to_string(n) + " ranks.");
  }
  return {std::vector<int>(static_cast<size_t>(n), dim / n), std::nullopt};
}

/// The boundaries of the segments of an axis of `dim`: 0, where each later part begins, dim.
std::vector<int> segment_bounds(int dim, const Segments& segments, const std::string& path) {
  std::vector<int> bounds{0};
  if (const int* count = std::get_if<int>(&segments)) {
    if (*count <= 0 || dim % *count != 0) {
      throw_invalid("[shard] " + path + ": cannot split an axis of " + std::to_string(dim) + " into " +
                    std::to_string(*count) + " equal segments.");
    }
    for (int i = 1; i < *count; ++i) {
      bounds.push_back(dim / *count * i);
    }
  } else {
    for (double f : std::get<std::vector<double>>(segments)) {
      const int at = static_cast<int>(std::lround(f * dim));
      if (at <= bounds.back() || at >= dim) {
        throw_invalid("[shard] " + path + ": segment fractions must increase inside (0, 1); given " +
                      std::to_string(f) + " after a boundary at " + std::to_string(bounds.back()) + " of " +
                      std::to_string(dim) + ".");
      }
      bounds.push_back(at);
    }
  }
  bounds.push_back(dim);
  return bounds;
}

/// This rank's slice of `value` along `axis`: cut by `sizes` (which may count other units than the axis's
/// elements, as a packed weight's features do: the axis is split at the same proportions), or each segment cut
/// evenly.
array shard_value(const array& value, int axis, const Segments& segments, const RankSizes& sizes, int rank, int n,
                  const std::string& path) {
  const int ndim = value.ndim();
  if (axis < -ndim || axis >= ndim) {
    throw_invalid("[shard] " + path + ": axis " + std::to_string(axis) + " is out of range for shape " +
                  shape_string(value.shape()) + ".");
  }
  axis = axis < 0 ? axis + ndim : axis;
  const int dim = value.shape(axis);
  RankSizes cut = sizes;
  if (!cut && single(segments)) {
    cut = even_sizes(dim, n);
    if (cut->back() <= 0) {
      throw_invalid("[shard] " + path + ": cannot shard an axis of " + std::to_string(dim) + " across " +
                    std::to_string(n) + " ranks.");
    }
  }
  if (cut) {
    int64_t total = 0;
    int64_t before = 0;
    for (int r = 0; r < n; ++r) {
      before += r < rank ? (*cut)[r] : 0;
      total += (*cut)[r];
    }
    const int64_t after = before + (*cut)[rank];
    if (before * dim % total != 0 || after * dim % total != 0) {
      throw_invalid("[shard] " + path + ": cannot split an axis of " + std::to_string(dim) + " by sizes " +
                    list_text(*cut) + ".");
    }
    return contiguous(nuvec::detail::slice_axis(value, axis, static_cast<int>(before * dim / total),
                                                static_cast<int>(after * dim / total), {}));
  }
  const std::vector<int> bounds = segment_bounds(dim, segments, path);
  std::vector<array> parts;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    const int length = bounds[i + 1] - bounds[i];
    if (length % n != 0) {
      throw_invalid("[shard] " + path + ": a segment of " + std::to_string(length) + " cannot be split across " +
                    std::to_string(n) + " ranks.");
    }
    parts.push_back(
        nuvec::detail::slice_axis(value, axis, bounds[i] + rank * length / n, bounds[i] + (rank + 1) * length / n, {}));
  }
  return contiguous(concatenate(parts, axis));
}

/// The split of a linear layer's parameters (MLX's predicates): all-to-sharded cuts rows (axis ndim - 2) and
/// biases; sharded-to-all cuts the last axis and leaves biases whole.
ShardingPredicate linear_predicate(Sharding sharding, const Segments& segments) {
  return [sharding, segments](const std::string& path, const array& value) -> std::optional<std::pair<int, Segments>> {
    const bool is_bias = path == "bias" || path.ends_with(".bias");
    switch (sharding) {
      case Sharding::all_to_sharded:
        return std::make_pair(is_bias ? -1 : std::max(value.ndim() - 2, 0), segments);
      case Sharding::sharded_to_all:
        if (is_bias) {
          return std::nullopt;
        }
        return std::make_pair(-1, segments);
    }
    return std::nullopt;
  };
}

/// `params` with every entry that `predicate` names replaced by this rank's slice, the others as they are;
/// `cut_of` gives the sizes to cut an entry with (none: even, or by segments).
Params shard_params(const Params& params, const ShardingPredicate& predicate, const distributed::Group& group,
                    const std::function<RankSizes(const std::string&)>& cut_of) {
  Params out;
  for (const auto& [path, value] : params) {
    const auto spec = predicate(path, value);
    out.emplace_back(
        path,
        spec ? shard_value(value, spec->first, spec->second, cut_of(path), group.rank(), group.size(), path) : value);
  }
  return out;
}

/// The features a quantized layer's shares must be multiples of: group_size, or the block of a block format.
int feature_block(int group_size, const std::string& mode) {
  const auto parsed = parse_quantization_mode(mode);
  return parsed && is_block_format(*parsed) ? block_layout(*parsed).values : group_size;
}

/// The plain layout of a layout that keeps rows in groups ("q4_0" for "q4_0x8", "q6_k" for "q6_kx16"), whose rows
/// and features cut as its blocks do; none for the other modes.
std::optional<std::string> plain_layout(const std::string& mode) {
  const auto parsed = parse_quantization_mode(mode);
  if (!parsed || block_rows(*parsed) <= 1) {
    return std::nullopt;
  }
  return std::string(mode_name(nuvec::plain_layout(*parsed)));
}

/// Puts a layer cut in the plain layout back into `grouped` where its rows still come in whole groups.
void regroup(QuantizedLinear& layer, const std::string& grouped) {
  if (layer.weight.shape(0) % block_rows(*parse_quantization_mode(grouped)) == 0) {
    layer.repack(grouped);
  }
}

/// The group and the checked shares of a layer's output (rows), by default as even as possible in multiples of
/// `row_block` where there are enough of them.
detail::RankSplit output_split(const std::string& layer, int dim, const std::optional<distributed::Group>& group,
                               const RankSizes& sizes, int row_block = 1) {
  distributed::Group g = resolve(group);
  auto s = checked_sizes(layer, dim, g.size(), sizes ? sizes : RankSizes(quantized_row_sizes(dim, g.size(), row_block)),
                         "output");
  return {std::move(g), std::move(s)};
}

/// The group and the checked shares of a layer's input (columns), multiples of `block`.
detail::RankSplit input_split(const std::string& layer, int dim, const std::optional<distributed::Group>& group,
                              const RankSizes& sizes, int block = 1) {
  distributed::Group g = resolve(group);
  auto s = checked_sizes(layer, dim, g.size(), sizes, "input", block);
  return {std::move(g), std::move(s)};
}

}  // namespace

array sum_gradients(const array& x, const distributed::Group& group) {
  if (group.size() == 1) {
    return x;
  }
  const Function f = custom_vjp([](const std::vector<array>& in) -> std::vector<array> { return {in[0]}; },
                                [group](const std::vector<array>&, const std::vector<array>& cotangents,
                                        const std::vector<array>&) -> std::vector<array> {
                                  return {distributed::all_sum(cotangents[0], group)};
                                });
  return f({x})[0];
}

// ---------------------------------------------------------------- float layers

AllToShardedLinear::AllToShardedLinear(int input_dims, int output_dims, bool bias,
                                       std::optional<distributed::Group> group, const RankSizes& sizes)
    : AllToShardedLinear(input_dims, output_dims, bias, output_split("AllToShardedLinear", output_dims, group, sizes)) {
}

AllToShardedLinear::AllToShardedLinear(int input_dims, int output_dims, bool bias, detail::RankSplit split)
    : Linear(input_dims, split.sizes[split.group.rank()], bias),
      group_(std::move(split.group)),
      sizes_(std::move(split.sizes)),
      total_output_dims_(output_dims) {}

std::shared_ptr<AllToShardedLinear> AllToShardedLinear::from_linear(const Linear& linear, const Segments& segments,
                                                                    std::optional<distributed::Group> group,
                                                                    const RankSizes& sizes) {
  const distributed::Group g = resolve(group);
  const int out = linear.output_dims();
  const LayerSizes s =
      layer_sizes("AllToShardedLinear", out, g.size(), segments, sizes, even_sizes(out, g.size()), "output");
  auto layer = std::make_shared<AllToShardedLinear>(linear.input_dims(), out, linear.bias.has_value(), g, s.per_rank);
  layer->update(shard_params(linear.parameters(), linear_predicate(Sharding::all_to_sharded, segments), g,
                             [&](const std::string&) { return s.cut; }));
  return layer;
}

array AllToShardedLinear::forward(const array& x) {
  check_input(x, 1, input_dims_);
  return affine(sum_gradients(x, group_), true);
}

std::shared_ptr<Linear> AllToShardedLinear::to_quantized(int group_size, int bits, const std::string& mode) const {
  // This rank's rows quantized are this rank's rows of the quantized layer.
  auto layer = std::make_shared<QuantizedAllToShardedLinear>(input_dims_, total_output_dims_, bias.has_value(),
                                                             group_size, bits, mode, group_, sizes_);
  layer->update(QuantizedLinear(*this, group_size, bits, mode).parameters());
  return layer;
}

ShardedToAllLinear::ShardedToAllLinear(int input_dims, int output_dims, bool bias,
                                       std::optional<distributed::Group> group, const RankSizes& sizes)
    : ShardedToAllLinear(input_dims, output_dims, bias, input_split("ShardedToAllLinear", input_dims, group, sizes)) {}

ShardedToAllLinear::ShardedToAllLinear(int input_dims, int output_dims, bool bias, detail::RankSplit split)
    : Linear(split.sizes[split.group.rank()], output_dims, bias),
      group_(std::move(split.group)),
      sizes_(std::move(split.sizes)),
      total_input_dims_(input_dims) {
  // Drawn with the whole layer's bound, as the unsharded layer's.
  const double scale = 1.0 / std::sqrt(input_dims);
  weight = random::uniform(-scale, scale, weight.shape());
  if (this->bias) {
    this->bias = random::uniform(-scale, scale, {output_dims});
  }
}

std::shared_ptr<ShardedToAllLinear> ShardedToAllLinear::from_linear(const Linear& linear, const Segments& segments,
                                                                    std::optional<distributed::Group> group,
                                                                    const RankSizes& sizes) {
  const distributed::Group g = resolve(group);
  const int in = linear.input_dims();
  const LayerSizes s =
      layer_sizes("ShardedToAllLinear", in, g.size(), segments, sizes, even_sizes(in, g.size()), "input");
  auto layer = std::make_shared<ShardedToAllLinear>(in, linear.output_dims(), linear.bias.has_value(), g, s.per_rank);
  layer->update(shard_params(linear.parameters(), linear_predicate(Sharding::sharded_to_all, segments), g,
                             [&](const std::string&) { return s.cut; }));
  return layer;
}

array ShardedToAllLinear::forward(const array& x) {
  check_input(x, 1, input_dims_);
  const array y = distributed::all_sum(affine(x, false), group_);
  return bias ? y + *bias : y;
}

std::shared_ptr<Linear> ShardedToAllLinear::to_quantized(int group_size, int bits, const std::string& mode) const {
  // This rank's columns quantized are this rank's columns of the quantized layer when they are whole groups.
  auto layer = std::make_shared<QuantizedShardedToAllLinear>(total_input_dims_, output_dims_, bias.has_value(),
                                                             group_size, bits, mode, group_, sizes_);
  layer->update(QuantizedLinear(*this, group_size, bits, mode).parameters());
  return layer;
}

// ---------------------------------------------------------------- quantized layers

QuantizedAllToShardedLinear::QuantizedAllToShardedLinear(int input_dims, int output_dims, bool bias, int group_size,
                                                         int bits, const std::string& mode,
                                                         std::optional<distributed::Group> group,
                                                         const RankSizes& sizes)
    : QuantizedAllToShardedLinear(
          input_dims, output_dims, bias, group_size, bits, mode,
          output_split("QuantizedAllToShardedLinear", output_dims, group, sizes, feature_block(group_size, mode))) {}

QuantizedAllToShardedLinear::QuantizedAllToShardedLinear(int input_dims, int output_dims, bool bias, int group_size,
                                                         int bits, const std::string& mode, detail::RankSplit split)
    : QuantizedLinear(input_dims, split.sizes[split.group.rank()], bias, group_size, bits, mode),
      group_(std::move(split.group)),
      sizes_(std::move(split.sizes)),
      total_output_dims_(output_dims) {}

std::shared_ptr<QuantizedAllToShardedLinear> QuantizedAllToShardedLinear::from_quantized_linear(
    const QuantizedLinear& linear, const Segments& segments, std::optional<distributed::Group> group,
    const RankSizes& sizes) {
  const distributed::Group g = resolve(group);
  const int out = linear.output_dims();
  const int block = feature_block(linear.group_size(), linear.mode());
  const LayerSizes s = layer_sizes("QuantizedAllToShardedLinear", out, g.size(), segments, sizes,
                                   quantized_row_sizes(out, g.size(), block), "output");
  auto layer =
      std::make_shared<QuantizedAllToShardedLinear>(linear.input_dims(), out, linear.bias.has_value(),
                                                    linear.group_size(), linear.bits(), linear.mode(), g, s.per_rank);
  layer->update(shard_params(linear.parameters(), linear_predicate(Sharding::all_to_sharded, segments), g,
                             [&](const std::string&) { return s.cut; }));
  return layer;
}

array QuantizedAllToShardedLinear::forward(const array& x) {
  check_input(x, 1, input_dims_);
  const array y = product(sum_gradients(x, group_));
  return bias ? y + *bias : y;
}

QuantizedShardedToAllLinear::QuantizedShardedToAllLinear(int input_dims, int output_dims, bool bias, int group_size,
                                                         int bits, const std::string& mode,
                                                         std::optional<distributed::Group> group,
                                                         const RankSizes& sizes)
    : QuantizedShardedToAllLinear(
          input_dims, output_dims, bias, group_size, bits, mode,
          input_split("QuantizedShardedToAllLinear", input_dims, group, sizes, feature_block(group_size, mode))) {}

QuantizedShardedToAllLinear::QuantizedShardedToAllLinear(int input_dims, int output_dims, bool bias, int group_size,
                                                         int bits, const std::string& mode, detail::RankSplit split)
    : QuantizedLinear(split.sizes[split.group.rank()], output_dims, bias, group_size, bits, mode),
      group_(std::move(split.group)),
      sizes_(std::move(split.sizes)),
      total_input_dims_(input_dims) {}

std::shared_ptr<QuantizedShardedToAllLinear> QuantizedShardedToAllLinear::from_quantized_linear(
    const QuantizedLinear& linear, const Segments& segments, std::optional<distributed::Group> group,
    const RankSizes& sizes) {
  const distributed::Group g = resolve(group);
  const int in = linear.input_dims();
  const int block = feature_block(linear.group_size(), linear.mode());
  const LayerSizes s = layer_sizes("QuantizedShardedToAllLinear", in, g.size(), segments, sizes,
                                   even_sizes(in, g.size(), block), "input", block);
  auto layer =
      std::make_shared<QuantizedShardedToAllLinear>(in, linear.output_dims(), linear.bias.has_value(),
                                                    linear.group_size(), linear.bits(), linear.mode(), g, s.per_rank);
  // The packed weight, scales and biases are cut at the same features: sizes count features, not elements.
  layer->update(shard_params(linear.parameters(), linear_predicate(Sharding::sharded_to_all, segments), g,
                             [&](const std::string&) { return s.cut; }));
  return layer;
}

array QuantizedShardedToAllLinear::forward(const array& x) {
  check_input(x, 1, input_dims_);
  const array y = distributed::all_sum(product(x), group_);
  return bias ? y + *bias : y;
}

// ---------------------------------------------------------------- sharding existing modules

std::shared_ptr<Linear> shard_linear(const Linear& linear, Sharding sharding, const Segments& segments,
                                     std::optional<distributed::Group> group, const RankSizes& sizes) {
  const auto* quantized = dynamic_cast<const QuantizedLinear*>(&linear);
  if (const auto plain = quantized != nullptr ? plain_layout(quantized->mode()) : std::nullopt) {
    QuantizedLinear copy(quantized->input_dims(), quantized->output_dims(), quantized->bias.has_value(),
                         quantized->group_size(), quantized->bits(), quantized->mode());
    copy.update(quantized->parameters());
    copy.repack(*plain);
    std::shared_ptr<Linear> sharded = shard_linear(copy, sharding, segments, std::move(group), sizes);
    regroup(dynamic_cast<QuantizedLinear&>(*sharded), quantized->mode());
    return sharded;
  }
  switch (sharding) {
    case Sharding::all_to_sharded:
      if (quantized != nullptr) {
        return QuantizedAllToShardedLinear::from_quantized_linear(*quantized, segments, group, sizes);
      }
      return AllToShardedLinear::from_linear(linear, segments, group, sizes);
    case Sharding::sharded_to_all:
      if (quantized != nullptr) {
        return QuantizedShardedToAllLinear::from_quantized_linear(*quantized, segments, group, sizes);
      }
      return ShardedToAllLinear::from_linear(linear, segments, group, sizes);
  }
  throw_invalid("[shard_linear] unknown sharding.");
}

void shard_inplace(Module& module, const ShardingPredicate& predicate, std::optional<distributed::Group> group) {
  const distributed::Group g = resolve(group);
  // Layers whose rows are grouped are cut in their plain layout, then grouped again.
  std::vector<std::pair<QuantizedLinear*, std::string>> grouped;
  for (const auto& [path, m] : module.modules()) {
    auto* q = dynamic_cast<QuantizedLinear*>(m);
    if (const auto plain = q != nullptr ? plain_layout(q->mode()) : std::nullopt) {
      grouped.emplace_back(q, q->mode());
      q->repack(*plain);
    }
  }
  // Quantized modules by path: the block their features go in, and the features along the weight's last axis.
  std::map<std::string, std::pair<int, int>> quantized;
  for (const auto& [path, m] : module.modules()) {
    if (const auto* q = dynamic_cast<const QuantizedLinear*>(m)) {
      quantized.emplace(path, std::make_pair(feature_block(q->group_size(), q->mode()), q->input_dims()));
    } else if (const auto* e = dynamic_cast<const QuantizedEmbedding*>(m)) {
      quantized.emplace(path, std::make_pair(feature_block(e->group_size(), e->mode()), e->dims()));
    }
  }
  const auto owner_of = [](const std::string& path) {
    const auto dot = path.rfind('.');
    return dot == std::string::npos ? std::string() : path.substr(0, dot);
  };
  // A quantized module's packed weight, scales and biases are all cut by the sizes of its weight's features.
  const Params params = module.parameters();
  std::map<std::string, std::vector<int>> cuts;
  for (const auto& [path, value] : params) {
    const std::string owner = owner_of(path);
    const auto found = quantized.find(owner);
    if (found == quantized.end() || path.substr(owner.empty() ? 0 : owner.size() + 1) != "weight") {
      continue;
    }
    const auto spec = predicate(path, value);
    if (!spec || !single(spec->second)) {
      continue;
    }
    const auto [block, features] = found->second;
    const int axis = spec->first < 0 ? spec->first + value.ndim() : spec->first;
    const bool last = axis == value.ndim() - 1;
    const int dim = last ? features : value.shape(axis);
    std::vector<int> sizes = last ? even_sizes(dim, g.size(), block) : quantized_row_sizes(dim, g.size(), block);
    if (*std::min_element(sizes.begin(), sizes.end()) <= 0) {
      throw_invalid("[shard] cannot shard the quantized " + (owner.empty() ? std::string("module") : owner) + " of " +
                    std::to_string(dim) + " features across " + std::to_string(g.size()) + " ranks.");
    }
    cuts.emplace(owner, std::move(sizes));
  }
  module.update(shard_params(params, predicate, g, [&](const std::string& path) -> RankSizes {
    const auto found = cuts.find(owner_of(path));
    return found == cuts.end() ? RankSizes() : RankSizes(found->second);
  }));
  for (const auto& [layer, mode] : grouped) {
    regroup(*layer, mode);
  }
}

void shard_inplace(Module& module, Sharding sharding, const Segments& segments,
                   std::optional<distributed::Group> group) {
  shard_inplace(module, linear_predicate(sharding, segments), std::move(group));
}

}  // namespace nuvec::nn
