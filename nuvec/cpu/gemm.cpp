// Which library computes each dtype's products, and the layout checks in front of them.
//
//   float32    oneDNN's dnnl_sgemm (measured against OpenBLAS's cblas_sgemm), batches in one oneDNN matmul;
//   float64    OpenBLAS's cblas_dgemm;  complex64  OpenBLAS's cblas_cgemm;
//   bfloat16   oneDNN's matmul primitive (bf16 in, f32 accumulate, bf16 out; AMX where the CPU has it),
//              widened to float32 like float16 in a case oneDNN has no implementation for;
//   float16    oneDNN 2.6 has no f16 matmul on CPU ("could not create a primitive descriptor"), so the
//              operands are widened to float32, multiplied by sgemm and rounded back once;
//   integers, bool   gemm_integer (gemm_integer.cpp).
//
// BLAS reads a matrix whose rows or columns have unit stride through its transpose flag and
// leading dimension, so transposes and row slices cost no copy; any other layout (a column
// slice of a transpose, negative strides) is first copied densely. oneDNN's fast matmul
// kernels want dense matrices and dense or broadcast batches (other strides select its slow
// reference implementation, and a leading dimension larger than the matrix a slower one), so
// the oneDNN path copies anything else.
//
// Threads: oneDNN runs on one OpenMP thread per calling thread, and nuvec's pool splits its products instead:
// sgemm by blocks of rows (or of columns, for few rows), oneDNN matmuls by sub-batches (one bfloat16 matrix by
// blocks of rows). With OpenMP teams of nuvec's thread count, libgomp's workers spun for milliseconds after every
// product (its default wait policy) while nuvec's pool ran the next element-wise kernel on the same cores: a GPT
// training step spent 28% of its CPU time spinning there, and batched attention products ran at 17 GFLOP/s instead
// of 150-200. OpenBLAS
// (pthreads; float64, complex64 and LAPACK) keeps nuvec's thread count (cpu::num_threads(), NUVEC_NUM_THREADS).

#include "nuvec/cpu/gemm.h"

#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <list>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "nuvec/core/dispatch.h"
#include "nuvec/core/error.h"
#include "nuvec/core/shape.h"
#include "nuvec/cpu/copy.h"
#include "nuvec/cpu/onednn.h"
#include "nuvec/cpu/scratch.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

namespace {

std::atomic<Sgemm> sgemm_backend{Sgemm::onednn};

// ---------------------------------------------------------------- threads

using OmpSetNumThreads = void (*)(int);

/// omp_set_num_threads from the OpenMP runtime oneDNN was built with (looked up, not linked, so
/// nuvec does not depend on which runtime that is).
OmpSetNumThreads omp_setter() {
  static const OmpSetNumThreads fn = [] {
    void* sym = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    if (sym == nullptr) {
      // Loaded with RTLD_LOCAL (say, nuvec inside a Python module): ask the runtime itself.
      for (const char* lib : {"libgomp.so.1", "libomp.so.5", "libiomp5.so"}) {
        if (void* handle = dlopen(lib, RTLD_NOW | RTLD_NOLOAD)) {
          sym = dlsym(handle, "omp_set_num_threads");
          if (sym != nullptr) {
            break;
          }
        }
      }
    }
    return reinterpret_cast<OmpSetNumThreads>(sym);
  }();
  return fn;
}

}  // namespace

void set_onednn_threads(int n) {
  // OpenMP keeps the thread count per calling thread.
  thread_local int omp_threads = 0;
  if (omp_threads != n) {
    if (auto set = omp_setter()) {
      set(n);
    }
    omp_threads = n;
  }
}

void sync_library_threads() {
  const int n = num_threads();
  static std::atomic<int> blas_threads{0};
  if (blas_threads.exchange(n, std::memory_order_relaxed) != n) {
    openblas_set_num_threads(n);
  }
  set_onednn_threads(1);
}

