#pragma once

// Sparse mixtures of experts (mixtral, qwen3_moe): a router picks num_experts_per_tok experts for each token and the
// token's output is the weighted sum of theirs. The experts' projections are stacked into one (E, out, in) weight
// per projection (SwitchLinear, mlx-lm's layout and names: <block>.switch_mlp.{gate,up,down}_proj) and computed
// with gather_mm, or gather_qmm once quantized; Hugging Face checkpoints, which name every expert on its own, are
// stacked when loaded (MoeModel::sanitize).

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nuvec/distributed/distributed.h"
#include "nuvec/lm/models/transformer.h"
#include "nuvec/nn/linear.h"

namespace nuvec::lm {

/// One linear projection per expert, stacked: weight (E, out, in); each row of x goes through the experts its
/// indices pick.
class SwitchLinear : public nn::Module {
 public:
  SwitchLinear(int input_dims, int output_dims, int num_experts);
  [[nodiscard]] std::string type_name() const override { return "SwitchLinear"; }
  /// x (..., 1 or M, in) through expert indices[...] (the leading axes broadcast): (..., M, out). With
  /// `sorted_indices` the indices are ascending, so rows of one expert form one product.
  virtual array forward(const array& x, const array& indices, bool sorted_indices);
  [[nodiscard]] int input_dims() const { return input_dims_; }
  [[nodiscard]] int output_dims() const { return output_dims_; }
  [[nodiscard]] int num_experts() const { return num_experts_; }
  /// Keeps every expert's output features [begin, end) (a rank's share of a tensor-parallel split).
  virtual void keep_outputs(int begin, int end);
  /// Keeps every expert's input features [begin, end).
  virtual void keep_inputs(int begin, int end);

  array weight;

 protected:
  int input_dims_;
  int output_dims_;
  int num_experts_;
};

/// SwitchLinear with MLX's affine quantized weights: weight (E, out, in * bits / 32) uint32, scales and biases
/// (E, out, in / group_size).
class QuantizedSwitchLinear : public SwitchLinear {
 public:
  /// The quantized copy of a SwitchLinear.
  QuantizedSwitchLinear(const SwitchLinear& layer, int group_size, int bits);
  [[nodiscard]] std::string type_name() const override { return "QuantizedSwitchLinear"; }
  array forward(const array& x, const array& indices, bool sorted_indices) override;
  void keep_outputs(int begin, int end) override;
  /// begin and end must be multiples of group_size.
  void keep_inputs(int begin, int end) override;
  [[nodiscard]] int group_size() const { return group_size_; }
  [[nodiscard]] int bits() const { return bits_; }

  array scales;
  array biases;

 private:
  int group_size_;
  int bits_;
};

/// The experts' gated feed-forward: down_proj(activation(gate_proj(x)) * up_proj(x)) through each token's experts.
class SwitchGLU : public nn::Module {
 public:
  SwitchGLU(int hidden_size, int expert_size, int num_experts, Activation activation);
  [[nodiscard]] std::string type_name() const override { return "SwitchGLU"; }
  /// x (..., hidden) through experts indices (..., k): (..., k, hidden). Many tokens are sorted by expert first so
  /// each expert's rows form one product.
  array forward(const array& x, const array& indices);
  /// Keeps this rank's share of every expert's intermediate features (gate and up projections' outputs, the down
  /// projection's inputs), in multiples of the quantization group: the output is then this rank's part of the sum
  /// over the group.
  void shard(const distributed::Group& group);

  std::shared_ptr<SwitchLinear> gate_proj;
  std::shared_ptr<SwitchLinear> up_proj;
  std::shared_ptr<SwitchLinear> down_proj;

 private:
  Activation activation_;
};

struct MoeOptions {
  int hidden_size = 0;
  /// Each expert's intermediate size.
  int expert_size = 0;
  int num_experts = 0;
  /// Experts per token (num_experts_per_tok).
  int top_k = 0;
  /// Rescale the chosen experts' probabilities to sum to 1 (mixtral; qwen3_moe's norm_topk_prob).
  bool normalize_top_k = true;
  Activation activation;
};

/// The mixture-of-experts feed-forward: gate (the router, hidden -> E), a softmax over the experts in float32, the
/// top_k most probable, their probabilities (renormalized when asked) weighting their outputs.
class SparseMoeBlock : public nn::UnaryModule {
 public:
  explicit SparseMoeBlock(MoeOptions options);
  [[nodiscard]] std::string type_name() const override { return "SparseMoeBlock"; }
  array forward(const array& x) override;
  [[nodiscard]] const MoeOptions& options() const { return options_; }
  /// Tensor parallelism: every rank keeps its share of each expert (SwitchGLU::shard) and the whole router, so the
  /// ranks route every token alike and the sum of their weighted outputs over the group (one all_sum a block) is
  /// the block's output.
  void shard(const distributed::Group& group);

  std::shared_ptr<nn::Linear> gate;
  std::shared_ptr<SwitchGLU> switch_mlp;

 private:
  MoeOptions options_;
  std::optional<distributed::Group> group_;  // set once sharded
};

/// How a checkpoint names each expert's projections: (SwitchGLU's projection, the per-expert name), e.g.
/// {"gate_proj", "w1"} for mixtral's model.layers.N.block_sparse_moe.experts.E.w1.
using ExpertNames = std::vector<std::pair<std::string, std::string>>;

/// A transformer whose feed-forwards are (some of them) SparseMoeBlocks.
class MoeModel : public TransformerModel {
 public:
  MoeModel(const TransformerConfig& config, std::vector<std::shared_ptr<DecoderLayer>> layers,
           ExpertNames expert_names);
  [[nodiscard]] std::string type_name() const override { return "MoeModel"; }
  /// Stacks per-expert weights (<block>.experts.E.<name>.weight, and .scales and .biases when quantized) into
  /// <block>.switch_mlp.<projection>.*, naming every missing expert weight in one error when some experts are
  /// present; experts that arrive quantized (their .scales present) become QuantizedSwitchLinears, with the group
  /// size and bits their shapes imply, since load_weights_into quantizes Linear and Embedding layers only.
  void sanitize(std::unordered_map<std::string, array>& weights) const override;
  /// TransformerModel::pipeline, forgetting the mixture blocks of the layers this rank drops.
  void pipeline(const distributed::Group& group) override;

 private:
  /// The model's mixture blocks, in the layers it holds.
  void find_blocks();

  /// The model's mixture blocks (owned by its layers), found once after construction.
  std::vector<SparseMoeBlock*> blocks_;
  ExpertNames expert_names_;
};

}  // namespace nuvec::lm
