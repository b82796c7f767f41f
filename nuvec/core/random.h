#pragma once

// Random numbers, mirroring MLX's mlx/random.h: counter-based Threefry-2x32 keys (bit-compatible with MLX and
// JAX) and distributions composed from ops. A key is a uint32 array of shape (2,); every function takes an
// optional key and, without one, draws a fresh key from the global key sequence (see `seed`).

#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

#include "nuvec/core/array.h"

namespace nuvec::random {

/// A bound of uniform/randint: a C++ number or an array.
template <class T>
concept Bound = std::is_arithmetic_v<T> || std::is_same_v<std::remove_cvref_t<T>, array>;

/// A PRNG key from a seed: uint32 [seed >> 32, seed & 0xffffffff].
array key(uint64_t seed);

/// Reseeds the global key sequence used when no key is given (thread-safe).
void seed(uint64_t seed);

/// Random bits: `width` bytes (1, 2, 4 or 8) per element as uint8/16/32/64.
array bits(const Shape& shape, int width, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
inline array bits(const Shape& shape, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return bits(shape, 4, key, s);
}

/// Splits a key into two new keys.
std::pair<array, array> split(const array& key, StreamOrDevice s = {});
/// Splits a key into `num` new keys, an array of shape (num, 2).
array split(const array& key, int num, StreamOrDevice s = {});

/// Uniform samples in [low, high); `shape` must be the broadcast shape of low, high and itself.
array uniform(const array& low, const array& high, const Shape& shape, Dtype dtype = float32,
              const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
template <Bound T, Bound U>
array uniform(T low, U high, const Shape& shape, Dtype dtype = float32, const std::optional<array>& key = std::nullopt,
              StreamOrDevice s = {}) {
  return uniform(array(low), array(high), shape, dtype, key, s);
}
/// Uniform samples in [0, 1).
array uniform(const Shape& shape, Dtype dtype, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
inline array uniform(const Shape& shape, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return uniform(shape, float32, key, s);
}

/// Normal samples with mean `loc` and standard deviation `scale` (0 and 1 when absent).
array normal(const Shape& shape, Dtype dtype, const std::optional<array>& loc, const std::optional<array>& scale,
             const std::optional<array>& key, StreamOrDevice s = {});
inline array normal(const Shape& shape, Dtype dtype, float loc, float scale,
                    const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  auto loc_array = loc == 0.0F ? std::nullopt : std::make_optional(array(loc, dtype));
  auto scale_array = scale == 1.0F ? std::nullopt : std::make_optional(array(scale, dtype));
  return normal(shape, dtype, loc_array, scale_array, key, s);
}
inline array normal(const Shape& shape, float loc, float scale, const std::optional<array>& key = std::nullopt,
                    StreamOrDevice s = {}) {
  return normal(shape, float32, loc, scale, key, s);
}
inline array normal(const Shape& shape, Dtype dtype, const std::optional<array>& key = std::nullopt,
                    StreamOrDevice s = {}) {
  return normal(shape, dtype, std::nullopt, std::nullopt, key, s);
}
inline array normal(const Shape& shape, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return normal(shape, float32, std::nullopt, std::nullopt, key, s);
}

/// Integers drawn uniformly from [low, high).
array randint(const array& low, const array& high, const Shape& shape, Dtype dtype = int32,
              const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
template <Bound T, Bound U>
array randint(T low, U high, const Shape& shape, Dtype dtype = int32, const std::optional<array>& key = std::nullopt,
              StreamOrDevice s = {}) {
  return randint(array(low), array(high), shape, dtype, key, s);
}

/// Booleans that are true with probability `p` (0.5 when absent).
array bernoulli(const array& p, const Shape& shape, const std::optional<array>& key = std::nullopt,
                StreamOrDevice s = {});
array bernoulli(const array& p, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
template <class T>
  requires std::is_arithmetic_v<T>
array bernoulli(T p, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return bernoulli(array(p), key, s);
}
template <class T>
  requires std::is_arithmetic_v<T>
array bernoulli(T p, const Shape& shape, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return bernoulli(array(p), shape, key, s);
}
array bernoulli(const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

/// Standard normal samples truncated to [lower, upper].
array truncated_normal(const array& lower, const array& upper, const Shape& shape, Dtype dtype = float32,
                       const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
array truncated_normal(const array& lower, const array& upper, Dtype dtype = float32,
                       const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

/// Samples of the standard Gumbel distribution.
array gumbel(const Shape& shape, Dtype dtype = float32, const std::optional<array>& key = std::nullopt,
             StreamOrDevice s = {});

/// Indices (uint32) drawn from the categorical distribution with unnormalized log-probabilities `logits` along
/// `axis`; `shape` is the output shape and must broadcast with logits' shape without `axis`.
array categorical(const array& logits, int axis, const Shape& shape, const std::optional<array>& key = std::nullopt,
                  StreamOrDevice s = {});
/// `num_samples` draws per distribution: the output is logits' shape with `axis` replaced by num_samples.
array categorical(const array& logits, int axis, int num_samples, const std::optional<array>& key = std::nullopt,
                  StreamOrDevice s = {});
/// One draw per distribution.
array categorical(const array& logits, int axis = -1, const std::optional<array>& key = std::nullopt,
                  StreamOrDevice s = {});

/// Samples of the Laplace distribution with location `loc` and scale `scale`.
array laplace(const Shape& shape, Dtype dtype, float loc, float scale, const std::optional<array>& key = std::nullopt,
              StreamOrDevice s = {});
inline array laplace(const Shape& shape, float loc, float scale, const std::optional<array>& key = std::nullopt,
                     StreamOrDevice s = {}) {
  return laplace(shape, float32, loc, scale, key, s);
}
inline array laplace(const Shape& shape, Dtype dtype, const std::optional<array>& key = std::nullopt,
                     StreamOrDevice s = {}) {
  return laplace(shape, dtype, 0.0F, 1.0F, key, s);
}
inline array laplace(const Shape& shape, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return laplace(shape, float32, 0.0F, 1.0F, key, s);
}

/// `x` with its entries along `axis` in a random order (as MLX: the argsort of random bits). Until nuvec has a take
/// primitive this evaluates the order and `x` when called and returns an evaluated array.
array permutation(const array& x, int axis = 0, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
/// Samples of N(mean, cov) with shape (broadcast of shape and the batch axes of mean and cov..., n), cov
/// symmetric positive semi-definite (factored by its SVD, as MLX).
array multivariate_normal(const array& mean, const array& cov, const Shape& shape, Dtype dtype,
                          const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
/// A random permutation of 0, 1, ..., x - 1 (int32): the argsort of random bits, lazy.
array permutation(int x, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

}  // namespace nuvec::random
