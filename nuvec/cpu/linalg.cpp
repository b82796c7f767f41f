// The linear algebra kernels: one LAPACK routine (or two) per matrix of the batch, float32 and float64; svd, eig and
// eigh also complex64 (cgesdd, cgeev, cheevd).
//
// Layout: LAPACK reads column-major matrices. A kernel that needs the matrix itself copies its input once into
// dense column-major scratch (copy_strided takes any strides, so transposed and sliced inputs cost nothing more).
// A row-major copy read column-major is the transpose, which some real kernels use instead of a transposition:
// inv(A^T) = inv(A)^T, so the inverse of a row-major copy, read back row-major, is inv(A); Cholesky and triangular
// inverses only flip the triangle they read; solve() factors A^T and solves with its transpose (getrs/trtrs with
// trans = 'T'). Outputs are row-contiguous, written by small transposing loops.
//
// Threads: LAPACK is called per matrix. Up to serial_matrix rows, OpenBLAS is kept on the calling thread (a
// SerialBlas guard): its threads made eigh 1.4 to 3x slower up to n = 256 on a 2-core machine (see
// bench/README.md). Batches of small matrices (up to small_matrix rows) are split across nuvec's thread pool; larger
// matrices run one after the other, and above serial_matrix OpenBLAS threads inside each call (its count follows
// nuvec's: see gemm.cpp).
//
// Errors LAPACK discovers (a singular matrix, one that is not positive definite, no convergence) throw here, so
// the outputs become failed arrays whose message names the op and the matrix of the batch.

#include <algorithm>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "nuvec/core/dispatch.h"
#include "nuvec/cpu/copy.h"
#include "nuvec/cpu/element_types.h"
#include "nuvec/cpu/kernels.h"
#include "nuvec/cpu/lapack.h"
#include "nuvec/cpu/serial_blas.h"
#include "nuvec/cpu/thread_pool.h"

namespace nuvec::cpu {

namespace {

using lapack::Int;

// ---------------------------------------------------------------- tuning

constexpr int64_t small_matrix = 96;      // largest size whose batches are split across the pool (see header)
constexpr int64_t serial_matrix = 256;    // largest size LAPACK runs without OpenBLAS's threads (see header)
constexpr int64_t grain_flops = 1 << 14;  // ~n^3 work per pool chunk before splitting pays

// ---------------------------------------------------------------- helpers

/// The real type of T: singular values and Hermitian eigenvalues.
template <class T>
using Real = decltype(std::abs(std::declval<T>()));

/// The dtypes the linalg ops let through; the decompositions of general matrices take complex input too.
using real_types = type_list<float, double>;
using real_or_complex_types = type_list<float, double, complex64_t>;

/// Number of matrices in a (..., M, N) shape.
int64_t batch_count(const Shape& shape) {
  return static_cast<int64_t>(shape_size(Shape(shape.begin(), shape.end() - 2)));
}

/// Element strides that store each matrix of `shape` column-major, matrices one after the other.
Strides col_major_strides(const Shape& shape) {
  const size_t nd = shape.size();
  Strides strides(nd);
  strides[nd - 2] = 1;
  strides[nd - 1] = shape[nd - 2];
  int64_t step = static_cast<int64_t>(shape[nd - 2]) * shape[nd - 1];
  for (size_t i = nd - 2; i-- > 0;) {
    strides[i] = step;
    step *= shape[i];
  }
  return strides;
}

/// A dense copy of `a`, each matrix column-major (or row-major, for kernels that work on the transpose).
template <class T>
std::vector<T> pack(const array& a, bool col_major) {
  std::vector<T> out(a.size());
  copy_strided(a.shape(), a.raw_data(), a.dtype(), a.strides(), out.data(), a.dtype(),
               col_major ? col_major_strides(a.shape()) : row_major_strides(a.shape()));
  return out;
}

template <class T>
T* allocate(array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  return static_cast<T*>(out.raw_data());
}

/// Where a kernel writes one output of a multi-output primitive: its new buffer, or scratch when nothing holds that
/// output any more (evaluation then passes a placeholder scalar in its place).
template <class T>
class OutputBuffer {
 public:
  OutputBuffer(array& out, int64_t elements) { init(out, elements); }
  /// Output `index` when `wanted`, else none and a null get(): the outputs a primitive may leave out (U and Vt,
  /// eigenvectors).
  OutputBuffer(Outputs& out, size_t index, int64_t elements, bool wanted) {
    if (wanted) {
      init(out[index], elements);
    }
  }
  [[nodiscard]] T* get() const { return data_; }