namespace {

// ---------------------------------------------------------------- layouts

/// mixed_gemm: up to this many rows of a stream a half-precision weight through half_gemv; from more, widening the
/// weight once and calling the sgemm pays.
constexpr int64_t gemv_rows = 8;

const char* at(const void* base, int64_t offset, size_t itemsize) {
  return static_cast<const char*>(base) + offset * static_cast<int64_t>(itemsize);
}

/// Copies `count` matrices (rows x cols) of `x` into dense row-major scratch of `to` dtype
/// and points `x` there.
Scratch densify(MatrixBatch& x, int64_t count, int64_t rows, int64_t cols, Dtype from, Dtype to) {
  Scratch scratch(static_cast<size_t>(count * rows * cols) * size_of(to));
  Shape shape{static_cast<int32_t>(count), static_cast<int32_t>(rows), static_cast<int32_t>(cols)};
  copy_strided(shape, x.data, from, {x.batch_stride, x.row_stride, x.col_stride}, scratch.get(), to,
               row_major_strides(shape));
  x = MatrixBatch{scratch.get(), count == 1 ? 0 : rows * cols, cols, 1};
  return scratch;
}

/// How BLAS reads a matrix: row-major or transposed, with a leading dimension.
struct BlasLayout {
  bool trans;
  int64_t ld;
};

std::optional<BlasLayout> blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  const int64_t min_row_ld = std::max<int64_t>(cols, 1);
  const int64_t min_col_ld = std::max<int64_t>(rows, 1);
  if (cols == 1 || cs == 1) {
    int64_t ld = rows == 1 ? min_row_ld : rs;
    if (ld >= min_row_ld && ld <= INT_MAX) {
      return BlasLayout{false, ld};
    }
  }
  if (rows == 1 || rs == 1) {
    int64_t ld = cols == 1 ? min_col_ld : cs;
    if (ld >= min_col_ld && ld <= INT_MAX) {
      return BlasLayout{true, ld};
    }
  }
  return std::nullopt;
}

/// (p, m, k) @ (k, n) with b shared and a's matrices stacked row after row is one (p*m, k) @ (k, n)
/// product: one large call instead of p small ones (a linear layer over a batch).
void fold_batch(int64_t& batch, int64_t& m, int64_t k, MatrixBatch& a, const MatrixBatch& b) {
  if (batch <= 1 || b.batch_stride != 0 || a.batch_stride == 0 || (k != 1 && a.col_stride != 1) ||
      batch * m > INT_MAX) {
    return;
  }
  if (m == 1) {
    a.row_stride = a.batch_stride;
  } else if (a.batch_stride != m * a.row_stride) {
    return;
  }
  m *= batch;
  batch = 1;
  a.batch_stride = 0;
}

// ---------------------------------------------------------------- BLAS: float32, float64, complex64

template <class T>
void blas_call(const BlasLayout& la, const BlasLayout& lb, int64_t m, int64_t n, int64_t k, float alpha, const T* a,
               const T* b, float beta, T* c, int64_t ldc) {
  const auto ta = la.trans ? CblasTrans : CblasNoTrans;
  const auto tb = lb.trans ? CblasTrans : CblasNoTrans;
  const auto bm = static_cast<blasint>(m);
  const auto bn = static_cast<blasint>(n);
  const auto bk = static_cast<blasint>(k);
  const auto lda = static_cast<blasint>(la.ld);
  const auto ldb = static_cast<blasint>(lb.ld);
  const auto bldc = static_cast<blasint>(ldc);
  if constexpr (std::is_same_v<T, float>) {
    if (sgemm_backend.load(std::memory_order_relaxed) == Sgemm::onednn) {
      auto status =
          dnnl_sgemm(la.trans ? 'T' : 'N', lb.trans ? 'T' : 'N', m, n, k, alpha, a, la.ld, b, lb.ld, beta, c, ldc);
      if (status != dnnl_success) {
        throw_internal("[matmul] dnnl_sgemm failed with status " + std::to_string(status) + ".");
      }
    } else {
      cblas_sgemm(CblasRowMajor, ta, tb, bm, bn, bk, alpha, a, lda, b, ldb, beta, c, bldc);
    }
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, ta, tb, bm, bn, bk, alpha, a, lda, b, ldb, beta, c, bldc);
  } else {
    static_assert(std::is_same_v<T, complex64_t>);
    const complex64_t alpha_c(alpha, 0.F);
    const complex64_t beta_c(beta, 0.F);
    cblas_cgemm(CblasRowMajor, ta, tb, bm, bn, bk, &alpha_c, a, lda, b, ldb, &beta_c, c, bldc);
  }
}

