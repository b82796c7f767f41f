// Matmul and AddMM through cuBLASLt. cuBLASLt is column-major and nuvec row-major, so the row-major product
// out (M x N) = a @ b is computed as out^T (N x M column-major with leading dimension N: out's own memory) =
// b^T a^T. cuBLASLt's A is b and its B is a, each read as the transpose of the matrix: a row-major matrix's memory is
// its transpose in column-major order, and a transposed view's memory is the matrix itself, which the product then
// transposes (no copy). Batch axes that step evenly in a, b and out become one strided batch, the rest a loop.

#include "nuvec/cuda/matmul.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nuvec/core/error.h"
#include "nuvec/cuda/buffers.h"
#include "nuvec/cuda/check.h"
#include "nuvec/cuda/device.h"
#include "nuvec/cuda/elementwise.h"
#include "nuvec/cuda/kernels.h"
#include "nuvec/cuda/libraries.h"

namespace nuvec::cuda {

namespace {

// cuBLAS's own workspace on Hopper: its fastest kernels want up to this much.
constexpr size_t workspace_bytes = size_t{32} << 20;

void check_cublas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) [[likely]] {
    return;
  }
  const std::string message = std::string("[matmul] ") + what + ": " + cublas_lt().get_status_name(status) + " (" +
                              cublas_lt().get_status_string(status) + ").";
  if (status == CUBLAS_STATUS_ALLOC_FAILED) {
    throw_error(ErrorKind::out_of_memory, message);
  }
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_ARCH_MISMATCH) {
    throw_error(ErrorKind::unsupported, message);
  }
  throw_internal(message);
}

/// cuBLASLt's element type for the products it computes here.
std::optional<cudaDataType_t> data_type(Dtype dtype) {
  switch (dtype.val) {
    case Dtype::Val::float32:
      return CUDA_R_32F;
    case Dtype::Val::float16:
      return CUDA_R_16F;
    case Dtype::Val::bfloat16:
      return CUDA_R_16BF;
    case Dtype::Val::float64:
      return CUDA_R_64F;
    case Dtype::Val::bool_:
    case Dtype::Val::uint8:
    case Dtype::Val::uint16:
    case Dtype::Val::uint32:
    case Dtype::Val::uint64:
    case Dtype::Val::int8:
    case Dtype::Val::int16:
    case Dtype::Val::int32:
    case Dtype::Val::int64:
    case Dtype::Val::complex64:
      break;
  }
  return std::nullopt;
}

void require_gemm(Dtype dtype, const char* op) {
  if (!gemm_supported(dtype)) {
    throw_error(ErrorKind::unsupported, std::string("[") + op +
                                            "] cuBLASLt computes float32, float16, bfloat16 and float64 products "
                                            "here; a " +
                                            std::string(dtype_name(dtype)) + " product runs on the host.");
  }
}

/// A matrix as cuBLASLt reads it: column-major, rows x cols with columns ld elements apart, and whether the
/// product transposes it.
struct Layout {
  bool transposed;
  int64_t rows;
  int64_t cols;
  int64_t ld;
  // NOLINTNEXTLINE(modernize-use-nullptr,readability-implicit-bool-conversion): clang-tidy misreads the default
  friend auto operator<=>(const Layout&, const Layout&) = default;
};

/// cuBLASLt's reading of x^T, where x is the matrix of x's last two axes: x's memory when row-major, x's memory
/// transposed when column-major. None when neither axis is contiguous (or rows overlap).
std::optional<Layout> transposed_layout(const array& x) {
  const int64_t rows = x.shape(-2);
  const int64_t cols = x.shape(-1);
  const int64_t row_stride = x.strides(-2);
  const int64_t col_stride = x.strides(-1);
  // A single row or column has no stride to speak of along its length-1 axis: any leading dimension fits it.
  if ((cols == 1 || col_stride == 1) && (rows == 1 || row_stride >= cols)) {
    return Layout{false, cols, rows, rows == 1 ? cols : row_stride};
  }
  if ((rows == 1 || row_stride == 1) && (cols == 1 || col_stride >= rows)) {
    return Layout{true, rows, cols, cols == 1 ? rows : col_stride};
  }
  return std::nullopt;
}

