#pragma once

// Learning-rate schedules (mlx.optimizers' names): functions of the number of steps taken so far.

#include <concepts>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

namespace nuvec::optimizers {

using Schedule = std::function<double(int64_t step)>;

/// The same rate at every step (an optimizer's plain learning rate).
Schedule constant_schedule(double value);
/// init * decay_rate^step.
Schedule exponential_decay(double init, double decay_rate);
/// init * decay_rate^floor(step / step_size).
Schedule step_decay(double init, double decay_rate, int64_t step_size);
/// end + (init - end) * (1 + cos(pi * min(step, decay_steps) / decay_steps)) / 2.
Schedule cosine_decay(double init, int64_t decay_steps, double end = 0.0);
/// init + (end - init) * min(step, steps) / steps.
Schedule linear_schedule(double init, double end, int64_t steps);
/// schedules[0] until boundaries[0], then schedules[i + 1] counted from boundaries[i] (a warm-up joined to a decay).
Schedule join_schedules(std::vector<Schedule> schedules, std::vector<int64_t> boundaries);

/// An optimizer's learning rate: a number or a schedule.
struct LearningRate {
  LearningRate(double value) : schedule(constant_schedule(value)) {}  // NOLINT(google-explicit-constructor)
  template <class F>
  requires(std::invocable<F, int64_t> && !std::is_arithmetic_v<F>) LearningRate(F fn)
      : schedule(std::move(fn)) {}  // NOLINT(google-explicit-constructor)
  Schedule schedule;
};

}  // namespace nuvec::optimizers
