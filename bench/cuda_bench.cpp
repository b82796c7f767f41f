// cuda_bench: nuvec on one GPU against what the hardware and its libraries reach on the same buffers.
//   (a) GEMMs, m = n = k: nuvec's matmul (inputs already on the GPU, the result evaluated) against cuBLASLt called
//       directly with its heuristic's first algorithm (the same row-major mapping and 32 MiB workspace), in TFLOP/s.
//   (b) A device-to-device copy of 1 GiB (cudaMemcpyAsync), then element-wise ops on 256M float32 elements, in GB/s
//       of the bytes each must read and write (4 GiB for multiply(add(a, b), c), which moves 6 GiB unfused), and as
//       a fraction of the copy's bandwidth.
// Each figure is the median of 25 runs after 3 warm-ups, timed with CUDA events around a call that returns once its
// work has finished (nuvec's eval waits for the GPU; the direct calls synchronize the stream), so nuvec's times
// include building and dispatching its graph. Every operand here is far larger than L2 (50 MiB on an H100), so
// repeated runs cannot be served from it and need no rotation among input sets. Without a GPU it prints "no GPU".

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "nuvec/cuda/buffers.h"
#include "nuvec/cuda/device.h"
#include "nuvec/nuvec.h"

using namespace nuvec;

namespace {

constexpr int warmups = 3;
constexpr int reps = 25;
constexpr size_t workspace_bytes = size_t{32} << 20;  // as nuvec's

void cuda_ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

void lt_ok(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: %s\n", what, cublasLtGetStatusString(status));
    std::exit(1);
  }
}

