#pragma once

// Fully sharded data parallelism (FSDP, as PyTorch's FullyShardedDataParallel and ZeRO stage 3 describe it): every
// rank of a group keeps 1/n of each trainable parameter (flattened, zero-padded to a multiple of n, one equal part
// per rank), and with it 1/n of the optimizer's state. A training step all-gathers the whole parameters for the
// forward and backward passes, and the gradients come back reduce-scattered: each rank gets its shard's slice of the
// mean of the ranks' gradients. The optimizer then steps on the shards as it would on whole parameters (its updates
// are element-wise, and the padding stays zero), so n ranks that each take 1/n of a batch train as one process
// taking the whole batch.

#include <optional>
#include <vector>

#include "nuvec/distributed/distributed.h"
#include "nuvec/nn/module.h"
#include "nuvec/nn/optimizers.h"
#include "nuvec/nn/value_and_grad.h"

namespace nuvec::nn {

class FullyShard {
 public:
  /// Takes `model`'s trainable parameters into shards over `group` (the default group when none); `model` must
  /// outlive this. The model's parameters become the (lazy) gathers of the shards: evaluating the model all-gathers
  /// them, a collective that every rank must run.
  explicit FullyShard(Module& model, std::optional<distributed::Group> group = std::nullopt);

  /// This rank's shards, named as the model's trainable parameters: 1-d, ceil(size / n) elements each.
  [[nodiscard]] const Params& shards() const { return shards_; }
  /// (inputs) -> (loss, gradients of the shards): `loss` sees the whole parameters through the model, and each
  /// shard's gradient is its slice of the mean over ranks of the ranks' gradients. This must outlive the result.
  [[nodiscard]] ModuleValueAndGradFn value_and_grad(LossFn loss);
  /// One step of `optimizer` on the shards with their gradients; the model gets the gathers of the new shards.
  void update(optimizers::Optimizer& optimizer, const Params& gradients);
  /// The whole parameters, gathered from the shards (lazy: a collective every rank must evaluate).
  [[nodiscard]] Params gathered() const;

 private:
  /// The whole parameter `index` gathered from `shard`; its vjp reduce-scatters the cotangent.
  [[nodiscard]] array gather(const array& shard, size_t index) const;

  Module& model_;
  distributed::Group group_;
  Params shards_;
  std::vector<Shape> shapes_;
};

}  // namespace nuvec::nn
