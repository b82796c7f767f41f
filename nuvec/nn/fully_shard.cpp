#include "nuvec/nn/fully_shard.h"

#include <limits>
#include <numeric>

#include "nuvec/core/eval.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/transforms.h"
#include "nuvec/distributed/ops.h"
#include "nuvec/nn/parameter_gradients.h"

namespace nuvec::nn {

namespace {

int64_t element_count(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

/// `flat` (1-d) zero-padded to n * ceil(size / n) elements.
array padded(const array& flat, int n) {
  const int size = flat.shape(0);
  const int extra = (n - size % n) % n;
  return extra == 0 ? flat : pad(flat, std::pair{0, extra});
}

}  // namespace

FullyShard::FullyShard(Module& model, std::optional<distributed::Group> group)
    : model_(model), group_(group ? *group : distributed::init()) {
  const int n = group_.size();
  const int r = group_.rank();
  for (const auto& [name, value] : model_.trainable_parameters()) {
    if (element_count(value.shape()) > std::numeric_limits<int>::max()) {
      throw_invalid("[fully_shard] " + name + " has " + std::to_string(element_count(value.shape())) +
                    " elements; a shard holds at most 2^31 - 1 per rank.");
    }
    const array flat = padded(reshape(value, {-1}), n);
    const int part = flat.shape(0) / n;
    shards_.emplace_back(name, contiguous(slice(flat, {r * part}, {(r + 1) * part})));
    shapes_.push_back(value.shape());
  }
  if (shards_.empty()) {
    throw_invalid("[fully_shard] " + model_.describe() + " has no trainable parameters to shard.");
  }
  std::vector<array> values;
  for (const auto& [name, shard] : shards_) {
    values.push_back(shard);
  }
  eval(values);
  model_.update(gathered());
}

array FullyShard::gather(const array& shard, size_t index) const {
  const Shape shape = shapes_[index];
  const distributed::Group group = group_;
  const auto whole = [shape, group](const std::vector<array>& in) -> std::vector<array> {
    const array all = distributed::all_gather(in[0], group);
    return {reshape(slice(all, {0}, {static_cast<int>(element_count(shape))}), shape)};
  };
  // Each rank's loss gives a whole gradient; a shard's is its slice of their mean.
  const auto scatter = [group](const std::vector<array>&, const std::vector<array>& cotangents,
                               const std::vector<array>&) -> std::vector<array> {
    const array& cotangent = cotangents[0];
    const array mean_factor = astype(array(1.0 / group.size()), cotangent.dtype());
    return {distributed::sum_scatter(padded(reshape(cotangent, {-1}), group.size()), group) * mean_factor};
  };
  return custom_vjp(whole, scatter)({shard})[0];
}

Params FullyShard::gathered() const {
  Params whole;
  whole.reserve(shards_.size());
  for (size_t i = 0; i < shards_.size(); ++i) {
    whole.emplace_back(shards_[i].first, gather(shards_[i].second, i));
  }
  return whole;
}

ModuleValueAndGradFn FullyShard::value_and_grad(LossFn loss) {
  return [this, loss = std::move(loss)](const std::vector<array>& inputs) {
    // The model gets the gathers of its shards back, not the transform's tracers.
    return detail::parameter_value_and_grad(
        model_, shards_, [this](const array& shard, size_t i) { return gather(shard, i); },
        [this] { return gathered(); }, loss, inputs);
  };
}

void FullyShard::update(optimizers::Optimizer& optimizer, const Params& gradients) {
  // The optimizer returns the shards that have gradients; they replace theirs by name, keeping the order shapes_
  // follows.
  for (auto& [name, value] : optimizer.apply_gradients(gradients, shards_)) {
    for (auto& [shard_name, shard] : shards_) {
      if (shard_name == name) {
        shard = value;
      }
    }
  }
  model_.update(gathered());
}

}  // namespace nuvec::nn
