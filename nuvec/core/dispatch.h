#pragma once

#include <string>
#include <type_traits>
#include <utility>

#include "nuvec/core/dtype.h"
#include "nuvec/core/error.h"

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

/// The storage types a kernel is written for: the filter of the three-argument `dispatch`.
template <class... Ts>
struct type_list {};

/// float32, float64, float16 and bfloat16: what the floating kernels (softmax, norms, attention...) take.
using floating_types = type_list<float, double, float16_t, bfloat16_t>;

namespace detail {

/// "float32, float64 or float16": the dtypes of a type list, for messages.
template <class First, class... Rest>
std::string dtype_names(type_list<First, Rest...> /*types*/) {
  std::string names(dtype_name(dtype_v<First>));
  constexpr size_t count = 1 + sizeof...(Rest);
  size_t i = 1;
  ((names.append(++i == count ? " or " : ", ").append(dtype_name(dtype_v<Rest>))), ...);
  return names;
}

}  // namespace detail

/// `dispatch(dtype, fn)` for the storage types in `Types` only: the op layer lets only those reach kernel `op`, so
/// any other dtype is an internal error naming the op and the dtype. Instantiates fn for those types alone.
template <class Types, class Fn>
decltype(auto) dispatch(Dtype dtype, const char* op, Fn&& fn) {
  return [&]<class First, class... Rest>(type_list<First, Rest...> types) -> decltype(auto) {
    using Result = decltype(fn(type_tag<First>{}));
    return dispatch(dtype, [&]<class T>(type_tag<T> tag) -> Result {
      if constexpr (std::is_same_v<T, First> || (std::is_same_v<T, Rest> || ...)) {
        return fn(tag);
      } else {
        throw_internal(std::string("[").append(op) + "] Expected " + detail::dtype_names(types) + "; got " +
                       std::string(dtype_name(dtype)) + ".");
      }
    });
  }(Types{});
}

}  // namespace nuvec