/// Products below this many multiply-adds run on the calling thread: splitting them costs more than it saves.
constexpr int64_t kSplitWork = int64_t{1} << 18;
/// The fewest rows of c a oneDNN matmul piece takes when one matrix is split across threads.
constexpr int64_t kSplitRows = 32;
/// Row and column blocks of a split product are multiples of this (whole SIMD vectors of C).
constexpr int64_t kSplitBlock = 16;
/// A product splits its k only into ranges at least this long (each piece then pays for one extra pass over c).
constexpr int64_t kSplitDepth = 1024;

/// The boundary of piece `i` of `pieces` over [0, extent), on a multiple of kSplitBlock.
int64_t split_point(int64_t extent, int64_t i, int64_t pieces) {
  return i == pieces ? extent : std::min(extent, (extent * i / pieces + kSplitBlock / 2) / kSplitBlock * kSplitBlock);
}

/// A product whose c is too small to split (few rows and columns) but whose k is long: each piece multiplies a
/// range of k into its own scratch c, and the pieces are added in order afterwards (the result does not depend on
/// which thread ran which piece).
void k_split_sgemm(const BlasLayout& la, const BlasLayout& lb, int64_t m, int64_t n, int64_t k, int64_t pieces,
                   float alpha, const float* a, const float* b, float beta, float* c) {
  std::vector<Scratch> partial;
  for (int64_t i = 1; i < pieces; ++i) {
    partial.emplace_back(static_cast<size_t>(m * n) * sizeof(float));
  }
  parallel_for(static_cast<size_t>(pieces), 1, [&](size_t begin, size_t end) {
    set_onednn_threads(1);
    for (auto i = static_cast<int64_t>(begin); i < static_cast<int64_t>(end); ++i) {
      const int64_t lo = k * i / pieces;
      const int64_t hi = k * (i + 1) / pieces;
      float* out = i == 0 ? c : static_cast<float*>(partial[static_cast<size_t>(i - 1)].get());
      blas_call<float>(la, lb, m, n, hi - lo, alpha, a + lo * (la.trans ? la.ld : 1), b + lo * (lb.trans ? 1 : lb.ld),
                       i == 0 ? beta : 0.F, out, n);
    }
  });
  for (const auto& part : partial) {
    const auto* values = static_cast<const float*>(part.get());
    for (int64_t e = 0; e < m * n; ++e) {
      c[e] += values[e];
    }
  }
}

/// A float32 product as single-threaded dnnl_sgemm calls on nuvec's pool: blocks of rows of c, or blocks of columns
/// when c has fewer rows than columns (each piece then reads all of b's or a's panel, a small extra cost against
/// its share of the multiply-adds), or ranges of k when c is too small for either.
void parallel_sgemm(const BlasLayout& la, const BlasLayout& lb, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, const float* b, float beta, float* c) {
  const bool by_rows = m >= n;
  const int64_t extent = by_rows ? m : n;
  const int64_t threads = m * n * k < kSplitWork ? 1 : num_threads();
  const int64_t pieces = std::min<int64_t>(threads, (extent + kSplitBlock - 1) / kSplitBlock);
  const int64_t k_pieces = std::min<int64_t>(threads, k / kSplitDepth);
  if (k_pieces > pieces) {
    k_split_sgemm(la, lb, m, n, k, k_pieces, alpha, a, b, beta, c);
    return;
  }
  parallel_for(static_cast<size_t>(pieces), 1, [&](size_t begin, size_t end) {
    set_onednn_threads(1);
    for (auto i = static_cast<int64_t>(begin); i < static_cast<int64_t>(end); ++i) {
      const int64_t lo = split_point(extent, i, pieces);
      const int64_t hi = split_point(extent, i + 1, pieces);
      if (hi <= lo) {
        continue;
      }
      if (by_rows) {
        blas_call<float>(la, lb, hi - lo, n, k, alpha, a + lo * (la.trans ? 1 : la.ld), b, beta, c + lo * n, n);
      } else {
        blas_call<float>(la, lb, m, hi - lo, k, alpha, a, b + lo * (lb.trans ? lb.ld : 1), beta, c + lo, n);
      }
    }
  });
}