/// Median milliseconds of `run` on `stream` (the call returns once its work is done).
double median_ms(cudaStream_t stream, const std::function<void()>& run) {
  for (int i = 0; i < warmups; ++i) {
    run();
  }
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  cuda_ok(cudaEventCreate(&start), "cudaEventCreate");
  cuda_ok(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<float> times;
  for (int i = 0; i < reps; ++i) {
    cuda_ok(cudaEventRecord(start, stream), "cudaEventRecord");
    run();
    cuda_ok(cudaEventRecord(stop, stream), "cudaEventRecord");
    cuda_ok(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    cuda_ok(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    times.push_back(ms);
  }
  cuda_ok(cudaEventDestroy(start), "cudaEventDestroy");
  cuda_ok(cudaEventDestroy(stop), "cudaEventDestroy");
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// Normal samples made on the GPU, or on the host where the GPU lacks a kernel for them: the first use on the GPU
/// (a warm-up) uploads those once, and the device copy is kept.
array gpu_input(const Shape& shape, Dtype dtype, uint64_t seed) {
  try {
    auto x = random::normal(shape, dtype, 0.F, 1.F, random::key(seed), Device::gpu);
    x.eval();
    return x;
  } catch (const nuvec::error&) {
    auto x = random::normal(shape, dtype, 0.F, 1.F, random::key(seed), Device::cpu);
    x.eval();
    return x;
  }
}

cudaDataType_t cuda_type(Dtype dtype) {
  if (dtype == bfloat16) {
    return CUDA_R_16BF;
  }
  return dtype == float16 ? CUDA_R_16F : CUDA_R_32F;
}

/// cuBLASLt on its own: the row-major n x n product out = x @ y as out^T = y^T x^T in column-major terms (nuvec's
/// mapping), with the heuristic's first algorithm for float32 accumulation.
class DirectGemm {
 public:
  DirectGemm(Dtype dtype, int64_t n) {
    const cudaDataType_t type = cuda_type(dtype);
    lt_ok(cublasLtCreate(&handle_), "cublasLtCreate");
    cuda_ok(cudaMalloc(&workspace_, workspace_bytes), "cudaMalloc");
    lt_ok(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const auto u = static_cast<uint64_t>(n);
    lt_ok(cublasLtMatrixLayoutCreate(&layout_, type, u, u, n), "cublasLtMatrixLayoutCreate");
    cublasLtMatmulPreference_t preference = nullptr;
    lt_ok(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
    const uint64_t max_workspace = workspace_bytes;
    lt_ok(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace,
                                               sizeof(max_workspace)),
          "cublasLtMatmulPreferenceSetAttribute");
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    lt_ok(cublasLtMatmulAlgoGetHeuristic(handle_, desc_, layout_, layout_, layout_, layout_, preference, 1, &result,
                                         &found),
          "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) {
      std::fprintf(stderr, "cuBLASLt has no algorithm\n");
      std::exit(1);
    }
    algo_ = result.algo;
    lt_ok(cublasLtMatmulPreferenceDestroy(preference), "cublasLtMatmulPreferenceDestroy");
  }
  DirectGemm(const DirectGemm&) = delete;
  DirectGemm& operator=(const DirectGemm&) = delete;
  ~DirectGemm() {
    cublasLtMatrixLayoutDestroy(layout_);
    cublasLtMatmulDescDestroy(desc_);
    cudaFree(workspace_);
    cublasLtDestroy(handle_);
  }

  void run(const void* x, const void* y, void* out, cudaStream_t stream) {
    const float alpha = 1.F;
    const float beta = 0.F;
    lt_ok(cublasLtMatmul(handle_, desc_, &alpha, y, layout_, x, layout_, &beta, out, layout_, out, layout_, &algo_,
                         workspace_, workspace_bytes, stream),
          "cublasLtMatmul");
  }

 private:
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t layout_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

void gemm_row(Dtype dtype, int n, const Stream& s, cudaStream_t stream) try {
  auto x = gpu_input({n, n}, dtype, 1);
  auto y = gpu_input({n, n}, dtype, 2);
  const double nuvec_ms = median_ms(stream, [&] {
    auto out = matmul(x, y, Device::gpu);
    out.eval();
  });
  DirectGemm direct(dtype, n);
  void* out = nullptr;
  cuda_ok(cudaMalloc(&out, x.nbytes()), "cudaMalloc");
  const void* x_ptr = cuda::device_pointer(x, s);
  const void* y_ptr = cuda::device_pointer(y, s);
  const double direct_ms = median_ms(stream, [&] {
    direct.run(x_ptr, y_ptr, out, stream);
    cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  });
  cuda_ok(cudaFree(out), "cudaFree");
  const double flops = 2.0 * n * static_cast<double>(n) * n;
  std::printf("%-9s %6d %15.1f %17.1f %14.3f\n", std::string(dtype_name(dtype)).c_str(), n, flops / nuvec_ms * 1e-9,
              flops / direct_ms * 1e-9, direct_ms / nuvec_ms);
} catch (const std::exception& e) {
  std::printf("%-9s %6d failed: %s\n", std::string(dtype_name(dtype)).c_str(), n, e.what());
}

double copy_gbps(cudaStream_t stream) {
  constexpr size_t bytes = size_t{1} << 30;
  void* from = nullptr;
  void* to = nullptr;
  cuda_ok(cudaMalloc(&from, bytes), "cudaMalloc");
  cuda_ok(cudaMalloc(&to, bytes), "cudaMalloc");
  cuda_ok(cudaMemsetAsync(from, 1, bytes, stream), "cudaMemsetAsync");
  const double ms = median_ms(stream, [&] {
    cuda_ok(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
    cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  });
  cuda_ok(cudaFree(from), "cudaFree");
  cuda_ok(cudaFree(to), "cudaFree");
  return 2.0 * static_cast<double>(bytes) / ms * 1e-6;
}

void elementwise_row(const char* name, int arrays_touched, const std::function<array()>& op, double copy,
                     cudaStream_t stream) {
  constexpr double bytes_per_array = 4.0 * (1 << 28);
  try {
    const double ms = median_ms(stream, [&] { op().eval(); });
    const double gbps = arrays_touched * bytes_per_array / ms * 1e-6;
    std::printf("%-28s %10.1f %10.3f\n", name, gbps, gbps / copy);
  } catch (const std::exception& e) {
    std::printf("%-28s failed: %s\n", name, e.what());
  }
}

}  // namespace

int main() {
  if (!is_available(Device::gpu)) {
    std::puts("no GPU");
    return 0;
  }
  set_default_device(Device::gpu);
  const Stream s = default_stream(Device::gpu);
  const cudaStream_t stream = cuda::stream_handle(s);
  std::printf("%s\n\n", std::get<std::string>(device_info(Device::gpu).at("device_name")).c_str());

  std::printf("%-9s %6s %15s %17s %14s\n", "GEMM", "m=n=k", "nuvec TFLOP/s", "cuBLASLt TFLOP/s", "nuvec/cuBLASLt");
  for (Dtype dtype : {bfloat16, float16}) {
    for (int n : {4096, 8192, 16384}) {
      gemm_row(dtype, n, s, stream);
    }
  }
  gemm_row(float32, 4096, s, stream);

  const double copy = copy_gbps(stream);
  std::printf("\n%-28s %10s %10s\n", "256M float32 elements", "GB/s", "of copy");
  std::printf("%-28s %10.1f %10.3f\n", "copy 1 GiB (cudaMemcpy)", copy, 1.0);
  const Shape shape{1 << 28};
  auto a = gpu_input(shape, float32, 3);
  auto b = gpu_input(shape, float32, 4);
  auto c = gpu_input(shape, float32, 5);
  elementwise_row(
      "add(a, b)", 3, [&] { return add(a, b); }, copy, stream);
  elementwise_row(
      "exp(a)", 2, [&] { return exp(a); }, copy, stream);
  elementwise_row(
      "multiply(add(a, b), c)", 4, [&] { return multiply(add(a, b), c); }, copy, stream);
  auto fused = compile([](const std::vector<array>& x) { return std::vector<array>{multiply(add(x[0], x[1]), x[2])}; });
  elementwise_row(
      "  compiled", 4,
      [&] {
        return fused({a, b, c})[0];
      },
      copy, stream);
  return 0;
}
