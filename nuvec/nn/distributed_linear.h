#pragma once

// Tensor-parallel linear layers (MLX's nn.AllToShardedLinear, ShardedToAllLinear and their quantized forms), and
// shard_linear / shard_inplace, which cut an existing layer's parameters into this rank's slice.
//
// An all-to-sharded layer holds a slice of the output features: it takes the whole input and gives this rank's
// slice of the output; its backward pass sums the input's gradient over the group. A sharded-to-all layer holds a
// slice of the input features: it takes this rank's slice of the input, and the sum of the partial products over
// the group gives every rank the whole output. A pair (an MLP's up projection all-to-sharded, its down projection
// sharded-to-all) costs one all_sum forward and one backward.
//
// Each layer is a Linear (a QuantizedLinear for the quantized forms), so it fits any member declared with the float
// type; its input_dims() and output_dims() are the sizes this rank's forward takes and gives.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "nuvec/distributed/distributed.h"
#include "nuvec/nn/quantized.h"

namespace nuvec::nn {

/// Which side of a layer is split across the group: the output features (all-to-sharded) or the input features
/// (sharded-to-all).
enum class Sharding { all_to_sharded, sharded_to_all };

/// How a fused weight is made of parts along the sharded axis, each part split across the group on its own: a
/// count of equal parts (3 for a fused q|k|v of equal sizes), or the fractions of the axis at which the second and
/// later parts begin, rounded to the nearest index (std::vector<double>{0.5, 0.75} for queries twice the size of
/// the keys and of the values).
using Segments = std::variant<int, std::vector<double>>;

/// Each rank's share of the sharded features, in rank order; none splits them as evenly as possible, the remainder
/// going to the first ranks.
using RankSizes = std::optional<std::vector<int>>;

namespace detail {
/// A layer's group and each rank's share of its sharded features.
struct RankSplit {
  distributed::Group group;
  std::vector<int> sizes;
};
}  // namespace detail

/// Identity forward; the backward pass sums the cotangent over the group: the input of an all-to-sharded layer feeds
/// every rank's slice of the output (MLX's nn.layers.distributed.sum_gradients).
array sum_gradients(const array& x, const distributed::Group& group);

/// y = x @ weight.T + bias with this rank's slice of the output features: (..., input_dims) -> (..., its slice).
class AllToShardedLinear : public Linear {
 public:
  /// Random parameters (as Linear's for the whole layer) for this rank's slice of output_dims.
  AllToShardedLinear(int input_dims, int output_dims, bool bias = true,
                     std::optional<distributed::Group> group = std::nullopt, const RankSizes& sizes = std::nullopt);
  /// This rank's slice of `linear`'s rows (of each segment's rows, for a fused weight).
  static std::shared_ptr<AllToShardedLinear> from_linear(const Linear& linear, const Segments& segments = 1,
                                                         std::optional<distributed::Group> group = std::nullopt,
                                                         const RankSizes& sizes = std::nullopt);
  [[nodiscard]] std::string type_name() const override { return "AllToShardedLinear"; }
  array forward(const array& x) override;
  [[nodiscard]] std::shared_ptr<Linear> to_quantized(int group_size, int bits, const std::string& mode) const override;
  [[nodiscard]] const distributed::Group& group() const { return group_; }
  /// Each rank's share of the output features.
  [[nodiscard]] const std::vector<int>& sizes() const { return sizes_; }
  /// The output features of the whole layer.
  [[nodiscard]] int total_output_dims() const { return total_output_dims_; }

 private:
  AllToShardedLinear(int input_dims, int output_dims, bool bias, detail::RankSplit split);

  distributed::Group group_;
  std::vector<int> sizes_;
  int total_output_dims_;
};

/// all_sum(x @ weight.T) + bias with this rank's slice of the input features: (..., its slice) -> (..., output_dims).
class ShardedToAllLinear : public Linear {
 public:
  /// Random parameters (as Linear's for the whole layer) for this rank's slice of input_dims.
  ShardedToAllLinear(int input_dims, int output_dims, bool bias = true,
                     std::optional<distributed::Group> group = std::nullopt, const RankSizes& sizes = std::nullopt);
  /// This rank's slice of `linear`'s columns (of each segment's columns); the bias is kept whole.
  static std::shared_ptr<ShardedToAllLinear> from_linear(const Linear& linear, const Segments& segments = 1,
                                                         std::optional<distributed::Group> group = std::nullopt,
                                                         const RankSizes& sizes = std::nullopt);
  [[nodiscard]] std::string type_name() const override { return "ShardedToAllLinear"; }
  array forward(const array& x) override;
  [[nodiscard]] std::shared_ptr<Linear> to_quantized(int group_size, int bits, const std::string& mode) const override;
  [[nodiscard]] const distributed::Group& group() const { return group_; }
  /// Each rank's share of the input features.
  [[nodiscard]] const std::vector<int>& sizes() const { return sizes_; }
  /// The input features of the whole layer.
  [[nodiscard]] int total_input_dims() const { return total_input_dims_; }

