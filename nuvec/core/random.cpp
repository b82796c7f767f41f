// nuvec::random: keys, the global key sequence, and distributions composed from RandomBits and ops.
// Formulas follow MLX (mlx/random.cpp) so that samples match it bit for bit where CONFORMANCE.md pins them.

#include "nuvec/core/random.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "nuvec/core/linalg.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/ops/utils.h"
#include "nuvec/core/output_shapes.h"
#include "nuvec/core/threefry.h"

namespace nuvec::random {

using nuvec::detail::dtype_string;
using nuvec::detail::op_prefix;

namespace {


void check_key(const array& key, const char* op) {
  if (key.dtype() != uint32) {
    throw_invalid(op_prefix(op) + "Expected key type uint32 but received " + dtype_string(key.dtype()) + ".");
  }
  if (key.shape() != Shape{2}) {
    throw_invalid(op_prefix(op) + "Expected key shape (2) but received " + shape_string(key.shape()) + ".");
  }
}

array resolve_key(const std::optional<array>& key) { return key ? *key : KeySequence::default_().next(); }

void check_shape(const Shape& shape, const char* op) {
  for (auto dim : shape) {
    if (dim < 0) {
      throw_invalid(op_prefix(op) + "Negative dimensions are not allowed; got shape " + shape_string(shape) + ".");
    }
  }
}

/// Whether `from` broadcasts to exactly `to` (numpy's rule, aligned on the right).
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) {
    return false;
  }
  size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != 1 && from[i] != to[lead + i]) {
      return false;
    }
  }
  return true;
}

void check_floating(Dtype dtype, const char* op, const char* what) {
  if (!is_floating(dtype)) {
    throw_invalid(op_prefix(op) + what + " must be a real floating point type; got " + dtype_string(dtype) + ".");
  }
}

/// The largest value below 1 in each floating dtype (exact in double).
double below_one(Dtype dtype) {
  if (dtype == float16) {
    return 1.0 - std::ldexp(1.0, -11);
  }
  if (dtype == bfloat16) {
    return 1.0 - std::ldexp(1.0, -8);
  }
  if (dtype == float64) {
    return 1.0 - std::ldexp(1.0, -53);
  }
  return 1.0 - std::ldexp(1.0, -24);
}

/// Samples in [0, 1) of a floating dtype. As MLX: 32 random bits divided by 2^32 - 1 in float32, clipped below
/// one, then converted. float64 (which MLX's uniform lacks) uses 64 bits and float64 arithmetic instead.
array unit_uniform(const Shape& shape, Dtype dtype, const std::optional<array>& key, StreamOrDevice s) {
  if (dtype == float64) {
    auto raw = astype(bits(shape, 8, key, s), float64, s);
    auto unit = divide(raw, array(18446744073709551615.0, float64), s);
    return minimum(unit, array(below_one(float64), float64), s);
  }
  auto raw = bits(shape, 4, key, s);
  auto unit = divide(raw, array(4294967295.0F, float32), s);
  unit = minimum(unit, array(below_one(dtype), float32), s);
  return astype(unit, dtype, s);
}

/// Whether both arrays are evaluated scalars with low > high (lazy values cannot be checked when the op is built).
bool known_reversed(const array& low, const array& high) {
  return low.size() == 1 && high.size() == 1 && low.is_available() && high.is_available() &&
         detail::read_double(low) > detail::read_double(high);
}

array categorical_impl(const array& logits, int axis, const Shape& noise_shape, const std::optional<array>& key,
                       StreamOrDevice s) {
  auto noise = gumbel(noise_shape, logits.dtype(), key, s);
  return argmax(add(noise, logits, s), axis, false, s);
}

/// The argsort of n random 32-bit values (uint32), as MLX's permutation; lazy.
array permutation_order(int n, const std::optional<array>& key, StreamOrDevice s) {
  return argsort(bits({n}, 4, key, s), 0, s);
}

}  // namespace

array key(uint64_t seed) { return array({static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(seed)}); }

// The key lives on the host: each draw is split there with the same Threefry hash as the RandomBits kernel, so
// `next()` equals MLX's `split(key)` without growing a lazy chain of splits that every later sample would walk.
KeySequence::KeySequence(uint64_t seed) { this->seed(seed); }

void KeySequence::seed(uint64_t seed) {
  std::lock_guard lock(mutex_);
  lazy_.reset();
  k0_ = static_cast<uint32_t>(seed >> 32);
  k1_ = static_cast<uint32_t>(seed);
}

