#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace nuvec {

/// Sizes of each axis (MLX uses 32-bit sizes) and element strides of each axis.
using Shape = std::vector<int32_t>;
using Strides = std::vector<int64_t>;

/// "(2,3,4)", the form error messages use.
std::string shape_string(const Shape& shape);
std::ostream& operator<<(std::ostream& os, const Shape& shape);

/// Product of the sizes (1 for a scalar).
size_t shape_size(const Shape& shape);

/// Row-major (C order) element strides for `shape`.
Strides row_major_strides(const Shape& shape);

/// numpy's broadcasting rule; throws invalid_argument naming both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b);

/// Maps a possibly negative axis into [0, ndim); throws "[op] Axis a is out of bounds for array with n dimensions."
int normalize_axis(int axis, int ndim, const char* op);

/// Normalizes, checks and sorts a list of axes, rejecting repeats.
std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* op);

}  // namespace nuvec