template <class T>
void blas_gemm(int64_t batch, int64_t m, int64_t n, int64_t k, float alpha, MatrixBatch a, MatrixBatch b, float beta,
               T* c) {
  const Dtype dtype = dtype_v<T>;
  auto la = blas_layout(m, k, a.row_stride, a.col_stride);
  std::optional<Scratch> a_copy;
  if (!la) {
    a_copy = densify(a, a.batch_stride == 0 ? 1 : batch, m, k, dtype, dtype);
    la = blas_layout(m, k, a.row_stride, a.col_stride);
  }
  auto lb = blas_layout(k, n, b.row_stride, b.col_stride);
  std::optional<Scratch> b_copy;
  if (!lb) {
    b_copy = densify(b, b.batch_stride == 0 ? 1 : batch, k, n, dtype, dtype);
    lb = blas_layout(k, n, b.row_stride, b.col_stride);
  }
  sync_library_threads();
  for (int64_t p = 0; p < batch; ++p) {
    const auto* ap = reinterpret_cast<const T*>(at(a.data, p * a.batch_stride, sizeof(T)));
    const auto* bp = reinterpret_cast<const T*>(at(b.data, p * b.batch_stride, sizeof(T)));
    if constexpr (std::is_same_v<T, float>) {
      if (sgemm_backend.load(std::memory_order_relaxed) == Sgemm::onednn) {
        parallel_sgemm(*la, *lb, m, n, k, alpha, ap, bp, beta, c + p * m * n);
        continue;
      }
    }
    blas_call<T>(*la, *lb, m, n, k, alpha, ap, bp, beta, c + p * m * n, n);
  }
}

// ---------------------------------------------------------------- oneDNN matmul: bfloat16, batched float32

/// Whether a matrix is dense row-major (false) or dense column-major (true).
std::optional<bool> dense_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if ((cols == 1 || cs == 1) && (rows == 1 || rs == cols)) {
    return false;
  }
  if ((rows == 1 || rs == 1) && (cols == 1 || cs == rows)) {
    return true;
  }
  return std::nullopt;
}

struct MatmulKey {
  bool bf16;  // else f32
  int64_t batch;
  bool a_broadcast;
  bool b_broadcast;
  int64_t m;
  int64_t n;
  int64_t k;
  bool a_trans;
  bool b_trans;
  float alpha;
  float beta;
  friend bool operator==(const MatmulKey&, const MatmulKey&) = default;
};

}  // namespace

dnnl::engine& engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

namespace {

dnnl::memory::desc matrix_desc(bool bf16, int64_t batch, int64_t rows, int64_t cols, bool trans) {
  using dnnl::memory;
  const auto dt = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  memory::dims inner_strides = trans ? memory::dims{1, rows} : memory::dims{cols, 1};
  if (batch == 0) {  // 2-d
    return {{rows, cols}, dt, inner_strides};
  }
  return {{batch, rows, cols}, dt, {rows * cols, inner_strides[0], inner_strides[1]}};
}

/// A matmul primitive with the memory descriptors it was made for.
struct MatmulEntry {
  dnnl::memory::desc a;
  dnnl::memory::desc b;
  dnnl::memory::desc c;
  dnnl::memory::desc scratchpad;
  dnnl::matmul primitive;
};

/// Primitive creation costs tens of microseconds; the recently used ones are kept.
class MatmulCache {
 public:
  MatmulEntry get(const MatmulKey& key) {
    std::lock_guard lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == key) {
        entries_.splice(entries_.begin(), entries_, it);
        return it->second;
      }
    }
    entries_.emplace_front(key, create(key));
    if (entries_.size() > capacity) {
      entries_.pop_back();
    }
    return entries_.front().second;
  }

 private:
  static MatmulEntry create(const MatmulKey& key) {
    const bool batched = key.batch > 1;
    auto batch_dim = [&](bool broadcast) -> int64_t { return batched ? (broadcast ? 1 : key.batch) : 0; };
    auto a = matrix_desc(key.bf16, batch_dim(key.a_broadcast), key.m, key.k, key.a_trans);
    auto b = matrix_desc(key.bf16, batch_dim(key.b_broadcast), key.k, key.n, key.b_trans);
    auto c = matrix_desc(key.bf16, batch_dim(false), key.m, key.n, false);
    auto attr = user_scratchpad();
    if (key.alpha != 1.F) {
      attr.set_output_scales(0, {key.alpha});
    }
    if (key.beta != 0.F) {
      dnnl::post_ops ops;
      ops.append_sum(key.beta);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, engine());
    return MatmulEntry{a, b, c, pd.scratchpad_desc(), dnnl::matmul(pd)};
  }

  static constexpr size_t capacity = 64;
  std::mutex mutex_;
  std::list<std::pair<MatmulKey, MatmulEntry>> entries_;
};

