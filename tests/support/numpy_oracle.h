#pragma once

// A persistent NumPy oracle for tests: one /usr/bin/python3 child, started on
// first use and kept for the whole test binary, evaluates snippets of NumPy
// code on host arrays. Independent of nuvec's array type on purpose, so the
// reference cannot share a bug with the code under test.

#include <complex>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace nuvec::test {

/// A host-side tensor: dtype name, shape and raw little-endian bytes (C order).
struct HostArray {
  std::string dtype;  // one of: bool, uint8, uint16, uint32, uint64, int8, int16, int32, int64, float16, float32,
                      // float64, bfloat16, complex64
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
};

/// Evaluates Python `code` with NumPy as `np` and the inputs bound to a, b, c, ... (in order).
/// `code` is an expression, or statements that assign `out`; the result may be one array/scalar or a tuple/list of
/// them (each element is one output). Throws std::runtime_error with the Python traceback when the code raises.
std::vector<HostArray> numpy(const std::string& code, const std::vector<HostArray>& inputs);

/// Bytes per element of a dtype name; throws std::invalid_argument for a name outside the closed set.
std::size_t dtype_size(std::string_view dtype);

/// Number of elements of a shape (1 for a 0-d array).
int64_t element_count(const std::vector<int64_t>& shape);

/// Element types host_array accepts: bool, the standard integers, float, double and std::complex of those.
template <class T>
concept HostElement = std::is_arithmetic_v<T> || std::same_as<T, std::complex<float>> ||
                      std::same_as<T, std::complex<double>>;

/// Creates a HostArray of `dtype` from values converted numerically (as static_cast would, rounding to nearest even
/// for float16 and bfloat16). Values must be representable; complex values need the complex64 dtype. Raw bit
/// patterns (say NaN payloads) are written by filling HostArray::bytes directly.
template <HostElement T>
HostArray host_array(const std::vector<T>& values, std::vector<int64_t> shape, std::string dtype);

/// Reads a HostArray back as doubles: bool gives 0/1, integers and floats (float16, bfloat16 included) their value,
/// complex64 its real parts. int64/uint64 beyond 2^53 round.
std::vector<double> as_doubles(const HostArray& array);

/// Reads a HostArray back as complex numbers; real dtypes give a zero imaginary part.
std::vector<std::complex<double>> as_complex(const HostArray& array);

namespace detail {
/// The conversions behind host_array, one per value family so integers stay exact.
HostArray allocate_host_array(std::string dtype, std::vector<int64_t> shape, std::size_t value_count);
void store_values(HostArray& array, const int64_t* values);
void store_values(HostArray& array, const uint64_t* values);
void store_values(HostArray& array, const double* values);
void store_values(HostArray& array, const std::complex<double>* values);
}  // namespace detail

template <HostElement T>
HostArray host_array(const std::vector<T>& values, std::vector<int64_t> shape, std::string dtype) {
  HostArray array = detail::allocate_host_array(std::move(dtype), std::move(shape), values.size());
  // Widen to the family's widest type once; the per-dtype narrowing lives in one place in the .cpp.
  using Wide = std::conditional_t<
      std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>, std::complex<double>,
      std::conditional_t<std::is_floating_point_v<T>, double,
                         std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>>;
  if constexpr (std::is_same_v<T, Wide>) {
    detail::store_values(array, values.data());
  } else {
    std::vector<Wide> wide(values.begin(), values.end());
    detail::store_values(array, wide.data());
  }
  return array;
}

}  // namespace nuvec::test
