#pragma once

// What the oneDNN users of the CPU backend (gemm.cpp, conv_onednn.cpp) share.

#include <oneapi/dnnl/dnnl.hpp>

namespace nuvec::cpu {

/// The CPU engine every oneDNN primitive of nuvec runs on.
dnnl::engine& engine();

/// Gives OpenBLAS and oneDNN nuvec's thread count before a call (cheap when unchanged).
void sync_library_threads();

}  // namespace nuvec::cpu