namespace {

/// Whether `key` has its values (and is no trace's placeholder): the sequence can then continue on the host.
bool computed(const array& key) { return key.is_available() && !key.is_tracer(); }

/// The two words of a computed key (possibly a strided view).
std::pair<uint32_t, uint32_t> words(const array& key) {
  const auto* p = key.data<uint32_t>();
  return {p[0], p[key.strides()[0]]};
}

}  // namespace

array KeySequence::state() {
  std::lock_guard lock(mutex_);
  return lazy_ ? *lazy_ : array({k0_, k1_});
}

void KeySequence::set_state(const array& key) {
  check_key(key, "random.state");
  std::lock_guard lock(mutex_);
  if (computed(key)) {
    lazy_.reset();
    std::tie(k0_, k1_) = words(key);
  } else {
    lazy_ = key;
  }
}

array KeySequence::next() {
  std::lock_guard lock(mutex_);
  if (lazy_ && computed(*lazy_)) {
    std::tie(k0_, k1_) = words(*lazy_);
    lazy_.reset();
  }
  if (lazy_) {
    auto [kept, drawn] = split(*lazy_);
    lazy_ = std::move(kept);
    return drawn;
  }
  // split(key) is bits({2, 2}, 4, key): words 0..3 from the counter pairs (0, 2) and (1, 3).
  uint32_t a0 = 0;
  uint32_t a1 = 2;
  uint32_t b0 = 1;
  uint32_t b1 = 3;
  detail::threefry2x32(k0_, k1_, a0, a1);
  detail::threefry2x32(k0_, k1_, b0, b1);
  k0_ = a0;
  k1_ = b0;
  return array({a1, b1});
}

KeySequence& KeySequence::default_() {
  // As MLX: one clock seed (milliseconds) for the process, taken at first use, and a sequence per thread starting
  // from it, so threads never race on one key and seed() reseeds only the calling thread's draws.
  static const auto clock_seed = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  static thread_local KeySequence keys(clock_seed);
  return keys;
}

void seed(uint64_t seed) { KeySequence::default_().seed(seed); }

array bits(const Shape& shape, int width, const std::optional<array>& key, StreamOrDevice s) {
  auto k = resolve_key(key);
  check_key(k, "bits");
  check_shape(shape, "bits");
  if (width != 1 && width != 2 && width != 4 && width != 8) {
    throw_invalid("[bits] Bit width must be in {1, 2, 4, 8} but got " + std::to_string(width) + ".");
  }
  return nuvec::detail::make_node(RandomBits{shape, width}, {k}, to_stream(s));
}

array split(const array& key, int num, StreamOrDevice s) {
  check_key(key, "split");
  if (num < 0) {
    throw_invalid("[split] The number of keys must be non-negative; got " + std::to_string(num) + ".");
  }
  return bits({num, 2}, 4, key, s);
}

std::pair<array, array> split(const array& key, StreamOrDevice s) {
  auto keys = random::split(key, 2, s);
  return {reshape(slice(keys, {0, 0}, {1, 2}, s), {2}, s), reshape(slice(keys, {1, 0}, {2, 2}, s), {2}, s)};
}

array uniform(const array& low, const array& high, const Shape& shape, Dtype dtype, const std::optional<array>& key,
              StreamOrDevice s) {
  if (!is_floating(dtype)) {
    throw_invalid("[uniform] Can only generate uniform numbers with real floating point type; got " +
                  dtype_string(dtype) + ".");
  }
  check_shape(shape, "uniform");
  auto lo = astype(low, dtype, s);
  auto hi = astype(high, dtype, s);
  auto range = subtract(hi, lo, s);
  if (!broadcasts_to(range.shape(), shape)) {
    throw_invalid("[uniform] Cannot generate random values of shape " + shape_string(shape) +
                  " from low and high of broadcast shape " + shape_string(range.shape()) + ".");
  }
  auto unit = unit_uniform(shape, dtype, key, s);
  return add(multiply(range, unit, s), lo, s);
}

array uniform(const Shape& shape, Dtype dtype, const std::optional<array>& key, StreamOrDevice s) {
  return uniform(array(0.0, dtype), array(1.0, dtype), shape, dtype, key, s);
}

