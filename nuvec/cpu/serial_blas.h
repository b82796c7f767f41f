#pragma once

// Keeps OpenBLAS on the calling thread for LAPACK calls on small matrices (linalg.cpp), where its threads cost more
// than they give.

namespace nuvec::cpu {

/// While one is alive (on any thread), OpenBLAS runs its calls on the calling thread; its thread count returns to
/// nuvec's (cpu::num_threads()) when the last one ends. A product on another thread meanwhile runs serial too.
class SerialBlas {
 public:
  SerialBlas();
  ~SerialBlas();
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;
};

}  // namespace nuvec::cpu
