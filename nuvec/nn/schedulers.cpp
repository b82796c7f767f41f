#include "nuvec/nn/schedulers.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "nuvec/core/error.h"

namespace nuvec::optimizers {

Schedule constant_schedule(double value) {
  return [value](int64_t) { return value; };
}

Schedule exponential_decay(double init, double decay_rate) {
  return [=](int64_t step) { return init * std::pow(decay_rate, static_cast<double>(step)); };
}

Schedule step_decay(double init, double decay_rate, int64_t step_size) {
  if (step_size < 1) {
    throw_invalid("[step_decay] step_size must be >= 1; given " + std::to_string(step_size) + ".");
  }
  return [=](int64_t step) {
    return init * std::pow(decay_rate, std::floor(static_cast<double>(step) / static_cast<double>(step_size)));
  };
}

Schedule cosine_decay(double init, int64_t decay_steps, double end) {
  if (decay_steps < 1) {
    throw_invalid("[cosine_decay] decay_steps must be >= 1; given " + std::to_string(decay_steps) + ".");
  }
  return [=](int64_t step) {
    double s = static_cast<double>(std::min(step, decay_steps));
    return end + (init - end) * 0.5 * (1.0 + std::cos(M_PI * s / static_cast<double>(decay_steps)));
  };
}

Schedule linear_schedule(double init, double end, int64_t steps) {
  if (steps < 1) {
    throw_invalid("[linear_schedule] steps must be >= 1; given " + std::to_string(steps) + ".");
  }
  return [=](int64_t step) {
    return init + (end - init) * static_cast<double>(std::min(step, steps)) / static_cast<double>(steps);
  };
}

Schedule join_schedules(std::vector<Schedule> schedules, std::vector<int64_t> boundaries) {
  if (schedules.empty() || boundaries.size() + 1 != schedules.size()) {
    throw_invalid("[join_schedules] needs one boundary fewer than schedules; given " +
                  std::to_string(schedules.size()) + " schedules and " + std::to_string(boundaries.size()) +
                  " boundaries.");
  }
  return [schedules = std::move(schedules), boundaries = std::move(boundaries)](int64_t step) {
    size_t i = 0;
    while (i < boundaries.size() && step >= boundaries[i]) {
      ++i;
    }
    return schedules[i](i == 0 ? step : step - boundaries[i - 1]);
  };
}

}  // namespace nuvec::optimizers
