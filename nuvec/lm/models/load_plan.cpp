#include "nuvec/lm/models/load_plan.h"

#include <algorithm>
#include <variant>

#include "nuvec/core/error.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/primitives.h"

namespace nuvec::lm {

namespace {

/// `a` without the copies contiguous() puts over a view, down to `whole` at most (which may be a copy itself).
array through_copies(array a, const array& whole) {
  while (a.id() != whole.id() && a.has_primitive() && std::holds_alternative<Copy>(a.primitive())) {
    a = a.inputs()[0];
  }
  return a;
}

[[noreturn]] void unreadable(const std::string& name) {
  throw_error(ErrorKind::internal, "[LoadPlan] cannot tell which part of " + name +
                                       " the split model keeps: it is not a slice of the whole parameter.");
}

/// The axis and run a slice of `whole` keeps, or none when it keeps it all; throws unless it cuts one axis with unit
/// steps.
std::optional<std::pair<int, std::pair<int, int>>> run_of(const array& part, const array& whole,
                                                          const std::string& name) {
  const array a = through_copies(part, whole);
  if (a.id() == whole.id()) {
    return std::nullopt;
  }
  if (!a.has_primitive()) {
    unreadable(name);
  }
  const auto* s = std::get_if<Slice>(&a.primitive());
  if (s == nullptr || through_copies(a.inputs()[0], whole).id() != whole.id()) {
    unreadable(name);
  }
  std::optional<std::pair<int, std::pair<int, int>>> run;
  for (int axis = 0; axis < whole.ndim(); ++axis) {
    if (s->strides[axis] != 1) {
      unreadable(name);
    }
    if (s->start[axis] == 0 && s->shape[axis] == whole.shape(axis)) {
      continue;
    }
    if (run) {
      unreadable(name);  // cut along two axes
    }
    run =
        std::pair{axis, std::pair{static_cast<int>(s->start[axis]), static_cast<int>(s->start[axis] + s->shape[axis])}};
  }
  return run;
}

/// What `part` (a parameter of the split model) keeps of `whole`: none when all of it.
std::optional<WeightRegion> region_in(const array& part, const array& whole, const std::string& name) {
  const array a = through_copies(part, whole);
  if (a.id() == whole.id()) {
    return std::nullopt;
  }
  if (!a.has_primitive()) {
    unreadable(name);
  }
  if (const auto* join = std::get_if<Concatenate>(&a.primitive())) {
    const int axis = join->axis < 0 ? join->axis + whole.ndim() : join->axis;
    WeightRegion region{axis, {}};
    for (const array& piece : a.inputs()) {
      auto run = run_of(piece, whole, name);
      if (!run || run->first != axis) {
        unreadable(name);
      }
      region.ranges.push_back(run->second);
    }
    return region;
  }
  auto run = run_of(a, whole, name);
  if (!run) {
    return std::nullopt;
  }
  return WeightRegion{run->first, {run->second}};
}

/// The runs of `region` in `value`, lazily; an unevaluated join is cut in its parts, so that evaluating the result
/// joins only what the region keeps.
array region_view(const array& value, const WeightRegion& region) {
  const int axis = region.axis;
  std::vector<array> parts;
  const auto* join =
      value.has_primitive() ? std::get_if<Concatenate>(&value.primitive()) : static_cast<const Concatenate*>(nullptr);
  const int join_axis = join == nullptr ? -1 : (join->axis < 0 ? join->axis + value.ndim() : join->axis);
  if (join != nullptr && join_axis != axis) {
    // Each joined part is cut on the region's axis, then the parts are joined as before.
    for (const array& input : value.inputs()) {
      parts.push_back(region_view(input, region));
    }
    return concatenate(parts, join_axis);
  }
  for (const auto& [begin, end] : region.ranges) {
    if (join == nullptr) {
      parts.push_back(nuvec::detail::slice_axis(value, axis, begin, end, {}));
      continue;
    }
    // The parts of the join that overlap [begin, end), each cut to the overlap.
    int offset = 0;
    for (const array& input : value.inputs()) {
      const int length = input.shape(axis);
      const int from = std::max(begin, offset);
      const int to = std::min(end, offset + length);
      if (from < to) {
        parts.push_back(from == offset && to == offset + length
                            ? input
                            : nuvec::detail::slice_axis(input, axis, from - offset, to - offset, {}));
      }
      offset += length;
    }
  }
  return parts.size() == 1 ? parts[0] : concatenate(parts, axis);
}

}  // namespace

LoadPlan::LoadPlan(LanguageModel& model, const Placement& placement) {
  if (placement.group.size() == 1) {
    return;
  }
  const nn::Params whole = model.parameters();
  if (placement.pipeline) {
    model.pipeline(placement.group);
  } else {
    model.shard(placement.group);
  }
  std::unordered_map<std::string, array> split;
  for (auto& [name, value] : model.parameters()) {
    split.emplace(name, value);
  }
  for (const auto& [name, value] : whole) {
    auto kept = split.find(name);
    if (kept == split.end()) {
      dropped_.insert(name);
    } else if (auto region = region_in(kept->second, value, name)) {
      regions_.emplace(name, Kept{value.shape(), std::move(*region)});
    }
  }
}

const WeightRegion* LoadPlan::region(const std::string& name) const {
  auto it = regions_.find(name);
  return it == regions_.end() ? nullptr : &it->second.region;
}

array LoadPlan::take(const std::string& name, const array& value) const {
  auto it = regions_.find(name);
  if (it == regions_.end() || value.shape() != it->second.whole_shape) {
    return value;
  }
  return take_region(value, it->second.region);
}

array take_region(const array& value, const WeightRegion& region) { return contiguous(region_view(value, region)); }

}  // namespace nuvec::lm
