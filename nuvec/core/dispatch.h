#pragma once

#include <utility>

#include "nuvec/core/dtype.h"

namespace nuvec {

/// Carries a type through a generic lambda: `[&]<class T>(type_tag<T>) { ... }`.
template <class T>
struct type_tag {
  using type = T;
};

/// Calls `fn(type_tag<T>{})` with the storage type T of `dtype`: the one dtype switch in nuvec.
template <class Fn>
decltype(auto) dispatch(Dtype dtype, Fn&& fn) {
  switch (dtype.val) {
    case Dtype::Val::bool_:
      return fn(type_tag<bool>{});
    case Dtype::Val::uint8:
      return fn(type_tag<uint8_t>{});
    case Dtype::Val::uint16:
      return fn(type_tag<uint16_t>{});
    case Dtype::Val::uint32:
      return fn(type_tag<uint32_t>{});
    case Dtype::Val::uint64:
      return fn(type_tag<uint64_t>{});
    case Dtype::Val::int8:
      return fn(type_tag<int8_t>{});
    case Dtype::Val::int16:
      return fn(type_tag<int16_t>{});
    case Dtype::Val::int32:
      return fn(type_tag<int32_t>{});
    case Dtype::Val::int64:
      return fn(type_tag<int64_t>{});
    case Dtype::Val::float16:
      return fn(type_tag<float16_t>{});
    case Dtype::Val::float32:
      return fn(type_tag<float>{});
    case Dtype::Val::float64:
      return fn(type_tag<double>{});
    case Dtype::Val::bfloat16:
      return fn(type_tag<bfloat16_t>{});
    case Dtype::Val::complex64:
      return fn(type_tag<complex64_t>{});
  }
  // Unreachable for a valid Dtype; keeps -Wreturn-type quiet without a default label.
  return fn(type_tag<bool>{});
}

}  // namespace nuvec
