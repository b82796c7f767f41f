#pragma once

// A small SIMD vector of float or double lanes for the element-wise kernels,
// built on Highway with static dispatch (the build targets this machine). It
// reads like a scalar: functors written once for `T` run on `float`, `double`,
// `Vec<float>` and `Vec<double>` alike (`select` and `T(1)` replace `?:` and
// literals), and the kernels pick the vector form where a functor has one.

#include <hwy/cache_control.h>

#include <concepts>
#include <cstddef>
#include <type_traits>

#include "nuvec/cpu/highway.h"

namespace nuvec::cpu::simd {

namespace hn = hwy::HWY_NAMESPACE;  // simd::hn, as math.h spells it

/// Lane types the vectors hold.
template <class T>
concept Lane = std::same_as<T, float> || std::same_as<T, double>;

template <Lane T>
struct Vec;

/// The lanes of a comparison, for `select`.
template <Lane T>
struct Mask {
  hn::Mask<hn::ScalableTag<T>> raw;

  friend Mask operator&(Mask a, Mask b) { return {hn::And(a.raw, b.raw)}; }
  friend Mask operator|(Mask a, Mask b) { return {hn::Or(a.raw, b.raw)}; }
  friend Mask operator!(Mask a) { return {hn::Not(a.raw)}; }
};

/// As many T as one register of the target holds.
template <Lane T>
struct Vec {
  using Tag = hn::ScalableTag<T>;
  using Raw = hn::Vec<Tag>;
  Raw raw;

  explicit Vec(Raw r) : raw(r) {}
  /// Every lane set to `s`.
  explicit Vec(T s) : raw(hn::Set(Tag(), s)) {}

  static size_t lanes() { return hn::Lanes(Tag()); }
  static Vec load(const T* p) { return Vec(hn::LoadU(Tag(), p)); }
  /// Loads the first n < lanes() elements; the other lanes are zero.
  static Vec load(const T* p, size_t n) { return Vec(hn::MaskedLoad(hn::FirstN(Tag(), n), Tag(), p)); }
  void store(T* p) const { hn::StoreU(raw, Tag(), p); }
  /// Stores the first n < lanes() lanes and leaves the memory after them alone.
  void store(T* p, size_t n) const { hn::BlendedStore(raw, hn::FirstN(Tag(), n), Tag(), p); }
  /// Stores past the caches to p aligned to the vector's size (hwy::FlushStream orders such stores).
  void stream(T* p) const { hn::Stream(raw, Tag(), p); }

  friend Vec operator+(Vec a, Vec b) { return Vec(hn::Add(a.raw, b.raw)); }
  friend Vec operator-(Vec a, Vec b) { return Vec(hn::Sub(a.raw, b.raw)); }
  friend Vec operator*(Vec a, Vec b) { return Vec(hn::Mul(a.raw, b.raw)); }
  friend Vec operator/(Vec a, Vec b) { return Vec(hn::Div(a.raw, b.raw)); }
  friend Vec operator-(Vec a) { return Vec(hn::Neg(a.raw)); }
  friend Mask<T> operator==(Vec a, Vec b) { return {hn::Eq(a.raw, b.raw)}; }
  friend Mask<T> operator!=(Vec a, Vec b) { return {hn::Ne(a.raw, b.raw)}; }
  friend Mask<T> operator<(Vec a, Vec b) { return {hn::Lt(a.raw, b.raw)}; }
  friend Mask<T> operator<=(Vec a, Vec b) { return {hn::Le(a.raw, b.raw)}; }
  friend Mask<T> operator>(Vec a, Vec b) { return {hn::Gt(a.raw, b.raw)}; }
  friend Mask<T> operator>=(Vec a, Vec b) { return {hn::Ge(a.raw, b.raw)}; }
};

template <class T>
inline constexpr bool is_vec = false;
template <Lane T>
inline constexpr bool is_vec<Vec<T>> = true;

/// The element type of a scalar or of a vector.
template <class T>
struct lane_of {
  using type = T;
};
template <Lane T>
struct lane_of<Vec<T>> {
  using type = T;
};
template <class T>
using lane_t = typename lane_of<T>::type;

/// `condition ? a : b`, lane by lane for vectors.
template <class T>
requires std::is_arithmetic_v<T> T select(bool condition, T a, T b) { return condition ? a : b; }
template <Lane T>
Vec<T> select(Mask<T> condition, Vec<T> a, Vec<T> b) {
  return Vec<T>(hn::IfThenElse(condition.raw, a.raw, b.raw));
}

}  // namespace nuvec::cpu::simd