 private:
  void init(array& out, int64_t elements) {
    if (out.dtype() == dtype_of<T>::value && static_cast<int64_t>(out.size()) == elements) {
      data_ = allocate<T>(out);
    } else {
      scratch_.resize(static_cast<size_t>(elements));
      data_ = scratch_.data();
    }
  }

  std::vector<T> scratch_;
  T* data_ = nullptr;
};

/// dst (rows x cols, row-major) = the column-major src with leading dimension ld.
template <class T, class S>
void from_col_major(const S* src, int64_t ld, int64_t rows, int64_t cols, T* dst) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      dst[i * cols + j] = static_cast<T>(src[i + j * ld]);
    }
  }
}

/// Zeroes the strict upper (or lower) triangle of a row-major n x n matrix.
template <class T>
void zero_triangle(T* a, int64_t n, bool upper) {
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      if (upper ? j > i : j < i) {
        a[i * n + j] = T{0};
      }
    }
  }
}

/// Runs body(begin, end) over `count` matrices of size n: across the pool when they are small, else in order; up to
/// serial_matrix without OpenBLAS's threads.
template <class F>
void for_each_matrix(int64_t count, int64_t n, F&& body) {
  const auto matrices = static_cast<size_t>(count);
  if (n > serial_matrix) {
    body(size_t{0}, matrices);
    return;
  }
  const SerialBlas serial;
  if (n > small_matrix) {
    body(size_t{0}, matrices);
    return;
  }
  const auto work = std::max<int64_t>(1, n * n * n);
  parallel_for(matrices, static_cast<size_t>(std::max<int64_t>(1, grain_flops / work)), body);
}

/// Where in the batch a failing matrix sits, for messages.
std::string which(size_t index, int64_t count) {
  return count > 1 ? " (matrix " + std::to_string(index) + " of the batch)" : "";
}

/// LAPACK's info < 0 names an argument it rejected: a bug in this file, never the user's input.
void check_arguments(Int info, const char* routine) {
  if (info < 0) {
    throw_internal(std::string("[linalg] LAPACK's ") + routine + " rejected argument " + std::to_string(-info) + ".");
  }
}

/// The optimal workspace size a LAPACK query (lwork = -1) wrote into `query` (the real part, for complex routines).
template <class T>
Int workspace(T query) {
  return std::max<Int>(1, static_cast<Int>(std::real(query)));
}

[[noreturn]] void fail(const char* op, const std::string& what, size_t index, int64_t count) {
  throw_invalid(std::string("[linalg::") + op + "] " + what + which(index, count) + ".");
}

// ---------------------------------------------------------------- QR

