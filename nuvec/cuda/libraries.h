#pragma once

// cuBLASLt and NVRTC, opened by the first product or generated kernel that needs them instead of linked: loading
// cuBLASLt alone adds about 150 MiB to a process's resident memory (its zero-filled data and relocations), which
// every program on a machine with the CUDA toolkit would otherwise pay, GPU or not.

#include <cublasLt.h>
#include <nvrtc.h>

namespace nuvec::cuda {

/// The cuBLASLt functions the backend calls. The *_init entries are the exported forms behind cublasLt.h's inline
/// cublasLt*Init wrappers: they take the descriptor's size after the descriptor.
struct CublasLt {
  decltype(&::cublasLtCreate) create;
  decltype(&::cublasLtGetStatusName) get_status_name;
  decltype(&::cublasLtGetStatusString) get_status_string;
  decltype(&::cublasLtMatmul) matmul;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) matmul_algo_get_heuristic;
  decltype(&::cublasLtMatmulDescInit_internal) matmul_desc_init;
  decltype(&::cublasLtMatmulDescSetAttribute) matmul_desc_set_attribute;
  decltype(&::cublasLtMatmulPreferenceInit_internal) matmul_preference_init;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) matmul_preference_set_attribute;
  decltype(&::cublasLtMatrixLayoutInit_internal) matrix_layout_init;
  decltype(&::cublasLtMatrixLayoutSetAttribute) matrix_layout_set_attribute;
};

/// The NVRTC functions the backend calls.
struct Nvrtc {
  decltype(&::nvrtcVersion) version;
  decltype(&::nvrtcGetErrorString) get_error_string;
  decltype(&::nvrtcCreateProgram) create_program;
  decltype(&::nvrtcCompileProgram) compile_program;
  decltype(&::nvrtcGetProgramLogSize) get_program_log_size;
  decltype(&::nvrtcGetProgramLog) get_program_log;
  decltype(&::nvrtcGetCUBINSize) get_cubin_size;
  decltype(&::nvrtcGetCUBIN) get_cubin;
  decltype(&::nvrtcDestroyProgram) destroy_program;
};

/// The libraries, opened on the first call (thread-safe). Throws an error naming the library and the reason when it
/// cannot be opened or lacks a function.
const CublasLt& cublas_lt();
const Nvrtc& nvrtc();

}  // namespace nuvec::cuda
