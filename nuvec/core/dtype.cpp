#include "nuvec/core/dtype.h"

#include <array>

#include "nuvec/core/error.h"

namespace nuvec {

namespace {

using V = Dtype::Val;

// MLX's promotion table (CONFORMANCE.md), rows and columns in dtype order.
constexpr V b = V::bool_, u8 = V::uint8, u16 = V::uint16, u32 = V::uint32, u64 = V::uint64, i8 = V::int8,
            i16 = V::int16, i32 = V::int32, i64 = V::int64, f16 = V::float16, f32 = V::float32, f64 = V::float64,
            bf = V::bfloat16, c64 = V::complex64;

constexpr std::array<std::array<V, num_dtypes>, num_dtypes> promotion_table{{
    // clang-format off
    //  b    u8   u16  u32  u64  i8   i16  i32  i64  f16  f32  f64  bf16 c64
    {{b,   u8,  u16, u32, u64, i8,  i16, i32, i64, f16, f32, f64, bf,  c64}},  // b
    {{u8,  u8,  u16, u32, u64, i16, i16, i32, i64, f16, f32, f64, bf,  c64}},  // u8
    {{u16, u16, u16, u32, u64, i32, i32, i32, i64, f16, f32, f64, bf,  c64}},  // u16
    {{u32, u32, u32, u32, u64, i64, i64, i64, i64, f16, f32, f64, bf,  c64}},  // u32
    {{u64, u64, u64, u64, u64, f32, f32, f32, f32, f16, f32, f64, bf,  c64}},  // u64
    {{i8,  i16, i32, i64, f32, i8,  i16, i32, i64, f16, f32, f64, bf,  c64}},  // i8
    {{i16, i16, i32, i64, f32, i16, i16, i32, i64, f16, f32, f64, bf,  c64}},  // i16
    {{i32, i32, i32, i64, f32, i32, i32, i32, i64, f16, f32, f64, bf,  c64}},  // i32
    {{i64, i64, i64, i64, f32, i64, i64, i64, i64, f16, f32, f64, bf,  c64}},  // i64
    {{f16, f16, f16, f16, f16, f16, f16, f16, f16, f16, f32, f64, f32, c64}},  // f16
    {{f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f64, f32, c64}},  // f32
    {{f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, c64}},  // f64
    {{bf,  bf,  bf,  bf,  bf,  bf,  bf,  bf,  bf,  f32, f32, f64, bf,  c64}},  // bf16
    {{c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c64, c64}},  // c64
    // clang-format on
}};

Dtype from_val(V v) { return all_dtypes[static_cast<int>(v)]; }

Dtype_Category category(Dtype t) {
  switch (t.val) {
    case V::bool_:
      return generic;
    case V::uint8:
    case V::uint16:
    case V::uint32:
    case V::uint64:
      return unsignedinteger;
    case V::int8:
    case V::int16:
    case V::int32:
    case V::int64:
      return signedinteger;
    case V::float16:
    case V::float32:
    case V::float64:
    case V::bfloat16:
      return floating;
    case V::complex64:
      return complexfloating;
  }
  return generic;
}

// Whether category `a` sits at or below `b` in numpy's abstract hierarchy.
bool category_within(Dtype_Category a, Dtype_Category b) {
  if (a == b || b == generic) {
    return true;
  }
  switch (a) {
    case complexfloating:
    case floating:
      return b == inexact || b == number;
    case signedinteger:
    case unsignedinteger:
      return b == integer || b == number;
    case inexact:
    case integer:
      return b == number;
    case number:
    case generic:
      return false;
  }
  return false;
}

}  // namespace

Dtype promote_types(Dtype a, Dtype b) {
  return from_val(promotion_table[static_cast<int>(a.val)][static_cast<int>(b.val)]);
}

bool issubdtype(Dtype a, Dtype b) { return a == b; }
bool issubdtype(Dtype a, Dtype_Category c) { return a == bool_ ? c == generic : category_within(category(a), c); }
bool issubdtype(Dtype_Category, Dtype) { return false; }
bool issubdtype(Dtype_Category a, Dtype_Category b) { return category_within(a, b); }

std::string_view dtype_name(Dtype t) {
  switch (t.val) {
    case V::bool_:
      return "bool";
    case V::uint8:
      return "uint8";
    case V::uint16:
      return "uint16";
    case V::uint32:
      return "uint32";
    case V::uint64:
      return "uint64";
    case V::int8:
      return "int8";
    case V::int16:
      return "int16";
    case V::int32:
      return "int32";
    case V::int64:
      return "int64";
    case V::float16:
      return "float16";
    case V::float32:
      return "float32";
    case V::float64:
      return "float64";
    case V::bfloat16:
      return "bfloat16";
    case V::complex64:
      return "complex64";
  }
  return "unknown";
}

std::ostream& operator<<(std::ostream& os, Dtype t) { return os << dtype_name(t); }

Dtype::Kind kindof(const Dtype& t) {
  switch (t.val) {
    case Dtype::Val::bool_:
      return Dtype::Kind::b;
    case Dtype::Val::uint8:
    case Dtype::Val::uint16:
    case Dtype::Val::uint32:
    case Dtype::Val::uint64:
      return Dtype::Kind::u;
    case Dtype::Val::int8:
    case Dtype::Val::int16:
    case Dtype::Val::int32:
    case Dtype::Val::int64:
      return Dtype::Kind::i;
    case Dtype::Val::float16:
    case Dtype::Val::float32:
    case Dtype::Val::float64:
      return Dtype::Kind::f;
    case Dtype::Val::bfloat16:
      return Dtype::Kind::V;
    case Dtype::Val::complex64:
      return Dtype::Kind::c;
  }
  throw_internal("[kindof] Unknown dtype.");
}

std::ostream& operator<<(std::ostream& os, Dtype::Kind k) {
  static constexpr char letters[] = {'b', 'u', 'i', 'f', 'c', 'V'};
  return os << letters[static_cast<int>(k)];
}

}  // namespace nuvec