template <class T>
void qr(const array& a, array& q_out, array& r_out) {
  const Int m = a.shape(-2);
  const Int n = a.shape(-1);
  const Int k = std::min(m, n);
  const int64_t count = batch_count(a.shape());
  OutputBuffer<T> q_buffer(q_out, count * m * k);
  OutputBuffer<T> r_buffer(r_out, count * k * n);
  T* q = q_buffer.get();
  T* r = r_buffer.get();
  if (k == 0 || count == 0) {
    return;
  }
  auto buf = pack<T>(a, true);
  T query_qr{};
  T query_q{};
  check_arguments(lapack::geqrf(m, n, buf.data(), m, buf.data(), &query_qr, -1), "geqrf");
  check_arguments(lapack::orgqr(m, k, k, buf.data(), m, buf.data(), &query_q, -1), "orgqr");
  const Int lwork = std::max(workspace(query_qr), workspace(query_q));
  for_each_matrix(count, std::max(m, n), [&](size_t begin, size_t end) {
    std::vector<T> tau(k);
    std::vector<T> work(lwork);
    for (size_t i = begin; i < end; ++i) {
      T* mat = buf.data() + i * m * n;
      check_arguments(lapack::geqrf(m, n, mat, m, tau.data(), work.data(), lwork), "geqrf");
      // R is the upper triangle of the first k rows; the reflectors below it become Q.
      T* ri = r + i * k * n;
      for (Int row = 0; row < k; ++row) {
        for (Int col = 0; col < n; ++col) {
          ri[row * n + col] = col >= row ? mat[row + col * m] : T{0};
        }
      }
      check_arguments(lapack::orgqr(m, k, k, mat, m, tau.data(), work.data(), lwork), "orgqr");
      from_col_major(mat, m, m, k, q + i * m * k);
    }
  });
}

// ---------------------------------------------------------------- SVD

template <class T>
void fill_identity(T* out, int64_t count, int64_t n) {
  std::fill(out, out + count * n * n, T{0});
  for (int64_t b = 0; b < count; ++b) {
    for (int64_t i = 0; i < n; ++i) {
      out[b * n * n + i * n + i] = T{1};
    }
  }
}

template <class T>
void svd(const SVD& p, const array& a, Outputs& out) {
  using R = Real<T>;
  const Int m = a.shape(-2);
  const Int n = a.shape(-1);
  const Int k = std::min(m, n);
  const int64_t count = batch_count(a.shape());
  OutputBuffer<T> u_buffer(out, 0, count * m * m, p.compute_uv);
  OutputBuffer<R> s_buffer(out[p.compute_uv ? 1 : 0], count * k);
  OutputBuffer<T> vt_buffer(out, 2, count * n * n, p.compute_uv);
  T* u = u_buffer.get();
  R* s = s_buffer.get();
  T* vt = vt_buffer.get();
  if (k == 0 || count == 0) {
    // No singular values: U and Vt are any orthogonal matrices, the identity as NumPy gives.
    if (p.compute_uv) {
      fill_identity(u, count, m);
      fill_identity(vt, count, n);
    }
    return;
  }
  const char jobz = p.compute_uv ? 'A' : 'N';
  auto buf = pack<T>(a, true);
  // The complex routine's real workspace: LAPACK's bound for jobz = 'A', which covers 'N'.
  const auto rwork_size = static_cast<size_t>(
      is_complex_v<T> ? int64_t{k} * std::max<int64_t>(5 * int64_t{k} + 7, 2 * int64_t{std::max(m, n)} + 2 * k + 1)
                      : 0);
  auto gesdd = [&](T* mat, R* values, T* u_col, T* vt_col, T* work, Int lwork, Int* iwork, R* rwork) {
    if constexpr (is_complex_v<T>) {
      return lapack::gesdd(jobz, m, n, mat, m, values, u_col, m, vt_col, n, work, lwork, rwork, iwork);
    } else {
      return lapack::gesdd(jobz, m, n, mat, m, values, u_col, m, vt_col, n, work, lwork, iwork);
    }
  };
  T query{};
  std::vector<Int> iwork_query(8 * static_cast<size_t>(k));
  std::vector<R> rwork_query(rwork_size);
  check_arguments(gesdd(buf.data(), s, buf.data(), buf.data(), &query, -1, iwork_query.data(), rwork_query.data()),
                  "gesdd");
  const Int lwork = workspace(query);
  for_each_matrix(count, std::max(m, n), [&](size_t begin, size_t end) {
    std::vector<T> work(lwork);
    std::vector<Int> iwork(8 * static_cast<size_t>(k));
    std::vector<R> rwork(rwork_size);
    std::vector<T> u_col(p.compute_uv ? static_cast<size_t>(m) * m : 1);
    std::vector<T> vt_col(p.compute_uv ? static_cast<size_t>(n) * n : 1);
    for (size_t i = begin; i < end; ++i) {
      T* mat = buf.data() + i * m * n;
      Int info = gesdd(mat, s + i * k, u_col.data(), vt_col.data(), work.data(), lwork, iwork.data(), rwork.data());
      check_arguments(info, "gesdd");
      if (info > 0) {
        fail("svd", "The singular value decomposition did not converge", i, count);
      }
      if (p.compute_uv) {
        from_col_major(u_col.data(), m, m, m, u + i * m * m);
        from_col_major(vt_col.data(), n, n, n, vt + i * n * n);
      }
    }
  });
}

