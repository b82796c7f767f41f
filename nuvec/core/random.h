#pragma once

// Random numbers, mirroring MLX's mlx/random.h: counter-based Threefry-2x32 keys (bit-compatible with MLX and
// JAX) and distributions composed from ops. A key is a uint32 array of shape (2,); every function takes an
// optional key and, without one, draws a fresh key from the global key sequence (see `seed`). Samples are lazy;
// bad arguments (a key that is not uint32 (2,), a dtype outside the distribution's kinds, negative sizes, shapes
// that do not broadcast) throw nuvec::error when the function is called.

#include <cstdint>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

#include "nuvec/core/array.h"

namespace nuvec::random {

/// A bound of uniform/randint: a C++ number or an array.
template <class T>
concept Bound = std::is_arithmetic_v<T> || std::is_same_v<std::remove_cvref_t<T>, array>;

/// The sequence of keys handed to draws given none, as MLX's: each `next()` splits the current key, keeps one half
/// and returns the other (thread-safe). `default_()` is the calling thread's own sequence, the one `seed` reseeds;
/// every thread's starts from one clock seed taken at the process's first use, as in MLX.
class KeySequence {
 public:
  explicit KeySequence(uint64_t seed);
  void seed(uint64_t seed);
  array next();
  /// The key the next `next()` splits (uint32 (2,)): Python's `mx.random.state[0]`.
  array state();
  /// Continues from `key`. A computed key is read in; a lazy one (a compile trace's input, a compiled call's
  /// output not yet computed) is kept and split lazily by each next() until it is computed, so a compiled function
  /// that takes and returns the state draws new numbers at every call, as MLX's does. A key that is not uint32 (2,)
  /// throws.
  void set_state(const array& key);
  static KeySequence& default_();

 private:
  std::mutex mutex_;
  uint32_t k0_ = 0;
  uint32_t k1_ = 0;
  std::optional<array> lazy_;  // set: the key is this array, not (k0_, k1_)
};

/// A PRNG key from a seed: uint32 [seed >> 32, seed & 0xffffffff].
array key(uint64_t seed);

/// Reseeds the calling thread's key sequence, used when no key is given; until then it starts from the clock seed.
void seed(uint64_t seed);

/// Uniformly random bits of `shape`: `width` bytes (1, 2, 4 (default) or 8) per element as uint8/16/32/64; other
/// widths throw.
array bits(const Shape& shape, int width, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
inline array bits(const Shape& shape, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return bits(shape, 4, key, s);
}

/// Splits a key into two new keys: the rows of split(key, 2).
std::pair<array, array> split(const array& key, StreamOrDevice s = {});
/// Splits a key into `num` (>= 0) new keys, an array of shape (num, 2).
array split(const array& key, int num, StreamOrDevice s = {});

/// Samples of `shape` uniform in [low, high) of a floating dtype (float32 by default; other dtypes throw); low and
/// high are cast to dtype and must broadcast to `shape`.
array uniform(const array& low, const array& high, const Shape& shape, Dtype dtype = float32,
              const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
template <Bound T, Bound U>
array uniform(T low, U high, const Shape& shape, Dtype dtype = float32, const std::optional<array>& key = std::nullopt,
              StreamOrDevice s = {}) {
  return uniform(array(low), array(high), shape, dtype, key, s);
}
/// Uniform samples in [0, 1) of a floating dtype.
array uniform(const Shape& shape, Dtype dtype, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
inline array uniform(const Shape& shape, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {}) {
  return uniform(shape, float32, key, s);
}

/// Normal samples of `shape` with mean `loc` and standard deviation `scale` (each broadcast to `shape`; 0 and 1 when
/// absent), in a floating dtype (float32 where not given; other dtypes throw).
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

/// Integers of `shape` drawn uniformly from [low, high) (through a float32 uniform) in an integer or bool dtype
/// (int32 by default); low and high broadcast to `shape`. Floating dtypes throw, and so do evaluated scalar bounds
/// with low > high.
array randint(const array& low, const array& high, const Shape& shape, Dtype dtype = int32,
              const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
template <Bound T, Bound U>
array randint(T low, U high, const Shape& shape, Dtype dtype = int32, const std::optional<array>& key = std::nullopt,
              StreamOrDevice s = {}) {
  return randint(array(low), array(high), shape, dtype, key, s);
}

/// Booleans that are true with probability `p` (a floating array or number; 0.5 when absent), of `shape` (p's
/// shape when absent; p must broadcast to it). An integer p throws.
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

/// Standard normal samples truncated to [lower, upper] (inverse-CDF sampling), of `shape` or the broadcast shape
/// of the bounds, in a floating dtype (float32 by default). Evaluated scalar bounds with lower > upper throw.
array truncated_normal(const array& lower, const array& upper, const Shape& shape, Dtype dtype = float32,
                       const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
array truncated_normal(const array& lower, const array& upper, Dtype dtype = float32,
                       const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

/// Samples of the standard Gumbel distribution, -log(-log(u)), in a floating dtype (float32 by default).
array gumbel(const Shape& shape, Dtype dtype = float32, const std::optional<array>& key = std::nullopt,
             StreamOrDevice s = {});

/// Indices (uint32) drawn from the categorical distribution with unnormalized log-probabilities `logits`
/// (floating) along `axis` (the Gumbel-max trick); `shape` is the output shape, which logits' shape without `axis`
/// must broadcast to.
array categorical(const array& logits, int axis, const Shape& shape, const std::optional<array>& key = std::nullopt,
                  StreamOrDevice s = {});
/// `num_samples` (>= 0) draws per distribution: the output is logits' shape with `axis` replaced by num_samples.
array categorical(const array& logits, int axis, int num_samples, const std::optional<array>& key = std::nullopt,
                  StreamOrDevice s = {});
/// One draw per distribution: logits' shape without `axis` (default -1).
array categorical(const array& logits, int axis = -1, const std::optional<array>& key = std::nullopt,
                  StreamOrDevice s = {});

/// Samples of the Laplace distribution with location `loc` (0 when absent) and scale `scale` (1), in a floating
/// dtype (float32 where not given), computed in float32 (float64 for float64).
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

/// `x` with its entries along `axis` (default 0) in a random order (as MLX: take with the argsort of random bits);
/// lazy. A 0-d x throws.
array permutation(const array& x, int axis = 0, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
/// Samples of N(mean, cov) with shape (broadcast of shape and the batch axes of mean and cov..., n) for mean
/// (..., n) and cov (..., n, n) symmetric positive semi-definite (factored by its SVD in float32, as MLX); dtype
/// must be floating. Throws for a 0-d mean or a cov that is not square or not n x n.
array multivariate_normal(const array& mean, const array& cov, const Shape& shape, Dtype dtype,
                          const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
/// A random permutation of 0, 1, ..., x - 1 (int32; MLX gives uint32): the argsort of random bits, lazy. A negative
/// x throws.
array permutation(int x, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});

}  // namespace nuvec::random
