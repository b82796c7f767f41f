#pragma once

// Learning-rate schedules (mlx.optimizers' names): functions of the number of steps taken so far, written with array
// ops on the optimizer's step array (uint64, as MLX keeps it), so a compiled training step computes each step's rate
// inside its graph rather than baking one value in. Rates come out as float32 scalars. Arguments are checked when the
// schedule is made; a bad one throws nuvec::error.

#include <concepts>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include "nuvec/core/array.h"

namespace nuvec::optimizers {

/// (steps taken so far, a uint64 scalar) -> the rate of the next step (a float32 scalar).
using Schedule = std::function<array(const array& step)>;

/// The same rate at every step.
Schedule constant_schedule(double value);
/// init * decay_rate^step.
Schedule exponential_decay(double init, double decay_rate);
/// init * decay_rate^floor(step / step_size); step_size < 1 throws.
Schedule step_decay(double init, double decay_rate, int64_t step_size);
/// end + (init - end) * (1 + cos(pi * min(step, decay_steps) / decay_steps)) / 2; decay_steps < 1 throws.
Schedule cosine_decay(double init, int64_t decay_steps, double end = 0.0);
/// init + (end - init) * min(step, steps) / steps; steps < 1 throws.
Schedule linear_schedule(double init, double end, int64_t steps);
/// schedules[0] until boundaries[0], then schedules[i + 1] counted from boundaries[i] (a warm-up joined to a decay).
/// Needs one boundary fewer than schedules, each >= 0, else throws.
Schedule join_schedules(std::vector<Schedule> schedules, std::vector<int64_t> boundaries);

/// An optimizer's learning rate: a number (kept in the optimizer's state, restored with it) or a schedule (computed
/// from the step at every step). Converts implicitly from a number or from any callable of the step array.
struct LearningRate {
  LearningRate(double value) : value(value) {}  // NOLINT(google-explicit-constructor)
  template <class F>
  requires(std::invocable<F, const array&> && !std::is_arithmetic_v<F>) LearningRate(F fn)
      : schedule(std::move(fn)) {}  // NOLINT(google-explicit-constructor)
  double value = 0.0;               // the rate when there is no schedule
  Schedule schedule;                // empty for a fixed rate
};

}  // namespace nuvec::optimizers