// ---------------------------------------------------------------- inverses and Cholesky

/// Copies `a` into out's new row-major buffer; kernels then work on each matrix in place (as its transpose).
template <class T>
T* copy_into(const array& a, array& out) {
  T* data = allocate<T>(out);
  copy_strided(a, data, out.strides(), out.dtype());
  return data;
}

template <class T>
void inverse(const Inverse& p, const array& a, array& out) {
  const Int n = a.shape(-1);
  const int64_t count = batch_count(a.shape());
  T* data = copy_into<T>(a, out);
  if (n == 0 || count == 0) {
    return;
  }
  const char* op = p.triangular ? "tri_inv" : "inv";
  Int lwork = 1;
  if (!p.triangular) {
    T query{};
    Int ipiv_query = 0;
    check_arguments(lapack::getri(n, data, n, &ipiv_query, &query, -1), "getri");
    lwork = workspace(query);
  }
  // The row-major matrix is A^T to LAPACK: a lower triangle of A is the upper one of A^T.
  const char uplo = p.upper ? 'L' : 'U';
  for_each_matrix(count, n, [&](size_t begin, size_t end) {
    std::vector<Int> ipiv(n);
    std::vector<T> work(lwork);
    for (size_t i = begin; i < end; ++i) {
      T* mat = data + i * n * n;
      if (p.triangular) {
        Int info = lapack::trtri(uplo, n, mat, n);
        check_arguments(info, "trtri");
        if (info > 0) {
          fail(op, "The matrix is singular: diagonal element " + std::to_string(info - 1) + " is zero", i, count);
        }
        zero_triangle(mat, n, !p.upper);
        continue;
      }
      Int info = lapack::getrf(n, n, mat, n, ipiv.data());
      check_arguments(info, "getrf");
      if (info > 0) {
        fail(op,
             "The matrix is singular: U[" + std::to_string(info - 1) + ", " + std::to_string(info - 1) +
                 "] of its LU factorization is zero",
             i, count);
      }
      check_arguments(lapack::getri(n, mat, n, ipiv.data(), work.data(), lwork), "getri");
    }
  });
}

template <class T>
void cholesky(const Cholesky& p, const array& a, array& out) {
  const Int n = a.shape(-1);
  const int64_t count = batch_count(a.shape());
  T* data = copy_into<T>(a, out);
  if (n == 0 || count == 0) {
    return;
  }
  const char uplo = p.upper ? 'L' : 'U';  // flipped: LAPACK sees A^T
  for_each_matrix(count, n, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      T* mat = data + i * n * n;
      Int info = lapack::potrf(uplo, n, mat, n);
      check_arguments(info, "potrf");
      if (info > 0) {
        fail("cholesky",
             "The matrix is not positive definite: its leading minor of order " + std::to_string(info) +
                 " is not positive",
             i, count);
      }
      zero_triangle(mat, n, !p.upper);
    }
  });
}

// ---------------------------------------------------------------- LU

