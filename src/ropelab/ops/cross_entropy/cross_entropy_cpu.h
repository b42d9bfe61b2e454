#pragma once
// The label-smoothed cross-entropy CPU loops (cross_entropy_cpu.inc) as built twice,
// baseline and AVX2+FMA. Torch-free and code-free: the rule of ops/cpu_build.h.
//
// Per row n of logits (N, V) with target t != pad:
//   lse = log sum_v exp(x_v);  nll = lse - x_t;  loss = (1 - eps) nll + eps (lse - mean_v x_v)
// (eps/V on every class); pad rows give 0. Backward, with g the gradient of loss:
//   grad_v = g (exp(x_v - lse) - eps/V) - g (1 - eps) [v == t];  0 for pad rows.

#include "ropelab/ops/cpu_build.h"

namespace ropelab {

/// Forward, rows [begin, end): lse, loss and nll of each row. Logits are T; the arithmetic
/// and the per-row statistics are A: float for float and bfloat16, double for double.
template <typename T, typename A>
using SmoothedCeForwardFn = void (*)(const T* logits, int64_t V, const int64_t* target, int64_t pad, A eps,
                                     int64_t begin, int64_t end, A* lse, A* loss, A* nll);
/// Backward, rows [begin, end): grad (N, V), of the logits' type, from the forward's lse and
/// the gradient g (N) of loss.
template <typename T, typename A>
using SmoothedCeBackwardFn = void (*)(const T* logits, int64_t V, const int64_t* target, int64_t pad, A eps,
                                      const A* lse, const A* g, int64_t begin, int64_t end, T* grad);

/// One build's loops: one instance of each template per dtype.
struct CrossEntropyCpuKernels {
  SmoothedCeForwardFn<float, float> forward_float;
  SmoothedCeForwardFn<double, double> forward_double;
  SmoothedCeForwardFn<BFloat16Bits, float> forward_bfloat16;
  SmoothedCeBackwardFn<float, float> backward_float;
  SmoothedCeBackwardFn<double, double> backward_double;
  SmoothedCeBackwardFn<BFloat16Bits, float> backward_bfloat16;
};

namespace cpu_baseline {
extern const CrossEntropyCpuKernels cross_entropy;  // cross_entropy_cpu_baseline.cpp
}
namespace cpu_avx2 {
extern const CrossEntropyCpuKernels cross_entropy;  // cross_entropy_cpu_avx2.cpp; only where cpu_has_avx2_fma()
}

}  // namespace ropelab