/// A bfloat16 or float32 product. Returns false when oneDNN has no implementation for the case.
bool onednn_matmul(Dtype dtype, int64_t batch, int64_t m, int64_t n, int64_t k, float alpha, MatrixBatch a,
                   MatrixBatch b, float beta, void* c) {
  // Pieces on nuvec's pool, each one single-threaded primitive (made for its size, so at most two sizes per
  // product): sub-batches, or blocks of rows of one matrix, which else ran on one thread (bfloat16 1024^3: 17 ms
  // before, 9-14 ms after, on 2 loaded cores).
  const bool large = batch * m * n * k >= kSplitWork;
  const bool split_rows = large && batch == 1 && num_threads() > 1 && m >= 2 * kSplitRows;
  const int64_t pieces = !large       ? 1
                         : split_rows ? std::min<int64_t>(num_threads(), m / kSplitRows)
                                      : std::min<int64_t>(num_threads(), batch);
  auto prepare = [&](MatrixBatch& x, int64_t rows, int64_t cols, bool rows_apart, std::optional<Scratch>& copy) {
    auto trans = dense_layout(rows, cols, x.row_stride, x.col_stride);
    bool batch_ok = batch == 1 || x.batch_stride == 0 || x.batch_stride == rows * cols;
    // A block of rows of a column-major matrix is no dense matrix: a row-major copy instead.
    if (!trans || !batch_ok || (rows_apart && *trans)) {
      copy = densify(x, batch == 1 || x.batch_stride == 0 ? 1 : batch, rows, cols, dtype, dtype);
      trans = false;
    }
    return *trans;
  };
  std::optional<Scratch> a_copy;
  std::optional<Scratch> b_copy;
  const bool a_trans = prepare(a, m, k, split_rows, a_copy);
  const bool b_trans = prepare(b, k, n, false, b_copy);
  static MatmulCache cache;
  sync_library_threads();  // primitives are made for one OpenMP thread
  const int64_t span = split_rows ? m : batch;
  auto key_for = [&](int64_t count) {
    return MatmulKey{dtype == bfloat16,
                     split_rows ? 1 : count,
                     a.batch_stride == 0,
                     b.batch_stride == 0,
                     split_rows ? count : m,
                     n,
                     k,
                     a_trans,
                     b_trans,
                     alpha,
                     beta};
  };
  try {
    cache.get(key_for(span / pieces));
    cache.get(key_for((span + pieces - 1) / pieces));
  } catch (const dnnl::error&) {
    return false;
  }
  const size_t item = size_of(dtype);
  parallel_for(static_cast<size_t>(pieces), 1, [&](size_t begin, size_t end) {
    sync_library_threads();
    for (auto i = static_cast<int64_t>(begin); i < static_cast<int64_t>(end); ++i) {
      const int64_t lo = span * i / pieces;
      const int64_t hi = span * (i + 1) / pieces;
      auto entry = cache.get(key_for(hi - lo));
      // The piece's first elements: of its first matrices, or of its first rows of a and c (b whole).
      const int64_t a_offset = split_rows ? lo * k : lo * a.batch_stride;
      const int64_t b_offset = split_rows ? 0 : lo * b.batch_stride;
      try {
        auto& eng = engine();
        dnnl::memory a_mem(entry.a, eng, const_cast<char*>(at(a.data, a_offset, item)));
        dnnl::memory b_mem(entry.b, eng, const_cast<char*>(at(b.data, b_offset, item)));
        dnnl::memory c_mem(entry.c, eng,
                           static_cast<char*>(c) + lo * (split_rows ? 1 : m) * n * static_cast<int64_t>(item));
        thread_local dnnl::stream stream(eng);
        Scratch scratch(entry.scratchpad.get_size());
        entry.primitive.execute(stream, {{DNNL_ARG_SRC, a_mem},
                                         {DNNL_ARG_WEIGHTS, b_mem},
                                         {DNNL_ARG_DST, c_mem},
                                         {DNNL_ARG_SCRATCHPAD, dnnl::memory(entry.scratchpad, eng, scratch.get())}});
        stream.wait();
      } catch (const dnnl::error& e) {
        throw_internal("[matmul] oneDNN " + std::string(dtype_name(dtype)) + " matmul failed: " + e.what());
      }
    }
  });
  return true;
}