template <class T>
void lu(const array& a, Outputs& out) {
  const Int m = a.shape(-2);
  const Int n = a.shape(-1);
  const Int k = std::min(m, n);
  const int64_t count = batch_count(a.shape());
  OutputBuffer<T> lu_buffer(out[0], count * m * n);
  OutputBuffer<uint32_t> pivots_buffer(out[1], count * k);
  OutputBuffer<uint32_t> perm_buffer(out[2], count * m);
  T* lu_data = lu_buffer.get();
  uint32_t* pivots = pivots_buffer.get();
  uint32_t* perm = perm_buffer.get();
  if (k == 0) {
    for (int64_t b = 0; b < count; ++b) {
      std::iota(perm + b * m, perm + (b + 1) * m, 0U);
    }
    return;
  }
  auto buf = pack<T>(a, true);
  for_each_matrix(count, std::max(m, n), [&](size_t begin, size_t end) {
    std::vector<Int> ipiv(k);
    std::vector<uint32_t> rows(m);
    for (size_t i = begin; i < end; ++i) {
      T* mat = buf.data() + i * m * n;
      // info > 0 (an exactly zero pivot) still leaves a valid factorization: det and slogdet read it.
      check_arguments(lapack::getrf(m, n, mat, m, ipiv.data()), "getrf");
      from_col_major(mat, m, m, n, lu_data + i * m * n);
      // Applying the swaps to 0..M-1 gives rows[r] = the row of A that ends at row r of L U; perm inverts it.
      std::iota(rows.begin(), rows.end(), 0U);
      for (Int r = 0; r < k; ++r) {
        pivots[i * k + r] = static_cast<uint32_t>(ipiv[r] - 1);
        std::swap(rows[r], rows[ipiv[r] - 1]);
      }
      for (Int r = 0; r < m; ++r) {
        perm[i * m + rows[r]] = static_cast<uint32_t>(r);
      }
    }
  });
}

// ---------------------------------------------------------------- solvers

template <class T>
void solve(const Solve& p, const array& a, const array& b, array& out) {
  const Int n = a.shape(-1);
  const Int nrhs = b.shape(-1);
  const int64_t count = batch_count(a.shape());
  T* x = allocate<T>(out);
  if (out.size() == 0) {
    return;
  }
  const char* op = p.triangular ? "solve_triangular" : "solve";
  auto lhs = pack<T>(a, false);  // row-major: LAPACK sees A^T and solves with its transpose
  auto rhs = pack<T>(b, true);
  const char uplo = p.upper ? 'L' : 'U';
  for_each_matrix(count, n, [&](size_t begin, size_t end) {
    std::vector<Int> ipiv(n);
    for (size_t i = begin; i < end; ++i) {
      T* mat = lhs.data() + i * n * n;
      T* cols = rhs.data() + i * n * nrhs;
      if (p.triangular) {
        Int info = lapack::trtrs(uplo, 'T', n, nrhs, mat, n, cols, n);
        check_arguments(info, "trtrs");
        if (info > 0) {
          fail(op, "The matrix is singular: diagonal element " + std::to_string(info - 1) + " is zero", i, count);
        }
        continue;
      }
      Int info = lapack::getrf(n, n, mat, n, ipiv.data());
      check_arguments(info, "getrf");
      if (info > 0) {
        fail(op,
             "The matrix is singular: U[" + std::to_string(info - 1) + ", " + std::to_string(info - 1) +
                 "] of its LU factorization is zero",
             i, count);
      }
      check_arguments(lapack::getrs('T', n, nrhs, mat, n, ipiv.data(), cols, n), "getrs");
    }
  });
  copy_strided(out.shape(), rhs.data(), out.dtype(), col_major_strides(out.shape()), x, out.dtype(), out.strides());
}

// ---------------------------------------------------------------- eigenvalues

