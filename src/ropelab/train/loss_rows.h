#pragma once
// Row loops of the fused label-smoothed cross-entropy (train/trainer.cpp), in two builds
// (baseline; AVX2+FMA with glibc's vector expf) chosen at run time. No ATen types here.

#include <cstdint>

namespace ropelab {

/// Rows [begin, end) of logits (N, V), row-major. Per row n with target t != pad:
///   lse[n] = log sum_v exp(x_v);  nll[n] = lse - x_t;
///   loss[n] = (1 - eps) nll + eps (lse - mean_v x_v)   (eps/V on every class)
/// Rows whose target is pad get lse = loss = nll = 0.
/// Backward: grad[n, v] = g[n] (exp(x_v - lse) - eps/V) - g[n] (1 - eps) [v == t]; 0 for pad rows.
#define ROPELAB_LOSS_ROWS_DECL(T)                                                                                  \
  void ce_forward(const T* logits, int64_t V, const int64_t* target, int64_t pad, T eps, int64_t begin,           \
                  int64_t end, T* lse, T* loss, T* nll);                                                         \
  void ce_backward(const T* logits, int64_t V, const int64_t* target, int64_t pad, T eps, const T* lse,          \
                   const T* g, int64_t begin, int64_t end, T* grad);

namespace baseline {
ROPELAB_LOSS_ROWS_DECL(float)
ROPELAB_LOSS_ROWS_DECL(double)
}  // namespace baseline
namespace avx2 {
ROPELAB_LOSS_ROWS_DECL(float)
ROPELAB_LOSS_ROWS_DECL(double)
}  // namespace avx2

}  // namespace ropelab
