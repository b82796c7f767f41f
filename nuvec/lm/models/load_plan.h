#pragma once

// What a rank of a distributed model keeps of a checkpoint, known before any weight is read. The model is built from
// its config and split (LanguageModel::shard or pipeline) while its parameters are still unevaluated initializers;
// every parameter the split keeps is then a view of the whole one (rows or columns, several runs of them for a fused
// weight) and the parameters it drops are gone. The plan reads those views back, so loaders read, convert and stack
// only what the rank keeps: a pipeline rank's layers, a tensor-parallel rank's slices.

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "nuvec/core/array.h"
#include "nuvec/distributed/distributed.h"
#include "nuvec/lm/models/language_model.h"

namespace nuvec::lm {

/// How a model is spread over a group: tensor parallel (each rank its slices of every layer, LanguageModel::shard)
/// or a pipeline (each rank its run of the layers, LanguageModel::pipeline).
struct Placement {
  distributed::Group group;
  bool pipeline = false;
};

/// The part of a weight a rank keeps: runs [begin, end) of one axis, joined in order along it (one run, or one a
/// segment of a fused weight), the other axes whole.
struct WeightRegion {
  int axis = 0;
  std::vector<std::pair<int, int>> ranges;
};

/// What a split model keeps of each weight of the whole one, by parameter name.
class LoadPlan {
 public:
  /// The plan of a model that is not split: every weight whole.
  LoadPlan() = default;
  /// Splits `model` for `placement` (nothing for a group of one) and records what it keeps of every parameter.
  /// The parameters must not have been loaded or evaluated: each kept one must be the whole one, or a slice of it
  /// (or slices joined along their axis) not yet computed.
  LoadPlan(LanguageModel& model, const Placement& placement);

  /// Whether the rank keeps any of weight `name` (names the model does not have are kept, so that loading can
  /// report them).
  [[nodiscard]] bool keeps(const std::string& name) const { return !dropped_.contains(name); }
  /// The part of `name` the rank keeps; none when it keeps it whole (or does not know it).
  [[nodiscard]] const WeightRegion* region(const std::string& name) const;
  /// The whole weight `value` cut to its region, lazily: evaluating the result reads only the region. A join not yet
  /// evaluated (stacked experts) is cut before it joins its parts. `value` is returned as it is when it is kept
  /// whole or does not have the whole weight's shape (a loader cut it already).
  [[nodiscard]] array take(const std::string& name, const array& value) const;

 private:
  struct Kept {
    Shape whole_shape;
    WeightRegion region;
  };
  std::unordered_map<std::string, Kept> regions_;
  std::unordered_set<std::string> dropped_;
};

/// `value` cut to `region`, lazily; a join not yet evaluated is cut in its parts.
array take_region(const array& value, const WeightRegion& region);

}  // namespace nuvec::lm
