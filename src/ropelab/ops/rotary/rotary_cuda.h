#pragma once
// Launcher of the CUDA rotary kernel (rotary_cuda.cu), called by the CUDA entry of the
// rotary op's dispatch table (rotary.cpp). Torch-free so nvcc builds it alone.

#include <cstdint>

namespace ropelab {

template <typename T>
struct RotaryCudaArgs {
  const T* x;
  T* out;
  const T* cos;  // (steps, half)
  const T* sin;
  int64_t rows, inner, steps, Dh, half;
  bool interleaved;
  T sign;  // +1 rotate, -1 inverse (the backward pass)
};

/// A 16-bit input's format: x and out are its raw bits, the tables float, and the arithmetic
/// float (the rounding happens once, at the store).
enum class Rotary16 { fp16, bf16 };
struct RotaryCudaArgs16 {
  const uint16_t* x;
  uint16_t* out;
  const float* cos;  // (steps, half)
  const float* sin;
  int64_t rows, inner, steps, Dh, half;
  bool interleaved;
  float sign;
  Rotary16 format;
};

/// Launches on `stream` (a cudaStream_t); returns the cudaError_t of the launch (0 = ok).
int rotary_cuda(const RotaryCudaArgs<float>& args, void* stream);
int rotary_cuda(const RotaryCudaArgs<double>& args, void* stream);
int rotary_cuda(const RotaryCudaArgs16& args, void* stream);

}  // namespace ropelab