array normal(const Shape& shape, Dtype dtype, const std::optional<array>& loc, const std::optional<array>& scale,
             const std::optional<array>& key, StreamOrDevice s) {
  check_floating(dtype, "normal", "The dtype");
  for (const auto* param : {&loc, &scale}) {
    if (*param && !broadcasts_to((*param)->shape(), shape)) {
      throw_invalid(std::string("[normal] ") + (param == &loc ? "loc" : "scale") + " of shape " +
                    shape_string((*param)->shape()) + " does not broadcast to the requested shape " +
                    shape_string(shape) + ".");
    }
  }
  // erfinv of uniform samples in (-1, 1): the lower end is the dtype's next value above -1, so no sample is
  // -1 (whose erfinv is -inf). For float32 this is MLX's nextafter(-1.0f, 0.0f).
  auto low = array(-below_one(dtype), dtype);
  auto high = array(1.0, dtype);
  auto samples = uniform(low, high, shape, dtype, key, s);
  auto applied_scale = array(std::sqrt(2.0), dtype);
  if (scale) {
    applied_scale = multiply(applied_scale, astype(*scale, dtype, s), s);
  }
  samples = multiply(applied_scale, erfinv(samples, s), s);
  if (loc) {
    samples = add(astype(*loc, dtype, s), samples, s);
  }
  return samples;
}

array randint(const array& low, const array& high, const Shape& shape, Dtype dtype, const std::optional<array>& key,
              StreamOrDevice s) {
  if (is_inexact(dtype)) {
    throw_invalid("[randint] randint only accepts integer dtypes and bool; got " + dtype_string(dtype) + ".");
  }
  // As MLX, a float32 uniform in [low, high); flooring (not truncation) keeps negative ranges uniform, and the
  // clip guards against rounding onto high. With low > high the clip gives low everywhere, as MLX's does.
  auto lo = astype(low, float32, s);
  auto hi = astype(high, float32, s);
  auto u = floor(uniform(lo, hi, shape, float32, key, s), s);
  u = maximum(minimum(u, subtract(hi, array(1.0F), s), s), lo, s);
  return astype(u, dtype, s);
}

array bernoulli(const array& p, const Shape& shape, const std::optional<array>& key, StreamOrDevice s) {
  check_floating(p.dtype(), "bernoulli", "The probability p");
  check_shape(shape, "bernoulli");
  if (!broadcasts_to(p.shape(), shape)) {
    throw_invalid("[bernoulli] Shape of p " + shape_string(p.shape()) + " does not broadcast to the requested shape " +
                  shape_string(shape) + ".");
  }
  return less(uniform(shape, p.dtype(), key, s), p, s);
}

array bernoulli(const array& p, const std::optional<array>& key, StreamOrDevice s) {
  return bernoulli(p, p.shape(), key, s);
}

array bernoulli(const std::optional<array>& key, StreamOrDevice s) { return bernoulli(array(0.5F), key, s); }

array truncated_normal(const array& lower, const array& upper, const Shape& shape, Dtype dtype,
                       const std::optional<array>& key, StreamOrDevice s) {
  check_floating(dtype, "truncated_normal", "The dtype");
  if (known_reversed(lower, upper)) {
    throw_invalid(
        "[truncated_normal] lower must not exceed upper; got lower = " + std::to_string(detail::read_double(lower)) +
        " and upper = " + std::to_string(detail::read_double(upper)) + ".");
  }
  // Inverse-CDF sampling between the bounds' CDF values (JAX's and MLX's method), clipped for rounding.
  auto sqrt2 = array(std::sqrt(2.0), dtype);
  auto lo = astype(lower, dtype, s);
  auto hi = astype(upper, dtype, s);
  auto a = erf(divide(lo, sqrt2, s), s);
  auto b = erf(divide(hi, sqrt2, s), s);
  auto u = uniform(a, b, shape, dtype, key, s);
  auto out = multiply(sqrt2, erfinv(u, s), s);
  return maximum(minimum(hi, out, s), lo, s);
}

array truncated_normal(const array& lower, const array& upper, Dtype dtype, const std::optional<array>& key,
                       StreamOrDevice s) {
  return truncated_normal(lower, upper, broadcast_shapes(lower.shape(), upper.shape()), dtype, key, s);
}

array gumbel(const Shape& shape, Dtype dtype, const std::optional<array>& key, StreamOrDevice s) {
  check_floating(dtype, "gumbel", "The dtype");
  return negative(log(negative(log(uniform(shape, dtype, key, s), s), s), s), s);
}

array categorical(const array& logits, int axis, const Shape& shape, const std::optional<array>& key,
                  StreamOrDevice s) {
  check_floating(logits.dtype(), "categorical", "The logits");
  int ax = normalize_axis(axis, logits.ndim(), "categorical");
  check_shape(shape, "categorical");
  auto reduced = logits.shape();
  reduced.erase(reduced.begin() + ax);
  if (!broadcasts_to(reduced, shape)) {
    throw_invalid("[categorical] Requested shape " + shape_string(shape) +
                  " is not broadcast compatible with the logits shape without axis " + std::to_string(axis) + ", " +
                  shape_string(reduced) + ".");
  }
  // The noise has the output shape with the class axis put back where it sits in the (right-aligned) logits.
  int noise_axis = static_cast<int>(shape.size() - reduced.size()) + ax;
  auto noise_shape = shape;
  noise_shape.insert(noise_shape.begin() + noise_axis, logits.shape(ax));
  return categorical_impl(logits, noise_axis, noise_shape, key, s);
}

