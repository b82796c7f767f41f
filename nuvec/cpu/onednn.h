#pragma once

// What the oneDNN users of the CPU backend (gemm.cpp, conv_onednn.cpp) share.

#include <oneapi/dnnl/dnnl.hpp>

namespace nuvec::cpu {

/// The CPU engine every oneDNN primitive of nuvec runs on.
dnnl::engine& engine();

/// Gives OpenBLAS nuvec's thread count and oneDNN one thread (nuvec's pool splits its work) before a call on
/// this thread (cheap when unchanged).
void sync_library_threads();

/// Primitive attributes with scratchpad_mode::user: each execution passes its own scratchpad, so a primitive may run
/// on any thread and on several at once (the library's shared scratchpad allows neither).
dnnl::primitive_attr user_scratchpad();

/// The OpenMP thread count oneDNN uses for calls from this thread.
void set_onednn_threads(int n);

}  // namespace nuvec::cpu
