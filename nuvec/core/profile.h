#pragma once

#include <string>

namespace nuvec::profile {

/// Kernel profiling: with profiling on, every evaluated node adds its kernel's wall time to a row keyed by the
/// primitive's name, dtype and output shape. `NUVEC_PROFILE=1` in the environment turns it on from the start and
/// prints the report to stderr when the process exits (`NUVEC_PROFILE=names` groups by primitive name only).
void enable(bool by_shape = true);
void disable();
[[nodiscard]] bool enabled();
/// Drops the rows gathered so far.
void reset();
/// The rows, the most expensive first: total ms, share, calls, mean us, key.
[[nodiscard]] std::string report(int max_rows = 40);

}  // namespace nuvec::profile
