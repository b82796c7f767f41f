#pragma once

// Generated sources become shared objects: compiled once by the system C++
// compiler, cached on disk under a name derived from the source and the
// compiler's version, and loaded with dlopen.

#include <optional>
#include <string>

#include "nuvec/core/compile/fused.h"

namespace nuvec::detail {

struct LoadedKernel {
  std::shared_ptr<void> library;
  ContiguousEntry contiguous;  // null when the source has none (row kernels)
  StridedEntry strided;
};

/// The kernel built from `source`, or nothing (after a one-line warning) when no compiler is present or the
/// build fails; callers then leave the chain unfused.
std::optional<LoadedKernel> load_kernel(const std::string& source);

/// Whether the configured compiler runs (NUVEC_CXX, else CXX, else c++); warns once per compiler when not.
bool compiler_available();

/// Where shared objects are cached: NUVEC_KERNEL_CACHE, else $XDG_CACHE_HOME/nuvec/kernels, else
/// ~/.cache/nuvec/kernels.
std::string kernel_cache_dir();

}  // namespace nuvec::detail
