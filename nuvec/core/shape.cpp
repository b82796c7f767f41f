#include "nuvec/core/shape.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "nuvec/core/error.h"
#include "nuvec/core/op_prefix.h"

namespace nuvec {

std::string shape_string(const Shape& shape) {
  std::ostringstream os;
  os << shape;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Shape& shape) {
  os << '(';
  for (size_t i = 0; i < shape.size(); ++i) {
    os << (i == 0 ? "" : ",") << shape[i];
  }
  return os << ')';
}

size_t shape_size(const Shape& shape) {
  size_t size = 1;
  for (auto dim : shape) {
    size *= static_cast<size_t>(dim);
  }
  return size;
}

Strides row_major_strides(const Shape& shape) {
  Strides strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * std::max<int64_t>(shape[i + 1], 1);
  }
  return strides;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const auto& longer = a.size() >= b.size() ? a : b;
  const auto& shorter = a.size() >= b.size() ? b : a;
  Shape out = longer;
  size_t diff = longer.size() - shorter.size();
  for (size_t i = 0; i < shorter.size(); ++i) {
    auto x = longer[diff + i];
    auto y = shorter[i];
    if (x == y || y == 1) {
      out[diff + i] = x;
    } else if (x == 1) {
      out[diff + i] = y;
    } else {
      throw_invalid("[broadcast_shapes] Shapes " + shape_string(a) + " and " + shape_string(b) +
                    " cannot be broadcast.");
    }
  }
  return out;
}

int32_t checked_dim(int64_t dim, std::string_view op) {
  constexpr int64_t lo = std::numeric_limits<int32_t>::min();
  constexpr int64_t hi = std::numeric_limits<int32_t>::max();
  if (dim < lo || dim > hi) {
    throw_error(ErrorKind::overflow, detail::op_prefix(op)
                                         .append("Shape dimension ")
                                         .append(std::to_string(dim))
                                         .append(" is outside the supported range [")
                                         .append(std::to_string(lo) + ", " + std::to_string(hi))
                                         .append("]: shape dimensions are 32-bit integers."));
  }
  return static_cast<int32_t>(dim);
}

int normalize_axis(int axis, int ndim, const char* op, ErrorKind kind) {
  if (axis < -ndim || axis >= ndim) {
    throw_error(kind, detail::op_prefix(op) + "Axis " + std::to_string(axis) + " is out of bounds for array with " +
                          std::to_string(ndim) + " dimensions.");
  }
  return axis < 0 ? axis + ndim : axis;
}

int normalize_axis_index(int axis, int ndim, const std::string& msg_prefix) {
  if (axis < -ndim || axis >= ndim) {
    throw_invalid(msg_prefix + "Axis " + std::to_string(axis) + " is out of bounds for array with " +
                  std::to_string(ndim) + " dimensions.");
  }
  return axis < 0 ? axis + ndim : axis;
}

std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* op, ErrorKind kind) {
  std::vector<int> out;
  out.reserve(axes.size());
  for (int axis : axes) {
    out.push_back(normalize_axis(axis, ndim, op, kind));
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    throw_invalid(detail::op_prefix(op) + "Received duplicate axes.");
  }
  return out;
}

}  // namespace nuvec
