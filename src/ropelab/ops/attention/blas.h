#pragma once
/// The Fortran BLAS that LibTorch already loaded (sgemm_/dgemm_, looked up once), called
/// directly by the CPU attention kernels on strided views, with row-major wrappers.

#include <cstdint>

namespace ropelab::blas {

/// Whether sgemm_ (float) or dgemm_ (double) was found.
bool has_sgemm();
bool has_dgemm();

/// Row-major C (m x n, ldc) = alpha op(A) op(B) + beta C, op(X) = X or X^T; A is
/// (m x k) after op, B (k x n) after op, each row-major with its leading dimension.
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

/// Keeps OpenBLAS to one thread of its own for its lifetime (restored after), where the
/// library has openblas_set_num_threads: a kernel that calls gemm from every thread of
/// its own parallel loop must not have each call start OpenBLAS's threads as well.
class SingleThreaded {
 public:
  SingleThreaded();
  ~SingleThreaded();
  SingleThreaded(const SingleThreaded&) = delete;
  SingleThreaded& operator=(const SingleThreaded&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace ropelab::blas
