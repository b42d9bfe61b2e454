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

/// Forward, rows [begin, end): lse, loss and nll of each row.
template <typename T>
using SmoothedCeForwardFn = void (*)(const T* logits, int64_t V, const int64_t* target, int64_t pad, T eps,
                                     int64_t begin, int64_t end, T* lse, T* loss, T* nll);
/// Backward, rows [begin, end): grad (N, V) from the forward's lse and the gradient g (N) of loss.
template <typename T>
using SmoothedCeBackwardFn = void (*)(const T* logits, int64_t V, const int64_t* target, int64_t pad, T eps,
                                      const T* lse, const T* g, int64_t begin, int64_t end, T* grad);

/// One build's loops: one instance of each template per dtype.
struct CrossEntropyCpuKernels {
  SmoothedCeForwardFn<float> forward_float;
  SmoothedCeForwardFn<double> forward_double;
  SmoothedCeBackwardFn<float> backward_float;
  SmoothedCeBackwardFn<double> backward_double;
};

namespace cpu_baseline {
extern const CrossEntropyCpuKernels cross_entropy;  // cross_entropy_cpu_baseline.cpp
}
namespace cpu_avx2 {
extern const CrossEntropyCpuKernels cross_entropy;  // cross_entropy_cpu_avx2.cpp; only where cpu_has_avx2_fma()
}

}  // namespace ropelab