/// The eigenvalues (and right eigenvectors) of general matrices: sgeev/dgeev, whose complex pairs are unpacked
/// below, or cgeev (with a real workspace), whose results are complex already.
template <class T>
void eig(const Eig& p, const array& a, Outputs& out) {
  const Int n = a.shape(-1);
  const int64_t count = batch_count(a.shape());
  OutputBuffer<complex64_t> w_buffer(out[0], count * n);
  OutputBuffer<complex64_t> v_buffer(out, 1, count * n * n, p.compute_vectors);
  complex64_t* w = w_buffer.get();
  complex64_t* v = v_buffer.get();
  if (n == 0 || count == 0) {
    return;
  }
  const char jobvr = p.compute_vectors ? 'V' : 'N';
  auto buf = pack<T>(a, true);
  const size_t rwork_size = is_complex_v<T> ? 2 * static_cast<size_t>(n) : 0;
  auto geev = [&](T* mat, T* wr, T* wi, T* vr, T* work, Int lwork, Real<T>* rwork) {
    if constexpr (is_complex_v<T>) {
      return lapack::geev(jobvr, n, mat, n, wr, vr, n, work, lwork, rwork);
    } else {
      return lapack::geev(jobvr, n, mat, n, wr, wi, vr, n, work, lwork);
    }
  };
  T query{};
  std::vector<Real<T>> rwork_query(rwork_size);
  check_arguments(geev(buf.data(), buf.data(), buf.data(), buf.data(), &query, -1, rwork_query.data()), "geev");
  const Int lwork = workspace(query);
  for_each_matrix(count, n, [&](size_t begin, size_t end) {
    std::vector<T> wr(n);
    std::vector<T> wi(is_complex_v<T> ? 0 : n);
    std::vector<T> vr(p.compute_vectors ? static_cast<size_t>(n) * n : 1);
    std::vector<T> work(lwork);
    std::vector<Real<T>> rwork(rwork_size);
    for (size_t i = begin; i < end; ++i) {
      Int info = geev(buf.data() + i * n * n, wr.data(), wi.data(), vr.data(), work.data(), lwork, rwork.data());
      check_arguments(info, "geev");
      if (info > 0) {
        fail("eig", "The QR algorithm did not converge", i, count);
      }
      complex64_t* wi_out = w + i * n;
      complex64_t* vi = p.compute_vectors ? v + i * n * n : nullptr;
      if constexpr (is_complex_v<T>) {
        std::copy_n(wr.data(), n, wi_out);
        if (vi != nullptr) {
          from_col_major(vr.data(), n, n, n, vi);
        }
      } else {
        for (Int j = 0; j < n; ++j) {
          wi_out[j] = complex64_t(static_cast<float>(wr[j]), static_cast<float>(wi[j]));
        }
        if (vi == nullptr) {
          continue;
        }
        // A complex pair (j, j + 1) stores its vector as columns re = vr[:, j], im = vr[:, j + 1]; the second
        // eigenvalue's vector is the conjugate.
        for (Int j = 0; j < n; ++j) {
          const bool pair = wi[j] != T{0} && j + 1 < n;
          for (Int row = 0; row < n; ++row) {
            const auto re = static_cast<float>(vr[row + j * n]);
            const auto im = pair ? static_cast<float>(vr[row + (j + 1) * n]) : 0.0F;
            vi[row * n + j] = complex64_t(re, im);
            if (pair) {
              vi[row * n + j + 1] = complex64_t(re, -im);
            }
          }
          j += pair ? 1 : 0;
        }
      }
    }
  });
}