/// One batch axis of a product: its size and the strides (in elements) of a, b and out along it.
struct BatchAxis {
  int64_t size;
  int64_t a;
  int64_t b;
  int64_t out;
};

/// The batch axes of out (a and b have its number of axes), innermost first, an axis merged into the next inner
/// one where it continues it in a, b and out alike (up to cuBLASLt's int32 batch count). Length-1 axes go.
std::vector<BatchAxis> batch_axes(const array& a, const array& b, const array& out) {
  std::vector<BatchAxis> axes;
  for (int i = out.ndim() - 3; i >= 0; --i) {
    const BatchAxis axis{out.shape(i), a.strides(i), b.strides(i), out.strides(i)};
    if (axis.size == 1) {
      continue;
    }
    if (!axes.empty()) {
      auto& inner = axes.back();
      if (axis.a == inner.a * inner.size && axis.b == inner.b * inner.size && axis.out == inner.out * inner.size &&
          inner.size * axis.size <= INT32_MAX) {
        inner.size *= axis.size;
        continue;
      }
    }
    axes.push_back(axis);
  }
  return axes;
}

/// The alignment in bytes, up to the 256 cuBLASLt assumes by default, of every matrix of an operand (its first
/// element and each batch step): the heuristic then leaves out the kernels that need more (a view's offset).
uint32_t alignment(const void* data, size_t itemsize, const std::vector<BatchAxis>& axes, int64_t BatchAxis::*stride) {
  auto bits = reinterpret_cast<uintptr_t>(data) | uintptr_t{256};
  for (const auto& axis : axes) {
    bits |= static_cast<uintptr_t>(axis.*stride) * itemsize;
  }
  return static_cast<uint32_t>(bits & (~bits + 1));
}

/// Offset of x's last element from its first, plus one: x's elements lie within that span (strides are
/// non-negative where gemm_operand_ok holds).
int64_t element_span(const array& x) {
  int64_t span = 1;
  for (int i = 0; i < x.ndim(); ++i) {
    if (x.shape(i) > 1) {
      span += (x.shape(i) - 1) * x.strides(i);
    }
  }
  return span;
}

/// A float32 copy of x's elements on the GPU at the same offsets from the first, so x's strides read it (a
/// broadcast batch stays one matrix). The span is converted in pieces that a shape's int32 axes can name.
array widened(const array& x, const Stream& s) {
  constexpr int64_t piece = int64_t{1} << 30;
  const int64_t span = element_span(x);
  array wide = gpu_array(
      {static_cast<int32_t>((span + piece - 1) / piece), static_cast<int32_t>(std::min(span, piece))}, float32, s);
  for (int64_t start = 0; start < span; start += piece) {
    const auto n = static_cast<int32_t>(std::min(piece, span - start));
    array from(Shape{n}, x.dtype(), StopGradient{}, {}, s);
    from.copy_shared_buffer(x, Strides{1}, Flags{}, static_cast<size_t>(n), start);
    array to(Shape{n}, float32, StopGradient{}, {}, s);
    to.copy_shared_buffer(wide, Strides{1}, Flags{}, static_cast<size_t>(n), start);
    cuda::copy(from, to, s);
  }
  return wide;
}

/// Everything cuBLASLt's choice of algorithm depends on: D (m x n, column-major, ld m) = op(A) op(B) in batches.
struct Problem {
  cudaDataType_t type;
  Layout a;
  Layout b;
  int64_t m;
  int64_t n;
  int64_t batch;
  int64_t stride_a;
  int64_t stride_b;
  int64_t stride_d;
  uint32_t align_a;
  uint32_t align_b;
  uint32_t align_d;
  // NOLINTNEXTLINE(modernize-use-nullptr,readability-implicit-bool-conversion): clang-tidy misreads the default
  friend auto operator<=>(const Problem&, const Problem&) = default;
};

/// A problem's descriptors and the heuristic's first algorithm for it. Made once, never moved (cuBLASLt holds the
/// descriptors by address) and only read afterwards, by any thread.
struct Plan {
  cublasLtMatmulDescOpaque_t desc;
  cublasLtMatrixLayoutOpaque_t a;
  cublasLtMatrixLayoutOpaque_t b;
  cublasLtMatrixLayoutOpaque_t d;
  cublasLtMatmulAlgo_t algo;
};

