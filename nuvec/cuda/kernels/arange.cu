// Arange: y[i] = start + i * step, as the CPU computes it (nuvec/cpu/arange.cpp). arange.cpp prepends out_t (the
// stored element) and nv_from_double (a double rounded once to out_t).
#include "nuvec/cuda/prelude.cuh"

/// Integer dtypes (bool included): numpy's first value and step, cast on the host, counted in wrapping uint64.
extern "C" __global__ void nv_arange_int(out_t* y, uint64_t first, uint64_t delta, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    y[i] = (out_t)(first + (uint64_t)i * delta);
  }
}

/// Floating dtypes: computed in double and rounded once.
extern "C" __global__ void nv_arange_float(out_t* y, double start, double step, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    y[i] = nv_from_double(start + (double)i * step);
  }
}
