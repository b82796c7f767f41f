// Dtype utilities (result_type, finfo and iinfo) and the ops' message helpers.

#include "nuvec/core/ops/utils.h"

#include <limits>
#include <numeric>

#include "nuvec/core/dispatch.h"
#include "nuvec/core/ops.h"

namespace nuvec {

namespace detail {

std::string dtype_string(Dtype dtype) { return std::string(dtype_name(dtype)); }

std::string list_string(const std::vector<int>& values) { return shape_string(values); }

std::vector<int> all_axes(int ndim) {
  std::vector<int> axes(ndim);
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

array slice_axis(const array& a, int axis, int begin, int end, StreamOrDevice s) {
  Shape start(a.ndim(), 0);
  Shape stop = a.shape();
  start[axis] = begin;
  stop[axis] = end;
  return slice(a, std::move(start), std::move(stop), s);
}

}  // namespace detail

Dtype result_type(const std::vector<array>& arrays) {
  // As MLX: bool is the identity of promote_types, so no arrays give bool.
  Dtype out = bool_;
  for (const auto& a : arrays) {
    out = promote_types(out, a.dtype());
  }
  return out;
}

finfo::finfo(Dtype type) : dtype(type), min(0.0), max(0.0), eps(0.0) {
  if (!is_inexact(type)) {
    throw_invalid("[finfo] dtype " + std::string(dtype_name(type)) + " is not inexact (floating or complex).");
  }
  // numpy reports a complex dtype's limits as those of its parts.
  if (type == complex64) {
    dtype = float32;
  }
  dispatch(dtype, [&]<class T>(type_tag<T>) {
    if constexpr (std::is_same_v<T, float16_t>) {
      max = 65504.0;
      eps = 0.0009765625;  // 2^-10
    } else if constexpr (std::is_same_v<T, bfloat16_t>) {
      max = 3.3895313892515355e38;  // (2 - 2^-7) * 2^127
      eps = 0.0078125;              // 2^-7
    } else if constexpr (std::is_floating_point_v<T>) {
      max = static_cast<double>(std::numeric_limits<T>::max());
      eps = static_cast<double>(std::numeric_limits<T>::epsilon());
    } else {
      throw_internal("[finfo] Unhandled inexact dtype " + std::string(dtype_name(dtype)) + ".");
    }
  });
  min = -max;
}

iinfo::iinfo(Dtype type) : dtype(type), min(0), max(0) {
  if (!is_integer(type) && type != bool_) {
    throw_invalid("[iinfo] dtype " + std::string(dtype_name(type)) + " is not an integer or boolean type.");
  }
  dispatch(type, [&]<class T>(type_tag<T>) {
    if constexpr (std::is_integral_v<T>) {
      min = static_cast<int64_t>(std::numeric_limits<T>::min());
      max = static_cast<uint64_t>(std::numeric_limits<T>::max());
    } else {
      throw_internal("[iinfo] Unhandled integer dtype " + std::string(dtype_name(type)) + ".");
    }
  });
}

}  // namespace nuvec
