#pragma once
/// The threads a process computes with: LibTorch's intra-op threads and OpenBLAS's own.

#include <cstdint>

namespace ropelab {

/// Sets LibTorch's intra-op threads (0 = all cores) and OpenBLAS's threads to the same
/// number; returns LibTorch's number in use. OpenBLAS (pthreads) keeps a pool of its own
/// that at::set_num_threads does not bound: without this, two processes with one thread
/// each on two cores run four busy threads.
int64_t set_threads(int64_t threads);

/// OpenBLAS's thread count (openblas_get_num_threads, looked up in the loaded libraries);
/// 0 where the BLAS has no such call.
int64_t blas_threads();
/// Sets OpenBLAS's thread count where it has openblas_set_num_threads; else does nothing.
void set_blas_threads(int64_t threads);

}  // namespace ropelab
