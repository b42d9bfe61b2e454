#pragma once
// The Adam update's CPU loop (adam_cpu.inc) as built twice, baseline and AVX2+FMA.
// Torch-free and code-free: the rule of ops/cpu_build.h.
//
// Per element, with g the gradient times grad_scale (plus weight_decay * p, Adam's L2 term):
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
//   p -= step_size * m / (sqrt(v) / sqrt_bias2 + eps)
// torch::optim::Adam's arithmetic (without amsgrad), with step_size = lr / (1 - beta1^t) and
// sqrt_bias2 = sqrt(1 - beta2^t), in one pass instead of its eight tensor operations.

#include "ropelab/ops/cpu_build.h"

namespace ropelab {

struct AdamConstants {
  float beta1, beta2, step_size, sqrt_bias2, eps, weight_decay, grad_scale;
};

/// Elements [begin, end) of one fp32 parameter p, its gradient g and Adam's two moments.
using AdamFn = void (*)(float* p, const float* g, float* m, float* v, int64_t begin, int64_t end,
                        const AdamConstants& c);

struct AdamCpuKernels {
  AdamFn update_float;
};

namespace cpu_baseline {
extern const AdamCpuKernels adam;  // adam_cpu_baseline.cpp
}
namespace cpu_avx2 {
extern const AdamCpuKernels adam;  // adam_cpu_avx2.cpp; run only where cpu_has_avx2_fma()
}

}  // namespace ropelab
