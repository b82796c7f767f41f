#include "nuvec/cuda/libraries.h"

#include <dlfcn.h>

#include <string>

#include "nuvec/core/error.h"

namespace nuvec::cuda {

namespace {

/// Opens a library by its soname (the loader's search: LD_LIBRARY_PATH, the cache), else at the path the build found
/// it. Each stays loaded for the life of the process.
void* open_library(const char* soname, const char* build_path) {
  if (void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL)) {
    return handle;
  }
  const std::string first_error = dlerror();
  if (void* handle = dlopen(build_path, RTLD_NOW | RTLD_LOCAL)) {
    return handle;
  }
  throw_error(ErrorKind::unsupported, std::string("[cuda] cannot open ") + soname + " (" + first_error + "; " +
                                          build_path + ": " + dlerror() + ").");
}

template <class Function>
void bind(void* library, const char* soname, Function& function, const char* name) {
  function = reinterpret_cast<Function>(dlsym(library, name));
  if (function == nullptr) {
    throw_error(ErrorKind::unsupported, std::string("[cuda] ") + soname + " has no function " + name + ".");
  }
}

CublasLt open_cublas_lt() {
  void* library = open_library(NUVEC_CUBLASLT_SONAME, NUVEC_CUBLASLT_PATH);
  CublasLt lt{};
  auto find = [&](auto& function, const char* name) { bind(library, NUVEC_CUBLASLT_SONAME, function, name); };
  find(lt.create, "cublasLtCreate");
  find(lt.get_status_name, "cublasLtGetStatusName");
  find(lt.get_status_string, "cublasLtGetStatusString");
  find(lt.matmul, "cublasLtMatmul");
  find(lt.matmul_algo_get_heuristic, "cublasLtMatmulAlgoGetHeuristic");
  find(lt.matmul_desc_init, "cublasLtMatmulDescInit_internal");
  find(lt.matmul_desc_set_attribute, "cublasLtMatmulDescSetAttribute");
  find(lt.matmul_preference_init, "cublasLtMatmulPreferenceInit_internal");
  find(lt.matmul_preference_set_attribute, "cublasLtMatmulPreferenceSetAttribute");
  find(lt.matrix_layout_init, "cublasLtMatrixLayoutInit_internal");
  find(lt.matrix_layout_set_attribute, "cublasLtMatrixLayoutSetAttribute");
  return lt;
}

Nvrtc open_nvrtc() {
  void* library = open_library(NUVEC_NVRTC_SONAME, NUVEC_NVRTC_PATH);
  Nvrtc rtc{};
  auto find = [&](auto& function, const char* name) { bind(library, NUVEC_NVRTC_SONAME, function, name); };
  find(rtc.version, "nvrtcVersion");
  find(rtc.get_error_string, "nvrtcGetErrorString");
  find(rtc.create_program, "nvrtcCreateProgram");
  find(rtc.compile_program, "nvrtcCompileProgram");
  find(rtc.get_program_log_size, "nvrtcGetProgramLogSize");
  find(rtc.get_program_log, "nvrtcGetProgramLog");
  find(rtc.get_cubin_size, "nvrtcGetCUBINSize");
  find(rtc.get_cubin, "nvrtcGetCUBIN");
  find(rtc.destroy_program, "nvrtcDestroyProgram");
  return rtc;
}

}  // namespace

const CublasLt& cublas_lt() {
  static const CublasLt lt = open_cublas_lt();
  return lt;
}

const Nvrtc& nvrtc() {
  static const Nvrtc rtc = open_nvrtc();
  return rtc;
}

}  // namespace nuvec::cuda
