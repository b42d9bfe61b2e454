#pragma once
// The rotary CPU loop (rotary_cpu.inc) as built twice, baseline and AVX2+FMA. Torch-free
// and code-free: the rule of ops/cpu_build.h.

#include "ropelab/ops/cpu_build.h"

namespace ropelab {

/// x seen as rows of Dh elements (unit stride within a row); the output is contiguous.
struct RotaryRows {
  int64_t count = 0, T = 0, Dh = 0, half = 0, time_axis = 0, axes = 0;
  bool contiguous = false;                 // rows back to back: row r at r * Dh
  int64_t inner = 1;                       // rows per time step within a run (product of the axes after time)
  int64_t sizes[8] = {}, strides[8] = {};  // leading axes (all but the last)
};

/// Rows [begin, end) of x rotated into out by the angles of cos/sin (T, half), sign +1,
/// or by their inverse, sign -1 (the backward pass). x and out hold T; cos, sin and the
/// arithmetic are A: float for float and bfloat16, double for double.
template <typename T, typename A>
using RotaryRowsFn = void (*)(const RotaryRows& r, const T* x, T* out, const A* cos, const A* sin, bool interleaved,
                              A sign, int64_t begin, int64_t end);

/// One build's loop: one instance of the template per dtype.
struct RotaryCpuKernels {
  RotaryRowsFn<float, float> rows_float;
  RotaryRowsFn<double, double> rows_double;
  RotaryRowsFn<BFloat16Bits, float> rows_bfloat16;
};

namespace cpu_baseline {
extern const RotaryCpuKernels rotary;  // rotary_cpu_baseline.cpp
}
namespace cpu_avx2 {
extern const RotaryCpuKernels rotary;  // rotary_cpu_avx2.cpp; run only where cpu_has_avx2_fma()
}

}  // namespace ropelab
