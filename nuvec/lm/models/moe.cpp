#include "nuvec/lm/models/moe.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "nuvec/core/error.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/random.h"
#include "nuvec/distributed/ops.h"
#include "nuvec/nn/distributed_linear.h"

namespace nuvec::lm {

namespace {

/// From this many (token, expert) pairs on, sorting the rows by expert (so each expert's rows form one product)
/// costs less than it saves; decoding a token or two stays unsorted.
constexpr size_t sort_threshold = 64;

std::string join_names(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------- stacked expert projections

SwitchLinear::SwitchLinear(int input_dims, int output_dims, int num_experts)
    : weight(array(0.0F)), input_dims_(input_dims), output_dims_(output_dims), num_experts_(num_experts) {
  if (input_dims <= 0 || output_dims <= 0 || num_experts <= 0) {
    fail("needs positive sizes; got input_dims " + std::to_string(input_dims) + ", output_dims " +
         std::to_string(output_dims) + ", num_experts " + std::to_string(num_experts) + ".");
  }
  const float bound = 1.0F / std::sqrt(static_cast<float>(input_dims));
  weight = random::uniform(-bound, bound, {num_experts, output_dims, input_dims});
  register_parameter("weight", weight);
}

array SwitchLinear::forward(const array& x, const array& indices, bool sorted_indices) {
  check_input(x, 2, input_dims_);
  return gather_mm(x, swapaxes(weight, -1, -2), std::nullopt, indices, sorted_indices);
}

void SwitchLinear::keep_outputs(int begin, int end) {
  weight = contiguous(slice(weight, {0, begin, 0}, {num_experts_, end, weight.shape(2)}));
  output_dims_ = end - begin;
}

void SwitchLinear::keep_inputs(int begin, int end) {
  weight = contiguous(slice(weight, {0, 0, begin}, {num_experts_, output_dims_, end}));
  input_dims_ = end - begin;
}

QuantizedSwitchLinear::QuantizedSwitchLinear(const SwitchLinear& layer, int group_size, int bits)
    : SwitchLinear(layer.input_dims(), layer.output_dims(), layer.num_experts()),
      scales(array(0.0F)),
      biases(array(0.0F)),
      group_size_(group_size),
      bits_(bits) {
  if (group_size <= 0 || input_dims_ % group_size != 0) {
    fail("the input size " + std::to_string(input_dims_) + " must be a multiple of group_size " +
         std::to_string(group_size) + ".");
  }
  auto packed = nuvec::quantize(layer.weight, group_size, bits);
  weight = packed[0];
  scales = packed[1];
  biases = packed[2];
  register_parameter("scales", scales);
  register_parameter("biases", biases);
  freeze(false, {"weight", "scales", "biases"});
}

array QuantizedSwitchLinear::forward(const array& x, const array& indices, bool sorted_indices) {
  check_input(x, 2, input_dims_);
  return gather_qmm(x, weight, scales, biases, std::nullopt, indices, true, group_size_, bits_, "affine",
                    sorted_indices);
}

void QuantizedSwitchLinear::keep_outputs(int begin, int end) {
  for (array* a : {&weight, &scales, &biases}) {
    *a = contiguous(slice(*a, {0, begin, 0}, {num_experts_, end, a->shape(2)}));
  }
  output_dims_ = end - begin;
}

void QuantizedSwitchLinear::keep_inputs(int begin, int end) {
  if (begin % group_size_ != 0 || end % group_size_ != 0) {
    fail("can keep whole groups of " + std::to_string(group_size_) + " input features only; asked for [" +
         std::to_string(begin) + ", " + std::to_string(end) + ").");
  }
  // The packed weight holds 32 / bits features a word; the scales and biases one a group.
  const int per_word = 32 / bits_;
  weight = contiguous(slice(weight, {0, 0, begin / per_word}, {num_experts_, output_dims_, end / per_word}));
  for (array* a : {&scales, &biases}) {
    *a = contiguous(slice(*a, {0, 0, begin / group_size_}, {num_experts_, output_dims_, end / group_size_}));
  }
  input_dims_ = end - begin;
}

// ---------------------------------------------------------------- experts

SwitchGLU::SwitchGLU(int hidden_size, int expert_size, int num_experts, Activation activation)
    : gate_proj(std::make_shared<SwitchLinear>(hidden_size, expert_size, num_experts)),
      up_proj(std::make_shared<SwitchLinear>(hidden_size, expert_size, num_experts)),
      down_proj(std::make_shared<SwitchLinear>(expert_size, hidden_size, num_experts)),
      activation_(std::move(activation)) {
  if (!activation_) {
    fail("needs an activation.");
  }
  register_module("gate_proj", gate_proj);
  register_module("up_proj", up_proj);
  register_module("down_proj", down_proj);
}

array SwitchGLU::forward(const array& x, const array& indices) {
  // Each token becomes a one-row matrix, shared by its k experts: (..., 1, 1, hidden).
  array rows = expand_dims(x, {-2, -3});
  array experts = indices;
  const bool sort = indices.size() >= sort_threshold;
  std::optional<array> inverse;
  if (sort) {
    // One row per (token, expert) pair, in expert order; `inverse` puts them back.
    const int k = indices.shape(-1);
    const array flat = flatten(indices);
    const array order = argsort(flat);
    inverse = argsort(order);
    rows = take(flatten(rows, 0, -3), floor_divide(order, array(k, uint32)), 0);
    experts = take(flat, order, 0);
  }
  const array up = up_proj->forward(rows, experts, sort);
  const array gate = gate_proj->forward(rows, experts, sort);
  array out = down_proj->forward(activation_(gate) * up, experts, sort);
  if (inverse) {
    out = unflatten(take(out, *inverse, 0), 0, indices.shape());
  }
  return squeeze(out, -2);
}

void SwitchGLU::shard(const distributed::Group& group) {
  const int n = group.size();
  if (n == 1) {
    return;
  }
  // Shares in whole quantization groups (the down projection's inputs are cut in them), the remainder to the first
  // ranks.
  const auto* quantized = dynamic_cast<const QuantizedSwitchLinear*>(down_proj.get());
  const int block = quantized != nullptr ? quantized->group_size() : 1;
  const int features = down_proj->input_dims();
  const int blocks = features / block;
  if (blocks < n) {
    fail("cannot split " + std::to_string(features) + " intermediate features" +
         (block > 1 ? " in groups of " + std::to_string(block) : std::string()) + " across " + std::to_string(n) +
         " ranks.");
  }
  const int rank = group.rank();
  const int begin = block * (rank * (blocks / n) + std::min(rank, blocks % n));
  const int end = begin + block * (blocks / n + (rank < blocks % n ? 1 : 0));
  gate_proj->keep_outputs(begin, end);
  up_proj->keep_outputs(begin, end);
  down_proj->keep_inputs(begin, end);
}

SparseMoeBlock::SparseMoeBlock(MoeOptions options) : options_(std::move(options)) {
  const MoeOptions& o = options_;
  if (o.hidden_size <= 0 || o.expert_size <= 0 || o.num_experts <= 0 || o.top_k <= 0 || o.top_k > o.num_experts) {
    fail("needs positive sizes and 1 <= num_experts_per_tok <= num_experts; got hidden_size " +
         std::to_string(o.hidden_size) + ", expert size " + std::to_string(o.expert_size) + ", num_experts " +
         std::to_string(o.num_experts) + ", num_experts_per_tok " + std::to_string(o.top_k) + ".");
  }
  gate = std::make_shared<nn::Linear>(o.hidden_size, o.num_experts, false);
  switch_mlp = std::make_shared<SwitchGLU>(o.hidden_size, o.expert_size, o.num_experts, o.activation);
  register_module("gate", gate);
  register_module("switch_mlp", switch_mlp);
}

array SparseMoeBlock::forward(const array& x) {
  const int k = options_.top_k;
  // transformers routes in float32: softmax over every expert, then the top k.
  const array probs = softmax(astype((*gate)(x), float32), -1, true);
  // The chosen experts carry no derivative (gathers refuse one for indices, as MLX's do).
  const array partitioned = stop_gradient(argpartition(negative(probs), k - 1, -1));
  Shape stop = partitioned.shape();
  stop.back() = k;
  const array chosen = slice(partitioned, Shape(partitioned.ndim(), 0), stop);
  array weights = take_along_axis(probs, chosen, -1);
  if (options_.normalize_top_k) {
    weights = divide(weights, sum(weights, -1, true));
  }
  // Sharded, the experts see the whole x on every rank (its gradient is the sum of theirs) and each rank's output
  // is its part of the block's.
  const array out = switch_mlp->forward(group_ ? nn::sum_gradients(x, *group_) : x, chosen);
  const array combined = sum(multiply(out, expand_dims(astype(weights, out.dtype()), -1)), -2);
  return group_ ? distributed::all_sum(combined, *group_) : combined;
}

void SparseMoeBlock::shard(const distributed::Group& group) {
  if (group.size() == 1) {
    return;
  }
  switch_mlp->shard(group);
  group_ = group;
}

// ---------------------------------------------------------------- the model

namespace {

/// Stacks a block's per-expert weights (and scales and biases) into its switch_mlp names; the names of absent
/// experts go to `missing` when some of the block's experts are present.
void stack_experts(const SparseMoeBlock& block, const ExpertNames& expert_names,
                   std::unordered_map<std::string, array>& weights, std::vector<std::string>& missing) {
  const std::string prefix = block.path() + ".";
  const int experts = block.options().num_experts;
  for (const auto& [projection, name] : expert_names) {
    for (const char* suffix : {"weight", "scales", "biases"}) {
      std::vector<std::string> names;
      std::vector<array> parts;
      for (int e = 0; e < experts; ++e) {
        names.push_back(std::string(prefix)
                            .append("experts.")
                            .append(std::to_string(e))
                            .append(".")
                            .append(name)
                            .append(".")
                            .append(suffix));
        if (auto it = weights.find(names.back()); it != weights.end()) {
          parts.push_back(it->second);
        }
      }
      if (parts.empty()) {
        continue;  // stacked already, or absent (load_weights names the stacked weight)
      }
      if (static_cast<int>(parts.size()) < experts) {
        std::copy_if(names.begin(), names.end(), std::back_inserter(missing),
                     [&](const std::string& n) { return !weights.contains(n); });
        continue;
      }
      for (const auto& n : names) {
        weights.erase(n);
      }
      weights.insert_or_assign(std::string(prefix).append("switch_mlp.").append(projection).append(".").append(suffix),
                               stack(parts, 0));
    }
  }
}

}  // namespace

MoeModel::MoeModel(const TransformerConfig& config, std::vector<std::shared_ptr<DecoderLayer>> layers,
                   ExpertNames expert_names)
    : TransformerModel(config.model_type, config.vocab_size, config.hidden_size, std::move(layers),
                       rms_norm(config.rms_norm_eps)(config.hidden_size), config.tie_word_embeddings,
                       config.max_position_embeddings),
      expert_names_(std::move(expert_names)) {
  find_blocks();
}

void MoeModel::find_blocks() {
  blocks_.clear();
  for (const auto& [path, module] : modules()) {
    if (auto* block = dynamic_cast<SparseMoeBlock*>(module)) {
      blocks_.push_back(block);
    }
  }
}

void MoeModel::pipeline(const distributed::Group& group) {
  TransformerModel::pipeline(group);
  find_blocks();  // the dropped layers' blocks are gone
}

void MoeModel::sanitize(std::unordered_map<std::string, array>& weights) const {
  TransformerModel::sanitize(weights);
  std::vector<std::string> missing;
  for (SparseMoeBlock* block : blocks_) {
    stack_experts(*block, expert_names_, weights, missing);
  }
  if (!missing.empty()) {
    throw_invalid("[load_weights] missing expert weights: " + join_names(missing) + ".");
  }
}

}  // namespace nuvec::lm
