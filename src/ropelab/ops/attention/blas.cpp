#include "ropelab/ops/attention/blas.h"

#include <dlfcn.h>

#include "ropelab/util/threads.h"

namespace ropelab::blas {

namespace {

// Column-major Fortran entry points.
using SgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                         const int*, const float*, const int*, const float*, float*, const int*);
using DgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const double*, const double*,
                         const int*, const double*, const int*, const double*, double*, const int*);

struct Library {
  SgemmFn sgemm = nullptr;
  DgemmFn dgemm = nullptr;
};

const Library& library() {
  static const Library lib = [] {
    Library out;
    out.sgemm = reinterpret_cast<SgemmFn>(dlsym(RTLD_DEFAULT, "sgemm_"));
    out.dgemm = reinterpret_cast<DgemmFn>(dlsym(RTLD_DEFAULT, "dgemm_"));
    return out;
  }();
  return lib;
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
template <typename T, typename Fn>
void row_major(Fn fn, bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
               int64_t ldb, T beta, T* c, int64_t ldc) {
  const char ca = ta ? 'T' : 'N', cb = tb ? 'T' : 'N';
  const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  const int ilda = static_cast<int>(lda), ildb = static_cast<int>(ldb), ildc = static_cast<int>(ldc);
  fn(&cb, &ca, &in, &im, &ik, &alpha, b, &ildb, a, &ilda, &beta, c, &ildc);
}

}  // namespace

bool has_sgemm() { return library().sgemm != nullptr; }
bool has_dgemm() { return library().dgemm != nullptr; }

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
  row_major(library().sgemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  row_major(library().dgemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

SingleThreaded::SingleThreaded() : previous_(static_cast<int>(blas_threads())) {
  if (previous_ > 1) set_blas_threads(1);
}

SingleThreaded::~SingleThreaded() {
  if (previous_ > 1) set_blas_threads(previous_);
}

}  // namespace ropelab::blas
