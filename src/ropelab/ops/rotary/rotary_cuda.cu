// CUDA rotary kernels, reading x and the cos/sin tables once and writing the output once.
// Where the rows and tables allow 16-byte aligned loads (float tables, Dh and the rotated half
// multiples of the vector, aligned pointers), a thread rotates four pairs of one row with
// vector loads and stores, and each row's time step is worked out once, by one thread group;
// otherwise one thread per rotated pair (and per passed-through element). One launch per
// tensor: rotary_qk launches once for q and once for k, on the same stream (rotary.cpp).
// Built only when the Torch found has CUDA (CMakeLists.txt); no Torch headers here.
// x is contiguous (..., T, ..., Dh); time step of row r = (r / inner) % T. fp16 and bf16
// inputs are read and written in their own type and computed in float with float tables.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

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

/// kVector elements of T, loaded or stored as one access (16 bytes for float, 8 for 16-bit types).
constexpr int kVector = 4;
template <typename T>
struct alignas(sizeof(T) * kVector) Pack {
  T v[kVector];
};

template <typename T>
__device__ Pack<T> load_pack(const T* p) {
  return *reinterpret_cast<const Pack<T>*>(p);
}

/// Rows in blockDim.y, groups of kVector pairs of a row in blockDim.x. Interleaved pairs are
/// (2j, 2j + 1), read as two packs; the others (j, j + half), a pack from each half.
template <typename T, typename Acc>
__global__ void rotary_vector_kernel(const T* __restrict__ x, T* __restrict__ out, const Acc* __restrict__ cos,
                                     const Acc* __restrict__ sin, int64_t rows, int64_t inner, int64_t steps,
                                     int64_t Dh, int64_t half, bool interleaved, Acc sign) {
  using E = Element<T, Acc>;
  const int64_t groups = half / kVector;
  for (int64_t row = blockIdx.x * int64_t(blockDim.y) + threadIdx.y; row < rows;
       row += int64_t(gridDim.x) * blockDim.y) {
    const int64_t t = (row / inner) % steps;
    const T* xr = x + row * Dh;
    T* o = out + row * Dh;
    for (int64_t g = threadIdx.x; g < groups; g += blockDim.x) {
      const int64_t j = g * kVector;
      const Pack<Acc> c = load_pack(cos + t * half + j), s = load_pack(sin + t * half + j);
      // first and second element of each pair: two halves, or the even and odd elements
      const int64_t at1 = interleaved ? 2 * j : j, at2 = interleaved ? 2 * j + kVector : j + half;
      const Pack<T> a = load_pack(xr + at1), b = load_pack(xr + at2);
      Pack<T> ra, rb;
      for (int p = 0; p < kVector; ++p) {
        // pair p: interleaved, elements 2p and 2p + 1 of the two packs read as one run of 2 kVector
        const int i1 = interleaved ? 2 * p : p, i2 = interleaved ? 2 * p + 1 : p;
        const T& e1 = interleaved ? (i1 < kVector ? a.v[i1] : b.v[i1 - kVector]) : a.v[i1];
        const T& e2 = interleaved ? (i2 < kVector ? a.v[i2] : b.v[i2 - kVector]) : b.v[i2];
        const Acc x1 = E::load(e1), x2 = E::load(e2), cp = c.v[p], sp = sign * s.v[p];
        const T y1 = E::store(x1 * cp - x2 * sp), y2 = E::store(x2 * cp + x1 * sp);
        if (interleaved) {
          (i1 < kVector ? ra.v[i1] : rb.v[i1 - kVector]) = y1;
          (i2 < kVector ? ra.v[i2] : rb.v[i2 - kVector]) = y2;
        } else {
          ra.v[i1] = y1;
          rb.v[i2] = y2;
        }
      }
      *reinterpret_cast<Pack<T>*>(o + at1) = ra;
      *reinterpret_cast<Pack<T>*>(o + at2) = rb;
    }
    for (int64_t k = 2 * half + threadIdx.x; k < Dh; k += blockDim.x) o[k] = xr[k];  // not rotated
  }
}

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

/// Whether rotary_vector_kernel takes the call: float tables, every pack inside one row and
/// aligned (x, out and the tables on 16 bytes, rows and table rows whole packs).
template <typename T, typename Acc>
bool vector_fits(const T* x, const T* out, const Acc* cos, const Acc* sin, int64_t Dh, int64_t half) {
  constexpr bool float_table = sizeof(Acc) == 4;
  return float_table && half % kVector == 0 && (Dh * int64_t(sizeof(T))) % 16 == 0 && aligned(x) && aligned(out) &&
         aligned(cos) && aligned(sin);
}

template <typename T, typename Acc>
int launch(const T* x, T* out, const Acc* cos, const Acc* sin, int64_t rows, int64_t inner, int64_t steps, int64_t Dh,
           int64_t half, bool interleaved, Acc sign, cudaStream_t stream) {
  const int64_t total = rows * (Dh - half);
  if (total == 0) return 0;
  if (half > 0 && vector_fits(x, out, cos, sin, Dh, half)) {
    const int64_t groups = half / kVector;
    const int tx = groups < 32 ? static_cast<int>(groups) : 32, ty = 256 / tx;
    const int64_t wanted = (rows + ty - 1) / ty;
    const int blocks = static_cast<int>(wanted < 65535 * 8 ? wanted : 65535 * 8);
    rotary_vector_kernel<T, Acc>
        <<<blocks, dim3(tx, ty), 0, stream>>>(x, out, cos, sin, rows, inner, steps, Dh, half, interleaved, sign);
    return static_cast<int>(cudaGetLastError());
  }
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
