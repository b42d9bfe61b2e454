#pragma once
// Launcher of the CUDA rotary kernel (rotary_cuda.cu), called by the CUDA entry of the
// rotary op's dispatch table (rotary.cpp). Torch-free so nvcc builds it alone.

#include <cstdint>

namespace ropelab {

/// x and out (rows of Dh) in T; the tables (steps, half) and the arithmetic in Table: T for
/// float and double, float for the 16-bit types (whose raw bits x and out then are).
template <typename T, typename Table = T>
struct RotaryCudaArgs {
  const T* x;
  T* out;
  const Table* cos;  // (steps, half)
  const Table* sin;
  int64_t rows, inner, steps, Dh, half;
  bool interleaved;
  Table sign;  // +1 rotate, -1 inverse (the backward pass)
};

/// A 16-bit input's format, rounded once, at the store.
enum class Rotary16 { fp16, bf16 };

/// Launches on `stream` (a cudaStream_t); returns the cudaError_t of the launch (0 = ok).
int rotary_cuda(const RotaryCudaArgs<float>& args, void* stream);
int rotary_cuda(const RotaryCudaArgs<double>& args, void* stream);
int rotary_cuda(const RotaryCudaArgs<uint16_t, float>& args, Rotary16 format, void* stream);

}  // namespace ropelab
