#pragma once

#include "nuvec/core/array.h"

namespace nuvec::profile::detail {

/// Adds one kernel's wall time to the profile (called by eval while profiling is on).
void record(const array& node, double seconds);

}  // namespace nuvec::profile::detail
