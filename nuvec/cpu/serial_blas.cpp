// SerialBlas: a count of live guards; the first sets OpenBLAS to one thread, the last gives it nuvec's count back
// (the count gemm.cpp keeps it at, so its own bookkeeping of what it last set stays true).

#include "nuvec/cpu/serial_blas.h"

#include <cblas.h>

#include <mutex>

#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

namespace {

std::mutex guards_mutex;  // guards `guards` and the thread count changes
int guards = 0;

}  // namespace

SerialBlas::SerialBlas() {
  const std::lock_guard lock(guards_mutex);
  if (guards++ == 0) {
    openblas_set_num_threads(1);
  }
}

SerialBlas::~SerialBlas() {
  const std::lock_guard lock(guards_mutex);
  if (--guards == 0) {
    openblas_set_num_threads(num_threads());
  }
}

}  // namespace nuvec::cpu