template <class T>
void eigh(const Eigh& p, const array& a, Outputs& out) {
  using R = Real<T>;
  const Int n = a.shape(-1);
  const int64_t count = batch_count(a.shape());
  OutputBuffer<R> w_buffer(out[0], count * n);
  OutputBuffer<T> v_buffer(out, 1, count * n * n, p.compute_vectors);
  R* w = w_buffer.get();
  T* v = v_buffer.get();
  if (n == 0 || count == 0) {
    return;
  }
  const char jobz = p.compute_vectors ? 'V' : 'N';
  const char uplo = p.upper ? 'U' : 'L';
  auto buf = pack<T>(a, true);  // column-major: for a Hermitian matrix, the transpose would be its conjugate
  // syevd for real matrices, heevd (with a real workspace) for complex ones.
  auto evd = [&](T* mat, R* values, T* work, Int lwork, R* rwork, Int lrwork, Int* iwork, Int liwork) {
    if constexpr (is_complex_v<T>) {
      return lapack::heevd(jobz, uplo, n, mat, n, values, work, lwork, rwork, lrwork, iwork, liwork);
    } else {
      return lapack::syevd(jobz, uplo, n, mat, n, values, work, lwork, iwork, liwork);
    }
  };
  T query{};
  R rquery{};
  Int iquery = 0;
  const char* routine = is_complex_v<T> ? "heevd" : "syevd";
  check_arguments(evd(buf.data(), w, &query, -1, &rquery, -1, &iquery, -1), routine);
  const Int lwork = workspace(query);
  const Int lrwork = workspace(rquery);
  const Int liwork = std::max<Int>(1, iquery);
  for_each_matrix(count, n, [&](size_t begin, size_t end) {
    std::vector<T> work(lwork);
    std::vector<R> rwork(is_complex_v<T> ? lrwork : 0);
    std::vector<Int> iwork(liwork);
    for (size_t i = begin; i < end; ++i) {
      T* mat = buf.data() + i * n * n;
      Int info = evd(mat, w + i * n, work.data(), lwork, rwork.data(), lrwork, iwork.data(), liwork);
      check_arguments(info, routine);
      if (info > 0) {
        fail(p.compute_vectors ? "eigh" : "eigvalsh", "The eigenvalue algorithm did not converge", i, count);
      }
      if (p.compute_vectors) {
        from_col_major(mat, n, n, n, v + i * n * n);
      }
    }
  });
}

}  // namespace

void run(const QRF&, const Inputs& in, Outputs& out) {
  dispatch<real_types>(in[0].dtype(), "linalg::qr", [&]<class T>(type_tag<T>) { qr<T>(in[0], out[0], out[1]); });
}

void run(const SVD& p, const Inputs& in, Outputs& out) {
  dispatch<real_or_complex_types>(in[0].dtype(), "linalg::svd", [&]<class T>(type_tag<T>) { svd<T>(p, in[0], out); });
}

void run(const Inverse& p, const Inputs& in, Outputs& out) {
  dispatch<real_types>(in[0].dtype(), "linalg::inv", [&]<class T>(type_tag<T>) { inverse<T>(p, in[0], out[0]); });
}

void run(const Cholesky& p, const Inputs& in, Outputs& out) {
  dispatch<real_types>(in[0].dtype(), "linalg::cholesky", [&]<class T>(type_tag<T>) { cholesky<T>(p, in[0], out[0]); });
}

void run(const LUF&, const Inputs& in, Outputs& out) {
  dispatch<real_types>(in[0].dtype(), "linalg::lu", [&]<class T>(type_tag<T>) { lu<T>(in[0], out); });
}

void run(const Solve& p, const Inputs& in, Outputs& out) {
  dispatch<real_types>(in[0].dtype(), "linalg::solve",
                       [&]<class T>(type_tag<T>) { solve<T>(p, in[0], in[1], out[0]); });
}

void run(const Eig& p, const Inputs& in, Outputs& out) {
  dispatch<real_or_complex_types>(in[0].dtype(), "linalg::eig", [&]<class T>(type_tag<T>) { eig<T>(p, in[0], out); });
}

void run(const Eigh& p, const Inputs& in, Outputs& out) {
  dispatch<real_or_complex_types>(in[0].dtype(), "linalg::eigh", [&]<class T>(type_tag<T>) { eigh<T>(p, in[0], out); });
}

}  // namespace nuvec::cpu
