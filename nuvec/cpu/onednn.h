#pragma once

// What the oneDNN users of the CPU backend (gemm.cpp, conv_onednn.cpp) share.

#include <oneapi/dnnl/dnnl.hpp>

#include "nuvec/cpu/library_threads.h"  // sync_library_threads

namespace nuvec::cpu {

/// The CPU engine every oneDNN primitive of nuvec runs on.
dnnl::engine& engine();

}  // namespace nuvec::cpu
