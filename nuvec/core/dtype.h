#pragma once

#include <complex>
#include <cstdint>
#include <ostream>
#include <string_view>

#include "nuvec/core/half.h"

namespace nuvec {

/// The hierarchy of abstract dtype categories (numpy's), for `issubdtype`.
enum class Dtype_Category : uint8_t {
  complexfloating,
  floating,
  inexact,
  signedinteger,
  unsignedinteger,
  integer,
  number,
  generic,
};
// MLX spells these as nuvec::complexfloating etc.
inline constexpr Dtype_Category complexfloating = Dtype_Category::complexfloating;
inline constexpr Dtype_Category floating = Dtype_Category::floating;
inline constexpr Dtype_Category inexact = Dtype_Category::inexact;
inline constexpr Dtype_Category signedinteger = Dtype_Category::signedinteger;
inline constexpr Dtype_Category unsignedinteger = Dtype_Category::unsignedinteger;
inline constexpr Dtype_Category integer = Dtype_Category::integer;
inline constexpr Dtype_Category number = Dtype_Category::number;
inline constexpr Dtype_Category generic = Dtype_Category::generic;

/// An element type, as in MLX: a closed enum plus the element size in bytes.
struct Dtype {
  enum class Val : uint8_t {
    bool_,
    uint8,
    uint16,
    uint32,
    uint64,
    int8,
    int16,
    int32,
    int64,
    float16,
    float32,
    float64,
    bfloat16,
    complex64,
  };

  /// numpy's one-letter kinds as MLX gives them (bfloat16 is V, "void").
  enum class Kind { b, u, i, f, c, V };
  using Category = Dtype_Category;

  Val val;
  uint8_t size;

  constexpr explicit Dtype(Val v, uint8_t s) : val(v), size(s) {}
  constexpr operator Val() const { return val; }  // NOLINT(google-explicit-constructor): switch over dtypes
};

inline constexpr int num_dtypes = 14;

inline constexpr Dtype bool_{Dtype::Val::bool_, sizeof(bool)};  // NOLINT(readability-identifier-naming): MLX's name
inline constexpr Dtype uint8{Dtype::Val::uint8, sizeof(uint8_t)};
inline constexpr Dtype uint16{Dtype::Val::uint16, sizeof(uint16_t)};
inline constexpr Dtype uint32{Dtype::Val::uint32, sizeof(uint32_t)};
inline constexpr Dtype uint64{Dtype::Val::uint64, sizeof(uint64_t)};
inline constexpr Dtype int8{Dtype::Val::int8, sizeof(int8_t)};
inline constexpr Dtype int16{Dtype::Val::int16, sizeof(int16_t)};
inline constexpr Dtype int32{Dtype::Val::int32, sizeof(int32_t)};
inline constexpr Dtype int64{Dtype::Val::int64, sizeof(int64_t)};
inline constexpr Dtype float16{Dtype::Val::float16, sizeof(uint16_t)};
inline constexpr Dtype float32{Dtype::Val::float32, sizeof(float)};
inline constexpr Dtype float64{Dtype::Val::float64, sizeof(double)};
inline constexpr Dtype bfloat16{Dtype::Val::bfloat16, sizeof(uint16_t)};
inline constexpr Dtype complex64{Dtype::Val::complex64, sizeof(complex64_t)};

/// All dtypes in MLX's order, for sweeps in tests and tables.
inline constexpr Dtype all_dtypes[num_dtypes] = {bool_, uint8, uint16,  uint32,  uint64,  int8,     int16,
                                                 int32, int64, float16, float32, float64, bfloat16, complex64};

inline constexpr bool operator==(Dtype a, Dtype b) { return a.val == b.val; }
inline constexpr bool operator!=(Dtype a, Dtype b) { return a.val != b.val; }

/// The smallest dtype that can represent both arguments (MLX's table).
Dtype promote_types(Dtype a, Dtype b);
/// Element size in bytes.
inline constexpr uint8_t size_of(Dtype t) { return t.size; }
bool issubdtype(Dtype a, Dtype b);
bool issubdtype(Dtype a, Dtype_Category c);
bool issubdtype(Dtype_Category a, Dtype b);
bool issubdtype(Dtype_Category a, Dtype_Category b);
/// The kind of a dtype (MLX's kindof): b, u, i, f (float16, float32, float64), c or V (bfloat16).
Dtype::Kind kindof(const Dtype& t);
std::ostream& operator<<(std::ostream& os, Dtype::Kind k);
/// numpy-style names: "float32", "bool", ...
std::string_view dtype_name(Dtype t);
std::ostream& operator<<(std::ostream& os, Dtype t);

inline constexpr bool is_floating(Dtype t) { return t == float16 || t == float32 || t == float64 || t == bfloat16; }
inline constexpr bool is_complex(Dtype t) { return t == complex64; }
inline constexpr bool is_inexact(Dtype t) { return is_floating(t) || is_complex(t); }
inline constexpr bool is_unsigned(Dtype t) { return t == uint8 || t == uint16 || t == uint32 || t == uint64; }
inline constexpr bool is_signed_integer(Dtype t) { return t == int8 || t == int16 || t == int32 || t == int64; }
inline constexpr bool is_integer(Dtype t) { return is_unsigned(t) || is_signed_integer(t); }

/// The C++ type that stores one element of each dtype, and back.
template <class T>
struct dtype_of;
template <>
struct dtype_of<bool> {
  static constexpr Dtype value = bool_;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr Dtype value = uint8;
};
template <>
struct dtype_of<uint16_t> {
  static constexpr Dtype value = uint16;
};
template <>
struct dtype_of<uint32_t> {
  static constexpr Dtype value = uint32;
};
template <>
struct dtype_of<uint64_t> {
  static constexpr Dtype value = uint64;
};
template <>
struct dtype_of<int8_t> {
  static constexpr Dtype value = int8;
};
template <>
struct dtype_of<int16_t> {
  static constexpr Dtype value = int16;
};
template <>
struct dtype_of<int32_t> {
  static constexpr Dtype value = int32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr Dtype value = int64;
};
template <>
struct dtype_of<float16_t> {
  static constexpr Dtype value = float16;
};
template <>
struct dtype_of<float> {
  static constexpr Dtype value = float32;
};
template <>
struct dtype_of<double> {
  static constexpr Dtype value = float64;
};
template <>
struct dtype_of<bfloat16_t> {
  static constexpr Dtype value = bfloat16;
};
template <>
struct dtype_of<complex64_t> {
  static constexpr Dtype value = complex64;
};
// `long long` and `unsigned long long` are distinct types from int64_t/uint64_t on LP64.
template <>
struct dtype_of<long long> {
  static constexpr Dtype value = int64;
};
template <>
struct dtype_of<unsigned long long> {
  static constexpr Dtype value = uint64;
};

/// The dtype MLX gives a C++ value or initializer list of that type.
template <class T>
inline constexpr Dtype dtype_v = dtype_of<T>::value;

}  // namespace nuvec