/// float32: one oneDNN matmul for a batch of matrices (measured 1-4x faster than a loop of sgemm calls
/// for batches of small matrices, and no slower for large ones), sgemm for one matrix.
void float32_gemm(int64_t batch, int64_t m, int64_t n, int64_t k, float alpha, const MatrixBatch& a,
                  const MatrixBatch& b, float beta, float* c) {
  if (batch > 1 && sgemm_backend.load(std::memory_order_relaxed) == Sgemm::onednn &&
      onednn_matmul(float32, batch, m, n, k, alpha, a, b, beta, c)) {
    return;
  }
  blas_gemm<float>(batch, m, n, k, alpha, a, b, beta, c);
}

// ---------------------------------------------------------------- float16 (and the bfloat16 fallback) through float32

/// The product in float32: operands widened, one sgemm, the result rounded once to `dtype`.
void widened_gemm(Dtype dtype, int64_t batch, int64_t m, int64_t n, int64_t k, float alpha, MatrixBatch a,
                  MatrixBatch b, float beta, void* c) {
  auto a32 = densify(a, a.batch_stride == 0 ? 1 : batch, m, k, dtype, float32);
  auto b32 = densify(b, b.batch_stride == 0 ? 1 : batch, k, n, dtype, float32);
  Shape c_shape{static_cast<int32_t>(batch), static_cast<int32_t>(m), static_cast<int32_t>(n)};
  auto c_strides = row_major_strides(c_shape);
  Scratch c32(static_cast<size_t>(batch * m * n) * sizeof(float));
  if (beta != 0.F) {
    copy_strided(c_shape, c, dtype, c_strides, c32.get(), float32, c_strides);
  }
  float32_gemm(batch, m, n, k, alpha, a, b, beta, static_cast<float*>(c32.get()));
  copy_strided(c_shape, c32.get(), float32, c_strides, c, dtype, c_strides);
}

/// c *= beta (c = 0 when beta == 0): the whole product when k == 0.
void scale(Dtype dtype, void* c, size_t count, float beta) {
  if (beta == 0.F) {
    std::memset(c, 0, count * size_of(dtype));
    return;
  }
  dispatch(dtype, [&]<class T>(type_tag<T>) {
    if constexpr (std::is_same_v<T, complex64_t>) {
      auto* x = static_cast<T*>(c);
      for (size_t i = 0; i < count; ++i) {
        x[i] *= beta;
      }
    } else if constexpr (!std::is_integral_v<T>) {
      auto* x = static_cast<T*>(c);
      for (size_t i = 0; i < count; ++i) {
        x[i] = static_cast<T>(static_cast<double>(x[i]) * static_cast<double>(beta));
      }
    }
  });
}

}  // namespace