 private:
  ShardedToAllLinear(int input_dims, int output_dims, bool bias, detail::RankSplit split);

  distributed::Group group_;
  std::vector<int> sizes_;
  int total_input_dims_;
};

/// AllToShardedLinear with a quantized weight (frozen, as QuantizedLinear's). Without sizes, the rows are split in
/// multiples of group_size where they can be, as a paired QuantizedShardedToAllLinear splits its columns.
class QuantizedAllToShardedLinear : public QuantizedLinear {
 public:
  /// Random parameters for this rank's slice of output_dims, quantized.
  QuantizedAllToShardedLinear(int input_dims, int output_dims, bool bias = true, int group_size = 64, int bits = 4,
                              const std::string& mode = "affine",
                              std::optional<distributed::Group> group = std::nullopt,
                              const RankSizes& sizes = std::nullopt);
  /// This rank's rows of a quantized layer's weight, scales, biases and bias.
  static std::shared_ptr<QuantizedAllToShardedLinear> from_quantized_linear(
      const QuantizedLinear& linear, const Segments& segments = 1,
      std::optional<distributed::Group> group = std::nullopt, const RankSizes& sizes = std::nullopt);
  [[nodiscard]] std::string type_name() const override { return "QuantizedAllToShardedLinear"; }
  array forward(const array& x) override;
  [[nodiscard]] const distributed::Group& group() const { return group_; }
  /// Each rank's share of the output features.
  [[nodiscard]] const std::vector<int>& sizes() const { return sizes_; }
  /// The output features of the whole layer.
  [[nodiscard]] int total_output_dims() const { return total_output_dims_; }

 private:
  QuantizedAllToShardedLinear(int input_dims, int output_dims, bool bias, int group_size, int bits,
                              const std::string& mode, detail::RankSplit split);

  distributed::Group group_;
  std::vector<int> sizes_;
  int total_output_dims_;
};

/// ShardedToAllLinear with a quantized weight (frozen). Each rank's share of the input features is a multiple of
/// group_size (of the block, in a block format), so that the packed weight, scales and biases split together.
class QuantizedShardedToAllLinear : public QuantizedLinear {
 public:
  /// Random parameters for this rank's slice of input_dims, quantized.
  QuantizedShardedToAllLinear(int input_dims, int output_dims, bool bias = true, int group_size = 64, int bits = 4,
                              const std::string& mode = "affine",
                              std::optional<distributed::Group> group = std::nullopt,
                              const RankSizes& sizes = std::nullopt);
  /// This rank's columns of a quantized layer's weight, scales and biases; the bias is kept whole.
  static std::shared_ptr<QuantizedShardedToAllLinear> from_quantized_linear(
      const QuantizedLinear& linear, const Segments& segments = 1,
      std::optional<distributed::Group> group = std::nullopt, const RankSizes& sizes = std::nullopt);
  [[nodiscard]] std::string type_name() const override { return "QuantizedShardedToAllLinear"; }
  array forward(const array& x) override;
  [[nodiscard]] const distributed::Group& group() const { return group_; }
  /// Each rank's share of the input features.
  [[nodiscard]] const std::vector<int>& sizes() const { return sizes_; }
  /// The input features of the whole layer.
  [[nodiscard]] int total_input_dims() const { return total_input_dims_; }

 private:
  QuantizedShardedToAllLinear(int input_dims, int output_dims, bool bias, int group_size, int bits,
                              const std::string& mode, detail::RankSplit split);

  distributed::Group group_;
  std::vector<int> sizes_;
  int total_input_dims_;
};

/// A new tensor-parallel layer holding this rank's slice of `linear` (a Linear or a QuantizedLinear, which gives
/// the quantized forms); `linear` is left as it is. Uneven `sizes` need segments 1.
std::shared_ptr<Linear> shard_linear(const Linear& linear, Sharding sharding, const Segments& segments = 1,
                                     std::optional<distributed::Group> group = std::nullopt,
                                     const RankSizes& sizes = std::nullopt);

/// Where a parameter is split: its axis and segments, or none to leave it whole. Given the parameter's dotted path
/// and value.
using ShardingPredicate =
    std::function<std::optional<std::pair<int, Segments>>(const std::string& path, const array& value)>;

/// Replaces every parameter of `module` that `predicate` names with this rank's slice of it. The modules do not
/// change, so no communication is added: the module must already combine the slices itself. Quantized layers'
/// packed weights, scales and biases are split at the same features.
void shard_inplace(Module& module, const ShardingPredicate& predicate,
                   std::optional<distributed::Group> group = std::nullopt);
/// shard_inplace with the split of a linear layer: all-to-sharded splits weights along their rows (axis ndim - 2)
/// and biases; sharded-to-all splits weights along their last axis and leaves biases whole.
void shard_inplace(Module& module, Sharding sharding, const Segments& segments = 1,
                   std::optional<distributed::Group> group = std::nullopt);

}  // namespace nuvec::nn