template <class T>
void set_attribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, T value) {
  check_cublas(cublas_lt().matmul_desc_set_attribute(desc, attribute, &value, sizeof(value)),
               "cublasLtMatmulDescSetAttribute");
}
template <class T>
void set_attribute(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attribute, T value) {
  check_cublas(cublas_lt().matrix_layout_set_attribute(layout, attribute, &value, sizeof(value)),
               "cublasLtMatrixLayoutSetAttribute");
}
template <class T>
void set_attribute(cublasLtMatmulPreference_t preference, cublasLtMatmulPreferenceAttributes_t attribute, T value) {
  check_cublas(cublas_lt().matmul_preference_set_attribute(preference, attribute, &value, sizeof(value)),
               "cublasLtMatmulPreferenceSetAttribute");
}

void init_layout(cublasLtMatrixLayoutOpaque_t& layout, const Problem& p, int64_t rows, int64_t cols, int64_t ld,
                 int64_t stride) {
  check_cublas(cublas_lt().matrix_layout_init(&layout, sizeof(layout), p.type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld),
               "cublasLtMatrixLayoutInit");
  if (p.batch > 1) {
    set_attribute(&layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, static_cast<int32_t>(p.batch));
    set_attribute(&layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride);
  }
}

std::unique_ptr<Plan> make_plan(cublasLtHandle_t handle, const Problem& p) {
  auto plan = std::make_unique<Plan>();
  // float32 computes in float32 (not TF32) and the 16-bit types accumulate in it, as the CPU does.
  const bool f64 = p.type == CUDA_R_64F;
  check_cublas(
      cublas_lt().matmul_desc_init(&plan->desc, sizeof(plan->desc), f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, f64 ? CUDA_R_64F : CUDA_R_32F),
      "cublasLtMatmulDescInit");
  auto op = [](bool transposed) { return static_cast<int32_t>(transposed ? CUBLAS_OP_T : CUBLAS_OP_N); };
  set_attribute(&plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, op(p.a.transposed));
  set_attribute(&plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, op(p.b.transposed));
  init_layout(plan->a, p, p.a.rows, p.a.cols, p.a.ld, p.stride_a);
  init_layout(plan->b, p, p.b.rows, p.b.cols, p.b.ld, p.stride_b);
  init_layout(plan->d, p, p.m, p.n, p.m, p.stride_d);

  cublasLtMatmulPreferenceOpaque_t preference;
  check_cublas(cublas_lt().matmul_preference_init(&preference, sizeof(preference)), "cublasLtMatmulPreferenceInit");
  set_attribute(&preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t{workspace_bytes});
  set_attribute(&preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, p.align_a);
  set_attribute(&preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, p.align_b);
  set_attribute(&preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, p.align_d);
  set_attribute(&preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, p.align_d);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  check_cublas(cublas_lt().matmul_algo_get_heuristic(handle, &plan->desc, &plan->a, &plan->b, &plan->d, &plan->d, &preference,
                                              1, &result, &found),
               "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) {
    const int64_t k = p.a.transposed ? p.a.rows : p.a.cols;
    throw_error(ErrorKind::unsupported, "[matmul] cuBLASLt has no algorithm for a (" + std::to_string(p.n) + ", " +
                                            std::to_string(k) + ") @ (" + std::to_string(k) + ", " +
                                            std::to_string(p.m) + ") product in batches of " + std::to_string(p.batch) +
                                            ".");
  }
  plan->algo = result.algo;
  return plan;
}

/// cuBLASLt's state on one GPU: the handle, a workspace per stream (products on different streams may run at
/// once), and the plans made so far. All live as long as the process: the CUDA runtime may be gone before static
/// destructors run.
struct Lt {
  std::mutex mutex;
  cublasLtHandle_t handle = nullptr;
  std::map<cudaStream_t, void*> workspaces;
  std::map<Problem, std::unique_ptr<Plan>> plans;
};

Lt& lt(int device) {
  static std::mutex mutex;
  static std::map<int, Lt> states;
  std::lock_guard lock(mutex);
  return states[device];
}

