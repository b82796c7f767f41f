#pragma once

#include <ostream>

#include "nuvec/core/array.h"

namespace nuvec {

/// Prints like numpy: `array([[1, 2],\n       [3, 4]], dtype=int32)`. Evaluates the array.
std::ostream& operator<<(std::ostream& os, array a);

}  // namespace nuvec