void mixed_gemm(Dtype a_dtype, Dtype b_dtype, Dtype c_dtype, int64_t batch, int64_t m, int64_t n, int64_t k,
                const MatrixBatch& a_in, const MatrixBatch& b_in, void* c) {
  if (batch == 0 || m == 0 || n == 0) {
    return;
  }
  const bool half_weight = b_dtype == float16 || b_dtype == bfloat16;
  const bool same = a_dtype == b_dtype && b_dtype == c_dtype;
  const bool rows_of_weight = half_weight && b_in.row_stride == 1 && k > 0;
  if (same && !(rows_of_weight && m <= gemv_rows)) {
    gemm(c_dtype, batch, m, n, k, 1.F, a_in, b_in, 0.F, c);
    return;
  }
  const Shape c_shape{1, static_cast<int32_t>(m), static_cast<int32_t>(n)};
  const auto c_strides = row_major_strides(c_shape);
  const int64_t c_item = static_cast<int64_t>(size_of(c_dtype));
  for (int64_t p = 0; p < batch; ++p) {
    MatrixBatch a{at(a_in.data, p * a_in.batch_stride, size_of(a_dtype)), 0, a_in.row_stride, a_in.col_stride};
    MatrixBatch b{at(b_in.data, p * b_in.batch_stride, size_of(b_dtype)), 0, b_in.row_stride, b_in.col_stride};
    void* c_p = static_cast<char*>(c) + p * m * n * c_item;
    std::optional<Scratch> a32;
    if (a_dtype != float32 || a.col_stride != 1 || a.row_stride != k) {
      a32 = densify(a, 1, m, k, a_dtype, float32);
    }
    std::optional<Scratch> c32;
    if (c_dtype != float32) {
      c32.emplace(static_cast<size_t>(m * n) * sizeof(float));
    }
    auto* out = static_cast<float*>(c32 ? c32->get() : c_p);
    if (rows_of_weight && m <= gemv_rows) {
      half_gemv(b_dtype, m, n, k, static_cast<const float*>(a.data), b.data, b.col_stride, out);
    } else {
      std::optional<Scratch> b32;
      if (b_dtype != float32) {
        b32 = densify(b, 1, k, n, b_dtype, float32);
      }
      gemm(float32, 1, m, n, k, 1.F, a, b, 0.F, out);
    }
    if (c32) {
      copy_strided(c_shape, out, float32, c_strides, c_p, c_dtype, c_strides);
    }
  }
}

void set_sgemm_backend(Sgemm backend) { sgemm_backend.store(backend, std::memory_order_relaxed); }
Sgemm get_sgemm_backend() { return sgemm_backend.load(std::memory_order_relaxed); }

void gemm(Dtype dtype, int64_t batch, int64_t m, int64_t n, int64_t k, float alpha, const MatrixBatch& a_in,
          const MatrixBatch& b_in, float beta, void* c) {
  if (batch == 0 || m == 0 || n == 0) {
    return;
  }
  if (k == 0) {
    scale(dtype, c, static_cast<size_t>(batch * m * n), beta);
    return;
  }
  MatrixBatch a = a_in;
  MatrixBatch b = b_in;
  if (batch == 1) {
    a.batch_stride = 0;
    b.batch_stride = 0;
  }
  fold_batch(batch, m, k, a, b);
  dispatch(dtype, [&]<class T>(type_tag<T>) {
    if constexpr (std::is_same_v<T, float>) {
      float32_gemm(batch, m, n, k, alpha, a, b, beta, static_cast<float*>(c));
    } else if constexpr (std::is_same_v<T, double> || std::is_same_v<T, complex64_t>) {
      blas_gemm<T>(batch, m, n, k, alpha, a, b, beta, static_cast<T*>(c));
    } else if constexpr (std::is_same_v<T, bfloat16_t>) {
      if (!onednn_matmul(dtype, batch, m, n, k, alpha, a, b, beta, c)) {
        widened_gemm(dtype, batch, m, n, k, alpha, a, b, beta, c);
      }
    } else if constexpr (std::is_same_v<T, float16_t>) {
      widened_gemm(dtype, batch, m, n, k, alpha, a, b, beta, c);
    } else {
      if (alpha != 1.F || beta != 0.F) {
        throw_internal("[matmul] Integer products take no alpha or beta.");
      }
      const size_t itemsize = sizeof(T);
      for (int64_t p = 0; p < batch; ++p) {
        MatrixBatch ap{at(a.data, p * a.batch_stride, itemsize), 0, a.row_stride, a.col_stride};
        MatrixBatch bp{at(b.data, p * b.batch_stride, itemsize), 0, b.row_stride, b.col_stride};
        gemm_integer(dtype, m, n, k, ap, bp, static_cast<T*>(c) + p * m * n);
      }
    }
  });
}

}  // namespace nuvec::cpu
