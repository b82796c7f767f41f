#pragma once

// Shared body of the libFuzzer targets: the input becomes an in-memory blob, the parser runs on it, and every
// array it returns is evaluated and read in full (so lazily adopted bytes are touched too). nuvec::error is the
// expected outcome for malformed input; any other exception, a crash or a sanitizer report is a bug.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nuvec/nuvec.h"

namespace nuvec::fuzz {

inline void touch(const array& a) {
  array c = contiguous(a);
  c.eval();
  const auto* p = static_cast<const volatile unsigned char*>(c.raw_data());
  unsigned sum = 0;
  for (size_t i = 0; i < c.nbytes(); ++i) {
    sum += p[i];
  }
  (void)sum;
}

template <class Load>
int run(const uint8_t* data, size_t size, Load load) {
  static const bool init = [] {
    set_cache_limit(0);  // freed buffers go back at once, so RSS tracks live memory
    return true;
  }();
  (void)init;
  auto blob = io::memory_blob(std::vector<unsigned char>(data, data + size), "fuzz input");
  try {
    load(blob);
  } catch (const error&) {
  }
  return 0;
}

}  // namespace nuvec::fuzz
