#pragma once

// Software prefetch of a byte range, for kernels that know what they will read next better than the hardware
// prefetcher does (a strided walk, the next tile or row).

#include <cstdint>

namespace nuvec::cpu {

/// Asks for `bytes` from p to be brought into the L2 cache; a prefetch past the end of memory never faults.
inline void prefetch_l2(const void* p, int64_t bytes) {
  const auto* c = static_cast<const char*>(p);
  for (int64_t i = 0; i < bytes; i += 64) {
    __builtin_prefetch(c + i, 0, 2);
  }
}

}  // namespace nuvec::cpu
