#include "nuvec/nn/schedulers.h"

#include <cmath>
#include <numbers>
#include <string>

#include "nuvec/core/error.h"
#include "nuvec/core/ops.h"

namespace nuvec::optimizers {

namespace {

/// min(step, limit) as float32: the schedules hold their end value past their length.
array clamped_step(const array& step, int64_t limit) {
  return astype(minimum(step, array(static_cast<uint64_t>(limit), uint64)), float32);
}

}  // namespace

Schedule constant_schedule(double value) {
  return [value](const array&) { return array(value, float32); };
}

Schedule exponential_decay(double init, double decay_rate) {
  return [=](const array& step) {
    return array(init, float32) * power(array(decay_rate, float32), astype(step, float32));
  };
}

Schedule step_decay(double init, double decay_rate, int64_t step_size) {
  if (step_size < 1) {
    throw_invalid("[step_decay] step_size must be >= 1; given " + std::to_string(step_size) + ".");
  }
  return [=](const array& step) {
    // Integer division, so the boundaries stay exact however many steps.
    auto periods = floor_divide(step, array(static_cast<uint64_t>(step_size), uint64));
    return array(init, float32) * power(array(decay_rate, float32), astype(periods, float32));
  };
}

Schedule cosine_decay(double init, int64_t decay_steps, double end) {
  if (decay_steps < 1) {
    throw_invalid("[cosine_decay] decay_steps must be >= 1; given " + std::to_string(decay_steps) + ".");
  }
  return [=](const array& step) {
    auto angle = clamped_step(step, decay_steps) * array(std::numbers::pi / static_cast<double>(decay_steps), float32);
    auto decay = array(0.5F) * (array(1.0F) + cos(angle));
    return array(end, float32) + decay * array(init - end, float32);
  };
}

Schedule linear_schedule(double init, double end, int64_t steps) {
  if (steps < 1) {
    throw_invalid("[linear_schedule] steps must be >= 1; given " + std::to_string(steps) + ".");
  }
  return [=](const array& step) {
    return array(init, float32) + clamped_step(step, steps) * array((end - init) / static_cast<double>(steps), float32);
  };
}

Schedule join_schedules(std::vector<Schedule> schedules, std::vector<int64_t> boundaries) {
  if (schedules.empty() || boundaries.size() + 1 != schedules.size()) {
    throw_invalid("[join_schedules] needs one boundary fewer than schedules; given " +
                  std::to_string(schedules.size()) + " schedules and " + std::to_string(boundaries.size()) +
                  " boundaries.");
  }
  for (int64_t boundary : boundaries) {
    if (boundary < 0) {
      throw_invalid("[join_schedules] boundaries must be >= 0; given " + std::to_string(boundary) + ".");
    }
  }
  return [schedules = std::move(schedules), boundaries = std::move(boundaries)](const array& step) {
    array rate = schedules[0](step);
    for (size_t i = 0; i < boundaries.size(); ++i) {
      auto boundary = array(static_cast<uint64_t>(boundaries[i]), uint64);
      // Steps before the boundary are counted as 0 here (the unsigned step cannot go below it); `where` drops them.
      auto shifted = maximum(step, boundary) - boundary;
      rate = where(less(step, boundary), rate, schedules[i + 1](shifted));
    }
    return rate;
  };
}

}  // namespace nuvec::optimizers
