#include "nuvec/nn/init.h"

#include <cmath>

#include "nuvec/core/error.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/random.h"

namespace nuvec::nn::init {

std::pair<int, int> fan_in_fan_out(const Shape& shape) {
  if (shape.size() < 2) {
    throw_invalid("[init] fans need a weight with at least 2 axes; given shape " + shape_string(shape) + ".");
  }
  int receptive = 1;
  for (size_t i = 1; i + 1 < shape.size(); ++i) {
    receptive *= shape[i];
  }
  return {shape.back() * receptive, shape.front() * receptive};
}

Initializer constant(double value, Dtype dtype) {
  return [value, dtype](const array& a) { return full(a.shape(), array(value, dtype), dtype); };
}

Initializer normal(double mean, double std, Dtype dtype) {
  return [mean, std, dtype](const array& a) {
    return random::normal(a.shape(), dtype, static_cast<float>(mean), static_cast<float>(std));
  };
}

Initializer uniform(double low, double high, Dtype dtype) {
  return [low, high, dtype](const array& a) { return random::uniform(low, high, a.shape(), dtype); };
}

Initializer identity(Dtype dtype) {
  return [dtype](const array& a) {
    if (a.ndim() != 2 || a.shape(0) != a.shape(1)) {
      throw_invalid("[init::identity] expected a square matrix; given shape " + shape_string(a.shape()) + ".");
    }
    return eye(a.shape(0), dtype);
  };
}

std::function<array(const array&, double)> glorot_normal(Dtype dtype) {
  return [dtype](const array& a, double gain) {
    auto [fan_in, fan_out] = fan_in_fan_out(a.shape());
    double std = gain * std::sqrt(2.0 / (fan_in + fan_out));
    return random::normal(a.shape(), dtype, 0.0F, static_cast<float>(std));
  };
}

std::function<array(const array&, double)> glorot_uniform(Dtype dtype) {
  return [dtype](const array& a, double gain) {
    auto [fan_in, fan_out] = fan_in_fan_out(a.shape());
    double limit = gain * std::sqrt(6.0 / (fan_in + fan_out));
    return random::uniform(-limit, limit, a.shape(), dtype);
  };
}

std::function<array(const array&, FanMode, double)> he_normal(Dtype dtype) {
  return [dtype](const array& a, FanMode mode, double gain) {
    auto [fan_in, fan_out] = fan_in_fan_out(a.shape());
    double std = gain / std::sqrt(mode == FanMode::fan_in ? fan_in : fan_out);
    return random::normal(a.shape(), dtype, 0.0F, static_cast<float>(std));
  };
}

std::function<array(const array&, FanMode, double)> he_uniform(Dtype dtype) {
  return [dtype](const array& a, FanMode mode, double gain) {
    auto [fan_in, fan_out] = fan_in_fan_out(a.shape());
    double limit = gain * std::sqrt(3.0 / (mode == FanMode::fan_in ? fan_in : fan_out));
    return random::uniform(-limit, limit, a.shape(), dtype);
  };
}

}  // namespace nuvec::nn::init
