#pragma once

// Highway for the CPU kernels, with static dispatch: they are compiled for the build machine's CPU (-march=native),
// and Highway's dynamic dispatch would otherwise refuse a baseline (Zen 4's) that its own target list lacks. The
// kernels include Highway through this header so that every one of them makes that choice the same way.

#ifndef HWY_COMPILE_ONLY_STATIC
#define HWY_COMPILE_ONLY_STATIC 1
#endif
#include <hwy/highway.h>

namespace nuvec::cpu {

namespace hn = hwy::HWY_NAMESPACE;

}  // namespace nuvec::cpu
