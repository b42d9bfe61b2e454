// CUDA rotary kernel: one thread per rotated pair (and per passed-through element),
// reading x and the cos/sin tables once and writing the output once. One launch per
// tensor: rotary_qk launches once for q and once for k, on the same stream (rotary.cpp).
// Built only when the Torch found has CUDA (CMakeLists.txt); no Torch headers here.
// x is contiguous (..., T, ..., Dh); time step of row r = (r / inner) % T. fp16 and bf16
// inputs are read and written in their own type and computed in float with float tables.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ropelab/ops/rotary/rotary_cuda.h"

namespace ropelab {

namespace {

/// Loads and stores of an element as its arithmetic type (Acc): the identity for float and
/// double, a conversion for the 16-bit types.
template <typename T, typename Acc>
struct Element {
  __device__ static Acc load(const T& v) { return v; }
  __device__ static T store(Acc v) { return v; }
};
template <>
struct Element<__half, float> {
  __device__ static float load(const __half& v) { return __half2float(v); }
  __device__ static __half store(float v) { return __float2half_rn(v); }
};
template <>
struct Element<__nv_bfloat16, float> {
  __device__ static float load(const __nv_bfloat16& v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};

template <typename T, typename Acc>
__global__ void rotary_kernel(const T* __restrict__ x, T* __restrict__ out, const Acc* __restrict__ cos,
                              const Acc* __restrict__ sin, int64_t rows, int64_t inner, int64_t steps, int64_t Dh,
                              int64_t half, bool interleaved, Acc sign) {
  using E = Element<T, Acc>;
  // Each row has `half` pairs and Dh - 2*half pass-through elements: Dh - half work items.
  const int64_t per_row = Dh - half;
  const int64_t total = rows * per_row;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / per_row, j = i % per_row;
    const T* xr = x + row * Dh;
    T* o = out + row * Dh;
    if (j < half) {
      const int64_t t = (row / inner) % steps;
      const Acc c = cos[t * half + j], s = sign * sin[t * half + j];
      const int64_t i1 = interleaved ? 2 * j : j, i2 = interleaved ? 2 * j + 1 : j + half;
      const Acc x1 = E::load(xr[i1]), x2 = E::load(xr[i2]);
      o[i1] = E::store(x1 * c - x2 * s);
      o[i2] = E::store(x2 * c + x1 * s);
    } else {
      const int64_t k = 2 * half + (j - half);
      o[k] = xr[k];
    }
  }
}

template <typename T, typename Acc>
int launch(const T* x, T* out, const Acc* cos, const Acc* sin, int64_t rows, int64_t inner, int64_t steps, int64_t Dh,
           int64_t half, bool interleaved, Acc sign, cudaStream_t stream) {
  const int64_t total = rows * (Dh - half);
  if (total == 0) return 0;
  const int threads = 256;
  const int64_t wanted = (total + threads - 1) / threads;
  const int blocks = static_cast<int>(wanted < 65535 * 8 ? wanted : 65535 * 8);
  rotary_kernel<T, Acc>
      <<<blocks, threads, 0, stream>>>(x, out, cos, sin, rows, inner, steps, Dh, half, interleaved, sign);
  return static_cast<int>(cudaGetLastError());
}

template <typename T, typename Stored, typename Table>
int launch(const RotaryCudaArgs<Stored, Table>& a, cudaStream_t stream) {
  return launch<T, Table>(reinterpret_cast<const T*>(a.x), reinterpret_cast<T*>(a.out), a.cos, a.sin, a.rows, a.inner,
                          a.steps, a.Dh, a.half, a.interleaved, a.sign, stream);
}

}  // namespace

int rotary_cuda(const RotaryCudaArgs<float>& args, void* stream) {
  return launch<float>(args, static_cast<cudaStream_t>(stream));
}
int rotary_cuda(const RotaryCudaArgs<double>& args, void* stream) {
  return launch<double>(args, static_cast<cudaStream_t>(stream));
}
int rotary_cuda(const RotaryCudaArgs<uint16_t, float>& args, Rotary16 format, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  return format == Rotary16::fp16 ? launch<__half>(args, s) : launch<__nv_bfloat16>(args, s);
}

}  // namespace ropelab