/// What a product on `stream` needs, made on first use; repeated products of one problem query no heuristic.
struct Launch {
  cublasLtHandle_t handle;
  void* workspace;
  Plan* plan;
};

Launch prepare(const Problem& p, const Stream& s, cudaStream_t stream) {
  auto& state = lt(s.device.index);
  std::lock_guard lock(state.mutex);
  if (state.handle == nullptr) {
    check_cublas(cublas_lt().create(&state.handle), "cublasLtCreate");
  }
  auto& workspace = state.workspaces[stream];
  if (workspace == nullptr) {
    check(cudaMalloc(&workspace, workspace_bytes), "cudaMalloc (cuBLASLt workspace)");
  }
  auto& plan = state.plans[p];
  if (!plan) {
    plan = make_plan(state.handle, p);
  }
  return {state.handle, workspace, plan.get()};
}

/// out (row-contiguous, holding beta's addend when beta != 0) = alpha * a @ b + beta * out, on `s`.
void product(const array& a, const array& b, array& out, float alpha, float beta, const Stream& s) {
  if (out.size() == 0) {
    return;
  }
  const cudaStream_t stream = stream_handle(s);
  if (a.shape(-1) == 0) {
    // An empty sum: zeros, or out itself for beta == 1 (addmm sends the other betas to the host).
    if (beta == 0.F) {
      check(cudaMemsetAsync(device_pointer(out, s), 0, out.nbytes(), stream), "cudaMemsetAsync");
    }
    return;
  }
  auto readable = [&](const array& x) {
    const bool half = x.dtype() == float16 || x.dtype() == bfloat16;
    return x.ndim() == out.ndim() && gemm_operand_ok(x) &&
           (x.dtype() == out.dtype() || (half && out.dtype() == float32));
  };
  if (!readable(a) || !readable(b)) {
    throw_internal("[matmul] operands of shapes " + shape_string(a.shape()) + " and " + shape_string(b.shape()) + " (" +
                   std::string(dtype_name(a.dtype())) + ", " + std::string(dtype_name(b.dtype())) + ") for a " +
                   std::string(dtype_name(out.dtype())) + " output of shape " + shape_string(out.shape()) +
                   " reached cuBLASLt in a layout or dtype it cannot read.");
  }
  // Operands of another dtype than the output (float16 or bfloat16 weights of a float32 product) are widened:
  // cuBLASLt's operands share one dtype.
  const array a_data = a.dtype() == out.dtype() ? a : widened(a, s);
  const array b_data = b.dtype() == out.dtype() ? b : widened(b, s);
  const auto* a_ptr = static_cast<const char*>(device_pointer(a_data, s));
  const auto* b_ptr = static_cast<const char*>(device_pointer(b_data, s));
  auto* out_ptr = static_cast<char*>(device_pointer(out, s));
  const size_t item = out.itemsize();

  Problem p{};
  p.type = *data_type(out.dtype());
  p.a = *transposed_layout(b);
  p.b = *transposed_layout(a);
  p.m = out.shape(-1);
  p.n = out.shape(-2);
  const auto axes = batch_axes(a, b, out);
  BatchAxis inner = axes.empty() ? BatchAxis{1, 0, 0, 0} : axes.front();
  const auto outer = axes.empty() ? std::span<const BatchAxis>() : std::span(axes).subspan(1);
  // A batch of row-major a against one b (a broadcast weight) whose rows follow on evenly is one taller product.
  if (inner.size > 1 && inner.b == 0 && !p.b.transposed && inner.a == p.n * p.b.ld && inner.size * p.n <= INT32_MAX) {
    p.b.cols *= inner.size;
    p.n *= inner.size;
    inner = BatchAxis{1, 0, 0, 0};
  }
  p.batch = inner.size;
  p.stride_a = inner.b;
  p.stride_b = inner.a;
  p.stride_d = inner.out;
  p.align_a = alignment(b_ptr, item, axes, &BatchAxis::b);
  p.align_b = alignment(a_ptr, item, axes, &BatchAxis::a);
  p.align_d = alignment(out_ptr, item, axes, &BatchAxis::out);
  const Launch launch = prepare(p, s, stream);

  // The scale type is float, double for float64 products.
  const double alpha64 = alpha;
  const double beta64 = beta;
  const bool f64 = p.type == CUDA_R_64F;
  const void* alpha_ptr = f64 ? static_cast<const void*>(&alpha64) : &alpha;
  const void* beta_ptr = f64 ? static_cast<const void*>(&beta64) : &beta;
  int64_t count = 1;
  for (const auto& axis : outer) {
    count *= axis.size;
  }
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i;
    int64_t a_offset = 0;
    int64_t b_offset = 0;
    int64_t out_offset = 0;
    for (const auto& axis : outer) {
      const int64_t j = rest % axis.size;
      rest /= axis.size;
      a_offset += j * axis.a;
      b_offset += j * axis.b;
      out_offset += j * axis.out;
    }
    void* d = out_ptr + out_offset * static_cast<int64_t>(item);
    check_cublas(
        cublas_lt().matmul(launch.handle, &launch.plan->desc, alpha_ptr, b_ptr + b_offset * static_cast<int64_t>(item),
                       &launch.plan->a, a_ptr + a_offset * static_cast<int64_t>(item), &launch.plan->b, beta_ptr, d,
                       &launch.plan->d, d, &launch.plan->d, &launch.plan->algo, launch.workspace, workspace_bytes,
                       stream),
        "cublasLtMatmul");
  }
}

}  // namespace

