#pragma once

// FFT plans: everything a transform of one length needs that does not depend on the data (the factorization,
// twiddle tables, Bluestein's chirp and filter), built once per length and kept in a small cache. A plan works in
// place on one line whose real and imaginary parts are held in separate arrays, so the butterflies run over plain
// arrays of T that the compiler vectorizes. T is float or double; tables are always computed in double.

#include <cstddef>
#include <memory>
#include <vector>

namespace nuvec::cpu::fft {

/// A complex transform of length n: Stockham mixed-radix (radices 4, 2, 3, 5, 7) when n has no other prime factor,
/// Bluestein's algorithm (a convolution done with a power-of-two transform) otherwise.
template <class T>
class ComplexPlan {
 public:
  explicit ComplexPlan(size_t n);

  [[nodiscard]] size_t size() const { return n_; }
  /// Elements of T the `scratch` of one call needs.
  [[nodiscard]] size_t scratch_size() const;
  /// X_k = sum_j x_j exp(-2 pi i jk / n), in place.
  void forward(T* re, T* im, T* scratch) const;
  /// The unscaled inverse, sum_j x_j exp(+2 pi i jk / n), in place.
  void backward(T* re, T* im, T* scratch) const;

  /// One radix pass of the Stockham transform.
  struct Stage {
    size_t m;                   // length of each sub-transform after this stage
    size_t stride;              // number of interleaved sequences before this stage
    std::vector<T> twiddle_re;  // exp(-2 pi i pk / (radix m)) at [(k - 1) m + p], k = 1..radix-1
    std::vector<T> twiddle_im;
    /// The butterfly loop of this stage's radix, from (xr, xi) to (yr, yi).
    void (*run)(const Stage& stage, const T* xr, const T* xi, T* yr, T* yi);
  };

 private:
  size_t n_;
  std::vector<Stage> stages_;
  // Bluestein only (m_ > 0): chirp exp(-i pi k^2 / n), the transformed conjugate chirp scaled by 1/m, and the
  // power-of-two plan of length m.
  size_t m_ = 0;
  std::vector<T> chirp_re_, chirp_im_;
  std::vector<T> filter_re_, filter_im_;
  std::shared_ptr<const ComplexPlan<T>> sub_;

  void stockham(T* re, T* im, T* scratch) const;
  void bluestein(T* re, T* im, T* scratch) const;
};

/// A real transform of length n: a complex transform of length n/2 on the even and odd samples plus one pass that
/// separates them (even n), or the complex transform of length n (odd n).
template <class T>
class RealPlan {
 public:
  explicit RealPlan(size_t n);

  [[nodiscard]] size_t scratch_size() const;
  /// n real values in `re` -> the n/2 + 1 non-negative frequencies in re/im (each array holds n elements).
  void forward(T* re, T* im, T* scratch) const;
  /// n/2 + 1 frequencies of a Hermitian spectrum in re/im -> n real values in `re`, unscaled. The imaginary parts of
  /// the zero frequency (and of the Nyquist one for even n) are ignored, as in NumPy.
  void backward(T* re, T* im, T* scratch) const;

 private:
  size_t n_;
  std::shared_ptr<const ComplexPlan<T>> complex_;  // length n/2 (even n) or n (odd n)
  std::vector<T> twiddle_re_, twiddle_im_;         // exp(-2 pi i k / n), k = 0..n/2 (even n)
};

/// The cached plan of a length (built on first use; the cache keeps the most recently used few).
template <class T>
std::shared_ptr<const ComplexPlan<T>> complex_plan(size_t n);
template <class T>
std::shared_ptr<const RealPlan<T>> real_plan(size_t n);

}  // namespace nuvec::cpu::fft
