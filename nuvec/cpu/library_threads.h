#pragma once

// The thread counts of the libraries nuvec calls: OpenBLAS (products, LAPACK) and oneDNN (gemm.cpp).

namespace nuvec::cpu {

/// Gives OpenBLAS and oneDNN nuvec's thread count before a call (cheap when unchanged).
void sync_library_threads();

/// While one is alive (on any thread), OpenBLAS runs its calls on the calling thread: for LAPACK on small matrices,
/// where its threads cost more than they give. The count returns to nuvec's when the last one ends.
class SerialBlas {
 public:
  SerialBlas();
  ~SerialBlas();
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;
};

}  // namespace nuvec::cpu
