#pragma once

// Initializers (mlx.nn.init): each returns a function that gives a new array with the shape of the array it is
// passed, in the initializer's dtype (float32 by default), drawn from the global key sequence. Fan sizes follow the
// weight layouts of nuvec's layers: (out, in) for Linear and (out, kernel..., in) for convolutions, so
// fan_in = in * prod(kernel) and fan_out = out * prod(kernel).

#include <functional>
#include <utility>

#include "nuvec/core/array.h"

namespace nuvec::nn::init {

/// (array to initialize) -> its new value.
using Initializer = std::function<array(const array&)>;

/// Which fan the He initializers scale by.
enum class FanMode { fan_in, fan_out };

/// (fan_in, fan_out) of a weight shape with at least two axes; fewer axes throw.
std::pair<int, int> fan_in_fan_out(const Shape& shape);

/// Every element `value`.
Initializer constant(double value, Dtype dtype = float32);
/// Samples of N(mean, std^2).
Initializer normal(double mean = 0.0, double std = 1.0, Dtype dtype = float32);
/// Samples of U(low, high).
Initializer uniform(double low = 0.0, double high = 1.0, Dtype dtype = float32);
/// The identity matrix; an array that is not a square matrix throws.
Initializer identity(Dtype dtype = float32);
/// (array, gain) -> N(0, gain^2 * 2 / (fan_in + fan_out)) (MLX's default gain is 1).
std::function<array(const array&, double gain)> glorot_normal(Dtype dtype = float32);
/// (array, gain) -> U(-limit, limit), limit = gain * sqrt(6 / (fan_in + fan_out)).
std::function<array(const array&, double gain)> glorot_uniform(Dtype dtype = float32);
/// (array, mode, gain) -> N(0, gain^2 / fan), fan chosen by mode (MLX's defaults: fan_in, gain 1; sqrt(2) suits
/// ReLU).
std::function<array(const array&, FanMode mode, double gain)> he_normal(Dtype dtype = float32);
/// (array, mode, gain) -> U(-limit, limit), limit = gain * sqrt(3 / fan).
std::function<array(const array&, FanMode mode, double gain)> he_uniform(Dtype dtype = float32);

}  // namespace nuvec::nn::init
