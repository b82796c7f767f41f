#pragma once

// LAPACK routines as one overload set over float and double (the s* and d* routines, and the c* routines of svd and
// the eigenvalue kernels for complex64), column-major, through LAPACKE's _work interface: no allocation and no layout
// conversion inside, workspace sized by the caller with a query (lwork = -1). Each returns LAPACK's info: 0 on
// success, < 0 for a bad argument (a bug here), > 0 for a property of the matrix (singular, not positive definite,
// no convergence).

#include <complex>

// LAPACKE's complex types as std::complex: lapack.h (which lapacke.h includes before reading LAPACK_COMPLEX_CPP)
// takes these definitions when they come first.
#ifndef lapack_complex_float
#define lapack_complex_float std::complex<float>
#endif
#ifndef lapack_complex_double
#define lapack_complex_double std::complex<double>
#endif
#include <lapacke.h>

namespace nuvec::cpu::lapack {

using Int = lapack_int;

inline Int geqrf(Int m, Int n, float* a, Int lda, float* tau, float* work, Int lwork) {
  return LAPACKE_sgeqrf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work, lwork);
}
inline Int geqrf(Int m, Int n, double* a, Int lda, double* tau, double* work, Int lwork) {
  return LAPACKE_dgeqrf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work, lwork);
}
inline Int orgqr(Int m, Int n, Int k, float* a, Int lda, const float* tau, float* work, Int lwork) {
  return LAPACKE_sorgqr_work(LAPACK_COL_MAJOR, m, n, k, a, lda, tau, work, lwork);
}
inline Int orgqr(Int m, Int n, Int k, double* a, Int lda, const double* tau, double* work, Int lwork) {
  return LAPACKE_dorgqr_work(LAPACK_COL_MAJOR, m, n, k, a, lda, tau, work, lwork);
}
inline Int gesdd(char jobz, Int m, Int n, float* a, Int lda, float* s, float* u, Int ldu, float* vt, Int ldvt,
                 float* work, Int lwork, Int* iwork) {
  return LAPACKE_sgesdd_work(LAPACK_COL_MAJOR, jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, iwork);
}
inline Int gesdd(char jobz, Int m, Int n, double* a, Int lda, double* s, double* u, Int ldu, double* vt, Int ldvt,
                 double* work, Int lwork, Int* iwork) {
  return LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, iwork);
}
inline Int getrf(Int m, Int n, float* a, Int lda, Int* ipiv) {
  return LAPACKE_sgetrf_work(LAPACK_COL_MAJOR, m, n, a, lda, ipiv);
}
inline Int getrf(Int m, Int n, double* a, Int lda, Int* ipiv) {
  return LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, m, n, a, lda, ipiv);
}
inline Int getri(Int n, float* a, Int lda, const Int* ipiv, float* work, Int lwork) {
  return LAPACKE_sgetri_work(LAPACK_COL_MAJOR, n, a, lda, ipiv, work, lwork);
}
inline Int getri(Int n, double* a, Int lda, const Int* ipiv, double* work, Int lwork) {
  return LAPACKE_dgetri_work(LAPACK_COL_MAJOR, n, a, lda, ipiv, work, lwork);
}
inline Int getrs(char trans, Int n, Int nrhs, const float* a, Int lda, const Int* ipiv, float* b, Int ldb) {
  return LAPACKE_sgetrs_work(LAPACK_COL_MAJOR, trans, n, nrhs, a, lda, ipiv, b, ldb);
}
inline Int getrs(char trans, Int n, Int nrhs, const double* a, Int lda, const Int* ipiv, double* b, Int ldb) {
  return LAPACKE_dgetrs_work(LAPACK_COL_MAJOR, trans, n, nrhs, a, lda, ipiv, b, ldb);
}
inline Int potrf(char uplo, Int n, float* a, Int lda) { return LAPACKE_spotrf_work(LAPACK_COL_MAJOR, uplo, n, a, lda); }
inline Int potrf(char uplo, Int n, double* a, Int lda) {
  return LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, uplo, n, a, lda);
}
inline Int trtri(char uplo, Int n, float* a, Int lda) {
  return LAPACKE_strtri_work(LAPACK_COL_MAJOR, uplo, 'N', n, a, lda);
}
inline Int trtri(char uplo, Int n, double* a, Int lda) {
  return LAPACKE_dtrtri_work(LAPACK_COL_MAJOR, uplo, 'N', n, a, lda);
}
inline Int trtrs(char uplo, char trans, Int n, Int nrhs, const float* a, Int lda, float* b, Int ldb) {
  return LAPACKE_strtrs_work(LAPACK_COL_MAJOR, uplo, trans, 'N', n, nrhs, a, lda, b, ldb);
}
inline Int trtrs(char uplo, char trans, Int n, Int nrhs, const double* a, Int lda, double* b, Int ldb) {
  return LAPACKE_dtrtrs_work(LAPACK_COL_MAJOR, uplo, trans, 'N', n, nrhs, a, lda, b, ldb);
}
inline Int geev(char jobvr, Int n, float* a, Int lda, float* wr, float* wi, float* vr, Int ldvr, float* work,
                Int lwork) {
  return LAPACKE_sgeev_work(LAPACK_COL_MAJOR, 'N', jobvr, n, a, lda, wr, wi, nullptr, 1, vr, ldvr, work, lwork);
}
inline Int geev(char jobvr, Int n, double* a, Int lda, double* wr, double* wi, double* vr, Int ldvr, double* work,
                Int lwork) {
  return LAPACKE_dgeev_work(LAPACK_COL_MAJOR, 'N', jobvr, n, a, lda, wr, wi, nullptr, 1, vr, ldvr, work, lwork);
}
inline Int syevd(char jobz, char uplo, Int n, float* a, Int lda, float* w, float* work, Int lwork, Int* iwork,
                 Int liwork) {
  return LAPACKE_ssyevd_work(LAPACK_COL_MAJOR, jobz, uplo, n, a, lda, w, work, lwork, iwork, liwork);
}
inline Int syevd(char jobz, char uplo, Int n, double* a, Int lda, double* w, double* work, Int lwork, Int* iwork,
                 Int liwork) {
  return LAPACKE_dsyevd_work(LAPACK_COL_MAJOR, jobz, uplo, n, a, lda, w, work, lwork, iwork, liwork);
}

// complex64 (the c* routines), for svd and the eigenvalue ops; they take a real workspace (rwork) besides work.
using cfloat = std::complex<float>;

inline Int gesdd(char jobz, Int m, Int n, cfloat* a, Int lda, float* s, cfloat* u, Int ldu, cfloat* vt, Int ldvt,
                 cfloat* work, Int lwork, float* rwork, Int* iwork) {
  return LAPACKE_cgesdd_work(LAPACK_COL_MAJOR, jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, rwork, iwork);
}
inline Int geev(char jobvr, Int n, cfloat* a, Int lda, cfloat* w, cfloat* vr, Int ldvr, cfloat* work, Int lwork,
                float* rwork) {
  return LAPACKE_cgeev_work(LAPACK_COL_MAJOR, 'N', jobvr, n, a, lda, w, nullptr, 1, vr, ldvr, work, lwork, rwork);
}
inline Int heevd(char jobz, char uplo, Int n, cfloat* a, Int lda, float* w, cfloat* work, Int lwork, float* rwork,
                 Int lrwork, Int* iwork, Int liwork) {
  return LAPACKE_cheevd_work(LAPACK_COL_MAJOR, jobz, uplo, n, a, lda, w, work, lwork, rwork, lrwork, iwork, liwork);
}

}  // namespace nuvec::cpu::lapack
