// The threads a process computes with (util/threads.h): `--threads N` bounds LibTorch's
// intra-op threads and OpenBLAS's pool alike, and blas::SingleThreaded gives the pool back.
#include "ropelab/util/threads.h"

#include <ATen/Parallel.h>

#include <thread>

#include "../test_util.h"
#include "ropelab/ops/attention/blas.h"

using namespace ropelab;

namespace {

/// Puts both thread counts back when a test ends (each test runs in its own process under
/// ctest, but not under a plain run of the binary).
struct KeepThreads {
  int torch = at::get_num_threads();
  int64_t blas = blas_threads();
  ~KeepThreads() {
    at::set_num_threads(torch);
    if (blas > 0) set_blas_threads(blas);
  }
};

}  // namespace

TEST(Threads, SetThreadsBoundsOpenblasToo) {
  if (blas_threads() == 0) GTEST_SKIP() << "the BLAS has no openblas_get_num_threads";
  KeepThreads keep;
  EXPECT_EQ(set_threads(1), 1);
  EXPECT_EQ(blas_threads(), 1);
  if (std::thread::hardware_concurrency() >= 2) {
    EXPECT_EQ(set_threads(2), 2);
    EXPECT_EQ(blas_threads(), 2);
  }
}

TEST(Threads, SingleThreadedBlasGivesThePoolBack) {
  if (blas_threads() == 0) GTEST_SKIP() << "the BLAS has no openblas_get_num_threads";
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: OpenBLAS has one thread anyway";
  KeepThreads keep;
  set_threads(2);
  {
    blas::SingleThreaded one;
    EXPECT_EQ(blas_threads(), 1);
  }
  EXPECT_EQ(blas_threads(), 2);
}
