#pragma once
// The counter-based dropout CPU loop (dropout_cpu.inc) as built twice, baseline and
// AVX2+FMA. Torch-free and code-free: the rule of ops/cpu_build.h.
//
// Element i of a call with seed s is kept when hash32(key) >= threshold (threshold =
// p * 2^32), key = uint32(i) * 0x9E3779B9 ^ s ^ uint32(i >> 32) and hash32 the lowbias32
// integer hash (Wellons); kept elements are multiplied by scale = 1/(1-p), the others are 0.

#include "ropelab/ops/cpu_build.h"

namespace ropelab {

/// Elements [begin, end): out = keep(seed, i) ? x * scale : 0.
template <typename T>
using DropoutFn = void (*)(const T* x, T* out, int64_t begin, int64_t end, uint32_t seed, uint32_t threshold, T scale);

/// One build's loop: one instance of the template per dtype.
struct DropoutCpuKernels {
  DropoutFn<float> apply_float;
  DropoutFn<double> apply_double;
};

namespace cpu_baseline {
extern const DropoutCpuKernels dropout;  // dropout_cpu_baseline.cpp
}
namespace cpu_avx2 {
extern const DropoutCpuKernels dropout;  // dropout_cpu_avx2.cpp; run only where cpu_has_avx2_fma()
}

}  // namespace ropelab