bool gemm_supported(Dtype dtype) { return data_type(dtype).has_value(); }

bool gemm_operand_ok(const array& x) {
  if (x.ndim() < 2) {
    return false;
  }
  if (x.size() == 0) {
    return true;
  }
  for (int i = 0; i < x.ndim() - 2; ++i) {
    if (x.shape(i) > 1 && x.strides(i) < 0) {
      return false;
    }
  }
  return transposed_layout(x).has_value();
}

void matmul(const Matmul&, const std::vector<array>& inputs, std::vector<array>& outputs, const Stream& s) {
  auto& out = outputs[0];
  require_gemm(out.dtype(), "matmul");
  allocate_output(out, s);
  product(inputs[0], inputs[1], out, 1.F, 0.F, s);
}

void addmm(const AddMM& p, const std::vector<array>& inputs, std::vector<array>& outputs, const Stream& s) {
  auto& out = outputs[0];
  require_gemm(out.dtype(), "addmm");
  const auto& c = inputs[2];
  if (inputs[0].shape(-1) == 0 && p.beta != 0.F && p.beta != 1.F) {
    // beta * c alone, for which cuBLASLt has no call: the CPU kernel computes it (rare, and small work).
    on_host(Primitive(p), inputs, outputs);
    return;
  }
  // c becomes the product's accumulator: in place when nothing else holds it, else copied (and expanded) first.
  if (p.beta == 0.F || !donate(c, out, s)) {
    allocate_output(out, s);
    if (p.beta != 0.F && out.size() > 0) {
      cuda::copy(c, out, s);
    }
  }
  product(inputs[0], inputs[1], out, p.alpha, p.beta, s);
}

namespace {

/// The operands as cuBLASLt can read them: each as it lies, or a row-contiguous copy on the GPU.
std::vector<array> gemm_operands(const std::vector<array>& inputs, size_t count, const Stream& s) {
  std::vector<array> operands(inputs);
  for (size_t i = 0; i < count; ++i) {
    if (!gemm_operand_ok(operands[i])) {
      array dense = gpu_array(operands[i].shape(), operands[i].dtype(), s);
      copy(operands[i], dense, s);
      operands[i] = dense;
    }
  }
  return operands;
}

}  // namespace

void run(const Matmul& p, const Inputs& in, Outputs& out, const Stream& s) {
  if (!gemm_supported(out[0].dtype())) {
    on_host(p, in, out);
    return;
  }
  matmul(p, gemm_operands(in, 2, s), out, s);
}

void run(const AddMM& p, const Inputs& in, Outputs& out, const Stream& s) {
  if (!gemm_supported(out[0].dtype())) {
    on_host(p, in, out);
    return;
  }
  addmm(p, gemm_operands(in, 2, s), out, s);
}

}  // namespace nuvec::cuda
