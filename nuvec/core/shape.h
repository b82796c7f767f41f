#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "nuvec/core/error.h"

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

/// `dim` as a shape dimension; throws std::overflow_error ("[op] Shape dimension ... is outside the supported range")
/// past int32, as MLX does for every op that computes a new shape.
int32_t checked_dim(int64_t dim, std::string_view op);

/// Maps a possibly negative axis into [0, ndim); throws "[op] Axis a is out of bounds for array with n dimensions."
/// with `kind` (MLX throws std::out_of_range from reductions, moveaxis, swapaxes, diagonal and trace).
int normalize_axis(int axis, int ndim, const char* op, ErrorKind kind = ErrorKind::invalid_argument);

/// MLX's form of normalize_axis: std::invalid_argument "<msg_prefix>Axis a is out of bounds for array with n
/// dimensions."
int normalize_axis_index(int axis, int ndim, const std::string& msg_prefix = "");

/// Normalizes, checks and sorts a list of axes, rejecting repeats.
std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* op,
                                ErrorKind kind = ErrorKind::invalid_argument);

}  // namespace nuvec