array categorical(const array& logits, int axis, int num_samples, const std::optional<array>& key, StreamOrDevice s) {
  check_floating(logits.dtype(), "categorical", "The logits");
  int ax = normalize_axis(axis, logits.ndim(), "categorical");
  if (num_samples < 0) {
    throw_invalid("[categorical] num_samples must be non-negative; got " + std::to_string(num_samples) + ".");
  }
  // As MLX: the samples form the last axis of the output, after the logits' other axes.
  auto noise_shape = logits.shape();
  noise_shape.push_back(num_samples);
  return categorical_impl(expand_dims(logits, -1, s), ax, noise_shape, key, s);
}

array categorical(const array& logits, int axis, const std::optional<array>& key, StreamOrDevice s) {
  check_floating(logits.dtype(), "categorical", "The logits");
  int ax = normalize_axis(axis, logits.ndim(), "categorical");
  return categorical_impl(logits, ax, logits.shape(), key, s);
}

array laplace(const Shape& shape, Dtype dtype, float loc, float scale, const std::optional<array>& key,
              StreamOrDevice s) {
  check_floating(dtype, "laplace", "The dtype");
  // Inverse CDF in float32 as MLX (float64 keeps its precision): sign(u) * log1p(-|u|), u uniform in (-1, 1).
  auto compute = dtype == float64 ? float64 : float32;
  auto u = uniform(array(-below_one(compute), compute), array(1.0, compute), shape, compute, key, s);
  auto samples = multiply(sign(u, s), log1p(negative(abs(u, s), s), s), s);
  samples = astype(samples, dtype, s);
  if (scale != 1.0F) {
    samples = multiply(array(scale, dtype), samples, s);
  }
  if (loc != 0.0F) {
    samples = add(array(loc, dtype), samples, s);
  }
  return samples;
}

array permutation(const array& x, int axis, const std::optional<array>& key, StreamOrDevice s) {
  if (x.ndim() == 0) {
    throw_invalid("[permutation] Cannot permute a scalar array.");
  }
  int ax = normalize_axis(axis, x.ndim(), "permutation");
  return take(x, permutation_order(x.shape(ax), key, s), ax, s);
}

array multivariate_normal(const array& mean, const array& cov, const Shape& shape, Dtype dtype,
                          const std::optional<array>& key, StreamOrDevice s) {
  if (!is_floating(dtype)) {
    throw_invalid("[multivariate_normal] dtype must be a floating type; got " + dtype_string(dtype) + ".");
  }
  if (mean.ndim() < 1) {
    throw_invalid("[multivariate_normal] mean must have at least one dimension; got shape " +
                  shape_string(mean.shape()) + ".");
  }
  if (cov.ndim() < 2 || cov.shape(-1) != cov.shape(-2)) {
    throw_invalid("[multivariate_normal] cov must be a batch of square matrices; got shape " +
                  shape_string(cov.shape()) + ".");
  }
  const int n = mean.shape(-1);
  if (cov.shape(-1) != n) {
    throw_invalid("[multivariate_normal] The last dimension of mean (" + std::to_string(n) +
                  ") must match the matrix size of cov with shape " + shape_string(cov.shape()) + ".");
  }
  Shape batch = broadcast_shapes(broadcast_shapes(shape, Shape(mean.shape().begin(), mean.shape().end() - 1)),
                                 Shape(cov.shape().begin(), cov.shape().end() - 2));
  Shape out_shape = batch;
  out_shape.push_back(n);
  // cov = U diag(S) U^T for a symmetric positive semi-definite cov (as MLX, through the SVD), so
  // z (U sqrt(S))^T has covariance cov for standard normal z.
  auto factors = linalg::svd(astype(cov, float32, s), true, s);
  auto root = multiply(factors[0], expand_dims(sqrt(factors[1], s), -2, s), s);
  auto z = normal(out_shape, float32, 0.0F, 1.0F, key, s);
  return astype(add(mean, matmul(z, swapaxes(root, -1, -2, s), s), s), dtype, s);
}

array permutation(int x, const std::optional<array>& key, StreamOrDevice s) {
  if (x < 0) {
    throw_invalid("[permutation] The number of elements must be non-negative; got " + std::to_string(x) + ".");
  }
  return astype(permutation_order(x, key, s), int32, s);
}

}  // namespace nuvec::random
