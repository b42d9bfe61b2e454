// CUDA rotary kernel: one thread per rotated pair (and per passed-through element),
// reading x and the cos/sin tables once and writing the output once. One launch per
// tensor: rotary_qk launches once for q and once for k, on the same stream (rotary.cpp).
// Built only when the Torch found has CUDA (CMakeLists.txt); no Torch headers here.
// x is contiguous (..., T, ..., Dh); time step of row r = (r / inner) % T.
#include <cuda_runtime.h>

#include "ropelab/ops/rotary/rotary_cuda.h"

namespace ropelab {

namespace {

template <typename T>
__global__ void rotary_kernel(const T* __restrict__ x, T* __restrict__ out, const T* __restrict__ cos,
                              const T* __restrict__ sin, int64_t rows, int64_t inner, int64_t steps, int64_t Dh,
                              int64_t half, bool interleaved, T sign) {
  // Each row has `half` pairs and Dh - 2*half pass-through elements: Dh - half work items.
  const int64_t per_row = Dh - half;
  const int64_t total = rows * per_row;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / per_row, j = i % per_row;
    const T* xr = x + row * Dh;
    T* o = out + row * Dh;
    if (j < half) {
      const int64_t t = (row / inner) % steps;
      const T c = cos[t * half + j], s = sign * sin[t * half + j];
      const int64_t i1 = interleaved ? 2 * j : j, i2 = interleaved ? 2 * j + 1 : j + half;
      const T x1 = xr[i1], x2 = xr[i2];
      o[i1] = x1 * c - x2 * s;
      o[i2] = x2 * c + x1 * s;
    } else {
      const int64_t k = 2 * half + (j - half);
      o[k] = xr[k];
    }
  }
}

template <typename T>
int launch(const RotaryCudaArgs<T>& a, cudaStream_t stream) {
  const int64_t total = a.rows * (a.Dh - a.half);
  if (total == 0) return 0;
  const int threads = 256;
  const int64_t wanted = (total + threads - 1) / threads;
  const int blocks = static_cast<int>(wanted < 65535 * 8 ? wanted : 65535 * 8);
  rotary_kernel<T><<<blocks, threads, 0, stream>>>(a.x, a.out, a.cos, a.sin, a.rows, a.inner, a.steps, a.Dh, a.half,
                                                   a.interleaved, a.sign);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int rotary_cuda(const RotaryCudaArgs<float>& args, void* stream) {
  return launch(args, static_cast<cudaStream_t>(stream));
}
int rotary_cuda(const RotaryCudaArgs<double>& args, void* stream) {
  return launch(args, static_cast<cudaStream_t>(stream));
}

}  // namespace ropelab
